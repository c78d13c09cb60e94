//! Finding the CUDA files the compiler and its tests use without a GPU: `libdevice.10.bc`
//! (math functions, linked into kernels that use them), `ptxas` (to validate PTX), and
//! `nvcc` and `nvlink` (to check that our code links with CUDA C++).
//!
//! Looked for, in order: `$PYDEVICE_LIBDEVICE` / `$PYDEVICE_PTXAS`, `$CUDA_HOME` and
//! `$CUDA_PATH`, `/usr/local/cuda`, and the `nvidia-cuda-nvcc` wheel in the site-packages of
//! `python3` (`nvidia/cu13`, `nvidia/cuda_nvcc`).

use std::path::PathBuf;
use std::sync::OnceLock;

fn roots() -> &'static [PathBuf] {
    static ROOTS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut r = Vec::new();
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            if let Some(v) = std::env::var_os(var) {
                r.push(PathBuf::from(v));
            }
        }
        r.push(PathBuf::from("/usr/local/cuda"));
        if let Some(site) = python_site_packages() {
            for sub in ["nvidia/cu13", "nvidia/cuda_nvcc", "nvidia/cu12"] {
                r.push(site.join(sub));
            }
        }
        r
    })
}

fn python_site_packages() -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    let p = PathBuf::from(s.trim());
    p.is_dir().then_some(p)
}

fn find(env: &str, rel: &[&str]) -> Option<PathBuf> {
    if let Some(v) = std::env::var_os(env) {
        let p = PathBuf::from(v);
        if p.is_file() {
            return Some(p);
        }
    }
    roots()
        .iter()
        .flat_map(|root| rel.iter().map(move |r| root.join(r)))
        .find(|p| p.is_file())
}

/// The path of `libdevice.10.bc`, if one is installed.
pub fn libdevice() -> Option<PathBuf> {
    static P: OnceLock<Option<PathBuf>> = OnceLock::new();
    P.get_or_init(|| find("PYDEVICE_LIBDEVICE", &["nvvm/libdevice/libdevice.10.bc"]))
        .clone()
}

/// The path of `ptxas`, if one is installed.
pub fn ptxas() -> Option<PathBuf> {
    static P: OnceLock<Option<PathBuf>> = OnceLock::new();
    P.get_or_init(|| find("PYDEVICE_PTXAS", &["bin/ptxas"]))
        .clone()
}

/// The path of `nvcc`, if one is installed.
pub fn nvcc() -> Option<PathBuf> {
    static P: OnceLock<Option<PathBuf>> = OnceLock::new();
    P.get_or_init(|| find("PYDEVICE_NVCC", &["bin/nvcc"]))
        .clone()
}

/// The path of `nvlink` (the device linker), if one is installed.
pub fn nvlink() -> Option<PathBuf> {
    static P: OnceLock<Option<PathBuf>> = OnceLock::new();
    P.get_or_init(|| find("PYDEVICE_NVLINK", &["bin/nvlink"]))
        .clone()
}

/// The path of the CUDA device runtime library `libcudadevrt.a`, which kernels that launch
/// kernels from device code are linked with (§18.3), if one is installed.
pub fn cudadevrt() -> Option<PathBuf> {
    static P: OnceLock<Option<PathBuf>> = OnceLock::new();
    P.get_or_init(|| {
        find(
            "PYDEVICE_CUDADEVRT",
            &[
                "lib64/libcudadevrt.a",
                "lib/libcudadevrt.a",
                "lib/x64/cudadevrt.lib",
            ],
        )
    })
    .clone()
}

/// The CUDA include directories that exist (`include`, and `include/cccl` where CUDA 13
/// keeps `cuda/std`), for compiling CUDA C++ at run time with NVRTC.
pub fn include_dirs() -> Vec<PathBuf> {
    roots()
        .iter()
        .flat_map(|r| [r.join("include"), r.join("include/cccl")])
        .filter(|d| d.is_dir())
        .collect()
}

/// The CUDA library directories that exist (`lib64`, `lib`), where `libnvrtc` may be.
pub fn library_dirs() -> Vec<PathBuf> {
    roots()
        .iter()
        .flat_map(|r| [r.join("lib64"), r.join("lib")])
        .filter(|d| d.is_dir())
        .collect()
}

/// Where the search looked, for error messages.
pub fn searched() -> String {
    roots()
        .iter()
        .map(|p: &PathBuf| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `ptxas` on a PTX text for an architecture; `Ok(())` when it is accepted, else
/// ptxas's messages. PTX that declares `.extern` functions (calls into code linked in later)
/// is compiled as relocatable code (`-c`), the only mode in which ptxas accepts them.
pub fn ptxas_check(ptx: &str, arch: crate::target::Arch) -> Result<(), String> {
    ptxas_compile(ptx, arch, ptx.contains(".extern .func")).map(|_| ())
}

/// Assembles PTX into a cubin with `ptxas`; `relocatable` (`-c`) leaves calls of external
/// functions for `nvlink` (or the driver's JIT linker) to resolve. The PTX of `debug=True`
/// kernels (marked on its first line) is assembled with `-g`, as the runtime's JIT does.
/// Returns the cubin's bytes, or ptxas's messages.
pub fn ptxas_compile(
    ptx: &str,
    arch: crate::target::Arch,
    relocatable: bool,
) -> Result<Vec<u8>, String> {
    let ptxas = ptxas().ok_or_else(|| format!("ptxas not found (searched {})", searched()))?;
    let dir = std::env::temp_dir().join(format!(
        "pydevice-ptxas-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = dir.join("k.ptx");
    std::fs::write(&src, ptx).map_err(|e| e.to_string())?;
    let mut cmd = std::process::Command::new(&ptxas);
    cmd.arg(format!("-arch={arch}"));
    if relocatable {
        cmd.arg("-c");
    }
    // The mark `lower::ptx::DEBUG_MARK` begins with (toolkit is below `lower`).
    if ptx.starts_with("// pydevice: debug=True") {
        cmd.arg("-g");
    }
    let out = cmd
        .arg(&src)
        .arg("-o")
        .arg(dir.join("k.cubin"))
        .output()
        .map_err(|e| format!("running {}: {e}", ptxas.display()))?;
    let cubin = std::fs::read(dir.join("k.cubin"));
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        cubin.map_err(|e| format!("reading ptxas's output: {e}"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
