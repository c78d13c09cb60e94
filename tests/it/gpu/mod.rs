//! GPU tests: each compiles a kernel, runs it on random inputs and compares with a reference
//! computed on the CPU. A test defined with `on_each_backend!` runs on the GPU when a CUDA
//! driver is present and always on the CPU back end (`backend.rs`), so CI runs its kernel;
//! a test that truly needs a GPU asks for one with `device(..)` and, without a driver,
//! prints why it is skipped and passes (docs/semantics.md §22.3 lists them, and why). On a
//! GPU machine they really run (`scripts/gpu_run.sh`).
//! `sync` covers shared memory, atomics, warp collectives and intrinsics; `interop` Python and
//! CUDA C++ calling each other; `arrays` views, reshape, records and aligned struct fields;
//! `host_device` the same `@func` on the host (Cranelift) and on the device; `numba_suite`
//! kernels from numba-cuda's own test suite; `hopper` thread block clusters, inline PTX and
//! launches from device code (§18); `tensor` WMMA and `mma.sync` GEMMs and `ldmatrix`.

/// Defines a test whose kernels run on every back end at hand: on the GPU when a CUDA
/// driver is present, and always on the CPU back end (`pydevice::runtime::cpu`), so CI,
/// which has no GPU, runs them. The body is written once against [`Dev`]; `dev` names the
/// back end of each run. `PYDEVICE_TEST_BACKEND=gpu` (or `cpu`) restricts the runs to one.
macro_rules! on_each_backend {
    ($(#[$attr:meta])* fn $name:ident($dev:ident) $body:block) => {
        $(#[$attr])*
        #[test]
        fn $name() {
            #[allow(clippy::needless_return)]
            fn body($dev: $crate::gpu::Dev) $body
            for dev in $crate::gpu::backends(stringify!($name)) {
                body(dev);
            }
        }
    };
}

mod arrays;
mod backend;
mod const_arrays;
mod constexpr;
mod groups;
mod hopper;
mod host_device;
mod interop;
pub(crate) mod numba_gaps;
mod numba_misc;
mod numba_suite;
mod options;
mod records;
mod recursion;
mod sync;
mod tensor;
mod types;
mod zero_dim;

pub(crate) use backend::{Buffer, Dev, DevError, Loaded, backends, device};
use pydevice::abi::{ArgValue, ArrayArg};
pub(crate) use pydevice::runtime::Device;
use pydevice::runtime::LaunchConfig;
use pydevice::types::signature::parse_signature;
use pydevice::{Arch, CompileOptions, Module};

pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
    pub(crate) fn i32(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo) as u64) as i32
    }
}

/// A kernel compiled for the back end of `dev`, with the device it runs on.
pub(crate) struct Kernel<'d> {
    pub(crate) dev: &'d Dev,
    pub(crate) k: Loaded,
}

/// The newest architecture we compile for that the device runs (the default one on the
/// CPU back end).
pub(crate) fn arch_for(dev: &Dev) -> Arch {
    let Some(gpu) = dev.gpu() else {
        return Arch::DEFAULT;
    };
    let arch = gpu.arch().expect("arch");
    Arch::SUPPORTED
        .iter()
        .rev()
        .find(|a| **a <= arch)
        .copied()
        .unwrap_or(Arch::DEFAULT)
}

pub(crate) fn kernel<'d>(dev: &'d Dev, src: &str, entry: &str, sig: &str) -> Kernel<'d> {
    let module = Module::parse(entry, src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(sig).expect("signature");
    let options = CompileOptions {
        arch: arch_for(dev),
        ..CompileOptions::default()
    };
    let k = dev.compile(&module, entry, &args, &options);
    Kernel { dev, k }
}

impl Kernel<'_> {
    pub(crate) fn launch(&self, args: &[ArgValue], grid: [u32; 3], block: [u32; 3]) {
        let cfg = LaunchConfig {
            grid,
            block,
            shared_bytes: 0,
        };
        self.dev.launch(&self.k, args, &cfg).expect("launch");
        self.dev.synchronize().expect("synchronize");
    }
}

pub(crate) fn bytes_of<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain-old-data slices of numbers viewed as bytes.
    unsafe {
        std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)).to_vec()
    }
}

pub(crate) fn from_bytes<T: Copy + Default>(b: &[u8]) -> Vec<T> {
    let n = b.len() / std::mem::size_of::<T>();
    let mut out = vec![T::default(); n];
    // SAFETY: `out` has room for exactly `n` elements of `T`, copied from `b`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            b.as_ptr(),
            out.as_mut_ptr().cast::<u8>(),
            n * std::mem::size_of::<T>(),
        )
    };
    out
}

pub(crate) fn array<T: Copy>(
    dev: &Dev,
    data: &[T],
    shape: &[u64],
    strides: &[i64],
) -> (Buffer, ArgValue) {
    let buf = dev.upload(&bytes_of(data)).expect("upload");
    let arg = ArgValue::Array(ArrayArg {
        data: dev.address(&buf),
        shape: shape.to_vec(),
        strides: strides.to_vec(),
    });
    (buf, arg)
}

pub(crate) fn vec1<T: Copy>(dev: &Dev, data: &[T]) -> (Buffer, ArgValue) {
    array(dev, data, &[data.len() as u64], &[1])
}

pub(crate) fn blocks(n: usize, block: u32) -> u32 {
    n.div_ceil(block as usize) as u32
}

on_each_backend! {
fn vector_add_random(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path("examples/vector_add.py"))
        .expect("example");
    let k = kernel(
        &dev,
        &src,
        "vector_add",
        "float32[::1], float32[::1], float32[::1]",
    );
    let n = (1 << 20) + 7;
    let mut r = Rng(1);
    let a: Vec<f32> = (0..n).map(|_| r.f32(-100.0, 100.0)).collect();
    let b: Vec<f32> = (0..n).map(|_| r.f32(-100.0, 100.0)).collect();
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let (cb, ca) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[aa, ba, ca], [blocks(n, 256), 1, 1], [256, 1, 1]);
    let c: Vec<f32> = from_bytes(&dev.download(&cb).expect("download"));
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "index {i}");
    }
}
}

on_each_backend! {
fn saxpy_with_scalar(dev) {
    let src = "from cuda import device\n@device.kernel\ndef saxpy(a, x, y, out):\n    i = device.tid(1)\n    if i < len(out):\n        out[i] = a * x[i] + y[i]\n";
    let k = kernel(
        &dev,
        src,
        "saxpy",
        "float32, float32[:], float32[:], float32[:]",
    );
    let n = 100_003;
    let mut r = Rng(2);
    let x: Vec<f32> = (0..n).map(|_| r.f32(-1.0, 1.0)).collect();
    let y: Vec<f32> = (0..n).map(|_| r.f32(-1.0, 1.0)).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (_yb, ya) = vec1(&dev, &y);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(
        &[ArgValue::Float(2.5), xa, ya, oa],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let want = 2.5f32.mul_add(x[i], y[i]);
        let plain = 2.5f32 * x[i] + y[i];
        assert!(
            out[i] == want || out[i] == plain,
            "index {i}: {} vs {want}",
            out[i]
        );
    }
}
}

on_each_backend! {
fn transpose_of_a_transposed_view(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/transpose_2d.py",
    ))
    .expect("fixture");
    let k = kernel(&dev, &src, "transpose", "float32[:, :], float32[:, :]");
    let (n, m) = (300usize, 517usize);
    let mut r = Rng(3);
    // `base` is m x n in C order; `src` is its transpose, an n x m view with strides (1, n).
    let base: Vec<f32> = (0..n * m).map(|_| r.f32(-5.0, 5.0)).collect();
    let (_sb, sa) = array(&dev, &base, &[n as u64, m as u64], &[1, n as i64]);
    let (db, da) = array(
        &dev,
        &vec![0f32; n * m],
        &[m as u64, n as u64],
        &[n as i64, 1],
    );
    k.launch(&[sa, da], [blocks(n, 16), blocks(m, 16), 1], [16, 16, 1]);
    let dst: Vec<f32> = from_bytes(&dev.download(&db).expect("download"));
    for x in 0..n {
        for y in 0..m {
            // src[x, y] = base[y * n + x]; dst[y, x] = dst[y * n + x]
            assert_eq!(dst[y * n + x], base[y * n + x], "({x}, {y})");
        }
    }
}
}

on_each_backend! {
fn grid_stride_loop(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/grid_stride.py",
    ))
    .expect("fixture");
    let k = kernel(&dev, &src, "scale", "float64[:], float64");
    let n = 1_000_001;
    let a: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 7.0).collect();
    let (ab, aa) = vec1(&dev, &a);
    k.launch(&[aa, ArgValue::Float(-3.0)], [40, 1, 1], [128, 1, 1]);
    let out: Vec<f64> = from_bytes(&dev.download(&ab).expect("download"));
    for i in 0..n {
        assert_eq!(out[i], a[i] * -3.0, "index {i}");
    }
}
}

on_each_backend! {
fn three_d_indexing(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/indexed_3d.py",
    ))
    .expect("fixture");
    let k = kernel(&dev, &src, "fill3d", "int32[:, :, ::1]");
    let (x, y, z) = (37usize, 21usize, 45usize);
    let (ob, oa) = array(
        &dev,
        &vec![-1i32; x * y * z],
        &[x as u64, y as u64, z as u64],
        &[(y * z) as i64, z as i64, 1],
    );
    k.launch(&[oa], [blocks(x, 4), blocks(y, 4), blocks(z, 8)], [4, 4, 8]);
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..x {
        for j in 0..y {
            for l in 0..z {
                assert_eq!(out[(i * y + j) * z + l], (i * 10000 + j * 100 + l) as i32);
            }
        }
    }
}
}

fn py_floordiv(a: i32, b: i32) -> i32 {
    if b == 0 {
        return 0;
    }
    if b == -1 {
        return a.wrapping_neg();
    }
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn py_mod(a: i32, b: i32) -> i32 {
    if b == 0 || b == -1 {
        return 0;
    }
    let r = a % b;
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

on_each_backend! {
fn integer_semantics_match_python(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/integer_semantics.py",
    ))
    .expect("fixture");
    let k = kernel(&dev, &src, "intops", "int32[:], int32[:], int32[:, :]");
    let n = 50_000;
    let mut r = Rng(4);
    let mut a: Vec<i32> = (0..n).map(|_| r.i32(-100_000, 100_000)).collect();
    let mut b: Vec<i32> = (0..n).map(|_| r.i32(-50, 50)).collect();
    // Edge cases: zero divisors, MIN // -1, wrap-around.
    a[0] = i32::MIN;
    b[0] = -1;
    b[1] = 0;
    a[2] = i32::MAX;
    b[2] = 2;
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = array(&dev, &vec![0i32; n * 12], &[n as u64, 12], &[12, 1]);
    k.launch(&[aa, ba, oa], [blocks(n, 256), 1, 1], [256, 1, 1]);
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let s = (y & 31) as u32;
        let want = [
            py_floordiv(x, y),
            py_mod(x, y),
            x.wrapping_shl(s),
            x >> s,
            x.wrapping_mul(y),
            x.wrapping_neg(),
            !x,
            x.wrapping_abs(),
            x.min(y),
            x.max(y).max(0),
            x.wrapping_mul(x).wrapping_mul(x),
            (x & y) | (x ^ y),
        ];
        assert_eq!(&out[i * 12..i * 12 + 12], &want, "a={x} b={y}");
    }
}
}

/// CPython's float floor division and modulo, in f32.
fn py_fdivmod(x: f32, y: f32) -> (f32, f32) {
    let m = x % y;
    let mut div = (x - m) / y;
    let mut md = m;
    if m != 0.0 {
        if (y < 0.0) != (m < 0.0) {
            md += y;
            div -= 1.0;
        }
    } else {
        md = 0f32.copysign(y);
    }
    let q = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 { f + 1.0 } else { f }
    } else {
        0f32.copysign(x / y)
    };
    (q, md)
}

on_each_backend! {
fn float_division_matches_python(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/float_division.py",
    ))
    .expect("fixture");
    let k = kernel(&dev, &src, "fdiv", "float32[:], float32[:], float32[:, :]");
    let n = 20_000;
    let mut r = Rng(5);
    let a: Vec<f32> = (0..n).map(|_| r.f32(-1000.0, 1000.0)).collect();
    let b: Vec<f32> = (0..n)
        .map(|_| {
            let v = r.f32(-20.0, 20.0);
            if v.abs() < 0.01 { 0.5 } else { v }
        })
        .collect();
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = array(&dev, &vec![0f32; n * 6], &[n as u64, 6], &[6, 1]);
    k.launch(&[aa, ba, oa], [blocks(n, 256), 1, 1], [256, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let (q, m) = py_fdivmod(x, y);
        let row = &out[i * 6..i * 6 + 6];
        assert_eq!(row[0], x / y, "a={x} b={y}: /");
        assert_eq!(row[1], q, "a={x} b={y}: //");
        assert_eq!(row[2].to_bits(), m.to_bits(), "a={x} b={y}: %");
        let sq = x * x;
        assert!(
            (row[3] - sq).abs() <= sq.abs() * 2e-7,
            "a={x}: ** 2.0 gave {} want {sq}",
            row[3]
        );
        assert_eq!(row[4], if x > 0.0 { -x } else { x.abs() });
        assert_eq!(row[5], 3.5);
    }
}
}

on_each_backend! {
fn device_function_call_chain(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/func_chain.py",
    ))
    .expect("fixture");
    let k = kernel(&dev, &src, "apply", "float32[:], float32[:]");
    let n = 4099;
    let mut r = Rng(6);
    let x: Vec<f32> = (0..n).map(|_| r.f32(-6.0, 6.0)).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[xa, oa], [blocks(n, 64), 1, 1], [64, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let v = x[i];
        let p = v * v + 2.0 * v + 1.0;
        let want = p.clamp(-10.0, 10.0);
        assert!(
            (out[i] - want).abs() <= 1e-5 * want.abs().max(1.0),
            "x={v}: {} vs {want}",
            out[i]
        );
    }
}
}

on_each_backend! {
fn control_flow_and_int64(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/control_flow.py",
    ))
    .expect("fixture");
    let k = kernel(&dev, &src, "collatz", "int64[:], int32[:]");
    let n = 10_000;
    let start: Vec<i64> = (1..=n as i64).collect();
    let (_sb, sa) = vec1(&dev, &start);
    let (ob, oa) = vec1(&dev, &vec![0i32; n]);
    k.launch(&[sa, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    for (i, &s) in start.iter().enumerate() {
        let (mut v, mut c) = (s, 0);
        while v != 1 && c < 1000 {
            v = if v % 2 == 0 { v / 2 } else { 3 * v + 1 };
            c += 1;
        }
        assert_eq!(out[i], c, "start {s}");
    }
}
}

on_each_backend! {
fn negative_indices_and_weak_accumulators(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/weak_local_inference.py",
    ))
    .expect("fixture");
    let k = kernel(&dev, &src, "accumulate", "float64[:, :], float64[:]");
    let (rows, cols) = (333usize, 77usize);
    let mut r = Rng(7);
    let m: Vec<f64> = (0..rows * cols)
        .map(|_| f64::from(r.f32(-1.0, 1.0)))
        .collect();
    let (_mb, ma) = array(&dev, &m, &[rows as u64, cols as u64], &[cols as i64, 1]);
    let (ob, oa) = vec1(&dev, &vec![0f64; rows]);
    k.launch(&[ma, oa], [blocks(rows, 64), 1, 1], [64, 1, 1]);
    let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..rows {
        let want: f64 = m[i * cols..(i + 1) * cols].iter().sum();
        assert!((out[i] - want).abs() < 1e-12, "row {i}");
    }
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/negative_index.py",
    ))
    .expect("fixture");
    let k = kernel(&dev, &src, "last", "int16[:], int16[:]");
    let a: Vec<i16> = (0..100).map(|i| i * 3 - 50).collect();
    let (_ab, aa) = vec1(&dev, &a);
    let (ob, oa) = vec1(&dev, &[0i16; 3]);
    k.launch(&[aa, oa], [1, 1, 1], [32, 1, 1]);
    let out: Vec<i16> = from_bytes(&dev.download(&ob).expect("download"));
    assert_eq!(out, vec![a[99], a[99], a[98]]);
}
}

on_each_backend! {
fn launch_errors_are_values(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path("examples/vector_add.py"))
        .expect("example");
    let k = kernel(
        &dev,
        &src,
        "vector_add",
        "float32[::1], float32[::1], float32[::1]",
    );
    let (_b, a) = vec1(&dev, &[0f32; 4]);
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [4096, 1, 1],
        shared_bytes: 0,
    };
    let e = dev
        .launch(&k.k, &[a.clone(), a.clone(), a.clone()], &cfg)
        .expect_err("4096 threads per block must fail");
    assert!(e.to_string().contains("vector_add"), "{e}");
    let e = dev
        .launch(&k.k, std::slice::from_ref(&a), &cfg)
        .expect_err("wrong arity");
    assert!(e.to_string().contains("3 arguments"), "{e}");
}
}

#[test]
fn event_timing_of_back_to_back_launches() {
    let Some(dev) = device("event_timing_of_back_to_back_launches") else {
        return;
    };
    let src = std::fs::read_to_string(crate::support::repo_path("examples/vector_add.py"))
        .expect("example");
    let k = kernel(
        &dev,
        &src,
        "vector_add",
        "float32[::1], float32[::1], float32[::1]",
    );
    let n = 1 << 22;
    let (_b, a) = vec1(&dev, &vec![1f32; n]);
    let cfg = LaunchConfig::linear(blocks(n, 256), 256);
    let times = dev
        .time_launches(&k.k, &[a.clone(), a.clone(), a], &cfg, 3, 20)
        .expect("timing");
    assert_eq!(times.len(), 20);
    // 48 MiB of traffic cannot take less than ~10 µs on any GPU, nor a second.
    assert!(times.iter().all(|t| *t > 1.0 && *t < 1e6), "{times:?}");
}

/// Reads a fixture's source.
pub(crate) fn fixture(name: &str) -> String {
    std::fs::read_to_string(crate::support::repo_path(&format!(
        "tests/fixtures/lang/{name}"
    )))
    .expect("fixture")
}

impl Kernel<'_> {
    /// Launches with dynamic shared memory.
    pub(crate) fn launch_shared(
        &self,
        args: &[ArgValue],
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
    ) {
        let cfg = LaunchConfig {
            grid,
            block,
            shared_bytes: shared,
        };
        self.dev.launch(&self.k, args, &cfg).expect("launch");
        self.dev.synchronize().expect("synchronize");
    }
}

const RANGES: &str = r#"
from cuda import device

@device.kernel
def ranges(starts, stops, steps, sums, counts, lasts):
    i = device.tid(1)
    if i < len(starts):
        total = 0
        n = 0
        last = -12345
        for j in range(starts[i], stops[i], steps[i]):
            total += j
            n += 1
            last = j
        sums[i] = total
        counts[i] = n
        lasts[i] = last
"#;

on_each_backend! {
fn range_with_run_time_steps_matches_python(dev) {
    let k = kernel(
        &dev,
        RANGES,
        "ranges",
        "int32[:], int32[:], int32[:], int32[:], int32[:], int32[:]",
    );
    let n = 4000;
    let mut r = Rng(31);
    let starts: Vec<i32> = (0..n).map(|_| r.i32(-50, 50)).collect();
    let stops: Vec<i32> = (0..n).map(|_| r.i32(-50, 50)).collect();
    let steps: Vec<i32> = (0..n).map(|_| r.i32(-7, 8)).collect();
    let (_a, aa) = vec1(&dev, &starts);
    let (_b, ba) = vec1(&dev, &stops);
    let (_c, ca) = vec1(&dev, &steps);
    let (sb, sa) = vec1(&dev, &vec![0i32; n]);
    let (nb, na) = vec1(&dev, &vec![0i32; n]);
    let (lb, la) = vec1(&dev, &vec![0i32; n]);
    k.launch(
        &[aa, ba, ca, sa, na, la],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let sums: Vec<i32> = from_bytes(&dev.download(&sb).expect("download"));
    let counts: Vec<i32> = from_bytes(&dev.download(&nb).expect("download"));
    let lasts: Vec<i32> = from_bytes(&dev.download(&lb).expect("download"));
    for i in 0..n {
        let (a, b, s) = (starts[i], stops[i], steps[i]);
        // Python's range; a zero step (a ValueError in Python) runs no iteration here.
        let vals: Vec<i32> = match s {
            0 => vec![],
            s if s > 0 => (a..b).step_by(s as usize).collect(),
            s => (b + 1..=a).rev().step_by((-s) as usize).collect(),
        };
        assert_eq!(
            (sums[i], counts[i], lasts[i]),
            (
                vals.iter().sum::<i32>(),
                vals.len() as i32,
                vals.last().copied().unwrap_or(-12345)
            ),
            "range({a}, {b}, {s})"
        );
    }
}
}

#[test]
fn target_specialization_across_archs() {
    let Some(dev) = device("target_specialization_across_archs") else {
        return;
    };
    let module = Module::parse("target.py", &fixture("target_specialization.py")).expect("parse");
    // The host takes the `is_host` branch of the same @func (Cranelift).
    let host = module.host_function("level", &[]).expect("host function");
    assert_eq!(host.call(&[]).expect("call"), pydevice::HostValue::Int(-1));
    let (args, _) = parse_signature("int32[::1]").expect("sig");
    let archs = [Arch::SM_75, Arch::SM_80, Arch::SM_90];
    let multi = module
        .compile_multi("which", &args, &archs, &pydevice::CompileOptions::default())
        .expect("compile");
    let n = 64;
    let run = |k: &pydevice::runtime::LoadedKernel| -> Vec<i32> {
        let (b, a) = vec1(&dev, &vec![0i32; n]);
        let cfg = LaunchConfig {
            grid: [1, 1, 1],
            block: [n as u32, 1, 1],
            shared_bytes: 0,
        };
        dev.launch(k, &[a], &cfg).expect("launch");
        dev.synchronize().expect("sync");
        from_bytes(&dev.download(&b).expect("download"))
    };
    // The runtime picks the newest variant not above the device (sm_90 on an H100).
    let best = dev.load_best(&multi).expect("load_best");
    let device_arch = dev.arch().expect("arch");
    let want_best = if device_arch >= Arch::SM_90 {
        1090
    } else if device_arch >= Arch::SM_80 {
        1080
    } else {
        1000
    };
    assert_eq!(run(&best), vec![want_best; n]);
    // Older variants from the same build run too, each with its own branch.
    for (v, want) in multi.variants.iter().zip([1000, 1080, 1090]) {
        if v.arch <= device_arch {
            let k = dev.load(&v.ptx, &v.abi).expect("load");
            assert_eq!(run(&k), vec![want; n], "{}", v.arch);
        }
    }
}

/// The CPU back end (`runtime::cpu`) against the GPU, bit for bit, on the same kernels and
/// inputs: every warp collective (the CPU gives lockstep results by exchanging values once
/// all lanes arrived), a shuffle reduction tree, float `cg.reduce` over a tile and a
/// coalesced group (the device's order of additions), and Philox random numbers.
#[test]
fn cpu_back_end_matches_the_gpu_bit_for_bit() {
    let Some(dev) = device("cpu_back_end_matches_the_gpu_bit_for_bit") else {
        return;
    };
    let src = r#"
from cuda import device
from cuda.device import cg, float32, float64, random

@device.kernel
def mix(x, out, r):
    i = device.tid(1)
    full = device.activemask()
    v = x[i]
    d = 16
    while d > 0:
        v += device.shfl_xor_sync(full, v, d)
        d //= 2
    out[i, 0] = v
    out[i, 1] = float32(device.ballot_sync(full, lambda: x[i] > 0.5))
    out[i, 2] = float32(device.match_any_sync(full, x[i] > 0.25))
    out[i, 3] = float32(device.syncthreads_count(lambda: x[i] > 0.75))
    out[i, 4] = cg.reduce(cg.tiled_partition(cg.this_thread_block(), 16), x[i], 'add')
    if x[i] > 0.5:
        out[i, 5] = cg.reduce(cg.coalesced_threads(), x[i], 'add')
    r[i, 0] = float64(random.rand(float32))
    r[i, 1] = random.randn(float64)
"#;
    let sig = "float32[::1], float32[:, ::1], float64[:, ::1]";
    let (n, block) = (4096usize, 256u32);
    let mut rng = Rng(77);
    let x: Vec<f32> = (0..n).map(|_| rng.f32(0.0, 1.0)).collect();
    // GPU.
    let module = Module::parse("mix.py", src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(sig).expect("signature");
    let compiled = module
        .compile(
            "mix",
            &args,
            &CompileOptions {
                arch: arch_for(&dev),
                ..CompileOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let k = dev.load(&compiled.ptx, &compiled.abi).expect("load");
    let (_xb, xa) = vec1(&dev, &x);
    let (ob, oa) = array(&dev, &vec![0f32; n * 6], &[n as u64, 6], &[6, 1]);
    let (rb, ra) = array(&dev, &vec![0f64; n * 2], &[n as u64, 2], &[2, 1]);
    let cfg = LaunchConfig {
        grid: [n as u32 / block, 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
    };
    dev.launch_seeded(
        &k,
        &[xa, oa, ra],
        &cfg,
        &pydevice::runtime::Stream::default_stream(),
        Some(99),
    )
    .expect("launch");
    dev.synchronize().expect("synchronize");
    let gpu_out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let gpu_r: Vec<f64> = from_bytes(&dev.download(&rb).expect("download"));
    // CPU.
    let ck = module
        .cpu_kernel("mix", &args)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut values = vec![
        pydevice::HostValue::from_f32s(&x),
        pydevice::HostValue::Array {
            dtype: pydevice::types::Scalar::Float32,
            shape: vec![n as u64, 6],
            data: vec![0; n * 24],
        },
        pydevice::HostValue::Array {
            dtype: pydevice::types::Scalar::Float64,
            shape: vec![n as u64, 2],
            data: vec![0; n * 16],
        },
    ];
    let mut ccfg = pydevice::runtime::cpu::CpuLaunch::new(cfg.grid, cfg.block);
    ccfg.seed = Some(99);
    ck.launch(&mut values, &ccfg).expect("cpu launch");
    let bytes = |v: &pydevice::HostValue| match v {
        pydevice::HostValue::Array { data, .. } => data.clone(),
        _ => panic!("not an array"),
    };
    let cpu_out: Vec<f32> = from_bytes(&bytes(&values[1]));
    let cpu_r: Vec<f64> = from_bytes(&bytes(&values[2]));
    for i in 0..n * 6 {
        assert_eq!(
            cpu_out[i].to_bits(),
            gpu_out[i].to_bits(),
            "out[{}, {}]: cpu {} gpu {}",
            i / 6,
            i % 6,
            cpu_out[i],
            gpu_out[i]
        );
    }
    for i in 0..n * 2 {
        assert_eq!(
            cpu_r[i].to_bits(),
            gpu_r[i].to_bits(),
            "r[{}, {}]",
            i / 2,
            i % 2
        );
    }
}

/// Python's `a // b` and `a % b` on int64 (`b == 0` gives 0, as NumPy; `MIN // -1` wraps).
pub(crate) fn py_divmod64(a: i64, b: i64) -> (i64, i64) {
    if b == 0 {
        return (0, 0);
    }
    if b == -1 {
        return (a.wrapping_neg(), 0);
    }
    let (q, r) = (a / b, a % b);
    if r != 0 && ((r < 0) != (b < 0)) {
        (q - 1, r + b)
    } else {
        (q, r)
    }
}

/// The (C, T) shapes `index_split` is launched with: ordinary ones and every sign and edge
/// case of the 32-bit expansions (issue 31).
pub(crate) const INDEX_SPLIT_SHAPES: [(i32, i32); 10] = [
    (768, 8),
    (7, 3),
    (-7, 3),
    (5, -3),
    (1, -1),
    (-1, 5),
    (0, 3),
    (i32::MIN, -1),
    (i32::MAX, 2),
    (3, i32::MIN),
];

/// What `index_split` writes for thread `idx`: `idx // C`, `idx % C`, then the quotient
/// split by `T`.
pub(crate) fn index_split_reference(idx: i64, c: i32, t: i32) -> [i64; 4] {
    let (bt, cc) = py_divmod64(idx, i64::from(c));
    let (b, tt) = py_divmod64(bt, i64::from(t));
    [bt, cc, b, tt]
}

/// Python's `range(start, stop, step)` (no iterations for a zero step): count, sum, last,
/// first (-12345 for none).
pub(crate) fn py_range_summary(start: i64, stop: i64, step: i64) -> (i32, i64, i64, i64) {
    let mut v = Vec::new();
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        v.push(i);
        i += step;
    }
    (
        v.len() as i32,
        v.iter().sum(),
        v.last().copied().unwrap_or(-12345),
        v.first().copied().unwrap_or(-12345),
    )
}

/// The (stop, step) pairs of `strided_ranges`, one a block.
pub(crate) fn strided_range_cases() -> (Vec<i32>, Vec<i32>) {
    let mut stops = vec![768, 100, -5, 0, 64, 300, 10, -100, 2_000_000_000, 63];
    let mut steps = vec![256, -3, -1, 0, 1, 7, i32::MIN, -40, 1_000_000_000, i32::MAX];
    let mut r = Rng(77);
    for _ in 0..40 {
        stops.push(r.i32(-200, 400));
        steps.push(r.i32(-9, 10));
    }
    (stops, steps)
}

on_each_backend! {
fn index_split_and_strided_ranges_match_python(dev) {
    let src = fixture("index_split.py");
    let k = kernel(&dev, &src, "index_split", "int64[:, :], int32, int32");
    let n = 5000usize;
    for (c, t) in INDEX_SPLIT_SHAPES {
        let (ob, oa) = array(&dev, &vec![0i64; n * 4], &[n as u64, 4], &[4, 1]);
        k.launch(
            &[oa, ArgValue::Int(c.into()), ArgValue::Int(t.into())],
            [blocks(n, 128), 1, 1],
            [128, 1, 1],
        );
        let out: Vec<i64> = from_bytes(&dev.download(&ob).expect("download"));
        for idx in 0..n {
            let want = index_split_reference(idx as i64, c, t);
            assert_eq!(&out[idx * 4..idx * 4 + 4], &want, "idx={idx} C={c} T={t}");
        }
    }
    let k = kernel(
        &dev,
        &src,
        "strided_ranges",
        "int32[:], int32[:], int32[:], int64[:], int64[:], int64[:]",
    );
    let (stops, steps) = strided_range_cases();
    let (blocks_n, bs) = (stops.len(), 64usize);
    let (_s, sa) = vec1(&dev, &stops);
    let (_t, ta) = vec1(&dev, &steps);
    let (cb, ca) = vec1(&dev, &vec![0i32; blocks_n * bs]);
    let (ub, ua) = vec1(&dev, &vec![0i64; blocks_n * bs]);
    let (lb, la) = vec1(&dev, &vec![0i64; blocks_n * bs]);
    let (fb, fa) = vec1(&dev, &vec![0i64; blocks_n * bs]);
    k.launch(
        &[sa, ta, ca, ua, la, fa],
        [blocks_n as u32, 1, 1],
        [bs as u32, 1, 1],
    );
    let counts: Vec<i32> = from_bytes(&dev.download(&cb).expect("download"));
    let sums: Vec<i64> = from_bytes(&dev.download(&ub).expect("download"));
    let lasts: Vec<i64> = from_bytes(&dev.download(&lb).expect("download"));
    let firsts: Vec<i64> = from_bytes(&dev.download(&fb).expect("download"));
    for b in 0..blocks_n {
        for tid in 0..bs {
            let j = b * bs + tid;
            let (stop, step) = (stops[b], steps[b]);
            assert_eq!(
                (counts[j], sums[j], lasts[j], firsts[j]),
                py_range_summary(tid as i64, stop.into(), step.into()),
                "range({tid}, {stop}, {step})"
            );
        }
    }
}
}
