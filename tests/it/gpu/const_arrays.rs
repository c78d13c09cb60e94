//! Module-level constant arrays (§1.3), `literal_unroll` over tuples of them (§4.6.1),
//! `device.static_range` (§4.6.2) and
//! NumPy's whole-array reductions (§5.18), against references computed here the way
//! numba-cuda computes them.

use crate::gpu::{Rng, array, from_bytes, kernel, vec1};

on_each_backend! {
fn numba_const_arrays_read_from_constant_memory(dev) {
    let src = include_str!("../../fixtures/numba/const_arrays.py");
    let k = kernel(
        &dev,
        src,
        "k",
        "float64[::1], int32[:, ::1], complex64[::1]",
    );
    let (ab, aa) = vec1(&dev, &[0f64; 8]);
    let (bb, ba) = array(&dev, &[0i32; 6], &[2, 3], &[3, 1]);
    let (zb, za) = vec1(&dev, &[0f32; 6]);
    k.launch(&[aa, ba, za], [1, 1, 1], [32, 1, 1]);
    let a: Vec<f64> = from_bytes(&dev.download(&ab).expect("download"));
    let b: Vec<i32> = from_bytes(&dev.download(&bb).expect("download"));
    let z: Vec<f32> = from_bytes(&dev.download(&zb).expect("download"));
    let c1 = [
        0.0,
        0.5,
        1.0,
        1.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
    ];
    for (got, c) in a.iter().zip(c1) {
        let want = c + 1.0;
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{got} vs {want}"
        );
    }
    // CONST2D = [[1, 2, 3], [4, 5, 6]]; row sums 6 and 15; FLAGS = [True, False]
    let t = [[1, 2, 3], [4, 5, 6]];
    let mut want = Vec::new();
    for (i, row) in t.iter().enumerate() {
        let s: i32 = row.iter().sum();
        for v in row {
            want.push(v + s + i32::from(i == 0));
        }
    }
    assert_eq!(b, want);
    let z: Vec<u32> = z.iter().map(|v| v.to_bits()).collect();
    // `-0.5j` is `-(0.5j)` = complex(-0.0, -0.5) in Python (and NumPy keeps the sign).
    let want: Vec<u32> = [1.0f32, 2.0, -0.0, -0.5, -0.0, f32::INFINITY]
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(z, want);
}
}

on_each_backend! {
fn lang_const_arrays_read_from_constant_memory(dev) {
    let src = include_str!("../../fixtures/lang/const_arrays.py");
    let k = kernel(&dev, src, "k", "float32[::1], int64[::1]");
    let n = 100usize;
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    let (ib, ia) = vec1(&dev, &[0i64; 3]);
    k.launch(&[oa, ia], [1, 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let idx: Vec<i64> = from_bytes(&dev.download(&ib).expect("download"));
    let taps = [0.25f32, 0.5, 0.25];
    for (i, got) in out.iter().enumerate() {
        let mut acc = 0f32;
        for (t, w) in taps.iter().enumerate() {
            acc += w * (i + t) as f32;
        }
        assert_eq!(got.to_bits(), acc.to_bits(), "i = {i}");
    }
    assert_eq!(idx, vec![2, 12, 30]);
}
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// numba's `np.min`/`np.max` of floats: the first NaN, else the first strictly best element.
fn min_max(x: &[f64], max: bool) -> f64 {
    let mut best = x[0];
    if best.is_nan() {
        return best;
    }
    for &v in &x[1..] {
        if v.is_nan() {
            return v;
        }
        if (max && v > best) || (!max && v < best) {
            best = v;
        }
    }
    best
}

/// numba's `np.nanmin`/`np.nanmax`: `if not isnan(v): if not best < v (> v): best = v`.
fn nan_min_max(x: &[f64], max: bool) -> f64 {
    let mut best = x[0];
    for &v in &x[1..] {
        if !v.is_nan() {
            let keep = if max { best > v } else { best < v };
            if !keep {
                best = v;
            }
        }
    }
    best
}

fn var(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let m = x.iter().fold(0.0, |s, v| s + v) / n;
    // The device may contract `s + d * d` into one fused multiply-add (semantics §3.13), or
    // not: the tests allow the variances a few ulps either way.
    x.iter().fold(0.0, |s, v| (v - m).mul_add(v - m, s)) / n
}

on_each_backend! {
fn numba_array_reductions_random(dev) {
    let src = include_str!("../../fixtures/numba/array_reductions.py");
    let k = kernel(
        &dev,
        src,
        "reductions",
        "float64[::1], float64[:, ::1], int32[::1], float32[::1], bool[::1], float64[::1], int64[::1]",
    );
    let mut r = Rng(0x5eed_1234);
    for trial in 0..60 {
        let len = 1 + (r.next() % 48) as usize;
        let special = [0.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
        let x: Vec<f64> = (0..len)
            .map(|_| match r.next() % 16 {
                // NaN and infinities only in some trials, zeros in all.
                0 if trial % 3 == 0 => special[(r.next() % 5) as usize],
                1 => special[(r.next() % 2) as usize],
                _ => f64::from(r.f32(-2.0, 2.0)),
            })
            .collect();
        let (rows, cols) = (1 + (r.next() % 5) as usize, 1 + (r.next() % 6) as usize);
        let m: Vec<f64> = (0..rows * cols)
            .map(|_| match r.next() % 8 {
                0 => f64::NAN,
                1 => 0.0,
                _ => f64::from(r.f32(-10.0, 10.0)),
            })
            .collect();
        let nlen = 1 + (r.next() % 20) as usize;
        let n: Vec<i32> = (0..nlen).map(|_| r.i32(-5, 6)).collect();
        let (_xb, xa) = vec1(&dev, &x);
        let (_mb, ma) = array(&dev, &m, &[rows as u64, cols as u64], &[cols as i64, 1]);
        let (_nb, na) = vec1(&dev, &n);
        let flen = 1 + (r.next() % 40) as usize;
        let f: Vec<f32> = (0..flen).map(|_| r.f32(-3.0, 3.0)).collect();
        let blen = 1 + (r.next() % 10) as usize;
        let b: Vec<u8> = (0..blen)
            .map(|_| u8::from(!r.next().is_multiple_of(4)))
            .collect();
        let (_fb, fa) = vec1(&dev, &f);
        let (_bb, ba) = vec1(&dev, &b);
        let (ob, oa) = vec1(&dev, &[0f64; 19]);
        let (ib, ia) = vec1(&dev, &[0i64; 12]);
        k.launch(&[xa, ma, na, fa, ba, oa, ia], [1, 1, 1], [32, 1, 1]);
        let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
        let iout: Vec<i64> = from_bytes(&dev.download(&ib).expect("download"));

        let fx = |init: f64, f: &dyn Fn(f64, f64) -> f64, skip_nan: bool| {
            x.iter()
                .filter(|v| !(skip_nan && v.is_nan()))
                .fold(init, |a, v| f(a, *v))
        };
        let sum = fx(0.0, &|a, v| a + v, false);
        let nan_count = x.iter().filter(|v| !v.is_nan()).count();
        let nf: Vec<f64> = n.iter().map(|v| f64::from(*v)).collect();
        let want = [
            sum,
            fx(1.0, &|a, v| a * v, false),
            sum / len as f64,
            var(&x),
            var(&x).powf(0.5),
            min_max(&x, false),
            min_max(&x, true),
            nan_min_max(&x, false),
            nan_min_max(&x, true),
            fx(0.0, &|a, v| a + v, true),
            fx(1.0, &|a, v| a * v, true),
            fx(0.0, &|a, v| a + v, true) / nan_count as f64,
            m.iter().fold(0.0, |a, v| a + v),
            nan_min_max(&m, true),
            nf.iter().fold(0.0, |a, v| a + v) / nlen as f64,
            var(&nf),
            // float32: summed in float32, divided in float64 (numba's `c / a.size`).
            f64::from(f.iter().fold(0f32, |a, v| a + v)) / flen as f64,
            f64::from(f.iter().fold(0f32, |a, v| a + v)),
            {
                let m = f64::from(f.iter().fold(0f32, |a, v| a + v)) / flen as f64;
                f.iter()
                    .fold(0.0, |s, v| s + (f64::from(*v) - m) * (f64::from(*v) - m))
                    / flen as f64
            },
        ];
        for (i, (g, w)) in out.iter().zip(want).enumerate() {
            // std is `var ** 0.5` through libdevice's pow, as numba computes it. The variances
            // (3, 15, 18) and std (4) sum squares the device may fuse into fmas or not (the
            // code generator's choice, semantics §3.13): within a few ulps of the reference.
            let ok =
                same(*g, w) || ([3, 4, 15, 18].contains(&i) && (g - w).abs() <= w.abs() * 1e-15);
            assert!(
                ok,
                "trial {trial}: out[{i}] = {g:?}, want {w:?} (x = {x:?})"
            );
        }
        let iwant = [
            x.iter().filter(|v| **v != 0.0).count() as i64,
            i64::from(x.iter().all(|v| *v != 0.0)),
            i64::from(x.iter().any(|v| *v != 0.0)),
            n.iter().map(|v| i64::from(*v)).sum(),
            i64::from(*n.iter().min().expect("non-empty")),
            i64::from(*n.iter().max().expect("non-empty")),
            n.iter().fold(1i64, |a, v| a.wrapping_mul(i64::from(*v))),
            m.iter().filter(|v| **v != 0.0).count() as i64,
            b.iter().map(|v| i64::from(*v)).sum(),
            i64::from(b.iter().all(|v| *v != 0)),
            i64::from(b.iter().any(|v| *v != 0)),
            b.iter().filter(|v| **v != 0).count() as i64,
        ];
        assert_eq!(iout, iwant, "trial {trial}");
    }
}
}

on_each_backend! {
fn numba_literal_unroll_over_constant_arrays(dev) {
    let src = include_str!("../../fixtures/numba/literal_unroll.py");
    let k = kernel(&dev, src, "unrolled", "float64[::1], int64[::1]");
    let (ob, oa) = vec1(&dev, &[0f64; 9]);
    let (ib, ia) = vec1(&dev, &[0i64; 3]);
    k.launch(&[oa, ia], [1, 1, 1], [1, 1, 1]);
    let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    let iout: Vec<i64> = from_bytes(&dev.download(&ib).expect("download"));
    // nansum([1, -0.0, nan, 2.5]) = 3.5; sum of [[1, 2, 0], [3, 4, 5]] = 15; 2 Trues.
    // Then count_nonzero + ndim of [1, 0, 2], array(0), array(3.5).
    assert_eq!(out, vec![3.5, 15.0, 2.0, 6.0, 1.5, 3.0, 3.0, 0.0, 1.0]);
    // count_nonzero + len: NaN counts as non-zero.
    assert_eq!(iout, vec![3 + 4, 5 + 2, 2 + 3]);
}
}

on_each_backend! {
/// `device.static_range` (§4.6.2): the fixture's unrolled loops index a tuple by the loop
/// variable, nest, count down and skip an empty range.
fn static_range_unrolls_with_constant_indices(dev) {
    let src = include_str!("../../fixtures/lang/static_range.py");
    let k = kernel(
        &dev,
        src,
        "unrolled",
        "float32[::1], float32[::1], int32[::1]",
    );
    let x: Vec<f32> = vec![1.5, -2.25, 0.75, 3.0, 0.0, 0.0, 0.0, 0.0];
    let (_xb, xa) = vec1(&dev, &x);
    let (ob, oa) = vec1(&dev, &[0f32; 1]);
    let (ib, ia) = vec1(&dev, &[0i32; 3]);
    k.launch(&[xa, oa, ia], [1, 1, 1], [1, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let iout: Vec<i32> = from_bytes(&dev.download(&ib).expect("download"));
    let acc = [x[0], x[1] * 2.0, x[2] * 3.0, x[3] * 4.0];
    let mut want = 0f64;
    for i in 1..4 {
        for j in 0..i {
            want += f64::from(acc[i]) * f64::from(acc[j]);
        }
    }
    assert!(
        (f64::from(out[0]) - want).abs() <= 1e-5 * want.abs(),
        "{} vs {want}",
        out[0]
    );
    // k = 10, 7, 4, 1 as base-100 digits; then k + 0, k + 1; then 7 (the name is a local again).
    assert_eq!(iout, vec![10_07_04_01, 10_07_04_02, 7]);
}
}

on_each_backend! {
fn numba_const_record_arrays(dev) {
    let src = include_str!("../../fixtures/numba/const_records.py");
    let k = kernel(
        &dev,
        src,
        "records",
        "float64[::1], int64[::1], uint8[::1], uint32[::1], int64[::1]",
    );
    let (ab, aa) = vec1(&dev, &[0f64; 2]);
    let (bb, ba) = vec1(&dev, &[0i64; 2]);
    let (cb, ca) = vec1(&dev, &[0u8; 2]);
    let (db, da) = vec1(&dev, &[0u32; 2]);
    let (eb, ea) = vec1(&dev, &[-1i64; 2]);
    k.launch(&[aa, ba, ca, da, ea], [1, 1, 1], [32, 1, 1]);
    let a: Vec<f64> = from_bytes(&dev.download(&ab).expect("download"));
    let b: Vec<i64> = from_bytes(&dev.download(&bb).expect("download"));
    let c: Vec<u8> = from_bytes(&dev.download(&cb).expect("download"));
    let d: Vec<u32> = from_bytes(&dev.download(&db).expect("download"));
    let e: Vec<i64> = from_bytes(&dev.download(&eb).expect("download"));
    assert_eq!(a, vec![1.0, 3.0]);
    assert_eq!(b, vec![2, 4]);
    assert_eq!(c, vec![1 + 2 + 3 + 8, 4 + 5 + 6 + 10]);
    assert_eq!(d, vec![0xDEAD_BEEF, 0xBEEF_DEAD]);
    assert_eq!(e, vec![0, 0]);
}
}

/// The arrays of numba-cuda's `test_array_reductions` (as in `numba/reductions_suite.py`).
fn suite_arrays() -> Vec<Vec<f64>> {
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    vec![
        vec![1.0, 2.0, 0.0, -0.0, 1.0, -1.5],
        vec![-0.0, -1.5],
        vec![-1.5, 2.5, inf],
        vec![-1.5, 2.5, -inf],
        vec![-1.5, 2.5, inf, -inf],
        vec![nan, -1.5, 2.5, nan, 3.0],
        vec![nan, -1.5, 2.5, nan, inf, -inf, 3.0],
        vec![5.0, nan, -1.5, nan],
        vec![nan, nan],
        vec![-1.5, 2.5, nan],
        vec![0.0, -0.0, 1.5, 0.0],
        vec![1.0, 1.5, inf, nan],
    ]
}

on_each_backend! {
fn numba_array_reductions_suite_inputs(dev) {
    let src = include_str!("../../fixtures/numba/reductions_suite.py");
    let k = kernel(&dev, src, "kernel", "float64[::1], int64[::1]");
    let arrays = suite_arrays();
    let (ob, oa) = vec1(&dev, &vec![0f64; 12 * arrays.len()]);
    let (ib, ia) = vec1(&dev, &vec![0i64; 3 * arrays.len()]);
    k.launch(&[oa, ia], [1, 1, 1], [1, 1, 1]);
    let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    let iout: Vec<i64> = from_bytes(&dev.download(&ib).expect("download"));
    for (a, x) in arrays.iter().enumerate() {
        let n = x.len() as f64;
        let sum = x.iter().fold(0.0, |s, v| s + v);
        let keep: Vec<f64> = x.iter().copied().filter(|v| !v.is_nan()).collect();
        let nansum = keep.iter().fold(0.0, |s, v| s + v);
        let want = [
            sum,
            sum / n,
            var(x),
            var(x).powf(0.5),
            min_max(x, false),
            min_max(x, true),
            nan_min_max(x, false),
            nan_min_max(x, true),
            nansum,
            keep.iter().fold(1.0, |s, v| s * v),
            nansum / keep.len() as f64,
            x.iter().fold(1.0, |s, v| s * v),
        ];
        for (j, w) in want.iter().enumerate() {
            let g = out[12 * a + j];
            assert!(
                same(g, *w) || ((j == 2 || j == 3) && (g - w).abs() <= w.abs() * 1e-15),
                "array {a} ({x:?}), reduction {j}: {g:?}, want {w:?}"
            );
        }
        let iwant = [
            i64::from(x.iter().all(|v| *v != 0.0)),
            i64::from(x.iter().any(|v| *v != 0.0)),
            x.iter().filter(|v| **v != 0.0).count() as i64,
        ];
        assert_eq!(&iout[3 * a..3 * a + 3], &iwant, "array {a}");
    }
}
}

on_each_backend! {
fn numba_typed_numpy_scalar_constants_random(dev) {
    let src = include_str!("../../fixtures/numba/typed_constants.py");
    let k = kernel(&dev, src, "k", "float32[::1], int64[::1]");
    let mut r = Rng(0x7e57);
    let x: Vec<f32> = (0..300).map(|_| r.f32(-100.0, 100.0)).collect();
    let (ob, oa) = vec1(&dev, &x);
    let (ib, ia) = vec1(&dev, &[0i64; 1]);
    k.launch(&[oa, ia], [3, 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let iout: Vec<i64> = from_bytes(&dev.download(&ib).expect("download"));
    let two_pi = 6.283_185_5_f32;
    for (i, (g, v)) in out.iter().zip(&x).enumerate() {
        // float32 throughout, as numba computes with typed float32 globals.
        // `TWO_PI * x + HALF` is one fused multiply-add on the device (semantics §3.13).
        let want = two_pi.mul_add(*v, 0.1f32) + [0.5f32, 2.0][i % 2];
        assert_eq!(g.to_bits(), want.to_bits(), "i = {i}, x = {v}");
    }
    assert_eq!(iout, vec![-21]);
}
}
