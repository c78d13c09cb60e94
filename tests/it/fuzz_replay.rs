//! The fuzz targets' bodies (fuzz/src/lib.rs, shared with cargo-fuzz) replayed over the inputs
//! kept in the repository: every seed under `fuzz/seeds/<target>` (inputs that once found a
//! bug, and the starting corpus) and the language fixtures for `compile`. This is the test
//! suite's part of fuzzing: it needs neither cargo-fuzz nor an instrumented build, so CI runs
//! it in every `cargo test`. Fuzzing itself (new inputs) is `scripts/fuzz.sh`.

#[allow(dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod bodies;

use std::path::{Path, PathBuf};

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `body` over every file of `fuzz/seeds/<target>`, naming the file that panics.
fn replay_seeds(target: &str, body: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let files = files_under(&dir);
    for f in &files {
        let data = std::fs::read(f).expect("a seed file");
        let outcome = std::panic::catch_unwind(|| body(&data));
        assert!(
            outcome.is_ok(),
            "fuzz target `{target}` panicked on seed {}",
            f.display()
        );
    }
    files.len()
}

#[test]
fn the_signature_seeds_replay_cleanly() {
    let n = replay_seeds("signature", bodies::signature);
    assert!(
        n >= 10,
        "only {n} signature seeds: fuzz/seeds/signature went missing"
    );
}

#[test]
fn the_array_reader_seeds_replay_cleanly() {
    let n = replay_seeds("arrays", bodies::arrays);
    assert!(
        n >= 10,
        "only {n} array seeds: fuzz/seeds/arrays went missing"
    );
}

/// The `compile` body over the diagnostic fixtures (every one: they stop early, in the
/// checker or at specialization) and one in eight of the others (each runs the whole pipeline
/// three times; all of them would add minutes to a debug test run, and tests/fixtures.rs
/// compiles every fixture already). Also any seeds kept under `fuzz/seeds/compile`.
#[test]
fn the_compile_target_replays_the_fixtures_cleanly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut inputs = Vec::new();
    for dialect in files_or_dirs(&root) {
        let all = dialect.ends_with("errors");
        for (i, f) in files_under(&dialect).into_iter().enumerate() {
            if f.extension().is_some_and(|e| e == "py") && (all || i % 8 == 0) {
                inputs.push(f);
            }
        }
    }
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/compile");
    if seeds.is_dir() {
        inputs.extend(files_under(&seeds));
    }
    assert!(
        inputs.len() >= 50,
        "only {} inputs for `compile`",
        inputs.len()
    );
    for f in &inputs {
        let data = std::fs::read(f).expect("a fixture");
        let outcome = std::panic::catch_unwind(|| bodies::compile(&data));
        assert!(
            outcome.is_ok(),
            "fuzz target `compile` panicked on {}",
            f.display()
        );
    }
}

fn files_or_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}
