//! GPU tests of the debugging features: `print` output of a kernel captured from a child
//! process's stdout and compared with the expected text; a failing `assert` reported with
//! its line, message, thread and block, with the context usable afterwards (a second launch
//! works); `raise` in the numba dialect; a bounds-check report naming the array, the index
//! and the shape; `cuda.device.random` equal to the host reference bit for bit, and the
//! moments of 10⁷ uniforms and 10⁷ normals; a `debug=True` kernel loaded with debug
//! information (cuda-gdb itself: `scripts/cuda_gdb_check.sh`).
//!
//! Without a CUDA driver every test prints why it is skipped and passes. On a GPU machine:
//! `cargo test --test gpu_debug -- --test-threads=1 --nocapture`.

use pydevice::abi::{ArgValue, ArrayArg};
use pydevice::runtime::{Device, LaunchConfig, LoadedKernel, RuntimeError, driver_available};
use pydevice::types::signature::parse_signature;
use pydevice::{Arch, CompileOptions, Module};

/// Set in the child process that runs [`print_child`].
const PRINT_CHILD: &str = "PYDEVICE_GPU_DEBUG_PRINT_CHILD";

const PRINTS: &str = r#"
from cuda import device
from cuda.device import float32, float64


@device.struct
class point:
    x: float32
    y: float32


@device.kernel
def show(a, n):
    i = device.tid(1)
    if i < n:
        x = a[i]
        print("thread", i, "x =", x, i % 2 == 0)
        print(f"{i:>3d}|{x:8.3f}|{x:.2e}", (i, x), point(x, 2.0), sep=" ; ")
        if i == 0:
            print("floats", float32(0.1), float64(1.0) / float64(3.0), float64(1e16),
                  float64(123456.5), float64(-0.0), x * float32(1e20), float32(1e-5))
"#;

const ASSERTS: &str = r#"
from cuda import device
from cuda.device import float32

@device.func
def halve(x: float32) -> float32:
    assert x >= 0.0, "x must be non-negative"
    return x / 2.0


@device.kernel
def k(a, n):
    i = device.tid(1)
    assert i < n, "index past n"
    a[i] = halve(a[i])
"#;

const RAISES: &str = r#"
from numba import cuda


@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i < a.size:
        if a[i] < 0.0:
            raise ValueError("negative element")
        a[i] = a[i] * 2.0
"#;

const BOUNDS: &str = r#"
from cuda import device


@device.kernel(bounds_check=True)
def k(grid, n):
    i = device.tid(1)
    grid[i, n - 1] = 1.0
"#;

fn device(test: &str) -> Option<Device> {
    if !driver_available() {
        println!("skipped {test}: no CUDA driver");
        return None;
    }
    Some(Device::open(0).unwrap_or_else(|e| panic!("{test}: {e}")))
}

fn load(dev: &Device, file: &str, src: &str, entry: &str, sig: &str) -> LoadedKernel {
    let arch = dev.arch().expect("arch");
    let arch = Arch::SUPPORTED
        .iter()
        .rev()
        .find(|a| **a <= arch)
        .copied()
        .unwrap_or(Arch::DEFAULT);
    let options = CompileOptions {
        arch,
        ..CompileOptions::default()
    };
    let module = Module::parse(file, src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(sig).expect("signature");
    let compiled = module
        .compile(entry, &args, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    dev.load_compiled(&compiled).expect("load")
}

fn f32_array(dev: &Device, v: &[f32]) -> (pydevice::runtime::DeviceBuffer, ArgValue) {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let buf = dev.upload(&bytes).unwrap();
    let arg = ArgValue::Array(ArrayArg {
        data: dev.address(&buf),
        shape: vec![v.len() as u64],
        strides: vec![1],
    });
    (buf, arg)
}

#[test]
fn print_output_of_a_kernel_reaches_stdout() {
    if !driver_available() {
        println!("skipped print_output_of_a_kernel_reaches_stdout: no CUDA driver");
        return;
    }
    // Device printf writes to the process's fd 1 at synchronization: run the kernel in a
    // child process (this binary, running only `print_child`) and read its stdout.
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "gpu_debug::print_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PRINT_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // libtest writes `test print_child ... ` without a line break before the kernel's
    // output, so the first printed line may follow it on the same line.
    let mut got: Vec<&str> = stdout
        .lines()
        .map(|l| {
            l.strip_prefix("test gpu_debug::print_child ... ")
                .unwrap_or(l)
        })
        .filter(|l| l.starts_with("thread") || l.contains(" ; ") || l.starts_with("floats"))
        .collect();
    got.sort();
    let mut want = Vec::new();
    for i in 0..4u32 {
        let x = i as f32 * 1.5;
        // A float without a spec prints as Python's repr (0.0, 1.5, 3.0, 4.5; the device
        // writes `%.7g` and `.0` for an integral value, docs/semantics.md §4.5.1), which
        // Rust's `{:?}` writes for these values.
        let g = |v: f32| format!("{v:?}");
        want.push(format!(
            "thread {i} x = {} {}",
            g(x),
            if i % 2 == 0 { "True" } else { "False" }
        ));
        want.push(format!(
            "{i:>3}|{x:8.3}|{} ; ({i}, {}) ; point(x={}, y=2.0)",
            sci(x),
            g(x),
            g(x)
        ));
    }
    // Python's text for each (x is 0 in thread 0); where `%.7g`/`%.16g` and Python differ
    // is documented, and none of these values is such a case.
    want.push("floats 0.1 0.3333333333333333 1e+16 123456.5 -0.0 0.0 1e-05".to_string());
    let mut want: Vec<&str> = want.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(got, want, "child stdout:\n{stdout}");
}

/// printf's `%.2e`.
fn sci(x: f32) -> String {
    if x == 0.0 {
        return "0.00e+00".into();
    }
    let e = (x.abs().log10()).floor() as i32;
    let m = x / 10f32.powi(e);
    format!("{m:.2}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// Runs only as the child of [`print_output_of_a_kernel_reaches_stdout`].
#[test]
fn print_child() {
    if std::env::var_os(PRINT_CHILD).is_none() {
        return;
    }
    let dev = Device::open(0).unwrap();
    dev.set_print_buffer_size(4 << 20).unwrap();
    assert!(dev.print_buffer_size().unwrap() >= 4 << 20);
    let k = load(&dev, "prints.py", PRINTS, "show", "float32[::1], int32");
    let v: Vec<f32> = (0..4).map(|i| i as f32 * 1.5).collect();
    let (_buf, a) = f32_array(&dev, &v);
    dev.launch(&k, &[a, ArgValue::Int(4)], &LaunchConfig::new(1u32, 32u32))
        .unwrap();
    dev.synchronize().unwrap();
}

#[test]
fn a_failing_assert_names_its_line_and_the_context_stays_usable() {
    let Some(dev) = device("a_failing_assert_names_its_line_and_the_context_stays_usable") else {
        return;
    };
    let k = load(&dev, "asserts.py", ASSERTS, "k", "float32[::1], int32");
    // 64 threads, n = 40: threads 40..63 fail `assert i < n` (line 14) and stop.
    let (buf, a) = f32_array(&dev, &[4.0; 64]);
    dev.launch(
        &k,
        &[a.clone(), ArgValue::Int(40)],
        &LaunchConfig::new(2u32, 32u32),
    )
    .unwrap();
    dev.synchronize().unwrap();
    let e = dev.check_errors(&k).expect_err("the assert fails");
    println!("reported: {e}");
    let RuntimeError::Raised {
        kernel,
        line,
        report,
        ..
    } = &e
    else {
        panic!("not Raised: {e:?}");
    };
    assert_eq!(kernel, "k");
    assert_eq!(report.file, "asserts.py");
    assert_eq!(*line, 14);
    assert_eq!(report.message, "AssertionError: index past n");
    let tid = report.block[0] * 32 + report.thread[0];
    assert!((40..64).contains(&tid), "{e}");
    assert!(e.context_usable());
    let out: Vec<f32> = dev
        .download(&buf)
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert!(out[..40].iter().all(|x| *x == 2.0), "{out:?}");
    assert!(
        out[40..].iter().all(|x| *x == 4.0),
        "stopped threads wrote: {out:?}"
    );
    // The record is cleared and the context works: a second launch passes.
    dev.launch(
        &k,
        &[a.clone(), ArgValue::Int(64)],
        &LaunchConfig::new(2u32, 32u32),
    )
    .unwrap();
    dev.synchronize().unwrap();
    dev.check_errors(&k).expect("no failure");
    // A failing assert in a @func (line 7), from one thread.
    let (_b2, neg) = f32_array(&dev, &[1.0, -1.0, 1.0, 1.0]);
    dev.launch(&k, &[neg, ArgValue::Int(4)], &LaunchConfig::new(1u32, 4u32))
        .unwrap();
    dev.synchronize().unwrap();
    let e = dev.check_errors(&k).expect_err("halve fails");
    assert!(
        matches!(&e, RuntimeError::Raised { line: 7, report, .. } if report.thread == [1, 0, 0] && report.block == [0, 0, 0] && report.message == "AssertionError: x must be non-negative"),
        "{e:?}"
    );
}

#[test]
fn raise_in_the_numba_dialect_is_reported() {
    let Some(dev) = device("raise_in_the_numba_dialect_is_reported") else {
        return;
    };
    let k = load(&dev, "raises.py", RAISES, "k", "float64[::1]");
    let v: Vec<f64> = vec![1.0, 2.0, -3.0, 4.0];
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let buf = dev.upload(&bytes).unwrap();
    let a = ArgValue::Array(ArrayArg {
        data: dev.address(&buf),
        shape: vec![4],
        strides: vec![1],
    });
    dev.launch(&k, &[a], &LaunchConfig::new(1u32, 32u32))
        .unwrap();
    dev.synchronize().unwrap();
    let e = dev.check_errors(&k).expect_err("raise");
    println!("reported: {e}");
    assert!(
        matches!(&e, RuntimeError::Raised { line: 10, report, .. } if report.thread == [2, 0, 0] && report.message == "ValueError: negative element"),
        "{e:?}"
    );
}

#[test]
fn a_bounds_report_names_the_array_the_index_and_the_shape() {
    let Some(dev) = device("a_bounds_report_names_the_array_the_index_and_the_shape") else {
        return;
    };
    let k = load(&dev, "bounds.py", BOUNDS, "k", "float32[:, ::1], int32");
    let buf = dev.upload(&[0u8; 4 * 4 * 8]).unwrap();
    let grid = ArgValue::Array(ArrayArg {
        data: dev.address(&buf),
        shape: vec![4, 8],
        strides: vec![8, 1],
    });
    // Threads 0..3 write column 9 - 1 = 8 of an 8-wide array: out of range.
    dev.launch(
        &k,
        &[grid.clone(), ArgValue::Int(9)],
        &LaunchConfig::new(1u32, 4u32),
    )
    .unwrap();
    dev.synchronize().unwrap();
    let e = dev.check_errors(&k).expect_err("out of range");
    println!("reported: {e}");
    let RuntimeError::IndexOutOfBounds { line, report, .. } = &e else {
        panic!("{e:?}");
    };
    assert_eq!(
        (*line, report.array.as_str(), report.file.as_str()),
        (8, "grid", "bounds.py")
    );
    assert_eq!(report.indices[1], 8);
    assert!((0..4).contains(&report.indices[0]), "{e}");
    assert_eq!(report.shape, vec![4, 8]);
    dev.launch(
        &k,
        &[grid, ArgValue::Int(8)],
        &LaunchConfig::new(1u32, 4u32),
    )
    .unwrap();
    dev.synchronize().unwrap();
    dev.check_errors(&k).expect("in range");
}

const RANDOM: &str = r#"
from cuda import device
from cuda.device import random


@device.func
def normal(scale: float) -> float:
    return scale * random.randn()


@device.kernel
def draws(u32, u64, n32, n64, count):
    i = device.tid(1)
    if i < count:
        u32[i] = random.rand()
        u64[i] = random.rand(device.float64)
        n32[i] = normal(1.0)
        n64[i] = random.randn(device.float64)


@device.kernel
def many(u, z, per):
    i = device.tid(1)
    for k in range(per):
        u[i * per + k] = random.rand()
        z[i * per + k] = random.randn()
"#;

fn zeros(dev: &Device, n: usize, elem: usize) -> (pydevice::runtime::DeviceBuffer, ArgValue) {
    let buf = dev.upload(&vec![0u8; n * elem]).unwrap();
    let arg = ArgValue::Array(ArrayArg {
        data: dev.address(&buf),
        shape: vec![n as u64],
        strides: vec![1],
    });
    (buf, arg)
}

fn words<const N: usize>(bytes: &[u8]) -> Vec<[u8; N]> {
    bytes
        .chunks_exact(N)
        .map(|c| c.try_into().unwrap())
        .collect()
}

/// The device's `rand`/`randn` are the host reference's bits (`pydevice::random`) for the
/// same seed, thread and call: calls 0–3 of threads 0..count, through a `@func` too, with a
/// 2-D grid's worth of threads in a 1-D launch of several blocks. The same seed gives the
/// same numbers at a second launch; another seed other numbers.
#[test]
fn rand_on_the_device_is_the_host_reference_bit_for_bit() {
    let Some(dev) = device("rand_on_the_device_is_the_host_reference_bit_for_bit") else {
        return;
    };
    use pydevice::random as r;
    let k = load(
        &dev,
        "random.py",
        RANDOM,
        "draws",
        "float32[::1], float64[::1], float32[::1], float64[::1], int32",
    );
    assert!(k.abi().seed);
    let n = 3000usize;
    let (b0, a0) = zeros(&dev, n, 4);
    let (b1, a1) = zeros(&dev, n, 8);
    let (b2, a2) = zeros(&dev, n, 4);
    let (b3, a3) = zeros(&dev, n, 8);
    let args = [a0, a1, a2, a3, ArgValue::Int(n as i64)];
    let cfg = LaunchConfig::new(n.div_ceil(128) as u32, 128u32);
    for seed in [0u64, 42, 0xdead_beef_0123_4567] {
        for _ in 0..2 {
            dev.launch_seeded(
                &k,
                &args,
                &cfg,
                &pydevice::runtime::Stream::default_stream(),
                Some(seed),
            )
            .unwrap();
            dev.synchronize().unwrap();
            let u32s = words::<4>(&dev.download(&b0).unwrap());
            let u64s = words::<8>(&dev.download(&b1).unwrap());
            let n32s = words::<4>(&dev.download(&b2).unwrap());
            let n64s = words::<8>(&dev.download(&b3).unwrap());
            for t in 0..n {
                let tt = t as u64;
                assert_eq!(
                    f32::from_le_bytes(u32s[t]).to_bits(),
                    r::rand_f32(seed, tt, 0).to_bits(),
                    "rand f32 seed {seed} thread {t}"
                );
                assert_eq!(
                    f64::from_le_bytes(u64s[t]).to_bits(),
                    r::rand_f64(seed, tt, 1).to_bits(),
                    "rand f64 seed {seed} thread {t}"
                );
                assert_eq!(
                    f32::from_le_bytes(n32s[t]).to_bits(),
                    r::randn_f32(seed, tt, 2).to_bits(),
                    "randn f32 seed {seed} thread {t}"
                );
                assert_eq!(
                    f64::from_le_bytes(n64s[t]).to_bits(),
                    r::randn_f64(seed, tt, 3).to_bits(),
                    "randn f64 seed {seed} thread {t}"
                );
            }
        }
    }
    // Without a seed, each launch draws its own: two launches differ.
    let first = |dev: &Device| {
        dev.launch(&k, &args, &cfg).unwrap();
        dev.synchronize().unwrap();
        dev.download(&b0).unwrap()
    };
    assert_ne!(first(&dev), first(&dev));
}

/// 10⁷ uniforms and 10⁷ normals (10⁴ threads × 1000 calls): mean and variance within 6
/// standard errors of U[0, 1)'s (1/2, 1/12) and N(0, 1)'s (0, 1); the uniforms in [0, 1).
#[test]
fn ten_million_draws_have_the_right_mean_and_variance() {
    let Some(dev) = device("ten_million_draws_have_the_right_mean_and_variance") else {
        return;
    };
    let k = load(
        &dev,
        "random.py",
        RANDOM,
        "many",
        "float32[::1], float32[::1], int32",
    );
    let (threads, per) = (10_000usize, 1000usize);
    let n = threads * per;
    let (bu, au) = zeros(&dev, n, 4);
    let (bz, az) = zeros(&dev, n, 4);
    dev.launch_seeded(
        &k,
        &[au, az, ArgValue::Int(per as i64)],
        &LaunchConfig::new((threads / 100) as u32, 100u32),
        &pydevice::runtime::Stream::default_stream(),
        Some(2026),
    )
    .unwrap();
    dev.synchronize().unwrap();
    let moments = |bytes: &[u8]| {
        let (mut s, mut q) = (0f64, 0f64);
        for w in words::<4>(bytes) {
            let x = f64::from(f32::from_le_bytes(w));
            s += x;
            q += x * x;
        }
        let mean = s / n as f64;
        (mean, q / n as f64 - mean * mean)
    };
    let ub = dev.download(&bu).unwrap();
    assert!(
        words::<4>(&ub)
            .iter()
            .all(|w| (0.0..1.0).contains(&f32::from_le_bytes(*w)))
    );
    let (um, uv) = moments(&ub);
    let (zm, zv) = moments(&dev.download(&bz).unwrap());
    let nf = n as f64;
    println!(
        "uniform: mean {um:.6} var {uv:.6}; normal: mean {zm:.6} var {zv:.6} ({n} draws each)"
    );
    // Standard errors: uniform mean √(1/12/n), variance √(1/180/n); normal mean √(1/n),
    // variance √(2/n).
    assert!(
        (um - 0.5).abs() < 6.0 * (1.0 / 12.0 / nf).sqrt(),
        "uniform mean {um}"
    );
    assert!(
        (uv - 1.0 / 12.0).abs() < 6.0 * (1.0 / 180.0 / nf).sqrt(),
        "uniform variance {uv}"
    );
    assert!(zm.abs() < 6.0 * (1.0 / nf).sqrt(), "normal mean {zm}");
    assert!(
        (zv - 1.0).abs() < 6.0 * (2.0 / nf).sqrt(),
        "normal variance {zv}"
    );
}

/// A `debug=True` kernel loads through the JIT with debug information
/// (`CU_JIT_GENERATE_DEBUG_INFO`) and computes what the optimized one does.
#[test]
fn a_debug_kernel_loads_with_debug_information_and_runs() {
    let Some(dev) = device("a_debug_kernel_loads_with_debug_information_and_runs") else {
        return;
    };
    let src = r#"
from cuda import device


@device.func
def square(x: float) -> float:
    y = x * x
    return y


@device.kernel(debug=True)
def scale(a, f):
    i = device.tid(1)
    if i < len(a):
        v = a[i]
        a[i] = square(v) * f
"#;
    let k = load(&dev, "debug_info.py", src, "scale", "float32[::1], float32");
    let v: Vec<f32> = (0..100).map(|i| i as f32 * 0.5).collect();
    let (buf, a) = f32_array(&dev, &v);
    dev.launch(
        &k,
        &[a, ArgValue::Float(3.0)],
        &LaunchConfig::new(4u32, 32u32),
    )
    .unwrap();
    dev.synchronize().unwrap();
    let out = dev.download(&buf).unwrap();
    for (i, w) in out.chunks_exact(4).enumerate() {
        let x = v[i];
        assert_eq!(
            f32::from_le_bytes(w.try_into().unwrap()),
            x * x * 3.0,
            "{i}"
        );
    }
}
