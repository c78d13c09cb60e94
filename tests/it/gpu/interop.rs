//! Python and CUDA C++ calling each other on the GPU (tests/interop/interop.py and
//! interop.cu): the C++ is compiled at run time by NVRTC, linked with our PTX by the driver's
//! JIT linker ([`Device::link`]), and every result is checked against a CPU reference on
//! random inputs.
//!
//! - `cuda_cpp_kernel_calls_python_functions`: a C++ kernel calls Python `interop=True`
//!   functions (scalars, a vector, a struct by value and as a result, an array descriptor,
//!   and one that calls another, whose module holds a `.weak` copy of it).
//! - `python_kernel_calls_cuda_cpp_functions`: a Python kernel calls C++ `extern "C"
//!   __device__` functions declared with `@device.func(extern=True)`.
//! - `python_kernel_launched_like_cpp_host_code`: a Python `interop=True` kernel launched by
//!   name through the raw `cuLaunchKernel` with parameters packed as C structs, as a C++ host
//!   program would.
//! - `missing_cuda_cpp_is_a_link_error_naming_the_symbols`.
//!
//! They skip without a GPU, and without NVRTC (libnvrtc).

use crate::gpu::{Dev, Rng, arch_for, bytes_of, device, from_bytes, vec1};
use pydevice::runtime::link::nvrtc_available;
use pydevice::runtime::{Device, LaunchConfig, LinkInput, LinkedModule, RuntimeError};
use pydevice::{CompileOptions, CompiledKernel, Module};
use std::ffi::c_void;

const PY: &str = include_str!("../../interop/interop.py");
const CU: &str = include_str!("../../interop/interop.cu");

fn ready(test: &str) -> Option<Dev> {
    let dev = device(test)?;
    if !nvrtc_available() {
        eprintln!("skipped {test}: libnvrtc not found");
        return None;
    }
    Some(dev)
}

/// The C++ header of interop.py, as `pydevice abi --header` writes it.
fn header(module: &Module) -> String {
    let mut functions = Vec::new();
    for e in module.entries() {
        if !module.is_interop(&e.name) {
            continue;
        }
        let args = e.annotated.expect("annotated");
        let spec = module.specialize(&e.name, &args).expect("specialize");
        let ret = spec.program().functions[spec.program().entry].ret.clone();
        functions.push(pydevice::abi::header::FunctionDecl::new(
            &spec.abi(),
            e.is_kernel,
            ret,
        ));
    }
    functions.extend(module.extern_functions());
    pydevice::abi::header::header("interop", &module.structs(), &functions)
}

/// Every entry of interop.py compiled for the device, and the whole program linked with
/// interop.cu (compiled by NVRTC, the header inlined in place of its `#include`).
fn link_all(dev: &Dev) -> (LinkedModule, Vec<(String, CompiledKernel)>) {
    let module = Module::parse("interop.py", PY).unwrap_or_else(|d| panic!("{d}"));
    let opts = CompileOptions {
        arch: arch_for(dev),
        ..CompileOptions::default()
    };
    let compiled: Vec<(String, CompiledKernel)> = module
        .entries()
        .into_iter()
        .map(|e| {
            let args = e.annotated.expect("annotated");
            let k = module
                .compile(&e.name, &args, &opts)
                .unwrap_or_else(|err| panic!("{}: {err}", e.name));
            (e.name, k)
        })
        .collect();
    let cu = CU.replace("#include \"interop.h\"", &header(&module));
    let mut inputs: Vec<LinkInput> = compiled
        .iter()
        .map(|(name, k)| LinkInput::compiled(name, k))
        .collect();
    inputs.push(LinkInput::cuda("interop.cu", &cu));
    let linked = dev.link(&inputs).unwrap_or_else(|e| panic!("{e}"));
    (linked, compiled)
}

fn kernel_of<'a>(compiled: &'a [(String, CompiledKernel)], name: &str) -> &'a CompiledKernel {
    &compiled.iter().find(|(n, _)| n == name).expect(name).1
}

/// Launches `f` through the raw driver with one pointer per parameter, as C++ host code does.
fn raw_launch(
    dev: &Device,
    f: cudarc::driver::sys::CUfunction,
    n: usize,
    params: &mut [*mut c_void],
) {
    // SAFETY: the context is the device's primary context; `f` belongs to a module loaded in
    // it; each pointer in `params` points at a value laid out as the kernel's parameter.
    unsafe {
        cudarc::driver::result::ctx::set_current(dev.cu_context()).expect("set context");
        cudarc::driver::result::launch_kernel(
            f,
            (n.div_ceil(128) as u32, 1, 1),
            (128, 1, 1),
            0,
            std::ptr::null_mut(),
            params,
        )
        .expect("cuLaunchKernel");
    }
    dev.synchronize().expect("synchronize");
}

/// `cuda::interoperable_array_descriptor<T, 1>` as C lays it out.
#[repr(C)]
#[derive(Clone, Copy)]
struct Descriptor1 {
    data: u64,
    shape: [u64; 1],
    strides: [u64; 1],
}

/// The `pair` struct of interop.py as C lays it out.
#[repr(C)]
#[derive(Clone, Copy)]
struct Pair {
    a: f32,
    b: i32,
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-4 * want.abs().max(1.0)
}

struct Inputs {
    xs: Vec<f32>,
    masses: Vec<f64>,
    ws: Vec<f32>,
}

fn inputs(seed: u64, n: usize) -> Inputs {
    let mut r = Rng(seed);
    Inputs {
        xs: (0..n).map(|_| r.f32(-4.0, 4.0)).collect(),
        masses: (0..n).map(|_| f64::from(r.f32(0.5, 10.0))).collect(),
        ws: (0..8).map(|_| r.f32(-1.0, 1.0)).collect(),
    }
}

#[test]
fn cuda_cpp_kernel_calls_python_functions() {
    let Some(dev) = ready("cuda_cpp_kernel_calls_python_functions") else {
        return;
    };
    let (linked, _) = link_all(&dev);
    let n = 10_007;
    let inp = inputs(31, n);
    let xs = dev.upload(&bytes_of(&inp.xs)).expect("upload");
    let masses = dev.upload(&bytes_of(&inp.masses)).expect("upload");
    let ws = dev.upload(&bytes_of(&inp.ws)).expect("upload");
    let out = dev.upload(&vec![0u8; n * 8]).expect("upload");
    let mut p_xs = dev.address(&xs);
    let mut p_masses = dev.address(&masses);
    let mut p_out = dev.address(&out);
    let mut count = n as i32;
    let mut desc = Descriptor1 {
        data: dev.address(&ws),
        shape: [inp.ws.len() as u64],
        strides: [1],
    };
    let mut params: Vec<*mut c_void> = vec![
        (&raw mut p_xs).cast(),
        (&raw mut p_masses).cast(),
        (&raw mut p_out).cast(),
        (&raw mut count).cast(),
        (&raw mut desc).cast(),
    ];
    let f = linked.function("cxx_calls_py").expect("cxx_calls_py");
    raw_launch(&dev, f, n, &mut params);
    let got: Vec<f64> = from_bytes(&dev.download(&out).expect("download"));
    let ws_sum = inp.ws.iter().fold(0f32, |s, w| s + w);
    assert_eq!(got.len(), n);
    for (i, (&x, &g)) in inp.xs.iter().zip(&got).enumerate() {
        let want = f64::from(x * 3.0 + 1.0)
            + f64::from(x * x + 1.0 + 4.0)
            + (inp.masses[i] * f64::from(x) + i as f64)
            + f64::from(x * 2.0)
            + (i + 1) as f64
            + f64::from(ws_sum)
            + f64::from((x * 2.0 + 1.0) * 2.0);
        assert!(close(g, want), "index {i}: x={x}: {g} vs {want}");
    }
}

#[test]
fn python_kernel_calls_cuda_cpp_functions() {
    let Some(dev) = ready("python_kernel_calls_cuda_cpp_functions") else {
        return;
    };
    let (linked, compiled) = link_all(&dev);
    let k = linked
        .kernel(&kernel_of(&compiled, "py_calls_cpp").abi)
        .expect("py_calls_cpp");
    let n = 20_011;
    let inp = inputs(32, n);
    let (_xb, xa) = vec1(&dev, &inp.xs);
    let (_mb, ma) = vec1(&dev, &inp.masses);
    let (_wb, wa) = vec1(&dev, &inp.ws);
    let (ob, oa) = vec1(&dev, &vec![0f64; n]);
    let cfg = LaunchConfig {
        grid: [n.div_ceil(256) as u32, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    dev.launch(&k, &[xa, ma, wa, oa], &cfg).expect("launch");
    dev.synchronize().expect("synchronize");
    let got: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    let ws_sum = inp.ws.iter().fold(0f32, |s, w| s + w);
    assert_eq!(got.len(), n);
    for (i, (&x, &g)) in inp.xs.iter().zip(&got).enumerate() {
        let want = f64::from(x * 3.0 - 0.5)
            + f64::from(x.abs() + 1.0 + 2.0)
            + (inp.masses[i] * f64::from(x) - i as f64)
            + f64::from(x + 1.0)
            + (2 * i) as f64
            + f64::from(ws_sum);
        assert!(close(g, want), "index {i}: x={x}: {g} vs {want}");
    }
}

#[test]
fn python_kernel_launched_like_cpp_host_code() {
    let Some(dev) = ready("python_kernel_launched_like_cpp_host_code") else {
        return;
    };
    let (linked, _) = link_all(&dev);
    let f = linked.function("py_axpy").expect("py_axpy");
    let n = 5_003;
    let mut r = Rng(33);
    let xs: Vec<f32> = (0..n).map(|_| r.f32(-10.0, 10.0)).collect();
    let ys: Vec<f32> = (0..n).map(|_| r.f32(-10.0, 10.0)).collect();
    let xb = dev.upload(&bytes_of(&xs)).expect("upload");
    let yb = dev.upload(&bytes_of(&ys)).expect("upload");
    let mut a = r.f32(-2.0, 2.0);
    let mut dx = Descriptor1 {
        data: dev.address(&xb),
        shape: [n as u64],
        strides: [1],
    };
    let mut dy = Descriptor1 {
        data: dev.address(&yb),
        shape: [n as u64],
        strides: [1],
    };
    let mut p = Pair {
        a: r.f32(-1.0, 1.0),
        b: r.i32(-5, 5),
    };
    let mut params: Vec<*mut c_void> = vec![
        (&raw mut a).cast(),
        (&raw mut dx).cast(),
        (&raw mut dy).cast(),
        (&raw mut p).cast(),
    ];
    raw_launch(&dev, f, n, &mut params);
    let got: Vec<f32> = from_bytes(&dev.download(&yb).expect("download"));
    for i in 0..n {
        let want = f64::from(a * xs[i] + ys[i] + p.a * p.b as f32);
        assert!(
            close(f64::from(got[i]), want),
            "index {i}: {} vs {want}",
            got[i]
        );
    }
}

#[test]
fn missing_cuda_cpp_is_a_link_error_naming_the_symbols() {
    let Some(dev) = ready("missing_cuda_cpp_is_a_link_error_naming_the_symbols") else {
        return;
    };
    let module = Module::parse("interop.py", PY).unwrap_or_else(|d| panic!("{d}"));
    let k = module
        .compile(
            "py_calls_cpp",
            &module
                .entries()
                .into_iter()
                .find(|e| e.name == "py_calls_cpp")
                .and_then(|e| e.annotated)
                .expect("py_calls_cpp"),
            &CompileOptions {
                arch: arch_for(&dev),
                ..CompileOptions::default()
            },
        )
        .expect("compile");
    // Loaded alone, as if it called nothing external: a link error, not a driver error.
    match dev.load(&k.ptx, &k.abi) {
        Err(RuntimeError::Link { undefined, .. }) => assert_eq!(undefined.len(), 5),
        Err(other) => panic!("expected a link error, got {other}"),
        Ok(_) => panic!("loading PTX with unresolved calls must fail"),
    }
    // Our PTX alone: found before the driver is asked.
    match dev.link(&[LinkInput::compiled("py_calls_cpp", &k)]) {
        Err(RuntimeError::Link { undefined, message }) => {
            assert_eq!(
                undefined,
                [
                    "cpp_l1",
                    "cpp_make_pair",
                    "cpp_momentum",
                    "cpp_scale",
                    "cpp_sum"
                ],
                "{message}"
            );
            assert!(message.contains("`cpp_scale`"), "{message}");
        }
        Err(other) => panic!("expected a link error, got {other}"),
        Ok(_) => panic!("linking without the C++ must fail"),
    }
    // C++ that defines only some of them: NVRTC compiles it, the check names the rest.
    let partial = r#"extern "C" __device__ float cpp_scale(float x, float k) { return x * k; }"#;
    match dev.link(&[
        LinkInput::compiled("py_calls_cpp", &k),
        LinkInput::cuda("partial.cu", partial),
    ]) {
        Err(RuntimeError::Link { undefined, .. }) => {
            assert_eq!(
                undefined,
                ["cpp_l1", "cpp_make_pair", "cpp_momentum", "cpp_sum"]
            );
        }
        Err(other) => panic!("expected a link error, got {other}"),
        Ok(_) => panic!("linking with partial C++ must fail"),
    }
    // The loaded module still works: a Python kernel with no externs links alone.
    let plain = dev.link(&[LinkInput::Ptx {
        name: "plain".into(),
        text: module
            .compile(
                "py_scale",
                &[
                    pydevice::types::Type::Scalar(pydevice::types::Scalar::Float32),
                    pydevice::types::Type::Scalar(pydevice::types::Scalar::Float32),
                ],
                &CompileOptions {
                    arch: arch_for(&dev),
                    ..CompileOptions::default()
                },
            )
            .expect("compile")
            .ptx,
    }]);
    assert!(plain.is_ok(), "{:?}", plain.err());
}
