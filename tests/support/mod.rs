//! Shared helpers of the integration tests: where the repository is, and golden files.
//!
//! Test binaries do not always run where they were built: the GPU machine runs copies of
//! them from another directory, where the path cargo bakes in (`CARGO_MANIFEST_DIR`) does not
//! exist. [`repo_root`] finds the repository at run time instead. Include this module with
//! `mod support;`; not every test binary uses every helper.
#![allow(dead_code)]

pub mod host_values;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The environment variable that names the repository root (the directory that holds
/// `tests/fixtures`), for test binaries run away from their checkout.
pub const REPO_VAR: &str = "PYDEVICE_REPO";

/// The repository root: `$PYDEVICE_REPO` when set, else the first directory holding
/// `tests/fixtures` found walking up from the current directory, then from the test
/// executable's directory. Panics with a message naming `PYDEVICE_REPO` when none is found.
pub fn repo_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        if let Some(dir) = std::env::var_os(REPO_VAR) {
            let dir = PathBuf::from(dir);
            assert!(
                is_root(&dir),
                "{REPO_VAR}={} does not hold tests/fixtures",
                dir.display()
            );
            return dir;
        }
        let starts = [
            std::env::current_dir().ok(),
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_path_buf)),
        ];
        starts
            .into_iter()
            .flatten()
            .find_map(|start| {
                start
                    .ancestors()
                    .find(|d| is_root(d))
                    .map(Path::to_path_buf)
            })
            .unwrap_or_else(|| {
                panic!(
                    "cannot find the pydevice repository (a directory holding tests/fixtures) \
                     above the current directory or the test executable; set {REPO_VAR} to it"
                )
            })
    })
}

fn is_root(dir: &Path) -> bool {
    dir.join("tests/fixtures").is_dir()
}

/// A path inside the repository, from its root: `repo_path("tests/fixtures/lang/x.py")`.
pub fn repo_path(relative: &str) -> PathBuf {
    repo_root().join(relative)
}

/// The text of a file inside the repository; panics naming the file when it cannot be read.
pub fn read_repo_file(relative: &str) -> String {
    let path = repo_path(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `pydevice` command-line binary: `$PYDEVICE_BIN` when set (on the GPU machine the
/// binary travels separately; `scripts/gpu_run.sh` sets it), else the one cargo built.
pub fn pydevice_bin() -> String {
    std::env::var("PYDEVICE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_pydevice").into())
}

/// Whether `PYDEVICE_BLESS` is set: tests then (re)write their expected files.
pub fn bless() -> bool {
    std::env::var_os("PYDEVICE_BLESS").is_some()
}

/// PTX as its golden file holds it: `//` comments (NVPTX's `// callseq N` numbering is not
/// deterministic) and trailing whitespace removed, everything else kept, one `\n` at the end.
pub fn ptx_golden_text(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    for line in ptx.lines() {
        let code = line.split_once("//").map_or(line, |(code, _)| code);
        out.push_str(code.trim_end());
        out.push('\n');
    }
    out
}

/// Compares `got` with the golden file `path`, or writes it when blessing. A missing golden
/// is a failure. `Err` says what differs and how to bless.
pub fn check_golden(path: &Path, got: &str, what: &str) -> Result<(), String> {
    if bless() {
        return std::fs::write(path, got).map_err(|e| format!("writing {}: {e}", path.display()));
    }
    match std::fs::read_to_string(path) {
        Ok(want) if want == got => Ok(()),
        Ok(want) => Err(format!(
            "{what} differs from {} (if the change is intended, rerun with PYDEVICE_BLESS=1 \
             and review the diff):\n{}",
            path.display(),
            first_difference(&want, got)
        )),
        Err(e) => Err(format!(
            "missing golden {} ({e}); run with PYDEVICE_BLESS=1 to write it",
            path.display()
        )),
    }
}

/// The first differing line of two texts, with a few lines of context.
fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let at = w
        .iter()
        .zip(&g)
        .position(|(a, b)| a != b)
        .unwrap_or(w.len().min(g.len()));
    let from = at.saturating_sub(3);
    let show = |v: &[&str]| v[from.min(v.len())..(at + 6).min(v.len())].join("\n");
    format!(
        "first difference at line {} (expected {} lines, got {}):\n--- expected\n{}\n--- actual\n{}",
        at + 1,
        w.len(),
        g.len(),
        show(&w),
        show(&g)
    )
}
