//! What numba-cuda's own test suite needed (scripts/numba_suite.py): cache-hinted loads and
//! stores, `math.degrees/radians/remainder/nextafter`, `round`, NumPy's constants and CUDA's
//! vector type names, on random inputs against a CPU reference; and float16 scalar arguments.

use super::*;
use crate::support::pydevice_bin;

on_each_backend! {
fn numba_suite_builtins_random(dev) {
    let src = include_str!("../../fixtures/numba/suite_builtins.py");
    let k = kernel(
        &dev,
        src,
        "suite_builtins",
        "float32[::1], float32[:, ::1], int64[::1]",
    );
    let n = 10_007;
    let mut r = Rng(11);
    let x: Vec<f32> = (0..n)
        .map(|_| {
            let v = r.f32(0.01, 4.0);
            if r.next().is_multiple_of(2) { v } else { -v }
        })
        .collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (ob, oa) = array(&dev, &vec![0f32; 7 * n], &[7, n as u64], &[n as i64, 1]);
    let (rb, ra) = vec1(&dev, &vec![0i64; n]);
    k.launch(&[xa, oa, ra], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let rounded: Vec<i64> = from_bytes(&dev.download(&rb).expect("download"));
    let pi = std::f64::consts::PI;
    for (i, &v) in x.iter().enumerate() {
        let q = (f64::from(v) / 0.75).round_ties_even();
        let rem = (f64::from(v) - q * 0.75) as f32;
        let next = f32::from_bits(if v > 0.0 {
            v.to_bits() + 1
        } else {
            v.to_bits() - 1
        });
        let want = [
            v * (180.0 / pi) as f32,
            v * (pi / 180.0) as f32,
            rem,
            next,
            v + pi as f32,
            v * 2.0,
            v + v,
        ];
        for (row, w) in want.iter().enumerate() {
            let got = out[row * n + i];
            let tol = if row == 2 { 1e-6 } else { 0.0 };
            assert!(
                (got - w).abs() <= tol,
                "row {row}, x[{i}] = {v}: {got} vs {w}"
            );
        }
        assert_eq!(
            rounded[i],
            (v * 3.5).round_ties_even() as i64,
            "round({v} * 3.5)"
        );
    }
}
}

on_each_backend! {
fn float16_scalar_arguments(dev) {
    let src = "from numba import cuda\n\n@cuda.jit\ndef k(a, out):\n    out[0] = a\n";
    let k = kernel(&dev, src, "k", "float16, float16[::1]");
    let mut r = Rng(5);
    for _ in 0..50 {
        let v = f64::from(r.f32(-70000.0, 70000.0))
            * if r.next().is_multiple_of(2) {
                1.0
            } else {
                1e-4
            };
        let (ob, oa) = vec1(&dev, &[0u16]);
        k.launch(&[ArgValue::Float(v), oa], [1, 1, 1], [1, 1, 1]);
        let got: Vec<u16> = from_bytes(&dev.download(&ob).expect("download"));
        assert_eq!(got[0], pydevice::types::half::f16_bits(v), "float16({v})");
    }
}
}

on_each_backend! {
fn numba_fp16_exp10_rint_random(dev) {
    let src = include_str!("../../fixtures/numba/fp16_exp10_rint.py");
    let k = kernel(
        &dev,
        src,
        "half_exp10_rint",
        "float16[::1], float16[:, ::1]",
    );
    let n = 4099;
    let mut r = Rng(17);
    let a: Vec<u16> = (0..n)
        .map(|_| pydevice::types::half::f16_bits(f64::from(r.f32(-4.0, 4.0))))
        .collect();
    let (_ab, aa) = vec1(&dev, &a);
    let (ob, oa) = array(&dev, &vec![0u16; 2 * n], &[2, n as u64], &[n as i64, 1]);
    k.launch(&[aa, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<u16> = from_bytes(&dev.download(&ob).expect("download"));
    for (i, &h) in a.iter().enumerate() {
        let x = half_to_f64(h);
        let exp10 = pydevice::types::half::f16_bits(10f64.powf(x));
        // float32's exp10 may round the other way at a float16 tie: one ulp apart at most.
        assert!(
            out[i].abs_diff(exp10) <= 1,
            "hexp10({x}): {:#06x} vs {exp10:#06x}",
            out[i]
        );
        let rint = pydevice::types::half::f16_bits(x.round_ties_even());
        assert_eq!(out[n + i], rint, "hrint({x})");
    }
}
}

/// A float16's value from its bits.
fn half_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((h >> 10) & 0x1f);
    let m = f64::from(h & 0x3ff);
    sign * match e {
        0 => m * 2f64.powi(-24),
        31 => f64::INFINITY,
        _ => (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

#[test]
fn numba_grid_beyond_int32() {
    // numba-cuda's test_issue_9229: 22121216 × 256 threads, more than 2^32.
    let Some(dev) = device("numba_grid_beyond_int32") else {
        return;
    };
    let src = "from numba import cuda\n\n@cuda.jit\ndef k(out):\n    if cuda.threadIdx.x == cuda.blockDim.x - 1 and cuda.blockIdx.x == cuda.gridDim.x - 1:\n        out[0] = cuda.grid(1)\n        out[1] = cuda.gridsize(1)\n";
    let k = kernel(&dev, src, "k", "int64[::1]");
    let (ob, oa) = vec1(&dev, &[0i64; 2]);
    let blocks = 22_121_216u32;
    k.launch(&[oa], [blocks, 1, 1], [256, 1, 1]);
    let out: Vec<i64> = from_bytes(&dev.download(&ob).expect("download"));
    let total = i64::from(blocks) * 256;
    assert_eq!(out, vec![total - 1, total]);
}

on_each_backend! {
fn numba_static_device_function_arguments(dev) {
    // A dtype, an atomic operation, a device function and constants as device-function
    // arguments (numba-cuda's test_atomics style).
    let src = include_str!("../../fixtures/numba/static_args.py");
    let k = kernel(
        &dev,
        src,
        "static_args",
        "uint32[::1], float64[:, ::1], float64",
    );
    let mut r = Rng(23);
    let ary: Vec<u32> = (0..32).map(|_| r.i32(0, 1000) as u32).collect();
    let ary2: Vec<f64> = (0..32).map(|_| f64::from(r.f32(-1.0, 1.0))).collect();
    let (ab, aa) = vec1(&dev, &ary);
    let (bb, ba) = array(&dev, &ary2, &[32, 1], &[1, 1]);
    k.launch(&[aa, ba, ArgValue::Float(0.25)], [1, 1, 1], [32, 1, 1]);
    let got: Vec<u32> = from_bytes(&dev.download(&ab).expect("download"));
    let got2: Vec<f64> = from_bytes(&dev.download(&bb).expect("download"));
    // First call: a histogram of ary % 32; second: 2 where the histogram's bins % 32 land.
    let mut hist = [0u32; 32];
    for a in &ary {
        hist[(a % 32) as usize] += 1;
    }
    let mut want = [0u32; 32];
    for h in &hist {
        want[(h % 32) as usize] = 2;
    }
    assert_eq!(got, want);
    for (g, a) in got2.iter().zip(&ary2) {
        assert_eq!(*g, a + 0.25);
    }
}
}

on_each_backend! {
fn numba_int_bit_count_random(dev) {
    let src = include_str!("../../fixtures/numba/int_bit_count.py");
    let k = kernel(
        &dev,
        src,
        "bit_counts",
        "uint8[::1], int64[::1], int32[:, ::1]",
    );
    let n = 1000;
    let mut r = Rng(29);
    let a: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
    let b: Vec<i64> = (0..n).map(|_| r.next() as i64).collect();
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = array(&dev, &vec![0i32; 2 * n], &[2, n as u64], &[n as i64, 1]);
    k.launch(&[aa, ba, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        assert_eq!(out[i], a[i].count_ones() as i32, "a[{i}] = {}", a[i]);
        assert_eq!(out[n + i], b[i].count_ones() as i32, "b[{i}] = {}", b[i]);
    }
}
}

on_each_backend! {
/// numba-cuda's `array_reshape1d(arr, newshape, got)` with `newshape == -1` passed at run
/// time (and a positive one), and `flat.reshape((-1, cols))` with `cols` a run-time value:
/// the extents numba infers, on random contents.
fn numba_reshape_with_run_time_minus_one(dev) {
    let src = include_str!("../../fixtures/numba/reshape_runtime.py");
    let k = kernel(
        &dev,
        src,
        "reshape_runtime",
        "int64[:, ::1], int64, int64[::1], float64[::1], int64, int64[:, ::1]",
    );
    let mut r = Rng(23);
    for (newshape, cols) in [(-1i64, 6i64), (15, 4), (-1, 3)] {
        let a: Vec<i64> = (0..15).map(|_| r.next() as i64 >> 20).collect();
        let flat: Vec<f64> = (0..24).map(|_| f64::from(r.i32(-500, 500))).collect();
        let rows = 24 / cols;
        let (_ab, aa) = array(&dev, &a, &[3, 5], &[5, 1]);
        let (gb, ga) = vec1(&dev, &[0i64; 15]);
        let (_fb, fa) = vec1(&dev, &flat);
        let (mb, ma) = array(&dev, &[0i64; 24], &[rows as u64, cols as u64], &[cols, 1]);
        k.launch(
            &[aa, ArgValue::Int(newshape), ga, fa, ArgValue::Int(cols), ma],
            [1, 1, 1],
            [1, 1, 1],
        );
        let got: Vec<i64> = from_bytes(&dev.download(&gb).expect("download"));
        assert_eq!(got, a, "reshape({newshape})");
        let m: Vec<i64> = from_bytes(&dev.download(&mb).expect("download"));
        for (i, v) in m.iter().enumerate() {
            let row = i as i64 / cols;
            assert_eq!(
                *v,
                flat[i] as i64 + row * 1000,
                "reshape((-1, {cols}))[{i}]"
            );
        }
    }
}
}

on_each_backend! {
/// `pydevice run` with tuple arguments (`--arg 't=(int64:3, (float64:1.5, float64:-2))'`,
/// `--arg 'e=()'`) and a record by value (a zero-dimensional structured `.npy`), as
/// scripts/numba_suite.py passes numba-cuda's test_array_args and test_record_dtype launches.
fn cli_runs_with_tuple_and_record_scalar_arguments(dev) {
    // The GPU is for the `pydevice` child to open; `--cpu` where this run is the CPU\'s.
    let cli = dev.cli_flags();
    drop(dev);
    use pydevice::runtime::npy::NpyArray;
    use pydevice::runtime::records::NpyRecords;
    let sig = "Record(a[type=float64;offset=0],n[type=int32;offset=8];16;True)";
    let pydevice::Type::Struct(record) = pydevice::types::signature::parse_type(sig).unwrap()
    else {
        panic!("not a record")
    };
    let dir = std::env::temp_dir().join(format!("pyd-tuples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fixture = crate::support::repo_path("tests/fixtures/numba/tuple_record_args.py")
        .display()
        .to_string();
    let mut r = Rng(41);
    for round in 0..3 {
        let n = 1000usize;
        let x: Vec<f64> = (0..n).map(|_| f64::from(r.f32(-100.0, 100.0))).collect();
        let k = i64::from(r.i32(-9, 9));
        let (p, q) = (f64::from(r.f32(-5.0, 5.0)), f64::from(r.f32(-5.0, 5.0)));
        let (a, m) = (f64::from(r.f32(-3.0, 3.0)), r.i32(-50, 50));
        let (rin, rout, rec) = (
            dir.join(format!("r{round}.npy")),
            dir.join(format!("r{round}_out.npy")),
            dir.join(format!("rec{round}.npy")),
        );
        let arr = NpyArray {
            dtype: pydevice::types::Scalar::Float64,
            shape: vec![n as u64],
            fortran_order: false,
            data: bytes_of(&x),
        };
        std::fs::write(&rin, arr.to_bytes()).unwrap();
        let mut bytes = a.to_le_bytes().to_vec();
        bytes.extend_from_slice(&m.to_le_bytes());
        bytes.extend_from_slice(&[0; 4]);
        let one = NpyRecords {
            record: (*record).clone(),
            shape: vec![],
            fortran_order: false,
            data: bytes,
        };
        std::fs::write(&rec, one.to_bytes()).unwrap();
        let out = std::process::Command::new(pydevice_bin())
            .args(["run", &fixture, "--entry", "tuple_record_args"])
            .args(["--grid", "8", "--block", "128"])
            .arg("--arg")
            .arg(format!("r={}", rin.display()))
            .arg("--arg")
            .arg(format!("t=(int64:{k}, (float64:{p:?}, float64:{q:?}))"))
            .args(["--arg", "e=()"])
            .arg("--arg")
            .arg(format!("rec={}", rec.display()))
            .arg("--out")
            .arg(format!("r={}", rout.display()))
            .args(cli)
            .output()
            .expect("pydevice run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = NpyArray::parse(&std::fs::read(&rout).unwrap()).expect("r back");
        let got: Vec<f64> = from_bytes(&got.data);
        for i in 0..n {
            let want = x[i] * k as f64 + p - q + 0.0 + a * f64::from(m);
            assert!(
                (got[i] - want).abs() <= 1e-12 * want.abs().max(1.0),
                "r[{i}]: {} vs {want}",
                got[i]
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
}

/// Tuple arguments the CLI refuses, before it looks for a GPU (exit status 2).
#[test]
fn cli_refuses_malformed_tuple_arguments() {
    let fixture = crate::support::repo_path("tests/fixtures/numba/tuple_record_args.py")
        .display()
        .to_string();
    for (t, why) in [
        ("t=(int64:1, (float64:2)", "unbalanced `(`"),
        ("t=(int64:1,, int64:2)", "empty item"),
        ("t=(int64:1, x.npy)", "arrays cannot be tuple items"),
        ("t=(int64:1, float64:zz)", "bad float64"),
    ] {
        let out = std::process::Command::new(pydevice_bin())
            .args(["run", &fixture, "--entry", "tuple_record_args"])
            .args(["--grid", "1", "--block", "1", "--arg", t])
            .output()
            .expect("pydevice run");
        assert_eq!(out.status.code(), Some(2), "{t}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{t}: {err}");
    }
}

/// bfloat16 bits of `x`, rounded to nearest even.
fn to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    let rest = b & 0xffff;
    let mut h = b >> 16;
    if rest > 0x8000 || (rest == 0x8000 && h & 1 == 1) {
        h += 1;
    }
    h as u16
}

fn from_bf16(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

on_each_backend! {
/// numba's `cuda.bf16` functions (imported by name, as numba-cuda's test_bfloat16 does) on
/// random bfloat16 values, against the exact result rounded once to bfloat16 (division and
/// square root within one bfloat16 ulp).
fn numba_bf16_functions_random(dev) {
    let src = include_str!("../../fixtures/numba/bf16_arith.py");
    let k = kernel(
        &dev,
        src,
        "bf16_arith",
        "bfloat16[::1], bfloat16[::1], float32[:, ::1]",
    );
    let n = 4099usize;
    let mut r = Rng(47);
    let a: Vec<u16> = (0..n).map(|_| to_bf16(r.f32(-40.0, 40.0))).collect();
    let b: Vec<u16> = (0..n).map(|_| to_bf16(r.f32(-40.0, 40.0))).collect();
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let rows = 15;
    let (ob, oa) = array(
        &dev,
        &vec![0f32; rows * n],
        &[rows as u64, n as u64],
        &[n as i64, 1],
    );
    k.launch(&[aa, ba, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let rb = |v: f64| from_bf16(to_bf16(v as f32));
    for i in 0..n {
        let (x, y) = (from_bf16(a[i]), from_bf16(b[i]));
        let (xd, yd) = (f64::from(x), f64::from(y));
        let want = [
            y.abs(),
            rb(xd + yd),
            rb(xd - yd),
            rb(xd * yd),
            rb(yd / xd),
            -x,
            rb(xd * yd + yd),
            rb(xd + yd),
            rb(xd - yd),
            rb(xd * yd),
            x.max(y),
            x.min(y),
            rb(xd.abs().sqrt()),
            if x < y { 1.0 } else { 0.0 },
            rb(xd * xd),
        ];
        for (row, w) in want.iter().enumerate() {
            let got = out[row * n + i];
            // one bfloat16 ulp where float32 (or the reference) may round first
            let tol = if row == 4 || row == 6 || row == 12 {
                w.abs() * 2f32.powi(-7)
            } else {
                0.0
            };
            assert!(
                (got - w).abs() <= tol || (got.is_nan() && w.is_nan()),
                "row {row}, a[{i}] = {x}, b[{i}] = {y}: {got} vs {w}"
            );
        }
    }
}
}

on_each_backend! {
/// `for ... else` (numba-cuda's test_flow_control): the `else` runs when the loop ends
/// without `break` (empty ranges included), a nested loop's `break` does not count for the
/// outer loop; random trip counts and keys.
fn numba_for_else_random(dev) {
    let src = include_str!("../../fixtures/numba/for_else.py");
    let k = kernel(&dev, src, "for_else", "int64[::1], int64[::1], int64[::1]");
    let n = 5000usize;
    let mut r = Rng(53);
    let x: Vec<i64> = (0..n).map(|_| i64::from(r.i32(0, 9))).collect();
    let key: Vec<i64> = (0..n).map(|_| i64::from(r.i32(0, 50))).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (_kb, ka) = vec1(&dev, &key);
    let (ob, oa) = vec1(&dev, &vec![0i64; n]);
    k.launch(&[xa, ka, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<i64> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let m = x[i];
        let z = (0..m).find(|j| j * j == key[i]).unwrap_or(m * 100);
        let hits = 3 * (1 + if m > 2 { 0 } else { 10 });
        assert_eq!(out[i], z * 1000 + hits, "x = {m}, key = {}", key[i]);
    }
}
}

on_each_backend! {
/// `for` over 1-D arrays, `enumerate`, `zip` (stopping at the shorter) nested in each other,
/// with `break`, and `enumerate` over a module-level tuple (numba-cuda's test_iterators and
/// test_lang), on random arrays of random lengths against the same sums in the same order.
fn numba_iterate_arrays_random(dev) {
    let src = include_str!("../../fixtures/numba/iterate_arrays.py");
    let k = kernel(
        &dev,
        src,
        "iterate_arrays",
        "float64[::1], float64[::1], float64[::1], int64[::1]",
    );
    let mut r = Rng(59);
    for _ in 0..20 {
        let nx = 3 + (r.next() % 200) as usize;
        let ny = 1 + (r.next() % 200) as usize;
        let x: Vec<f64> = (0..nx).map(|_| f64::from(r.f32(-60.0, 60.0))).collect();
        let y: Vec<f64> = (0..ny).map(|_| f64::from(r.f32(-60.0, 60.0))).collect();
        let (_xb, xa) = vec1(&dev, &x);
        let (_yb, ya) = vec1(&dev, &y);
        let (ob, oa) = vec1(&dev, &[0f64; 4]);
        let (ib, ia) = vec1(&dev, &vec![0i64; ny]);
        k.launch(&[xa, ya, oa, ia], [1, 1, 1], [32, 1, 1]);
        let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
        let idx: Vec<i64> = from_bytes(&dev.download(&ib).expect("download"));
        let s = x.iter().fold(0.0, |s, v| s + v);
        let m = x
            .iter()
            .zip(&y)
            .enumerate()
            // `m += k * a * b` and `w3 += w * x[k]` are fused multiply-adds on the device
            // (semantics §3.13): m = fma(k * a, b, m).
            .fold(0.0, |m, (k, (a, b))| (k as f64 * a).mul_add(*b, m));
        let mut n = 0usize;
        let mut want_idx = vec![0i64; ny];
        for (k, a) in y.iter().enumerate().take(nx) {
            want_idx[k] = k as i64 + 1;
            n += 1;
            if *a > 50.0 {
                break;
            }
        }
        let w3 = [0.5, 1.5, 2.5]
            .iter()
            .enumerate()
            .fold(0.0, |t, (k, w): (usize, &f64)| w.mul_add(x[k], t));
        assert_eq!(out, vec![s, m, n as f64, w3], "nx = {nx}, ny = {ny}");
        assert_eq!(idx, want_idx);
    }
}
}

/// `frexp` on the host: `(m, e)` with `x = m * 2**e`, `0.5 <= |m| < 1` (zeros, infinities and
/// NaN give `(x, 0)`).
fn frexp64(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (x, bias) = if x.abs() < f64::MIN_POSITIVE {
        (x * 2f64.powi(64), 64)
    } else {
        (x, 0)
    };
    let e = ((x.to_bits() >> 52) & 0x7ff) as i32 - 1022;
    let m = f64::from_bits((x.to_bits() & !(0x7ff << 52)) | (1022 << 52));
    (m, e - bias)
}

on_each_backend! {
/// `math.frexp`, `math.ldexp` and `math.modf` in float64 and float32 on random values and the
/// special ones (zeros of both signs, infinities, NaN, a subnormal), against the host.
fn numba_frexp_ldexp_modf_random(dev) {
    let src = include_str!("../../fixtures/numba/math_frexp_ldexp_modf.py");
    let k = kernel(
        &dev,
        src,
        "frexp_ldexp_modf",
        "float64[::1], int32[::1], float32[::1], float64[:, ::1], int32[:, ::1], float32[:, ::1]",
    );
    let mut r = Rng(61);
    let specials = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e-310,
        -2.0,
    ];
    let n = 3000usize;
    let x: Vec<f64> = (0..n)
        .map(|i| {
            specials.get(i).copied().unwrap_or_else(|| {
                f64::from(r.f32(-1000.0, 1000.0)) * f64::from(r.f32(0.0, 1.0)).powi(3)
            })
        })
        .collect();
    let ns: Vec<i32> = (0..n).map(|_| r.i32(-40, 40)).collect();
    let y: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (_nb, na) = vec1(&dev, &ns);
    let (_yb, ya) = vec1(&dev, &y);
    let (ob, oa) = array(&dev, &vec![0f64; 4 * n], &[4, n as u64], &[n as i64, 1]);
    let (eb, ea) = array(&dev, &vec![0i32; 2 * n], &[2, n as u64], &[n as i64, 1]);
    let (fb, fa) = array(&dev, &vec![0f32; 4 * n], &[4, n as u64], &[n as i64, 1]);
    k.launch(
        &[xa, na, ya, oa, ea, fa],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    let exps: Vec<i32> = from_bytes(&dev.download(&eb).expect("download"));
    let out32: Vec<f32> = from_bytes(&dev.download(&fb).expect("download"));
    let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
    for i in 0..n {
        let v = x[i];
        let (m, e) = frexp64(v);
        let int = v.trunc();
        let frac = if v.is_infinite() { 0.0 } else { v - int }.copysign(v);
        let want = [m, v * 2f64.powi(ns[i]), frac, int];
        for (row, w) in want.iter().enumerate() {
            assert!(
                same(out[row * n + i], *w),
                "row {row}, x = {v}: {} vs {w}",
                out[row * n + i]
            );
        }
        if v.is_finite() {
            assert_eq!(exps[i], e, "frexp({v})");
        }
        let v32 = y[i];
        let (m32, e32) = frexp64(f64::from(v32));
        let int32 = v32.trunc();
        let frac32 = if v32.is_infinite() { 0.0 } else { v32 - int32 }.copysign(v32);
        let l32 = (f64::from(v32) * 2f64.powi(ns[i])) as f32;
        let want32 = [m32 as f32, l32, frac32, int32];
        for (row, w) in want32.iter().enumerate() {
            let got = out32[row * n + i];
            assert!(
                same(f64::from(got), f64::from(*w)),
                "float32 row {row}, y = {v32}: {got} vs {w}"
            );
        }
        if v32.is_finite() {
            assert_eq!(exps[n + i], e32, "frexp(float32 {v32})");
        }
    }
}
}

on_each_backend! {
/// `numba.cuda.libdevice.frexp/ldexp/sin/sinf/modff` (numba-cuda's test_libdevice) are the
/// `math` functions: random values against the host's frexp and ldexp, and `libdevice.sin`
/// minus `math.sin` exactly zero.
fn numba_libdevice_names_random(dev) {
    let src = include_str!("../../fixtures/numba/libdevice_names.py");
    let k = kernel(
        &dev,
        src,
        "libdevice_names",
        "float64[::1], float32[::1], float64[:, ::1], int32[::1], float32[:, ::1]",
    );
    let mut r = Rng(67);
    let n = 2000usize;
    let x: Vec<f64> = (0..n).map(|_| f64::from(r.f32(-500.0, 500.0))).collect();
    let y: Vec<f32> = (0..n).map(|_| r.f32(-500.0, 500.0)).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (_yb, ya) = vec1(&dev, &y);
    let (ob, oa) = array(&dev, &vec![0f64; 3 * n], &[3, n as u64], &[n as i64, 1]);
    let (eb, ea) = vec1(&dev, &vec![0i32; n]);
    let (fb, fa) = array(&dev, &vec![0f32; 2 * n], &[2, n as u64], &[n as i64, 1]);
    k.launch(&[xa, ya, oa, ea, fa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    let exps: Vec<i32> = from_bytes(&dev.download(&eb).expect("download"));
    let out32: Vec<f32> = from_bytes(&dev.download(&fb).expect("download"));
    for i in 0..n {
        let (m, e) = frexp64(x[i]);
        assert_eq!((out[i], exps[i]), (m, e), "frexp({})", x[i]);
        assert_eq!(out[n + i], x[i] * 8.0, "ldexp({}, 3)", x[i]);
        assert_eq!(out[2 * n + i], 0.0, "libdevice.sin({})", x[i]);
        assert_eq!(out32[i], 0.0, "libdevice.sinf({})", y[i]);
        assert_eq!(out32[n + i], y[i].trunc(), "libdevice.modff({})", y[i]);
    }
}
}

on_each_backend! {
/// `cuda.bf16.hadd_sat/hsub_sat/hmul_sat/hfma_sat` clamp to [0, 1] with NaN giving 0, and
/// `hfma_relu` gives 0 for negative results and keeps NaN: random bfloat16 values (NaN and
/// infinities among them) against the host, rounded once to bfloat16 first.
fn numba_bf16_sat_relu_random(dev) {
    let src = include_str!("../../fixtures/numba/bf16_sat_relu.py");
    let k = kernel(
        &dev,
        src,
        "bf16_sat_relu",
        "bfloat16[::1], bfloat16[::1], float32[:, ::1]",
    );
    let n = 4096usize;
    let mut r = Rng(71);
    let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.0];
    let pick = |r: &mut Rng, i: usize| {
        if i % 97 < special.len() {
            special[i % 97]
        } else {
            r.f32(-2.0, 2.0)
        }
    };
    let a: Vec<u16> = (0..n).map(|i| to_bf16(pick(&mut r, i))).collect();
    let b: Vec<u16> = (0..n).map(|i| to_bf16(pick(&mut r, i + 13))).collect();
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = array(&dev, &vec![0f32; 6 * n], &[6, n as u64], &[n as i64, 1]);
    k.launch(&[aa, ba, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let rb = |v: f64| from_bf16(to_bf16(v as f32));
    let sat = |v: f32| if v > 0.0 { v.min(1.0) } else { 0.0 };
    for i in 0..n {
        let (x, y) = (from_bf16(a[i]), from_bf16(b[i]));
        let (xd, yd) = (f64::from(x), f64::from(y));
        let relu = rb(xd * yd + yd);
        let want = [
            sat(rb(xd + yd)),
            sat(rb(xd - yd)),
            sat(rb(xd * yd)),
            sat(rb(xd * yd + xd)),
            if relu < 0.0 { 0.0 } else { relu },
            from_bf16(to_bf16(x * 1.3f32)),
        ];
        for (row, w) in want.iter().enumerate() {
            let got = out[row * n + i];
            let tol = if row == 3 || row == 4 {
                w.abs() * 2f32.powi(-7)
            } else {
                0.0
            };
            assert!(
                got == *w || (got - w).abs() <= tol || (got.is_nan() && w.is_nan()),
                "row {row}, a[{i}] = {x}, b[{i}] = {y}: {got} vs {w}"
            );
        }
    }
}
}

on_each_backend! {
/// `cmath.isfinite`, `cmath.isnan` and `cmath.isinf` on complex128 and complex64 values whose
/// parts are random finite numbers, infinities and NaNs, against the host.
fn numba_cmath_predicates_random(dev) {
    let src = include_str!("../../fixtures/numba/cmath_predicates.py");
    let k = kernel(
        &dev,
        src,
        "cmath_predicates",
        "complex128[::1], complex64[::1], bool[:, ::1]",
    );
    let n = 3000usize;
    let mut r = Rng(73);
    let part = |r: &mut Rng| match r.next() % 6 {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        _ => f64::from(r.f32(-1e6, 1e6)),
    };
    let z: Vec<[f64; 2]> = (0..n).map(|_| [part(&mut r), part(&mut r)]).collect();
    let w: Vec<[f32; 2]> = (0..n)
        .map(|_| [part(&mut r) as f32, part(&mut r) as f32])
        .collect();
    let (_zb, za) = vec1(&dev, &z);
    let (_wb, wa) = vec1(&dev, &w);
    let (ob, oa) = array(&dev, &vec![0u8; 6 * n], &[6, n as u64], &[n as i64, 1]);
    k.launch(&[za, wa, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<u8> = dev.download(&ob).expect("download");
    for i in 0..n {
        let [a, b] = z[i];
        let [c, d] = w[i];
        let want = [
            a.is_finite() && b.is_finite(),
            a.is_nan() || b.is_nan(),
            a.is_infinite() || b.is_infinite(),
            c.is_finite() && d.is_finite(),
            c.is_nan() || d.is_nan(),
            c.is_infinite() || d.is_infinite(),
        ];
        for (row, expect) in want.iter().enumerate() {
            assert_eq!(
                out[row * n + i] != 0,
                *expect,
                "row {row}, z = {:?}, w = {:?}",
                z[i],
                w[i]
            );
        }
    }
}
}

on_each_backend! {
/// `cmath.log(z, base)` (numba-cuda's test_cmath) on random complex128 values against
/// `log(z) / log(base)` computed on the host.
fn numba_cmath_log_base_random(dev) {
    let src = include_str!("../../fixtures/numba/cmath_log_base.py");
    let k = kernel(
        &dev,
        src,
        "cmath_log_base",
        "complex128[::1], complex128[::1], complex128[::1]",
    );
    let n = 2000usize;
    let mut r = Rng(79);
    let mut c = || [f64::from(r.f32(-50.0, 50.0)), f64::from(r.f32(-50.0, 50.0))];
    let a: Vec<[f64; 2]> = (0..n).map(|_| c()).collect();
    let b: Vec<[f64; 2]> = (0..n).map(|_| c()).collect();
    let (ob, oa) = vec1(&dev, &vec![[0f64; 2]; n]);
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    k.launch(&[oa, aa, ba], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<[f64; 2]> = from_bytes(&dev.download(&ob).expect("download"));
    let log = |z: [f64; 2]| [z[0].hypot(z[1]).ln(), z[1].atan2(z[0])];
    for i in 0..n {
        let (p, q) = (log(a[i]), log(b[i]));
        let d = q[0] * q[0] + q[1] * q[1];
        let want = [
            (p[0] * q[0] + p[1] * q[1]) / d,
            (p[1] * q[0] - p[0] * q[1]) / d,
        ];
        let scale = want[0].abs().max(want[1].abs()).max(1e-300);
        for part in 0..2 {
            assert!(
                (out[i][part] - want[part]).abs() <= 1e-12 * scale,
                "log({:?}, {:?}) = {:?}, want {want:?}",
                a[i],
                b[i],
                out[i]
            );
        }
    }
}
}

on_each_backend! {
fn numba_broadcast_setitem_random(dev) {
    // numba-cuda's DeviceNDArray `lhs[...] = rhs` kernel (`numba.cuda.types`, to_fixed_tuple):
    // a row and a column broadcast over a 37 x 53 array.
    let src = include_str!("../../fixtures/numba/broadcast_setitem.py");
    let k = kernel(&dev, src, "broadcast_setitem", "float64[:, :], float64[:, :]");
    let (m, n) = (37usize, 53usize);
    let mut r = Rng(23);
    for (rm, rn) in [(1usize, n), (m, 1usize)] {
        let rhs: Vec<f64> = (0..rm * rn).map(|_| f64::from(r.f32(-5.0, 5.0))).collect();
        let (lb, la) = array(&dev, &vec![0f64; m * n], &[m as u64, n as u64], &[n as i64, 1]);
        let (_rb, ra) = array(&dev, &rhs, &[rm as u64, rn as u64], &[rn as i64, 1]);
        k.launch(&[la, ra], [blocks(m * n, 128), 1, 1], [128, 1, 1]);
        let out: Vec<f64> = from_bytes(&dev.download(&lb).expect("download"));
        for i in 0..m {
            for j in 0..n {
                let want = rhs[(i % rm) * rn + j % rn];
                assert_eq!(out[i * n + j], want, "({i}, {j}) with rhs {rm} x {rn}");
            }
        }
    }
}
}

on_each_backend! {
fn numba_unassigned_augmented_random(dev) {
    // `c += 1` where `c` was never assigned reads the local's zero (test_ssa's
    // check_undefined_var, per thread).
    let src = include_str!("../../fixtures/numba/unassigned_augmented.py");
    let k = kernel(&dev, src, "unassigned_augmented", "int64[::1], int64[::1]");
    let n = 3000usize;
    let mut r = Rng(41);
    let ns: Vec<i64> = (0..n).map(|_| i64::from(r.i32(-3, 4))).collect();
    let (ob, oa) = vec1(&dev, &vec![-7i64; n]);
    let (_nb, na) = vec1(&dev, &ns);
    k.launch(&[oa, na], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<i64> = from_bytes(&dev.download(&ob).expect("download"));
    for t in 0..n {
        assert_eq!(out[t], i64::from(ns[t] == 0), "thread {t}: n = {}", ns[t]);
    }
}
}

on_each_backend! {
fn numba_record_text_fields_random(dev) {
    // String literals stored into `U12` / `S12` record fields (test_const_string), per thread
    // on a random choice of literal, against NumPy's encoding: code points / bytes, cut to 12,
    // zero-padded.
    let src = include_str!("../../fixtures/numba/record_text_fields.py");
    let sig = "Record(x[type=int32;offset=0],y[type=[unichr x 12];offset=4];52;False)[::1], \
        Record(x[type=float32;offset=0],y[type=[char x 12];offset=4];16;False)[::1], int64[::1]";
    let k = kernel(&dev, src, "record_text_fields", sig);
    let n = 700usize;
    let mut r = Rng(5);
    let sel: Vec<i64> = (0..n).map(|_| i64::from(r.i32(0, 3))).collect();
    let (ub, ua) = array(&dev, &vec![0xAAu8; n * 52], &[n as u64], &[1]);
    let (sb, sa) = array(&dev, &vec![0x55u8; n * 16], &[n as u64], &[1]);
    let (_eb, ea) = vec1(&dev, &sel);
    k.launch(&[ua, sa, ea], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let u: Vec<u8> = dev.download(&ub).expect("download");
    let s: Vec<u8> = dev.download(&sb).expect("download");
    let texts_u = ["ABC", "h\u{e9}llo w\u{f6}rld, too long", ""];
    let texts_s: [&[u8]; 3] = [b"XYZ", b"PQ", b"0123456789abcdef"];
    for i in 0..n {
        let c = sel[i] as usize;
        let mut want_u = (i as i32).to_le_bytes().to_vec();
        let mut cps: Vec<u32> = texts_u[c].chars().map(u32::from).take(12).collect();
        cps.resize(12, 0);
        want_u.extend(cps.iter().flat_map(|c| c.to_le_bytes()));
        assert_eq!(&u[i * 52..(i + 1) * 52], &want_u[..], "u[{i}] ({c})");
        let mut want_s = (0.5f32 * i as f32).to_le_bytes().to_vec();
        let mut bs: Vec<u8> = texts_s[c].iter().copied().take(12).collect();
        bs.resize(12, 0);
        want_s.extend(bs);
        assert_eq!(&s[i * 16..(i + 1) * 16], &want_s[..], "s[{i}] ({c})");
    }
}
}

on_each_backend! {
fn numba_text_arrays_random(dev) {
    // `a[i] = "XYZ"` on arrays of NumPy's `<U12` and `S5` (test_const_string), per thread on
    // a random choice of literal: code points / bytes, cut to the width, zero-padded.
    let src = include_str!("../../fixtures/numba/text_arrays.py");
    let k = kernel(
        &dev,
        src,
        "text_arrays",
        "[unichr x 12][::1], [char x 5][::1], int64[::1]",
    );
    let n = 900usize;
    let mut r = Rng(17);
    let sel: Vec<i64> = (0..n).map(|_| i64::from(r.i32(0, 3))).collect();
    let (ub, ua) = array(&dev, &vec![0xA5u8; n * 48], &[n as u64], &[1]);
    let (sb, sa) = array(&dev, &vec![0x5Au8; n * 5], &[n as u64], &[1]);
    let (_eb, ea) = vec1(&dev, &sel);
    k.launch(&[ua, sa, ea], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let u: Vec<u8> = dev.download(&ub).expect("download");
    let s: Vec<u8> = dev.download(&sb).expect("download");
    let texts_u = ["XYZ", "\u{e9}t\u{e9} \u{2014} summer!", ""];
    let texts_s: [&[u8]; 3] = [b"XYZ", b"truncated", b""];
    for i in 0..n {
        let c = sel[i] as usize;
        let mut cps: Vec<u32> = texts_u[c].chars().map(u32::from).take(12).collect();
        cps.resize(12, 0);
        let want_u: Vec<u8> = cps.iter().flat_map(|c| c.to_le_bytes()).collect();
        assert_eq!(&u[i * 48..(i + 1) * 48], &want_u[..], "u[{i}] ({c})");
        let mut want_s: Vec<u8> = texts_s[c].iter().copied().take(5).collect();
        want_s.resize(5, 0);
        assert_eq!(&s[i * 5..(i + 1) * 5], &want_s[..], "s[{i}] ({c})");
    }
}
}

on_each_backend! {
fn numba_zero_dim_arrays_random(dev) {
    // Zero-dimensional array arguments: `a[()]` read and written, `.ndim`/`.size`/`.shape`.
    let src = include_str!("../../fixtures/numba/zero_dim_arrays.py");
    let k = kernel(
        &dev,
        src,
        "zero_dim_arrays",
        "float64[()], float64[()], float64[::1]",
    );
    let mut r = Rng(3);
    for _ in 0..3 {
        let x = f64::from(r.f32(-100.0, 100.0));
        let n = 300usize;
        let (lb, la) = array(&dev, &[-1.0f64], &[], &[]);
        let (_rb, ra) = array(&dev, &[x], &[], &[]);
        let (ob, oa) = vec1(&dev, &vec![0f64; n]);
        k.launch(&[la, ra, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
        let lhs: Vec<f64> = from_bytes(&dev.download(&lb).expect("download"));
        assert_eq!(lhs, vec![x * 2.0]);
        let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
        for (i, o) in out.iter().enumerate() {
            assert_eq!(*o, x * i as f64 + 0.0 + 1.0 + 0.0, "out[{i}]");
        }
    }
}
}
