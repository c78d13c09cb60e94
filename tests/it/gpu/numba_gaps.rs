//! What numba-cuda's own suite needed next (scripts/numba_suite.py, issue 30): `cuda.bf16`'s
//! `hmax`/`hmin` with CUDA's NaN rule, `hmax_nan`/`hmin_nan`, `hisnan`, `hisinf` and
//! `float("nan")` constants; numba's `cuda.cg.this_grid().sync()` (the documentation's heat
//! equation). Random inputs against a CPU reference.

use super::*;
use pydevice::runtime::Stream;

/// The bits bfloat16 rounds `x` to (to nearest even; NaN stays NaN).
pub(crate) fn bf16_bits(x: f32) -> u16 {
    if x.is_nan() {
        return 0x7fc0;
    }
    let b = x.to_bits();
    let rest = b & 0xffff;
    let mut h = b >> 16;
    if rest > 0x8000 || (rest == 0x8000 && h & 1 == 1) {
        h += 1;
    }
    h as u16
}

/// The reference of `bf16_extremes` for one pair: rows 0-4 of `out` and `inf`.
pub(crate) fn bf16_extremes_want(x: f32, y: f32) -> ([f32; 5], i32) {
    // CUDA's `a > b ? a : b`, with a NaN `b` giving `a`
    let max = if y.is_nan() || x > y { x } else { y };
    let min = if y.is_nan() || x < y { x } else { y };
    let either = x.is_nan() || y.is_nan();
    let inf = if x == f32::INFINITY {
        1
    } else if x == f32::NEG_INFINITY {
        -1
    } else {
        0
    };
    (
        [
            max,
            min,
            if either { f32::NAN } else { max },
            if either { f32::NAN } else { min },
            if x.is_nan() { 1.0 } else { 0.0 },
        ],
        inf,
    )
}

/// Random bfloat16 values with NaN, infinities and signed zeros among them.
pub(crate) fn bf16_inputs(n: usize, seed: u64) -> (Vec<u16>, Vec<u16>) {
    let mut r = Rng(seed);
    let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.0];
    let mut pick = |i: usize| {
        if i % 31 < special.len() {
            special[i % 31]
        } else {
            r.f32(-4.0, 4.0)
        }
    };
    let a = (0..n).map(|i| bf16_bits(pick(i))).collect();
    let b = (0..n).map(|i| bf16_bits(pick(i * 7 + 3))).collect();
    (a, b)
}

pub(crate) fn check_bf16_extremes(a: &[u16], b: &[u16], out: &[f32], inf: &[i32]) {
    let n = a.len();
    for i in 0..n {
        let (x, y) = (
            f32::from_bits(u32::from(a[i]) << 16),
            f32::from_bits(u32::from(b[i]) << 16),
        );
        let (want, want_inf) = bf16_extremes_want(x, y);
        for (row, w) in want.iter().enumerate() {
            let got = out[row * n + i];
            assert!(
                (w.is_nan() && got.is_nan()) || got.to_bits() == w.to_bits(),
                "row {row}, ({x}, {y}): {got} vs {w}"
            );
        }
        assert_eq!(inf[i], want_inf, "hisinf({x})");
    }
    assert!(out[5 * n].is_nan(), "bfloat16(float(\"nan\"))");
    assert_eq!(out[5 * n + 1], f32::NEG_INFINITY, "float(\" -Infinity \")");
    assert_eq!(out[5 * n + 2], 1000.5, "float(\"1_000.5\")");
}

pub(crate) const BF16_EXTREMES_SIG: &str =
    "bfloat16[::1], bfloat16[::1], float32[:, ::1], int32[::1]";

on_each_backend! {
fn numba_bf16_extremes_random(dev) {
    let src = include_str!("../../fixtures/numba/bf16_extremes.py");
    let k = kernel(&dev, src, "bf16_extremes", BF16_EXTREMES_SIG);
    let n = 3001usize;
    let (a, b) = bf16_inputs(n, 97);
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = array(&dev, &vec![0f32; 6 * n], &[6, n as u64], &[n as i64, 1]);
    let (ib, ia) = vec1(&dev, &vec![7i32; n]);
    k.launch(&[aa, ba, oa, ia], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let inf: Vec<i32> = from_bytes(&dev.download(&ib).expect("download"));
    check_bf16_extremes(&a, &b, &out, &inf);
}
}

/// The heat equation of numba-cuda's documentation, `steps` steps, as the kernel computes it
/// (`t + k * (...)` contracted into one fma).
pub(crate) fn heat_want(init: &[f64], steps: usize, k: f64) -> (Vec<f64>, Vec<f64>) {
    let n = init.len();
    let (mut b0, mut b1) = (init.to_vec(), vec![0.0; n]);
    for step in 0..steps {
        let (data, next) = if step % 2 == 0 {
            (&b0, &mut b1)
        } else {
            (&b1, &mut b0)
        };
        for i in 0..n {
            let t = data[i];
            let inner = if i == 0 {
                data[i + 1] - 2.0 * t
            } else if i == n - 1 {
                data[i - 1] - 2.0 * t
            } else {
                data[i - 1] - 2.0 * t + data[i + 1]
            };
            next[i] = k.mul_add(inner, t);
        }
    }
    (b0, b1)
}

pub(crate) const HEAT_SIG: &str = "float64[::1], float64[::1], int64, float64";

on_each_backend! {
fn numba_cg_grid_sync_heat(dev) {
    let src = include_str!("../../fixtures/numba/cg_grid_sync.py");
    let module = Module::parse("cg_grid_sync", src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(HEAT_SIG).expect("signature");
    let k = dev.compile(
        &module,
        "heat",
        &args,
        &CompileOptions {
            arch: arch_for(&dev),
            ..CompileOptions::default()
        },
    );
    assert!(k.abi().cooperative, "grid sync makes it cooperative");
    let n = 1000usize;
    let mut r = Rng(5);
    let init: Vec<f64> = (0..n).map(|_| f64::from(r.f32(0.0, 100.0))).collect();
    let (b0, a0) = vec1(&dev, &init);
    let (b1, a1) = vec1(&dev, &vec![0f64; n]);
    let cfg = LaunchConfig {
        grid: [blocks(n, 256), 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    let steps = 301usize;
    dev.launch_cooperative(
        &k,
        &[a0, a1, ArgValue::Int(steps as i64), ArgValue::Float(0.25)],
        &cfg,
        &Stream::default_stream(),
    )
    .expect("cooperative launch");
    dev.synchronize().expect("synchronize");
    let got0: Vec<f64> = from_bytes(&dev.download(&b0).expect("download"));
    let got1: Vec<f64> = from_bytes(&dev.download(&b1).expect("download"));
    let (w0, w1) = heat_want(&init, steps, 0.25);
    for i in 0..n {
        assert!(
            (got0[i] - w0[i]).abs() <= 1e-12 * w0[i].abs().max(1.0),
            "buf_0[{i}]: {} vs {}",
            got0[i],
            w0[i]
        );
        assert!(
            (got1[i] - w1[i]).abs() <= 1e-12 * w1[i].abs().max(1.0),
            "buf_1[{i}]: {} vs {}",
            got1[i],
            w1[i]
        );
    }
}
}

pub(crate) const ENUMERATE_RANGE_SIG: &str = "int64[::1], int64[::1], float64[::1], int64[:, ::1]";

/// Python's `range(start, stop, step)`.
fn py_range(start: i64, stop: i64, step: i64) -> Vec<i64> {
    let mut v = Vec::new();
    let mut j = start;
    while (step > 0 && j < stop) || (step < 0 && j > stop) {
        v.push(j);
        j += step;
    }
    v
}

/// Inputs of `enumerate_range`: bounds on both sides of each other (empty ranges included).
pub(crate) fn enumerate_range_inputs(n: usize) -> (Vec<i64>, Vec<i64>, Vec<f64>) {
    let mut r = Rng(41);
    let x = (0..n).map(|_| i64::from(r.i32(-20, 40))).collect();
    let y = (0..n).map(|_| i64::from(r.i32(-20, 40))).collect();
    let a = (0..17).map(|_| f64::from(r.i32(-5, 5))).collect();
    (x, y, a)
}

/// The reference of `enumerate_range`, rows 0-3 of `out` (n columns).
pub(crate) fn enumerate_range_want(x: &[i64], y: &[i64], a: &[f64]) -> Vec<i64> {
    let n = x.len();
    let mut out = vec![0i64; 4 * n];
    for t in 0..n {
        let e = |v: Vec<i64>| v.into_iter().enumerate().map(|(i, j)| (i as i64, j));
        out[t] = e(py_range(x[t], y[t], -1)).map(|(i, j)| i * j).sum();
        out[n + t] = e(py_range(y[t], x[t], 3))
            .filter(|(_, j)| j % 2 != 0)
            .map(|(i, j)| i * 1000 + j)
            .sum();
        out[2 * n + t] = py_range(0, x[t], 1)
            .into_iter()
            .zip(a)
            .map(|(j, v)| j * (*v as i64))
            .sum();
        out[3 * n + t] = e(py_range(0, y[t], 1)).map(|(i, j)| i - j).sum();
    }
    out
}

on_each_backend! {
fn numba_enumerate_range_random(dev) {
    let src = include_str!("../../fixtures/numba/enumerate_range.py");
    let k = kernel(&dev, src, "enumerate_range", ENUMERATE_RANGE_SIG);
    let n = 500usize;
    let (x, y, a) = enumerate_range_inputs(n);
    let (_xb, xa) = vec1(&dev, &x);
    let (_yb, ya) = vec1(&dev, &y);
    let (_ab, aa) = vec1(&dev, &a);
    let (ob, oa) = array(&dev, &vec![0i64; 4 * n], &[4, n as u64], &[n as i64, 1]);
    k.launch(&[xa, ya, aa, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<i64> = from_bytes(&dev.download(&ob).expect("download"));
    assert_eq!(out, enumerate_range_want(&x, &y, &a));
}
}
