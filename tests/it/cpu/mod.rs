//! Kernels run whole on the CPU (`pydevice::runtime::cpu`, docs/semantics.md §22): what only
//! the CPU back end does (deterministic schedule, deadlock reports, errors naming the thread
//! and line, Philox numbers equal to the device's, `pydevice run --cpu`) and its diagnostics,
//! and kernels of its own. The GPU tests' kernels (`tests/it/gpu/`) run on the CPU back end
//! through their own helpers (`on_each_backend!`, §22.3), so they are not repeated here. No
//! GPU needed: CI runs these.

use pydevice::Module;
use pydevice::abi::{ArgValue, ArrayArg};
use pydevice::runtime::cpu::{CpuError, CpuKernel, CpuLaunch};
use pydevice::types::signature::parse_signature;

use crate::gpu::Rng;

/// Host memory standing for a device buffer: 8-byte aligned words.
struct Buf {
    words: Vec<u64>,
    len: usize,
}

impl Buf {
    fn read<T: Copy + Default>(&self) -> Vec<T> {
        let n = self.len / std::mem::size_of::<T>();
        let mut out = vec![T::default(); n];
        // SAFETY: `out` has room for `n` elements, `words` holds `len` bytes of them.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.words.as_ptr().cast::<u8>(),
                out.as_mut_ptr().cast::<u8>(),
                n * std::mem::size_of::<T>(),
            )
        };
        out
    }
}

fn array<T: Copy>(data: &[T], shape: &[u64], strides: &[i64]) -> (Buf, ArgValue) {
    let len = std::mem::size_of_val(data);
    let mut words = vec![0u64; len.div_ceil(8).max(1)];
    // SAFETY: `words` holds at least `len` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(
            data.as_ptr().cast::<u8>(),
            words.as_mut_ptr().cast::<u8>(),
            len,
        )
    };
    let arg = ArgValue::Array(ArrayArg {
        data: words.as_ptr() as u64,
        shape: shape.to_vec(),
        strides: strides.to_vec(),
    });
    (Buf { words, len }, arg)
}

fn vec1<T: Copy>(data: &[T]) -> (Buf, ArgValue) {
    array(data, &[data.len() as u64], &[1])
}

fn blocks(n: usize, block: u32) -> u32 {
    n.div_ceil(block as usize) as u32
}

fn compile(src: &str, entry: &str, sig: &str) -> CpuKernel {
    let module = Module::parse(&format!("{entry}.py"), src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(sig).expect("signature");
    module
        .cpu_kernel(entry, &args)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(crate::support::repo_path(&format!("tests/fixtures/{name}")))
        .expect("fixture")
}

fn try_run(k: &CpuKernel, args: &[ArgValue], cfg: &CpuLaunch) -> Result<(), CpuError> {
    // SAFETY: every array argument is a `Buf` of the test, alive across the launch and as
    // large as its descriptor says.
    unsafe { k.launch_raw(args, cfg) }
}

fn run(k: &CpuKernel, args: &[ArgValue], grid: [u32; 3], block: [u32; 3]) {
    let mut cfg = CpuLaunch::new(grid, block);
    cfg.threads = 2;
    try_run(k, args, &cfg).unwrap_or_else(|e| panic!("{e}"));
}

const SCAN: &str = r#"
from cuda import device
from cuda.device import int32

BLOCK = 1024

@device.kernel
def scan(x, out):
    buf = device.shared_array(BLOCK, int32)
    t = device.thread_idx.x
    i = device.tid(1)
    buf[t] = x[i] if i < len(x) else 0
    device.syncthreads()
    offset = 1
    while offset < BLOCK:
        v = buf[t - offset] if t >= offset else 0
        device.syncthreads()
        buf[t] += v
        device.syncthreads()
        offset *= 2
    if i < len(out):
        out[i] = buf[t]
"#;

const TILES: &str = r#"
from cuda import device
from cuda.device import cg

@device.kernel
def tiles(x, out):
    block = cg.this_thread_block()
    t8 = cg.tiled_partition(block, 8)
    i = block.thread_rank()
    v = x[offset(block.num_threads(), i)]
    out[i, 0] = t8.shfl_down(v, 1)
    out[i, 1] = t8.shfl_xor(v, 4)
    out[i, 2] = t8.shfl(v, 2)
    out[i, 3] = t8.ballot(v > 0)
    out[i, 4] = t8.any(v > 90)
    out[i, 5] = cg.reduce(t8, v, 'max')
    out[i, 6] = cg.reduce(t8, v, 'min')
    out[i, 7] = t8.meta_group_rank()
    t8.sync()

@device.func
def offset(n, i):
    if device.target(device.is_device):
        return device.int32(device.block_idx.x) * n + i
    return i
"#;

#[test]
fn cpu_tile_collectives() {
    let k = compile(TILES, "tiles", "int32[::1], int32[:, ::1]");
    let n = 64usize;
    let mut r = Rng(21);
    let x: Vec<i32> = (0..n).map(|_| r.i32(-100, 100)).collect();
    let (_xb, xa) = vec1(&x);
    let (ob, oa) = array(&vec![0i32; n * 8], &[n as u64, 8], &[8, 1]);
    run(&k, &[xa, oa], [1, 1, 1], [n as u32, 1, 1]);
    let got: Vec<i32> = ob.read();
    for i in 0..n {
        let base = i / 8 * 8;
        let tile = &x[base..base + 8];
        let r = i - base;
        let ballot = tile
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 0)
            .fold(0i32, |m, (l, _)| m | 1 << l);
        let want = [
            if r + 1 < 8 { tile[r + 1] } else { tile[r] },
            tile[r ^ 4],
            tile[2],
            ballot,
            tile.iter().any(|v| *v > 90) as i32,
            *tile.iter().max().expect("tile"),
            *tile.iter().min().expect("tile"),
            (i / 8) as i32,
        ];
        assert_eq!(&got[i * 8..i * 8 + 8], &want, "thread {i}");
    }
}

const DYNAMIC: &str = r#"
from cuda import device
from cuda.device import uint8

@device.kernel
def reverse(x, out):
    raw = device.dynamic_shared_array()
    t = device.thread_idx.x
    n = device.block_dim.x
    i = device.block_idx.x * n + t
    raw[t] = x[i]
    device.syncthreads()
    out[i] = raw[n - 1 - t] + uint8(len(raw) - n)
"#;

#[test]
fn cpu_dynamic_shared_memory() {
    let k = compile(DYNAMIC, "reverse", "uint8[::1], uint8[::1]");
    let x: Vec<u8> = (0..=255).collect();
    let (_xb, xa) = vec1(&x);
    let (ob, oa) = vec1(&[0u8; 256]);
    let mut cfg = CpuLaunch::new([4, 1, 1], [64, 1, 1]);
    cfg.shared_bytes = 64 + 3;
    try_run(&k, &[xa, oa], &cfg).expect("launch");
    let out: Vec<u8> = ob.read();
    for (i, v) in out.iter().enumerate() {
        let (b, t) = (i / 64, i % 64);
        assert_eq!(*v, x[b * 64 + 63 - t].wrapping_add(3), "index {i}");
    }
}

const RANDOM: &str = r#"
from cuda import device
from cuda.device import random, float32, float64

@device.kernel
def draws(a, b, c):
    i = device.tid(1)
    if i < len(a):
        a[i] = random.rand(float32)
        b[i] = random.rand(float64)
        c[i] = random.randn(float64)
"#;

#[test]
fn cpu_random_numbers_are_the_devices() {
    let k = compile(RANDOM, "draws", "float32[::1], float64[::1], float64[::1]");
    let n = 300;
    let (ab, aa) = vec1(&vec![0f32; n]);
    let (bb, ba) = vec1(&vec![0f64; n]);
    let (cb, ca) = vec1(&vec![0f64; n]);
    let mut cfg = CpuLaunch::new([3, 1, 1], [128, 1, 1]);
    cfg.seed = Some(1234);
    try_run(&k, &[aa, ba, ca], &cfg).expect("launch");
    let (a, b, c): (Vec<f32>, Vec<f64>, Vec<f64>) = (ab.read(), bb.read(), cb.read());
    for i in 0..n {
        let t = i as u64;
        assert_eq!(
            a[i].to_bits(),
            pydevice::random::rand_f32(1234, t, 0).to_bits()
        );
        assert_eq!(
            b[i].to_bits(),
            pydevice::random::rand_f64(1234, t, 1).to_bits()
        );
        assert_eq!(
            c[i].to_bits(),
            pydevice::random::randn_f64(1234, t, 2).to_bits()
        );
    }
}

const FAILS: &str = r#"
from cuda import device

@device.kernel
def fails(x, k):
    i = device.tid(1)
    if i == k:
        assert x[0] < 0, "x must be negative"
    x[i + 1] = 1
    device.syncthreads()
"#;

#[test]
fn cpu_errors_name_the_thread_and_the_line() {
    let k = compile(FAILS, "fails", "int32[::1], int32");
    // Thread 40 (block 1, thread 8) fails its assert and stops; the others pass the
    // barrier without it. Thread 63 writes x[64], out of range.
    let (xb, xa) = vec1(&[0i32; 64]);
    let e = try_run(
        &k,
        &[xa, ArgValue::Int(40)],
        &CpuLaunch::new([2, 1, 1], [32, 1, 1]),
    )
    .expect_err("the assert fails");
    assert_eq!(
        e.to_string(),
        "AssertionError: x must be negative at fails.py:8:9 (thread (8, 0, 0) of block (1, 0, 0); that thread stopped)"
    );
    let x: Vec<i32> = xb.read();
    assert_eq!(x[41], 0, "the stopped thread wrote nothing");
    assert_eq!(x[40], 1);
    let (_xb, xa) = vec1(&[0i32; 64]);
    let e = try_run(
        &k,
        &[xa, ArgValue::Int(-1)],
        &CpuLaunch::new([2, 1, 1], [32, 1, 1]),
    )
    .expect_err("out of range");
    assert_eq!(
        e.to_string(),
        "array index out of range at fails.py:9:5 (thread (31, 0, 0) of block (1, 0, 0))"
    );
}

const DEADLOCK: &str = r#"
from cuda import device

FULL = 0xFFFFFFFF

@device.kernel
def stuck(x):
    i = device.thread_idx.x
    if i < 16:
        x[i] = device.shfl_sync(FULL, x[i], 0)
    else:
        x[i] = device.ballot_sync(FULL, lambda: x[i] > 0)
"#;

#[test]
fn cpu_deadlocks_are_reported_not_hung() {
    let k = compile(DEADLOCK, "stuck", "int32[::1]");
    let (_xb, xa) = vec1(&[1i32; 32]);
    let e = try_run(&k, &[xa], &CpuLaunch::new([1, 1, 1], [32, 1, 1]))
        .expect_err("lanes wait at different collectives");
    let m = e.to_string();
    assert!(m.starts_with("the kernel deadlocked: no thread can go on; thread (0, 0, 0) of block (0, 0, 0) waits at a warp collective (stuck.py:10:16)"), "{m}");
}

#[test]
fn cpu_deterministic_schedule_repeats_float_atomics_bit_for_bit() {
    let src = r#"
from cuda import device

@device.kernel
def total(x, out):
    i = device.tid(1)
    if i < len(x):
        device.atomic_ref(out, 0).add(x[i])
"#;
    let k = compile(src, "total", "float32[::1], float32[::1]");
    let n = 20_000;
    let mut r = Rng(5);
    let x: Vec<f32> = (0..n).map(|_| r.f32(-1e4, 1e4)).collect();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (_xb, xa) = vec1(&x);
        let (ob, oa) = vec1(&[0f32]);
        let mut cfg = CpuLaunch::new([blocks(n, 128), 1, 1], [128, 1, 1]);
        cfg.deterministic = true;
        try_run(&k, &[xa, oa], &cfg).expect("launch");
        seen.push(ob.read::<f32>()[0].to_bits());
    }
    // Blocks in grid order, threads in rank order: the sum of x in index order.
    let want = x.iter().fold(0f32, |a, v| a + v).to_bits();
    assert_eq!(seen, vec![want; 3]);
}

#[test]
fn cpu_back_end_refuses_what_it_does_not_run_with_the_span() {
    let src = "from cuda import device\n\n@device.kernel\ndef lane(out):\n    \
               out[0] = device.asm('mov.u32 $0, %laneid;', device.uint32)\n";
    let m = Module::parse("lane.py", src).expect("parse");
    let (args, _) = parse_signature("uint32[::1]").expect("sig");
    let e = m
        .cpu_kernel("lane", &args)
        .expect_err("inline PTX is refused");
    let text = e.to_string();
    assert!(
        text.contains("inline PTX (`asm`) is not supported by the CPU back end"),
        "{text}"
    );
    assert!(text.contains("lane.py:5"), "{text}");
    let src = "from cuda import device\n@device.func\ndef f(x):\n    return x\n";
    let m = Module::parse("f.py", src).expect("parse");
    let e = m
        .cpu_kernel(
            "f",
            &[pydevice::types::Type::Scalar(
                pydevice::types::Scalar::Int32,
            )],
        )
        .expect_err("a @func is not launched");
    assert!(e.to_string().contains("launches @kernel functions"), "{e}");
}

/// Wall times of two kernels at 1 and 2 OS threads (printed; `cargo test -- --nocapture`
/// shows them). The results are checked at each setting.
#[test]
fn cpu_wall_times_at_one_and_two_threads() {
    let k = compile(SCAN, "scan", "int32[::1], int32[::1]");
    let n = 1024 * 64;
    let x: Vec<i32> = (0..n as i32).map(|i| i % 7 - 3).collect();
    let r = compile(
        &fixture("lang/warp_reduction.py"),
        "reduce",
        "float32[:], float32[::1]",
    );
    let y: Vec<f32> = (0..1 << 18).map(|i| (i % 5) as f32).collect();
    let src = std::fs::read_to_string(crate::support::repo_path("examples/vector_add.py"))
        .expect("example");
    let add = compile(
        &src,
        "vector_add",
        "float32[::1], float32[::1], float32[::1]",
    );
    for threads in [1, 2] {
        let (_xb, xa) = vec1(&x);
        let (ob, oa) = vec1(&vec![0i32; n]);
        let mut cfg = CpuLaunch::new([64, 1, 1], [1024, 1, 1]);
        cfg.threads = threads;
        let t0 = std::time::Instant::now();
        try_run(&k, &[xa, oa], &cfg).expect("scan");
        let scan = t0.elapsed();
        assert_eq!(
            ob.read::<i32>()[1023],
            (0..1024).map(|i| i % 7 - 3).sum::<i32>()
        );
        let (_yb, ya) = vec1(&y);
        let (sb, sa) = vec1(&[0f32]);
        let mut cfg = CpuLaunch::new([1024, 1, 1], [256, 1, 1]);
        cfg.threads = threads;
        let t0 = std::time::Instant::now();
        try_run(&r, &[ya, sa], &cfg).expect("reduce");
        let red = t0.elapsed();
        assert_eq!(sb.read::<f32>()[0], y.iter().sum::<f32>());
        let (_ab, aa) = vec1(&y);
        let (cb, ca) = vec1(&vec![0f32; y.len()]);
        let mut cfg = CpuLaunch::new([1024, 1, 1], [256, 1, 1]);
        cfg.threads = threads;
        let t0 = std::time::Instant::now();
        try_run(&add, &[aa.clone(), aa, ca], &cfg).expect("add");
        let vadd = t0.elapsed();
        assert_eq!(cb.read::<f32>()[7], 2.0 * y[7]);
        eprintln!(
            "cpu back end, {threads} thread(s): block scan of 65,536 int32 (64 blocks of 1024) {:.1} ms; shuffle reduction of 262,144 float32 (1024 blocks of 256) {:.1} ms; vector add of 262,144 float32 (no barrier: plain calls) {:.1} ms",
            scan.as_secs_f64() * 1e3,
            red.as_secs_f64() * 1e3,
            vadd.as_secs_f64() * 1e3
        );
    }
}

/// Every kernel fixture (`tests/fixtures/{lang,numba,cupyx,kernels,structs}/*.py` with an
/// `# entry:` and a plain `# sig:`) through the CPU back end: each either compiles or is
/// refused with diagnostics; none reaches code generation and fails there (an internal
/// error) or panics. Prints how many compile.
#[test]
fn cpu_back_end_compiles_or_refuses_every_kernel_fixture() {
    let mut compiled = 0;
    let mut refused = Vec::new();
    let mut total = 0;
    let mut broken = Vec::new();
    for dir in ["lang", "numba", "cupyx", "kernels", "structs"] {
        let root = crate::support::repo_path(&format!("tests/fixtures/{dir}"));
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            if path.extension().is_none_or(|e| e != "py") {
                continue;
            }
            let src = std::fs::read_to_string(&path).expect("fixture");
            let header = |key: &str| {
                src.lines()
                    .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
            };
            let (Some(entry), Some(sig)) = (header("# entry:"), header("# sig:")) else {
                continue;
            };
            if header("# const:").is_some() || header("# arch:").is_some() {
                continue;
            }
            let Ok((args, _)) = parse_signature(&sig) else {
                continue;
            };
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let Ok(m) = Module::parse(&name, &src) else {
                continue;
            };
            let Ok(spec) = m.specialize(&entry, &args) else {
                continue;
            };
            if spec.program().functions[spec.program().entry].kind
                != pydevice::ir::FunctionKind::Kernel
            {
                continue;
            }
            total += 1;
            match spec.to_cpu() {
                Ok(_) => compiled += 1,
                Err(pydevice::Error::Diagnostics(d)) => {
                    refused.push(format!("{dir}/{name}: {}", d.list[0].message))
                }
                Err(e) => broken.push(format!("{dir}/{name}: {e}")),
            }
        }
    }
    eprintln!(
        "cpu back end: {compiled} of {total} kernel fixtures compile; refused:\n  {}",
        refused.join("\n  ")
    );
    assert!(
        broken.is_empty(),
        "internal errors:\n  {}",
        broken.join("\n  ")
    );
    assert!(total > 50, "found only {total} kernel fixtures");
    assert!(compiled * 2 > total, "{compiled} of {total}");
}

#[test]
fn cpu_module_level_constant_arrays() {
    let src = r#"
import numpy as np
from cuda import device

TAPS = np.array([0.25, 0.5, 0.25], dtype=np.float32)
TABLE = np.asfortranarray(np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int64))

@device.kernel
def k(out, idx):
    i = device.tid(1)
    if i < len(out):
        acc = device.float32(0)
        for t in range(len(TAPS)):
            acc += TAPS[t] * device.float32(i + t)
        out[i] = acc
    if i < TABLE.shape[0]:
        idx[i] = TABLE[i, 0] * 10 + TABLE[i, 1]
"#;
    let k = compile(src, "k", "float32[::1], int64[::1]");
    let (ob, oa) = vec1(&[0f32; 100]);
    let (ib, ia) = vec1(&[0i64; 3]);
    run(&k, &[oa, ia], [2, 1, 1], [64, 1, 1]);
    let out: Vec<f32> = ob.read();
    for (i, v) in out.iter().enumerate() {
        let mut acc = 0f32;
        for (t, w) in [0.25f32, 0.5, 0.25].iter().enumerate() {
            acc = w.mul_add((i + t) as f32, acc);
        }
        let plain = 0.25 * i as f32 + 0.5 * (i + 1) as f32 + 0.25 * (i + 2) as f32;
        assert!(*v == acc || *v == plain, "out[{i}] = {v}, want {acc}");
    }
    assert_eq!(ib.read::<i64>(), vec![12, 34, 56]);
}

#[test]
fn cpu_numba_frexp_ldexp_modf_and_sad() {
    let k = compile(
        &fixture("numba/math_frexp_ldexp_modf.py"),
        "frexp_ldexp_modf",
        "float64[::1], int32[::1], float32[::1], float64[:, ::1], int32[:, ::1], float32[:, ::1]",
    );
    let n = 200;
    let mut r = Rng(31);
    let x: Vec<f64> = (0..n)
        .map(|i| match i {
            0 => 0.0,
            1 => -0.0,
            2 => f64::INFINITY,
            3 => 1e-310,
            _ => f64::from(r.f32(-1e6, 1e6)),
        })
        .collect();
    let e: Vec<i32> = (0..n).map(|_| r.i32(-20, 20)).collect();
    let y: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let (_xb, xa) = vec1(&x);
    let (_eb, ea) = vec1(&e);
    let (_yb, ya) = vec1(&y);
    let (ob, oa) = array(&vec![0f64; 4 * n], &[4, n as u64], &[n as i64, 1]);
    let (pb, pa) = array(&vec![0i32; 2 * n], &[2, n as u64], &[n as i64, 1]);
    let (qb, qa) = array(&vec![0f32; 4 * n], &[4, n as u64], &[n as i64, 1]);
    run(&k, &[xa, ea, ya, oa, pa, qa], [2, 1, 1], [128, 1, 1]);
    let (out, exps, out32): (Vec<f64>, Vec<i32>, Vec<f32>) = (ob.read(), pb.read(), qb.read());
    let frexp = |v: f64| -> (f64, i32) {
        if v == 0.0 || !v.is_finite() {
            return (v, 0);
        }
        let mut m = v;
        let mut k = 0;
        while m.abs() >= 1.0 {
            m /= 2.0;
            k += 1;
        }
        while m.abs() < 0.5 {
            m *= 2.0;
            k -= 1;
        }
        (m, k)
    };
    for i in 0..n {
        let (m, k) = frexp(x[i]);
        assert_eq!(
            (out[i].to_bits(), exps[i]),
            (m.to_bits(), k),
            "frexp({})",
            x[i]
        );
        let scaled = x[i] * 2f64.powi(e[i]);
        assert_eq!(
            out[n + i].to_bits(),
            scaled.to_bits(),
            "ldexp({}, {})",
            x[i],
            e[i]
        );
        let int = if x[i].is_infinite() {
            x[i]
        } else {
            x[i].trunc()
        };
        // C's modf: the fraction has the sign of x (also when it is zero).
        let frac = if x[i].is_infinite() { 0.0 } else { x[i] - int }.copysign(x[i]);
        assert_eq!(
            out[2 * n + i].to_bits(),
            frac.to_bits(),
            "modf({}).frac",
            x[i]
        );
        assert_eq!(
            out[3 * n + i].to_bits(),
            int.to_bits(),
            "modf({}).int",
            x[i]
        );
        let (m32, k32) = frexp(f64::from(y[i]));
        assert_eq!(
            (out32[i], exps[n + i]),
            (m32 as f32, k32),
            "frexp({}f32)",
            y[i]
        );
    }

    let k = compile(
        &fixture("numba/libdevice_sad.py"),
        "use_sad",
        "int64[::1], int64[::1], int64[::1], int64[::1]",
    );
    let xs: Vec<i64> = (0..64).map(|_| i64::from(r.i32(-1000, 1000))).collect();
    let ys: Vec<i64> = (0..64).map(|_| i64::from(r.i32(-1000, 1000))).collect();
    let zs: Vec<i64> = (0..64).map(|_| i64::from(r.i32(0, 1000))).collect();
    let (rb, ra) = vec1(&[0i64; 64]);
    let (_a, xa) = vec1(&xs);
    let (_b, ya) = vec1(&ys);
    let (_c, za) = vec1(&zs);
    run(&k, &[ra, xa, ya, za], [1, 1, 1], [64, 1, 1]);
    let got: Vec<i64> = rb.read();
    for i in 0..64 {
        assert_eq!(got[i], (xs[i] - ys[i]).abs() + zs[i], "sad {i}");
    }
}

const FLOAT_REDUCE: &str = r#"
from cuda import device
from cuda.device import cg

@device.kernel
def fred(x, out):
    i = device.tid(1)
    t = cg.tiled_partition(cg.this_thread_block(), 8)
    out[i, 0] = cg.reduce(t, x[i], 'add')
    out[i, 1] = cg.reduce(t, x[i], 'max')
    if x[i] > 0.0:
        out[i, 2] = cg.reduce(cg.coalesced_threads(), x[i], 'add')
"#;

#[test]
fn cpu_float_cg_reduce_in_the_devices_order() {
    let k = compile(FLOAT_REDUCE, "fred", "float32[::1], float32[:, ::1]");
    let n = 64;
    let mut r = Rng(41);
    let x: Vec<f32> = (0..n).map(|_| r.f32(-1.0, 1.0) * 1e3).collect();
    let (_xb, xa) = vec1(&x);
    let (ob, oa) = array(&vec![0f32; n * 3], &[n as u64, 3], &[3, 1]);
    run(&k, &[xa, oa], [1, 1, 1], [n as u32, 1, 1]);
    let out: Vec<f32> = ob.read();
    for tile in 0..n / 8 {
        // The butterfly: every lane ends with the same bits.
        let mut acc: Vec<f32> = x[tile * 8..tile * 8 + 8].to_vec();
        let mut mx = acc.clone();
        for off in [4, 2, 1] {
            let prev = acc.clone();
            let prev_m = mx.clone();
            for p in 0..8 {
                acc[p] = prev[p] + prev[p ^ off];
                mx[p] = prev_m[p].max(prev_m[p ^ off]);
            }
        }
        for p in 0..8 {
            let i = tile * 8 + p;
            assert_eq!(
                out[i * 3].to_bits(),
                acc[p].to_bits(),
                "tile sum, thread {i}"
            );
            assert_eq!(out[i * 3 + 1], mx[p], "tile max, thread {i}");
        }
    }
    for w in 0..n / 32 {
        // The tree over the ranks of the positive lanes.
        let members: Vec<usize> = (w * 32..w * 32 + 32).filter(|&i| x[i] > 0.0).collect();
        let mut acc: Vec<f32> = members.iter().map(|&i| x[i]).collect();
        let mut off = 1;
        while off < 32 {
            for r in (0..acc.len()).step_by(2 * off) {
                if r + off < acc.len() {
                    acc[r] += acc[r + off];
                }
            }
            off *= 2;
        }
        for &i in &members {
            assert_eq!(
                out[i * 3 + 2].to_bits(),
                acc[0].to_bits(),
                "coalesced sum, thread {i}"
            );
        }
    }
}

#[test]
fn cpu_launch_configurations_are_checked() {
    let src = std::fs::read_to_string(crate::support::repo_path("examples/vector_add.py"))
        .expect("example");
    let k = compile(
        &src,
        "vector_add",
        "float32[::1], float32[::1], float32[::1]",
    );
    let (_ab, aa) = vec1(&[1f32; 8]);
    let args = [aa.clone(), aa.clone(), aa];
    for (grid, block, shared, want) in [
        ([0, 1, 1], [32, 1, 1], 0, "at least one block"),
        ([1, 1, 1], [64, 32, 1], 0, "at most 1024 threads"),
        ([1, 1, 1], [32, 1, 1], 1 << 30, "dynamic shared memory"),
    ] {
        let mut cfg = CpuLaunch::new(grid, block);
        cfg.shared_bytes = shared;
        let e = try_run(&k, &args, &cfg).expect_err("refused");
        assert!(matches!(e, CpuError::Config(_)), "{e}");
        assert!(e.to_string().contains(want), "{e}");
    }
    let e = try_run(&k, &args[..2], &CpuLaunch::new([1, 1, 1], [8, 1, 1])).expect_err("two args");
    assert!(matches!(e, CpuError::Argument(_)), "{e}");
}

const COALESCED: &str = r#"
from cuda import device
from cuda.device import cg

@device.kernel
def co(x, out):
    i = device.tid(1)
    if x[i] > 0:
        g = cg.coalesced_threads()
        out[i, 0] = g.thread_rank()
        out[i, 1] = g.num_threads()
        out[i, 2] = g.shfl(x[i], 1)
        out[i, 3] = g.shfl_down(x[i], 2)
        out[i, 4] = g.shfl_up(x[i], 1)
        out[i, 5] = g.ballot(x[i] > 50)
        out[i, 6] = g.any(x[i] > 90)
        out[i, 7] = cg.reduce(g, x[i], 'max')
"#;

#[test]
fn cpu_coalesced_groups() {
    let k = compile(COALESCED, "co", "int32[::1], int32[:, ::1]");
    let n = 64;
    let mut r = Rng(51);
    let x: Vec<i32> = (0..n).map(|_| r.i32(-100, 100)).collect();
    let (_xb, xa) = vec1(&x);
    let (ob, oa) = array(&vec![0i32; n * 8], &[n as u64, 8], &[8, 1]);
    run(&k, &[xa, oa], [1, 1, 1], [n as u32, 1, 1]);
    let out: Vec<i32> = ob.read();
    for w in 0..n / 32 {
        let members: Vec<usize> = (w * 32..w * 32 + 32).filter(|&i| x[i] > 0).collect();
        let m = members.len();
        let vals: Vec<i32> = members.iter().map(|&i| x[i]).collect();
        let ballot = vals
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 50)
            .fold(0i32, |b, (r, _)| b | 1 << r);
        for (r, &i) in members.iter().enumerate() {
            let want = [
                r as i32,
                m as i32,
                if m > 1 { vals[1] } else { vals[r] },
                if r + 2 < m { vals[r + 2] } else { vals[r] },
                if r >= 1 { vals[r - 1] } else { vals[r] },
                ballot,
                vals.iter().any(|v| *v > 90) as i32,
                *vals.iter().max().expect("members"),
            ];
            assert_eq!(&out[i * 8..i * 8 + 8], &want, "thread {i} (rank {r})");
        }
    }
}

// numba-cuda suite kernels of tests/gpu/numba_suite.rs, on the CPU.

/// `pydevice run --cpu`: the kernel runs on the CPU back end with no GPU, its `.npy`
/// arguments in host memory, `--out` writes the result; what is for a GPU is refused.
#[test]
fn cpu_cli_run_launches_on_the_cpu_back_end() {
    use pydevice::runtime::npy::NpyArray;
    use pydevice::types::Scalar;
    let dir = std::env::temp_dir().join(format!("pydevice-cli-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |f: &str| dir.join(f).display().to_string();
    let n = 10_007usize;
    let mut r = Rng(41);
    let a: Vec<f32> = (0..n).map(|_| r.f32(-10.0, 10.0)).collect();
    let b: Vec<f32> = (0..n).map(|_| r.f32(-10.0, 10.0)).collect();
    let npy = |v: &[f32]| NpyArray {
        dtype: Scalar::Float32,
        shape: vec![v.len() as u64],
        fortran_order: false,
        data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    };
    std::fs::write(path("a.npy"), npy(&a).to_bytes()).unwrap();
    std::fs::write(path("b.npy"), npy(&b).to_bytes()).unwrap();
    std::fs::write(path("c.npy"), npy(&vec![0f32; n]).to_bytes()).unwrap();
    let example = crate::support::repo_path("examples/vector_add.py")
        .display()
        .to_string();
    let run = |extra: &[&str]| {
        std::process::Command::new(crate::support::pydevice_bin())
            .args(["run", &example, "--entry", "vector_add", "--cpu"])
            .args(["--grid", &blocks(n, 256).to_string(), "--block", "256"])
            .args(["--arg", &format!("a={}", path("a.npy"))])
            .args(["--arg", &format!("b={}", path("b.npy"))])
            .args(["--arg", &format!("c={}", path("c.npy"))])
            .args(extra)
            .output()
            .expect("pydevice run")
    };
    let out = run(&["--out", &format!("c={}", path("out.npy"))]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("on the CPU with grid"), "{stderr}");
    let c = NpyArray::parse(&std::fs::read(path("out.npy")).unwrap()).expect("npy");
    let c: Vec<f32> = c
        .data
        .chunks(4)
        .map(|w| f32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    for i in 0..n {
        assert_eq!(c[i].to_bits(), (a[i] + b[i]).to_bits(), "c[{i}]");
    }
    // A block the CPU back end cannot run is the launch's error (exit status 2).
    let out = std::process::Command::new(crate::support::pydevice_bin())
        .args(["run", &example, "--entry", "vector_add", "--cpu"])
        .args(["--grid", "1", "--block", "2048"])
        .args(["--arg", &format!("a={}", path("a.npy"))])
        .args(["--arg", &format!("b={}", path("b.npy"))])
        .args(["--arg", &format!("c={}", path("c.npy"))])
        .output()
        .expect("pydevice run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("vector_add") && stderr.contains("at most 1024 threads"),
        "{stderr}"
    );
    // Options for a GPU are refused, naming the option (`--bench` times CPU launches).
    for opt in [&["--arch", "sm_80"][..], &["--debug"]] {
        let out = run(opt);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{opt:?}: {stderr}");
        assert!(stderr.contains(opt[0]), "{opt:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `device.hopper` operations the CPU back end does not emulate (TMA with tensor maps,
/// `wgmma`) are refused with a diagnostic at the call, not an internal error; its mbarriers
/// and bulk copies run (GPU tests `bulk_copy_with_mbarrier_transaction_count_round_trips`,
/// `mbarrier_phases_complete_in_order_with_transaction_counts`).
#[test]
fn cpu_back_end_refuses_hopper_operations_with_the_span() {
    // TMA and K-major `wgmma` run on the CPU (§22.1); a transposed (MN-major) `wgmma`
    // operand does not yet: refused at its line, the other operations of the kernel not.
    let m = Module::parse("tma.py", &fixture("lang/hopper_tma_tiles.py")).expect("parse");
    let (args, _) = parse_signature("uint64[::1], uint64[::1], uint64[::1]").expect("sig");
    m.cpu_kernel("tma_tiles", &args)
        .expect("TMA runs on the CPU");
    let m = Module::parse("types.py", &fixture("lang/hopper_wgmma_types.py")).expect("parse");
    let src = fixture("lang/hopper_wgmma_types.py");
    let entry = src
        .lines()
        .find_map(|l| l.strip_prefix("# entry:"))
        .expect("entry")
        .trim();
    let sig = src
        .lines()
        .find_map(|l| l.strip_prefix("# sig:"))
        .expect("sig")
        .trim();
    let (args, _) = parse_signature(sig).expect("sig");
    let e = m
        .cpu_kernel(entry, &args)
        .expect_err("a transposed wgmma operand is device-only");
    let text = e.to_string();
    assert!(text.contains("hopper.wgmma"), "{text}");
    assert!(text.contains("types.py:29"), "{text}");
    assert!(!text.contains("types.py:24"), "{text}");
}

mod builders;
mod numba_gaps;
mod race;

#[test]
fn cpu_tma_swizzle_modes_follow_ptx() {
    use pydevice::runtime::cpu_tma::swizzle;
    // 128-byte swizzle: line 1's chunk 0 goes to chunk 1, line 7's chunk 2 to chunk 5,
    // line 8 starts the pattern again; bytes within a chunk stay.
    assert_eq!(swizzle(0x80, 128), 0x90);
    assert_eq!(swizzle(7 * 128 + 2 * 16 + 3, 128), 7 * 128 + 5 * 16 + 3);
    assert_eq!(swizzle(8 * 128 + 16, 128), 8 * 128 + 16);
    // 64-byte: the chunk's two low bits XOR the line modulo 4.
    assert_eq!(swizzle(3 * 128 + 16, 64), 3 * 128 + 2 * 16);
    assert_eq!(swizzle(5 * 128, 64), 5 * 128 + 16);
    // 32-byte: the chunk's lowest bit XOR the line's.
    assert_eq!(swizzle(128, 32), 128 + 16);
    assert_eq!(swizzle(2 * 128 + 16, 32), 2 * 128 + 16);
    assert_eq!(swizzle(12345, 0), 12345);
}
