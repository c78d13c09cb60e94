//! The C API's tests: the committed `include/pydevice.h` is what cbindgen makes of
//! `capi/src/lib.rs` today; the C program `capi/tests/c/test_capi.c`, compiled with the
//! system `cc` against the crate's cdylib, passes (launching on a GPU where there is one,
//! skipping the launch with a message otherwise; `PYDEVICE_REQUIRE_GPU=1` makes a skip a
//! failure); and the header builds from C++ beside `cuda.h`'s stream type.
//!
//! Regenerate the header with `PYDEVICE_BLESS=1 cargo test -p pydevice-capi header`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    crate_dir().join("../include/pydevice.h")
}

/// The header cbindgen makes of the crate now.
fn generated_header() -> String {
    let dir = crate_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen failed")
        .write(&mut out);
    String::from_utf8(out).expect("UTF-8 header")
}

#[test]
fn header_is_current() {
    let now = generated_header();
    let path = header_path();
    if std::env::var_os("PYDEVICE_BLESS").is_some() {
        std::fs::write(&path, &now).expect("write include/pydevice.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == now,
        "include/pydevice.h is stale: regenerate it with \
         `PYDEVICE_BLESS=1 cargo test -p pydevice-capi header` and commit it"
    );
}

/// The directory holding the crate's cdylib (`libpydevice_capi.so`): cargo builds it beside
/// this test's executable, in `target/<profile>/deps`.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    for dir in [
        deps.clone(),
        deps.parent().map(Path::to_path_buf).unwrap_or_default(),
    ] {
        if dir.join("libpydevice_capi.so").exists() {
            return dir;
        }
    }
    panic!(
        "libpydevice_capi.so is not beside {} (cargo builds it with the tests)",
        exe.display()
    );
}

#[test]
fn c_program_passes() {
    let lib = library_dir();
    let exe = tempfile_dir().join("test_capi");
    let source = crate_dir().join("tests/c/test_capi.c");
    let include = crate_dir().join("../include");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let build = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&source)
        .arg("-I")
        .arg(&include)
        .arg(lib.join("libpydevice_capi.so"))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-ldl", "-lm"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{cc}`: {e}"));
    assert!(
        build.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let run = Command::new(&exe).output().expect("run test_capi");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "test_capi failed ({}):\n{stdout}\n{stderr}",
        run.status
    );
    let verdict = stdout.lines().last().unwrap_or_default();
    assert!(verdict.starts_with("launch: "), "{stdout}");
    // Visible with `--nocapture`: whether the GPU part ran.
    println!("{verdict}");
    if std::env::var_os("PYDEVICE_REQUIRE_GPU").is_some() {
        assert_eq!(verdict, "launch: ok", "a GPU was required:\n{stdout}");
    }
}

#[test]
fn header_works_from_cpp() {
    let lib = library_dir();
    let exe = tempfile_dir().join("header_check");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let build = Command::new(&cxx)
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            "-o",
        ])
        .arg(&exe)
        .arg(crate_dir().join("tests/c/header_check.cpp"))
        .arg("-I")
        .arg(crate_dir().join("../include"))
        .arg(lib.join("libpydevice_capi.so"))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{cxx}`: {e}"));
    assert!(
        build.status.success(),
        "{cxx} failed:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let run = Command::new(&exe).status().expect("run header_check");
    assert!(run.success(), "header_check failed: {run}");
}

/// A fresh directory under cargo's per-test temporary directory.
fn tempfile_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("capi-c-test");
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}
