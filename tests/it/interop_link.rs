//! Python and CUDA C++ linked together, without a GPU: tests/interop/interop.py calls the
//! `extern "C" __device__` functions that tests/interop/interop.cu defines, and interop.cu
//! calls the Python `interop=True` functions through the header `pydevice abi --header`
//! writes. Our PTX is assembled with `ptxas -c`, the C++ is compiled with `nvcc -rdc=true`,
//! and `nvlink` links them for sm_90: an undefined symbol fails the link. The calling
//! conventions are compared too: the PTX signature of every function, as the caller declares
//! it and as the callee defines it, must be the same text.
//!
//! Without nvcc, nvlink or ptxas a test says so and passes, except when env `CI` is set
//! (scripts/deps.sh installs them there). The NVRTC test also needs libnvrtc (the
//! `nvidia-cuda-nvrtc` wheel or a CUDA installation) and is skipped without it.

use crate::support;

use pydevice::runtime::link::{compile_cuda, nvrtc_available, undefined_functions};
use pydevice::{Arch, CompileOptions, Module};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn skip(what: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{what}; CI must run this test (scripts/deps.sh installs what it needs)");
    }
    eprintln!("skipped: {what}");
}

struct Tools {
    nvcc: PathBuf,
    nvlink: PathBuf,
}

fn tools() -> Option<Tools> {
    use pydevice::toolkit;
    match (toolkit::nvcc(), toolkit::nvlink(), toolkit::ptxas()) {
        (Some(nvcc), Some(nvlink), Some(_)) => Some(Tools { nvcc, nvlink }),
        _ => {
            skip(&format!(
                "nvcc, nvlink or ptxas not found (searched {})",
                toolkit::searched()
            ));
            None
        }
    }
}

fn source_dir() -> PathBuf {
    support::repo_path("tests/interop")
}

fn scratch(tag: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("interop-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes `interop.h` (the CLI's header of interop.py) and a copy of interop.cu into `dir`.
fn cxx_sources(dir: &Path) {
    let py = source_dir().join("interop.py");
    let out = run(Command::new(env!("CARGO_BIN_EXE_pydevice"))
        .arg("abi")
        .arg(&py)
        .arg("--header"));
    ok(&out, "pydevice abi --header");
    let header = String::from_utf8_lossy(&out.stdout);
    // The header declares what C++ defines (checked by nvcc against the definitions) as well
    // as what it calls.
    for decl in [
        "extern \"C\" __device__ float cpp_scale(float x, float k);",
        "extern \"C\" __device__ float cpp_l1(float3 v);",
        "extern \"C\" __device__ pair py_make_pair(float x, cuda::std::int32_t n);",
        "extern \"C\" __device__ float py_sum(cuda::interoperable_array_descriptor<float, 1> xs);",
    ] {
        assert!(header.contains(decl), "{decl} missing from\n{header}");
    }
    std::fs::write(dir.join("interop.h"), &out.stdout).unwrap();
    std::fs::copy(source_dir().join("interop.cu"), dir.join("interop.cu")).unwrap();
}

/// Every entry of interop.py (its `interop=True` functions and its kernels), compiled for
/// sm_90: (name, PTX).
fn python_ptx() -> Vec<(String, String)> {
    let path = source_dir().join("interop.py");
    let module = Module::parse("interop.py", &std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|d| panic!("{d}"));
    let opts = CompileOptions {
        arch: Arch::SM_90,
        ..CompileOptions::default()
    };
    module
        .entries()
        .into_iter()
        .map(|e| {
            let args = e.annotated.expect("interop.py annotates every entry");
            let k = module
                .compile(&e.name, &args, &opts)
                .unwrap_or_else(|err| panic!("{}: {err}", e.name));
            (e.name, k.ptx)
        })
        .collect()
}

/// Assembles each PTX with `ptxas -c` into `dir`; returns the cubins' paths.
fn assemble(dir: &Path, ptx: &[(String, String)]) -> Vec<PathBuf> {
    ptx.iter()
        .map(|(name, text)| {
            let cubin = pydevice::toolkit::ptxas_compile(text, Arch::SM_90, true)
                .unwrap_or_else(|e| panic!("ptxas -c {name}: {e}\n{text}"));
            let p = dir.join(format!("{name}.cubin"));
            std::fs::write(&p, cubin).unwrap();
            p
        })
        .collect()
}

fn nvlink(t: &Tools, dir: &Path, inputs: &[PathBuf]) -> Output {
    run(Command::new(&t.nvlink)
        .arg("-arch=sm_90")
        .args(inputs)
        .arg("-o")
        .arg("linked.cubin")
        .current_dir(dir))
}

#[test]
fn python_and_cuda_cpp_link_with_nvlink() {
    let Some(t) = tools() else { return };
    let dir = scratch("nvlink");
    cxx_sources(&dir);
    let out = run(Command::new(&t.nvcc)
        .args([
            "-arch=sm_90",
            "-rdc=true",
            "-c",
            "interop.cu",
            "-o",
            "interop.o",
        ])
        .current_dir(&dir));
    ok(&out, "nvcc -rdc=true -c interop.cu");
    let ptx = python_ptx();
    let names: Vec<&str> = ptx.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "py_scale",
        "py_norm2",
        "py_momentum",
        "py_make_pair",
        "py_sum",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let cubins = assemble(&dir, &ptx);
    // py_twice_scale's module holds a `.weak` copy of py_scale, which py_scale's module defines.
    let twice = &ptx.iter().find(|(n, _)| n == "py_twice_scale").unwrap().1;
    assert!(twice.contains(".weak .func"), "{twice}");
    // Everything together: every reference is resolved, the weak copy yields.
    let mut all = cubins.clone();
    all.push(dir.join("interop.o"));
    ok(&nvlink(&t, &dir, &all), "nvlink of Python and C++");
    assert!(dir.join("linked.cubin").is_file());
    // Without the C++ object, the Python kernel's calls are unresolved, and nvlink says so.
    let out = nvlink(&t, &dir, &cubins);
    assert!(!out.status.success(), "nvlink must fail without interop.o");
    let msg = String::from_utf8_lossy(&out.stderr);
    for missing in [
        "cpp_scale",
        "cpp_l1",
        "cpp_momentum",
        "cpp_make_pair",
        "cpp_sum",
    ] {
        assert!(
            msg.contains(missing),
            "nvlink does not name {missing}:\n{msg}"
        );
    }
    // Without the Python functions, the C++ kernel's calls are unresolved.
    let kernel_only: Vec<PathBuf> = cubins
        .iter()
        .filter(|p| p.to_string_lossy().contains("py_calls_cpp"))
        .cloned()
        .chain([dir.join("interop.o")])
        .collect();
    let out = nvlink(&t, &dir, &kernel_only);
    assert!(
        !out.status.success(),
        "nvlink must fail without the py_ functions"
    );
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("py_momentum"), "{msg}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The signature of function `name` in PTX (declared `.extern` or defined `.visible`), with
/// the linkage word dropped and whitespace normalized.
fn signature(ptx: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = ptx.lines().collect();
    let start = lines.iter().position(|l| {
        (l.starts_with(".extern .func") || l.starts_with(".visible .func"))
            && l.trim_end_matches('(')
                .trim_end()
                .ends_with(&format!(" {name}"))
    })?;
    let end = start + lines[start..].iter().position(|l| l.trim() == ")")?;
    let text = lines[start..=end]
        .join(" ")
        .replacen(".extern", "", 1)
        .replacen(".visible", "", 1);
    let text = text.replace('(', " ( ").replace(')', " ) ");
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[test]
fn calls_across_languages_use_the_same_signatures() {
    let Some(t) = tools() else { return };
    let dir = scratch("signatures");
    cxx_sources(&dir);
    let out = run(Command::new(&t.nvcc)
        .args([
            "-arch=sm_90",
            "-rdc=true",
            "-ptx",
            "interop.cu",
            "-o",
            "interop.ptx",
        ])
        .current_dir(&dir));
    ok(&out, "nvcc -ptx interop.cu");
    let theirs = std::fs::read_to_string(dir.join("interop.ptx")).unwrap();
    let ours: String = python_ptx()
        .into_iter()
        .map(|(_, p)| p)
        .collect::<Vec<_>>()
        .join("\n");
    let mut differ = Vec::new();
    let names = [
        // C++ definitions, declared `extern` by our PTX.
        "cpp_scale",
        "cpp_l1",
        "cpp_momentum",
        "cpp_make_pair",
        "cpp_sum",
        // Our definitions, declared `extern` by nvcc's PTX.
        "py_scale",
        "py_norm2",
        "py_momentum",
        "py_make_pair",
        "py_sum",
        "py_twice_scale",
    ];
    for name in names {
        let (a, b) = (signature(&ours, name), signature(&theirs, name));
        assert!(
            a.is_some() && b.is_some(),
            "{name}: ours {a:?}, nvcc's {b:?}"
        );
        if a != b {
            differ.push(format!("{name}:\n  ours: {a:?}\n  nvcc: {b:?}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn undefined_symbols_are_named_before_linking() {
    let ptx = python_ptx();
    let texts: Vec<&str> = ptx.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(
        undefined_functions(&texts),
        vec![
            "cpp_l1",
            "cpp_make_pair",
            "cpp_momentum",
            "cpp_scale",
            "cpp_sum"
        ]
    );
}

/// NVRTC compiles interop.cu (with the generated header) as relocatable code; its PTX
/// assembles with `ptxas -c` and links with ours through nvlink.
#[test]
fn nvrtc_output_links_with_ours() {
    let Some(t) = tools() else { return };
    if !nvrtc_available() {
        eprintln!("skipped: libnvrtc not found (pip install nvidia-cuda-nvrtc)");
        return;
    }
    let dir = scratch("nvrtc");
    cxx_sources(&dir);
    let src = std::fs::read_to_string(dir.join("interop.cu")).unwrap();
    let cxx = compile_cuda(
        "interop.cu",
        &src,
        Arch::SM_90,
        &[format!("-I{}", dir.display())],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(cxx.contains(".visible .func"), "{cxx}");
    // tests/gpu/interop.rs inlines the header instead of passing -I: that compiles too.
    let header = std::fs::read_to_string(dir.join("interop.h")).unwrap();
    let inlined = src.replace("#include \"interop.h\"", &header);
    assert_ne!(inlined, src);
    compile_cuda("interop.cu", &inlined, Arch::SM_90, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut ptx = python_ptx();
    ptx.push(("interop_cu".into(), cxx.clone()));
    let texts: Vec<&str> = ptx.iter().map(|(_, p)| p.as_str()).collect();
    assert!(undefined_functions(&texts).is_empty());
    let cubins = assemble(&dir, &ptx);
    ok(&nvlink(&t, &dir, &cubins), "nvlink of our PTX and NVRTC's");
    // A compile error comes back as a Link error carrying NVRTC's log.
    let e = compile_cuda(
        "bad.cu",
        "__device__ int f() { return nope; }",
        Arch::SM_90,
        &[],
    )
    .unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every kind of parameter and result of an `extern` function (tests/interop/param_kinds.py):
/// the PTX signature our call site declares is nvcc's signature of a C++ definition with the
/// prototype the header gives.
#[test]
fn extern_signatures_of_every_kind_match_nvcc() {
    let Some(t) = tools() else { return };
    let dir = scratch("kinds");
    let py = source_dir().join("param_kinds.py");
    let module = Module::parse("param_kinds.py", &std::fs::read_to_string(&py).unwrap())
        .unwrap_or_else(|d| panic!("{d}"));
    let out = run(Command::new(env!("CARGO_BIN_EXE_pydevice"))
        .arg("abi")
        .arg(&py)
        .arg("--header"));
    ok(&out, "pydevice abi --header");
    std::fs::write(dir.join("param_kinds.h"), &out.stdout).unwrap();
    let externs = module.extern_functions();
    assert_eq!(externs.len(), 6, "{externs:?}");
    let mut stubs = String::from("#include \"param_kinds.h\"\n\n");
    for f in &externs {
        let params: Vec<String> = f
            .params
            .iter()
            .map(|(n, ty)| format!("{} {n}", pydevice::abi::layout_of(ty).cxx))
            .collect();
        let (ret, body) = match &f.ret {
            pydevice::types::Type::None => ("void".to_string(), ""),
            ty => (pydevice::abi::layout_of(ty).cxx, " return {};"),
        };
        stubs.push_str(&format!(
            "extern \"C\" __device__ {ret} {}({}) {{{body} }}\n",
            f.symbol,
            params.join(", ")
        ));
    }
    std::fs::write(dir.join("stubs.cu"), &stubs).unwrap();
    let out = run(Command::new(&t.nvcc)
        .args([
            "-arch=sm_90",
            "-rdc=true",
            "-ptx",
            "stubs.cu",
            "-o",
            "stubs.ptx",
        ])
        .current_dir(&dir));
    ok(&out, "nvcc -ptx stubs.cu");
    let theirs = std::fs::read_to_string(dir.join("stubs.ptx")).unwrap();
    let k = module
        .compile(
            "k",
            &module.entries()[0].annotated.clone().unwrap(),
            &CompileOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    pydevice::toolkit::ptxas_check(&k.ptx, Arch::SM_90).unwrap_or_else(|e| panic!("{e}"));
    let mut differ = Vec::new();
    for f in &externs {
        let (a, b) = (signature(&k.ptx, &f.symbol), signature(&theirs, &f.symbol));
        assert!(
            a.is_some() && b.is_some(),
            "{}: ours {a:?}, nvcc's {b:?}",
            f.symbol
        );
        if a != b {
            differ.push(format!("{}:\n  ours: {a:?}\n  nvcc: {b:?}", f.symbol));
        }
    }
    assert!(
        differ.is_empty(),
        "{}\n--- stubs ---\n{stubs}",
        differ.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel that launches a kernel from device code (§18.3): its PTX, assembled with
/// `ptxas -c` for sm_80 and sm_90, leaves the device runtime's CDP2 entry points undefined, and links with the device runtime (`nvlink -lcudadevrt`), which the runtime
/// adds to the driver's JIT link the same way; without it the link fails naming them.
#[test]
fn device_side_launch_links_with_the_device_runtime() {
    let Some(t) = tools() else { return };
    let Some(lib) = pydevice::toolkit::cudadevrt() else {
        skip("libcudadevrt.a not found");
        return;
    };
    let src = std::fs::read_to_string(support::repo_path("tests/fixtures/lang/device_launch.py"))
        .expect("fixture");
    let module = Module::parse("device_launch.py", &src).unwrap_or_else(|d| panic!("{d}"));
    let sig = pydevice::types::signature::parse_signature("float32[::1], float32[::1], int32")
        .expect("signature")
        .0;
    for arch in [Arch::SM_80, Arch::SM_90] {
        let k = module
            .compile(
                "parent",
                &sig,
                &CompileOptions {
                    arch,
                    ..CompileOptions::default()
                },
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            undefined_functions(&[&k.ptx]),
            vec![
                "__cudaCDP2GetLastError",
                "__cudaCDP2GetParameterBufferV2",
                "__cudaCDP2LaunchDeviceV2"
            ]
        );
        assert!(k.ptx.contains(".entry scale(") && k.ptx.contains("mov.u64"));
        let dir = scratch(&format!("cdp-{arch}"));
        let cubin = dir.join("parent.cubin");
        std::fs::write(
            &cubin,
            pydevice::toolkit::ptxas_compile(&k.ptx, arch, true).expect("ptxas -c"),
        )
        .unwrap();
        let link = |with_runtime: bool| {
            let mut cmd = Command::new(&t.nvlink);
            cmd.arg(format!("-arch={arch}")).arg(&cubin);
            if with_runtime {
                cmd.arg(format!("-L{}", lib.parent().unwrap().display()))
                    .arg("-lcudadevrt");
            }
            run(cmd.arg("-o").arg(dir.join("linked.cubin")))
        };
        ok(&link(true), "nvlink with the device runtime");
        let out = link(false);
        assert!(
            !out.status.success(),
            "nvlink must fail without libcudadevrt"
        );
        let msg = String::from_utf8_lossy(&out.stderr);
        assert!(msg.contains("__cudaCDP2LaunchDeviceV2"), "{msg}");
    }
}
