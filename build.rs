//! Compiles the small C++ part of the PTX back end (`src/lower/ptx/pipeline.cpp`), which keeps
//! LLVM's pass pipelines alive between compiles, against the same LLVM 19 that inkwell links,
//! and computes the build identity (`PYDEVICE_BUILD_ID`) that the on-disk kernel cache keys
//! on: the SHA-256 of every file under `src/`, `Cargo.lock` and LLVM's version, so that a
//! code-generation change never reuses kernels compiled by another build.
//!
//! LLVM is needed only with the `ptx` feature. `llvm-config` is looked for as llvm-sys does:
//! `$LLVM_SYS_191_PREFIX/bin/llvm-config`, else `llvm-config-19` or `llvm-config` on `PATH`
//! (the latter only if it reports LLVM 19). When none is found the build stops with a message
//! saying what to install or set, not a panic.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file under `dir`, sorted, so the hash does not depend on directory order.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => files_under(&path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}

fn build_id(llvm_version: &str) -> String {
    let mut files = Vec::new();
    files_under(Path::new("src"), &mut files);
    files.push(PathBuf::from("Cargo.lock"));
    files.sort();
    let mut h = Sha256::new();
    h.update(format!(
        "pydevice {}\0",
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default()
    ));
    h.update(format!("llvm {llvm_version}\0"));
    // The features change what is compiled.
    for feature in ["PTX", "HOST", "RUNTIME"] {
        let on = std::env::var_os(format!("CARGO_FEATURE_{feature}")).is_some();
        h.update(format!("{feature}={on}\0"));
    }
    for f in &files {
        let bytes = std::fs::read(f).unwrap_or_default();
        h.update(f.to_string_lossy().as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Stops the build with `message` (cargo shows the build script's stderr).
fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}

/// Runs `config arg`, its output as text, or why it failed.
fn run(config: &Path, arg: &str) -> Result<String, String> {
    match Command::new(config).arg(arg).output() {
        Ok(out) if out.status.success() => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(out) => Err(format!(
            "`{} {arg}` failed: {}",
            config.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {}: {e}", config.display())),
    }
}

/// The `llvm-config` of LLVM 19: through `LLVM_SYS_191_PREFIX`, else on `PATH`.
fn find_llvm_config() -> Result<PathBuf, String> {
    if let Some(prefix) = std::env::var_os("LLVM_SYS_191_PREFIX") {
        let config = PathBuf::from(prefix).join("bin").join("llvm-config");
        return match run(&config, "--version") {
            Ok(_) => Ok(config),
            Err(why) => Err(format!(
                "LLVM_SYS_191_PREFIX is set, but {why}; it must be the prefix of an LLVM 19 \
                 installation (the folder with bin/llvm-config, such as /usr/lib/llvm-19)"
            )),
        };
    }
    for name in ["llvm-config-19", "llvm-config"] {
        let config = PathBuf::from(name);
        if let Ok(version) = run(&config, "--version")
            && version.trim().starts_with("19.")
        {
            return Ok(config);
        }
    }
    Err(
        "pydevice's `ptx` feature needs LLVM 19 (with its static libraries), and no \
         llvm-config of LLVM 19 was found: set LLVM_SYS_191_PREFIX to its prefix (for \
         example /usr/lib/llvm-19, in the [env] table of .cargo/config.toml), or put \
         llvm-config-19 on PATH (Debian and Ubuntu: apt-get install llvm-19-dev \
         libpolly-19-dev zlib1g-dev libzstd-dev); or build without the `ptx` feature \
         (default-features = false)"
            .into(),
    )
}

fn main() {
    let source = "src/lower/ptx/pipeline.cpp";
    // Any change under src/ changes the build identity; the C++ is recompiled only when it
    // or its flags change (see the stamp below).
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_191_PREFIX");
    if std::env::var_os("CARGO_FEATURE_PTX").is_none() {
        // No back end, so no LLVM: the build identity says so.
        println!("cargo:rustc-env=PYDEVICE_BUILD_ID={}", build_id("none"));
        return;
    }
    let config = find_llvm_config().unwrap_or_else(|e| fail(&e));
    let flags = run(&config, "--cxxflags").unwrap_or_else(|e| fail(&e));
    let llvm_version = run(&config, "--version").unwrap_or_else(|e| fail(&e));
    println!(
        "cargo:rustc-env=PYDEVICE_BUILD_ID={}",
        build_id(llvm_version.trim())
    );

    // The C++ library, rebuilt only when its source, its flags or the profile change.
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let lib = out_dir.join("libpydevice_llvm_pipeline.a");
    let stamp_path = out_dir.join("pydevice_llvm_pipeline.stamp");
    let stamp = {
        let mut h = Sha256::new();
        h.update(std::fs::read(source).unwrap_or_default());
        h.update(flags.as_bytes());
        for var in ["PROFILE", "OPT_LEVEL", "DEBUG", "TARGET", "CXX", "CXXFLAGS"] {
            h.update(format!("{var}={:?}\0", std::env::var(var).ok()));
        }
        format!("{:x}", h.finalize())
    };
    if lib.exists() && std::fs::read_to_string(&stamp_path).ok().as_deref() == Some(&stamp) {
        println!("cargo:rustc-link-search=native={}", out_dir.display());
        println!("cargo:rustc-link-lib=static=pydevice_llvm_pipeline");
        println!("cargo:rustc-link-lib=stdc++");
        return;
    }
    let mut build = cc::Build::new();
    build.cpp(true).file(source).warnings(false);
    for flag in flags.split_whitespace() {
        // The standard and include path come from llvm-config; optimization from cargo.
        if !flag.starts_with("-O") && !flag.starts_with("-g") {
            build.flag(flag);
        }
    }
    build.compile("pydevice_llvm_pipeline");
    let _ = std::fs::write(&stamp_path, stamp);
}
