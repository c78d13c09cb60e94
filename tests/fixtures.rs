//! Fixture tests: every `tests/fixtures/**/*.py` is a case, so adding a case is adding a file.
//!
//! A fixture starts with header comments:
//!
//! ```text
//! # entry: kernel_name
//! # sig: float32[:], int32
//! # arch: sm_80            (optional; default sm_90)
//! ```
//!
//! Files under `errors/` must fail to compile; their rendered diagnostics are compared with
//! the `.stderr` file beside them. Every other fixture must compile, its PTX must be accepted
//! by `ptxas`, and when a `.ir` file is beside it, the printed IR must match it.
//! Set `PYDEVICE_BLESS=1` to (re)write the expected files.

use pydevice::types::signature::parse_signature;
use pydevice::{Arch, CompileOptions, Module};
use std::path::{Path, PathBuf};

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no fixtures in {}", root.display());
    out
}

struct Header {
    entry: Option<String>,
    sig: Option<String>,
    arch: Arch,
}

fn header(src: &str) -> Header {
    let mut h = Header {
        entry: None,
        sig: None,
        arch: Arch::DEFAULT,
    };
    for line in src.lines().take_while(|l| l.starts_with('#')) {
        let l = line.trim_start_matches('#').trim();
        if let Some(v) = l.strip_prefix("entry:") {
            h.entry = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("sig:") {
            h.sig = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("arch:") {
            h.arch = v.trim().parse().expect("bad arch in fixture header");
        }
    }
    h
}

fn bless() -> bool {
    std::env::var_os("PYDEVICE_BLESS").is_some()
}

fn name_of(p: &Path) -> String {
    format!(
        "{}/{}",
        p.parent()
            .and_then(|d| d.file_name())
            .unwrap_or_default()
            .to_string_lossy(),
        p.file_name().unwrap_or_default().to_string_lossy()
    )
}

/// Compiles a fixture; `Err` carries the rendered diagnostics.
fn compile(path: &Path) -> Result<(String, String, Arch), String> {
    let src = std::fs::read_to_string(path).expect("read fixture");
    let h = header(&src);
    let module = Module::parse(&name_of(path), &src).map_err(|d| d.render())?;
    let entry = h.entry.expect("fixture needs `# entry:`");
    let args = match h.sig.as_deref() {
        Some(sig) => parse_signature(sig).expect("bad sig in fixture header").0,
        // No `# sig:`: the decorator's signature (numba's `@cuda.jit("void(...)")`).
        None => module
            .entries()
            .into_iter()
            .find(|e| e.name == entry)
            .and_then(|e| e.annotated)
            .unwrap_or_default(),
    };
    let spec = module
        .specialize_for(&entry, &args, h.arch)
        .map_err(|d| d.render())?;
    pydevice::ir::validate(spec.program()).map_err(|e| e.to_string())?;
    let ir = spec.program().to_string();
    let k = spec
        .to_ptx(&CompileOptions {
            arch: h.arch,
            ..CompileOptions::default()
        })
        .map_err(|e| e.to_string())?;
    Ok((ir, k.ptx, h.arch))
}

fn ptxas_required() -> bool {
    std::env::var_os("CI").is_some() || std::env::var_os("PYDEVICE_REQUIRE_PTXAS").is_some()
}

fn run_positive(dir: &str) {
    let have_ptxas = pydevice::toolkit::ptxas().is_some();
    if !have_ptxas {
        assert!(
            !ptxas_required(),
            "ptxas is required in CI but was not found (searched {})",
            pydevice::toolkit::searched()
        );
        eprintln!("note: ptxas not found; PTX of fixtures is not validated (run scripts/setup.sh)");
    }
    let mut failures = Vec::new();
    for path in fixtures(dir) {
        let name = name_of(&path);
        match compile(&path) {
            Err(e) => failures.push(format!("{name}: failed to compile:\n{e}")),
            Ok((ir, ptx, arch)) => {
                let ir_path = path.with_extension("ir");
                if bless() {
                    std::fs::write(&ir_path, &ir).expect("write .ir");
                } else if let Ok(want) = std::fs::read_to_string(&ir_path)
                    && want != ir
                {
                    failures.push(format!(
                        "{name}: IR differs from {}:\n--- expected\n{want}\n--- actual\n{ir}",
                        ir_path.display()
                    ));
                }
                if have_ptxas && let Err(e) = pydevice::toolkit::ptxas_check(&ptx, arch) {
                    failures.push(format!(
                        "{name}: ptxas rejected the PTX for {arch}:\n{e}\n{ptx}"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn language_fixtures_compile_and_pass_ptxas() {
    run_positive("lang");
}

#[test]
fn numba_dialect_fixtures_compile_and_pass_ptxas() {
    run_positive("numba");
}

#[test]
fn cupyx_dialect_fixtures_compile_and_pass_ptxas() {
    run_positive("cupyx");
}

#[test]
fn error_fixtures_report_the_expected_diagnostics() {
    let mut failures = Vec::new();
    for path in fixtures("errors") {
        let name = name_of(&path);
        let expected_path = path.with_extension("stderr");
        let got = match compile(&path) {
            Ok(_) => {
                failures.push(format!("{name}: compiled, but it must be rejected"));
                continue;
            }
            Err(e) => e,
        };
        assert!(!got.contains("internal"), "{name}: internal error:\n{got}");
        if bless() {
            std::fs::write(&expected_path, &got).expect("write .stderr");
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(want) if want == got => {}
            Ok(want) => failures.push(format!(
                "{name}: diagnostics differ:\n--- expected\n{want}\n--- actual\n{got}"
            )),
            Err(_) => failures.push(format!(
                "{name}: missing {} (run with PYDEVICE_BLESS=1)",
                expected_path.display()
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The back end keeps its LLVM pass pipelines alive between compiles on a thread
/// (`src/lower/ptx/pipeline.cpp`). Compiling every fixture one after another on one thread
/// must give, for each, the PTX that a fresh thread (fresh pipelines) gives. Comments are
/// left out of the comparison: NVPTX numbers call sequences (`// callseq 3, 0`) with a counter
/// that lives in the target machine.
#[test]
fn reused_pipelines_give_the_same_ptx_as_fresh_ones() {
    let paths: Vec<PathBuf> = ["lang", "numba", "cupyx"]
        .iter()
        .flat_map(|d| fixtures(d))
        .collect();
    // Twice over, so every fixture also runs after all the others.
    let mut reused = Vec::new();
    for round in 0..2 {
        for path in &paths {
            let ptx = compile(path).map(|(_, ptx, _)| without_comments(&ptx));
            if round == 1 {
                reused.push(ptx);
            }
        }
    }
    let mut differ = Vec::new();
    for (path, reused) in paths.iter().zip(reused) {
        let p = path.clone();
        let fresh =
            std::thread::spawn(move || compile(&p).map(|(_, ptx, _)| without_comments(&ptx)))
                .join()
                .expect("compile thread panicked");
        if fresh != reused {
            differ.push(name_of(path));
        }
    }
    assert!(
        differ.is_empty(),
        "PTX from reused pipelines differs from fresh pipelines for: {differ:?}"
    );
}

fn without_comments(ptx: &str) -> String {
    ptx.lines()
        .map(|l| l.split("//").next().unwrap_or_default().trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}
