//! Compiles the small C++ part of the PTX back end (`src/lower/ptx/pipeline.cpp`), which keeps
//! LLVM's pass pipelines alive between compiles, against the same LLVM 19 that inkwell links.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let source = "src/lower/ptx/pipeline.cpp";
    println!("cargo:rerun-if-changed={source}");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_191_PREFIX");
    let prefix = std::env::var("LLVM_SYS_191_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-19".into());
    let config = PathBuf::from(&prefix).join("bin").join("llvm-config");
    let flags = match Command::new(&config).arg("--cxxflags").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => panic!(
            "{} --cxxflags failed: {}",
            config.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "cannot run {} ({e}); install llvm-19-dev or set LLVM_SYS_191_PREFIX",
            config.display()
        ),
    };
    let mut build = cc::Build::new();
    build.cpp(true).file(source).warnings(false);
    for flag in flags.split_whitespace() {
        // The standard and include path come from llvm-config; optimization from cargo.
        if !flag.starts_with("-O") && !flag.starts_with("-g") {
            build.flag(flag);
        }
    }
    build.compile("pydevice_llvm_pipeline");
}
