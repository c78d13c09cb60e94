//! numba-cuda's builtins and device functions added for issue #8's remaining kernels:
//! `pow(x, y)`, `round(x, ndigits)` and numba's xoroshiro128+ generator, on random inputs
//! against a CPU reference (bit-exact where numba's algorithm is exact).

use super::*;

on_each_backend! {
/// The builtin `pow` (numba-cuda's test_powi `vec_pow`) on complex128, float32 and int64.
fn numba_pow_builtin_random(dev) {
    let src = include_str!("../../fixtures/numba/pow_builtin.py");
    let k = kernel(
        &dev,
        src,
        "vec_pow",
        "complex128[::1], complex128[::1], complex128[::1], float32[::1], float32[::1], int64[::1]",
    );
    let n = 4000usize;
    let mut r = Rng(301);
    let x: Vec<[f64; 2]> = (0..n)
        .map(|_| [f64::from(r.f32(-3.0, 3.0)), f64::from(r.f32(-3.0, 3.0))])
        .collect();
    let y: Vec<[f64; 2]> = (0..n)
        .map(|_| [f64::from(r.f32(-2.0, 2.0)), f64::from(r.f32(-2.0, 2.0))])
        .collect();
    let f: Vec<f32> = (0..n).map(|_| r.f32(0.1, 4.0)).collect();
    let g: Vec<f32> = (0..n).map(|_| r.f32(-3.0, 3.0)).collect();
    let m: Vec<i64> = (0..n).map(|_| i64::from(r.i32(-2000, 2000))).collect();
    let (rb, ra) = vec1(&dev, &vec![[0f64; 2]; n]);
    let (_xb, xa) = vec1(&dev, &x);
    let (_yb, ya) = vec1(&dev, &y);
    let (fb, fa) = vec1(&dev, &f);
    let (_gb, ga) = vec1(&dev, &g);
    let (mb, ma) = vec1(&dev, &m);
    k.launch(
        &[ra, xa, ya, fa, ga, ma],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let out: Vec<[f64; 2]> = from_bytes(&dev.download(&rb).expect("download"));
    let fo: Vec<f32> = from_bytes(&dev.download(&fb).expect("download"));
    let mo: Vec<i64> = from_bytes(&dev.download(&mb).expect("download"));
    for i in 0..n {
        // CPython's c_pow, as numba computes it.
        let ([a, b], [c, d]) = (x[i], y[i]);
        let vabs = a.hypot(b);
        let at = b.atan2(a);
        let len = vabs.powf(c) / (at * d).exp();
        let phase = at * c + d * vabs.ln();
        let want = [len * phase.cos(), len * phase.sin()];
        let scale = want[0].abs().max(want[1].abs()).max(1e-300);
        for p in 0..2 {
            assert!(
                (out[i][p] - want[p]).abs() <= 1e-12 * scale,
                "pow({:?}, {:?}) = {:?}, want {want:?}",
                x[i],
                y[i],
                out[i]
            );
        }
        let wf = f64::from(f[i]).powf(f64::from(g[i]));
        assert!(
            (f64::from(fo[i]) - wf).abs() <= 1e-6 * wf.abs(),
            "pow({}, {}) = {}, want {wf}",
            f[i],
            g[i],
            fo[i]
        );
        assert_eq!(mo[i], m[i].wrapping_mul(m[i]).wrapping_mul(m[i]));
    }
}
}

/// numba's `10.0 ** e` for an integer `e >= 0` (`int_power_impl`: repeated squaring).
fn numba_pow10(e: i64) -> f64 {
    if e > 0x10000 {
        return 10f64.powf(e as f64);
    }
    let (mut r, mut a, mut exp) = (1.0f64, 10.0f64, e);
    while exp != 0 {
        if exp & 1 != 0 {
            r *= a;
        }
        exp >>= 1;
        a *= a;
    }
    r
}

/// numba-cuda's `round_to_impl` (CPython's fallback `double_round`), on the host.
fn numba_round_digits(x: f64, ndigits: i64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let llrint = |v: f64| v.round_ties_even() as i64 as f64;
    let (pow1, pow2, y) = if ndigits >= 0 {
        let (p1, p2) = if ndigits > 22 {
            (numba_pow10(ndigits - 22), 1e22)
        } else {
            (numba_pow10(ndigits), 1.0)
        };
        let y = (x * p1) * p2;
        if y.is_infinite() {
            return x;
        }
        (p1, p2, y)
    } else {
        let p1 = numba_pow10(-ndigits);
        (p1, 1.0, x / p1)
    };
    let mut z = llrint(y);
    if (y - z).abs() == 0.5 {
        z = 2.0 * llrint(y / 2.0);
    }
    if ndigits >= 0 {
        (z / pow2) / pow1
    } else {
        z * pow1
    }
}

on_each_backend! {
/// `round(x, ndigits)` (numba-cuda's test_round_to_f4/f8) on random float32 and float64
/// values, halfway cases and non-finite values, bit for bit against numba's algorithm.
fn numba_round_ndigits_random(dev) {
    let src = "from numba import cuda\n\n\n@cuda.jit\ndef k(o32, x32, o64, x64, nd):\n    i = cuda.grid(1)\n    if i < len(o32):\n        o32[i] = round(x32[i], nd[i])\n        o64[i] = round(x64[i], nd[i])\n";
    let k = kernel(
        &dev,
        src,
        "k",
        "float32[::1], float32[::1], float64[::1], float64[::1], int32[::1]",
    );
    let n = 20_000usize;
    let mut r = Rng(302);
    let mut x64 = Vec::with_capacity(n);
    let mut nd = Vec::with_capacity(n);
    for i in 0..n {
        let d = r.i32(-8, 30);
        let v = match i % 5 {
            // halfway at `d` digits: (k + 0.5) / 10**d
            0 => (f64::from(r.i32(-100_000, 100_000)) + 0.5) / 10f64.powi(d.clamp(0, 12)),
            1 => f64::from(r.f32(-1.0, 1.0)) * 10f64.powi(r.i32(-20, 20)),
            2 => [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.0, -0.0, 1e300][i / 5 % 6],
            _ => (r.next() >> 11) as f64 / (1u64 << 53) as f64 * 1000.0 - 500.0,
        };
        x64.push(v);
        nd.push(d);
    }
    let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
    let (o32b, o32a) = vec1(&dev, &vec![0f32; n]);
    let (_x32b, x32a) = vec1(&dev, &x32);
    let (o64b, o64a) = vec1(&dev, &vec![0f64; n]);
    let (_x64b, x64a) = vec1(&dev, &x64);
    let (_ndb, nda) = vec1(&dev, &nd);
    k.launch(
        &[o32a, x32a, o64a, x64a, nda],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let o32: Vec<f32> = from_bytes(&dev.download(&o32b).expect("download"));
    let o64: Vec<f64> = from_bytes(&dev.download(&o64b).expect("download"));
    for i in 0..n {
        let d = i64::from(nd[i]);
        let w32 = numba_round_digits(f64::from(x32[i]), d) as f32;
        let w64 = numba_round_digits(x64[i], d);
        assert!(
            o32[i].to_bits() == w32.to_bits() || (o32[i].is_nan() && w32.is_nan()),
            "round({:e}f32, {d}) = {:e}, want {w32:e}",
            x32[i],
            o32[i]
        );
        assert!(
            o64[i].to_bits() == w64.to_bits() || (o64[i].is_nan() && w64.is_nan()),
            "round({:e}, {d}) = {:e}, want {w64:e}",
            x64[i],
            o64[i]
        );
    }
}
}

/// numba.cuda.random's `xoroshiro128p_next` on the host: returns `s0 + s1` and advances.
fn xoroshiro_next(s: &mut [u64; 2]) -> u64 {
    let (s0, mut s1) = (s[0], s[1]);
    let result = s0.wrapping_add(s1);
    s1 ^= s0;
    s[0] = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
    s[1] = s1.rotate_left(36);
    result
}

/// numba.cuda.random's `uint64_to_unit_float64`: the top 53 bits over 2**53.
fn unit_f64(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

on_each_backend! {
/// numba-cuda's test_random kernels (`xoroshiro128p_uniform_float32/64`,
/// `xoroshiro128p_normal_float32/64` over a record array of states) against the exact
/// xoroshiro128+ sequence computed here: states and uniform draws bit for bit; normal draws
/// (Box-Muller through libdevice's `log`/`cos`) within a few ulps.
fn numba_xoroshiro128p_sequences(dev) {
    let rec = "Record(s0[type=uint64;offset=0],s1[type=uint64;offset=8];16;True)[::1]";
    let k32 = kernel(
        &dev,
        include_str!("../../fixtures/numba/xoroshiro_float32.py"),
        "rng_kernel_float32",
        &format!("{rec}, float32[::1], int64, int64"),
    );
    let k64 = kernel(
        &dev,
        include_str!("../../fixtures/numba/xoroshiro_float64.py"),
        "rng_kernel_float64",
        &format!("{rec}, float64[::1], int64, int64"),
    );
    let (threads, count) = (256usize, 40usize);
    let mut r = Rng(303);
    let init: Vec<[u64; 2]> = (0..threads).map(|_| [r.next(), r.next()]).collect();
    for (wide, dist) in [(false, 1i64), (false, 2), (true, 1), (true, 2)] {
        let (sb, sa) = vec1(&dev, &init);
        let mut states = init.clone();
        let mut want = vec![0f64; threads * count];
        for (t, s) in states.iter_mut().enumerate() {
            for i in 0..count {
                let u32_draw = |s: &mut [u64; 2]| unit_f64(xoroshiro_next(s)) as f32;
                want[t * count + i] = match (wide, dist) {
                    (false, 1) => f64::from(u32_draw(s)),
                    (true, 1) => unit_f64(xoroshiro_next(s)),
                    (false, _) => {
                        let (u1, u2) = (u32_draw(s), u32_draw(s));
                        let tp = std::f32::consts::TAU;
                        f64::from((-2.0f32 * u1.ln()).sqrt() * (tp * u2).cos())
                    }
                    (true, _) => {
                        let (u1, u2) = (u32_draw(s), u32_draw(s));
                        (-2.0 * f64::from(u1.ln())).sqrt()
                            * (std::f64::consts::TAU * f64::from(u2)).cos()
                    }
                };
            }
        }
        let args = |oa| {
            [
                sa.clone(),
                oa,
                ArgValue::Int(count as i64),
                ArgValue::Int(dist),
            ]
        };
        let got: Vec<f64> = if wide {
            let (ob, oa) = vec1(&dev, &vec![0f64; threads * count]);
            k64.launch(&args(oa), [2, 1, 1], [128, 1, 1]);
            from_bytes(&dev.download(&ob).expect("download"))
        } else {
            let (ob, oa) = vec1(&dev, &vec![0f32; threads * count]);
            k32.launch(&args(oa), [2, 1, 1], [128, 1, 1]);
            let v: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
            v.into_iter().map(f64::from).collect()
        };
        let end: Vec<[u64; 2]> = from_bytes(&dev.download(&sb).expect("download"));
        assert_eq!(
            end, states,
            "states after {count} draws (float64 {wide}, {dist})"
        );
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            if dist == 1 {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "uniform draw {i} (float64 {wide})"
                );
            } else {
                // numba draws both uniforms of `xoroshiro128p_normal_float64` as float32 and
                // takes `math.log` of a float32 (libdevice `logf`, 1 ulp, where Rust's `ln`
                // rounds correctly): a float32 ulp of the log, ~6e-8 relative, reaches the
                // float64 result too.
                let tol = if wide { 3e-7 } else { 4e-6 };
                assert!(
                    (g - w).abs() <= tol * w.abs().max(1.0),
                    "normal draw {i} (float64 {wide}): {g} vs {w}"
                );
            }
        }
    }
}
}

/// numba's complex functions (`numba/cpython/cmathimpl.py`, CPython's algorithms), on the
/// host, as plain branching code: the reference for `numba_cmath_inverse_random`.
mod cmath_ref {
    pub type C = (f64, f64);
    const THRES: f64 = f32::MAX as f64 / 4.0;

    pub fn sqrt((a, b): C) -> C {
        let thres = f64::MAX / (1.0 + std::f64::consts::SQRT_2);
        if a == 0.0 && b == 0.0 || b.is_infinite() {
            return (b.abs(), b);
        }
        if a.is_nan() {
            return (a, a);
        }
        if a.is_infinite() {
            // numba's `b - b`: 0 for a finite `b`, NaN for a NaN.
            let bb = if b.is_nan() { f64::NAN } else { 0.0 };
            return if a < 0.0 {
                (bb.abs(), a.copysign(b))
            } else {
                (a, bb.copysign(b))
            };
        }
        let scale = a.abs() >= thres || b.abs() >= thres;
        let (a, b) = if scale { (a * 0.25, b * 0.25) } else { (a, b) };
        let (re, im) = if a >= 0.0 {
            let t = ((a + a.hypot(b)) * 0.5).sqrt();
            (t, b / (2.0 * t))
        } else {
            let t = ((-a + a.hypot(b)) * 0.5).sqrt();
            (b.abs() / (2.0 * t), t.copysign(b))
        };
        if scale { (re * 2.0, im) } else { (re, im) }
    }

    pub fn cosh((x, y): C) -> C {
        if x.is_infinite() {
            let (re, mut im) = if y.is_nan() || y == 0.0 {
                (x.abs(), y)
            } else {
                (x.copysign(y.cos()), x.copysign(y.sin()))
            };
            if x < 0.0 {
                im = -im;
            }
            return (re, im);
        }
        (y.cos() * x.cosh(), y.sin() * x.sinh())
    }

    pub fn sinh((x, y): C) -> C {
        if x.is_infinite() {
            if y.is_nan() {
                return (x, y);
            }
            let (mut re, mut im) = (y.cos(), y.sin());
            if re != 0.0 {
                re *= x;
            }
            if im != 0.0 {
                im *= x.abs();
            }
            return (re, im);
        }
        (y.cos() * x.sinh(), y.sin() * x.cosh())
    }

    pub fn tanh((x, y): C) -> C {
        if x.is_infinite() {
            let im = if y.is_infinite() {
                0.0
            } else {
                0f64.copysign((2.0 * y).sin())
            };
            return (1f64.copysign(x), im);
        }
        let (tx, ty, cx) = (x.tanh(), y.tan(), 1.0 / x.cosh());
        let txty = tx * ty;
        let denom = 1.0 + txty * txty;
        (tx * (1.0 + ty * ty) / denom, ((ty / denom) * cx) * cx)
    }

    fn log_abs_large(x: f64, y: f64) -> f64 {
        (x * 0.5).hypot(y * 0.5).ln() + 4f64.ln()
    }

    pub fn acos((x, y): C) -> C {
        if x.abs() > THRES || y.abs() > THRES {
            return (y.abs().atan2(x), log_abs_large(x, y).copysign(-y));
        }
        let s1 = sqrt((1.0 - x, -y));
        let s2 = sqrt((1.0 + x, y));
        (2.0 * s1.0.atan2(s2.0), (s2.0 * s1.1 - s2.1 * s1.0).asinh())
    }

    pub fn acosh((x, y): C) -> C {
        if x.abs() > THRES || y.abs() > THRES {
            return (log_abs_large(x, y), y.atan2(x));
        }
        let s1 = sqrt((x - 1.0, y));
        let s2 = sqrt((x + 1.0, y));
        ((s1.0 * s2.0 + s1.1 * s2.1).asinh(), 2.0 * s1.1.atan2(s2.0))
    }

    pub fn asinh((x, y): C) -> C {
        if x.abs() > THRES || y.abs() > THRES {
            return (log_abs_large(x, y).copysign(x), y.atan2(x.abs()));
        }
        let s1 = sqrt((1.0 + y, -x));
        let s2 = sqrt((1.0 - y, x));
        (
            (s1.0 * s2.1 - s2.0 * s1.1).asinh(),
            y.atan2(s1.0 * s2.0 - s1.1 * s2.1),
        )
    }

    pub fn atanh((x, y): C) -> C {
        let negate = x < 0.0;
        let (x, y) = if negate { (-x, -y) } else { (x, y) };
        let ay = y.abs();
        let large = THRES.sqrt();
        let small = (f32::MIN_POSITIVE as f64).sqrt();
        let (re, mut im) = if x.is_nan() || x > large || ay > large {
            let re = if y.is_infinite() {
                0f64.copysign(x)
            } else if x.is_infinite() {
                0.0
            } else {
                let h = (x * 0.5).hypot(y * 0.5);
                x / 4.0 / h / h
            };
            (re, -std::f64::consts::FRAC_PI_2.copysign(-y))
        } else if x == 1.0 && ay < small {
            if ay == 0.0 {
                (f64::INFINITY, y)
            } else {
                (
                    -(ay.sqrt() / ay.hypot(2.0).sqrt()).ln(),
                    (2f64.atan2(-ay) / 2.0).copysign(y),
                )
            }
        } else {
            let sqay = ay * ay;
            let zr1 = 1.0 - x;
            (
                (4.0 * x / (zr1 * zr1 + sqay)).ln_1p() * 0.25,
                -(-2.0 * y).atan2(zr1 * (1.0 + x) - sqay) * 0.5,
            )
        };
        if y.is_nan() {
            im = f64::NAN;
        }
        if negate { (-re, -im) } else { (re, im) }
    }

    /// `f(z) = -j g(jz)`.
    fn circular(g: fn(C) -> C, (x, y): C) -> C {
        let r = g((-y, x));
        (r.1, -r.0)
    }

    pub fn all(z: C) -> [C; 10] {
        let atan = {
            let r = atanh((-z.1, z.0));
            if z.0.is_infinite() && z.1.is_nan() {
                (r.1, r.0)
            } else {
                (r.1, -r.0)
            }
        };
        [
            acos(z),
            circular(asinh, z),
            atan,
            acosh(z),
            asinh(z),
            atanh(z),
            sinh(z),
            cosh(z),
            tanh(z),
            circular(tanh, z),
        ]
    }
}

/// Whether `got` is `want` within `tol` of its magnitude, NaNs and infinities included.
fn complex_close(got: (f64, f64), want: (f64, f64), tol: f64) -> bool {
    let scale = want.0.abs().max(want.1.abs());
    [(got.0, want.0), (got.1, want.1)].iter().all(|&(g, w)| {
        if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else if w.is_infinite() || g.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= tol * scale.max(1e-300) || (g - w).abs() <= 1e-300
        }
    })
}

on_each_backend! {
/// `cmath.acos` and numba's other inverse, hyperbolic and circular complex functions
/// (numba-cuda's test_complex TestCMath) on random complex128 and complex64 values and
/// special values, against numba's algorithms in Rust.
fn numba_cmath_inverse_random(dev) {
    let k = kernel(
        &dev,
        include_str!("../../fixtures/numba/cmath_inverse.py"),
        "kernel_func",
        "complex128[:, ::1], complex128[::1]",
    );
    let k64 = kernel(
        &dev,
        include_str!("../../fixtures/numba/cmath_acos_complex64.py"),
        "kernel_func",
        "complex64[::1], complex64[::1]",
    );
    let specials = [
        (f64::INFINITY, 0.0),
        (0.0, f64::INFINITY),
        (f64::NEG_INFINITY, 1.0),
        (f64::NAN, 1.0),
        (1.0, f64::NAN),
        (f64::INFINITY, f64::NAN),
        (1.0, 0.0),
        (-1.0, 0.0),
        (1.0, 1e-25),
        (0.0, 0.0),
        (1e300, -1e300),
        (-3e38, 2.0),
        (1e20, 1e-3),
        (2.0, 800.0),
        (800.0, -2.0),
    ];
    let mut r = Rng(304);
    let mut z: Vec<(f64, f64)> = specials.to_vec();
    while z.len() < 3000 {
        let s = [1.0, 4.0, 30.0][z.len() % 3];
        z.push((f64::from(r.f32(-s, s)), f64::from(r.f32(-s, s))));
    }
    let n = z.len();
    let (ob, oa) = array(
        &dev,
        &vec![(0f64, 0f64); 10 * n],
        &[10, n as u64],
        &[n as i64, 1],
    );
    let (_ab, aa) = vec1(&dev, &z);
    k.launch(&[oa, aa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<(f64, f64)> = from_bytes(&dev.download(&ob).expect("download"));
    let names = [
        "acos", "asin", "atan", "acosh", "asinh", "atanh", "sinh", "cosh", "tanh", "tan",
    ];
    for (i, &zi) in z.iter().enumerate() {
        let want = cmath_ref::all(zi);
        for (f, name) in names.iter().enumerate() {
            let mut got = out[f * n + i];
            let mut want_f = want[f];
            // C99 Annex G (which CPython's tables follow) leaves the sign of an infinite
            // part unspecified when the other part is NaN (`cacos(∞ + iNaN) = NaN ± i∞`):
            // it depends on the sign a NaN carries through `neg.f64`, which PTX leaves
            // unspecified. Compare magnitudes there.
            if zi.0.is_nan() != zi.1.is_nan() && (zi.0.is_infinite() || zi.1.is_infinite()) {
                got = (got.0.abs(), got.1.abs());
                want_f = (want_f.0.abs(), want_f.1.abs());
            }
            assert!(
                complex_close(got, want_f, 1e-12),
                "cmath.{name}({zi:?}) = {got:?}, want {:?}",
                want[f]
            );
        }
    }
    // complex64: computed in float64 and rounded once.
    let z32: Vec<(f32, f32)> = z.iter().map(|&(a, b)| (a as f32, b as f32)).collect();
    let (o32b, o32a) = vec1(&dev, &vec![(0f32, 0f32); n]);
    let (_a32b, a32a) = vec1(&dev, &z32);
    k64.launch(&[o32a, a32a], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out32: Vec<(f32, f32)> = from_bytes(&dev.download(&o32b).expect("download"));
    for (i, &(a, b)) in z32.iter().enumerate() {
        let w = cmath_ref::acos((f64::from(a), f64::from(b)));
        let mut got = (f64::from(out32[i].0), f64::from(out32[i].1));
        let mut want = (w.0 as f32 as f64, w.1 as f32 as f64);
        // As above: the sign of an infinity beside a NaN is unspecified.
        if a.is_nan() != b.is_nan() && (a.is_infinite() || b.is_infinite()) {
            got = (got.0.abs(), got.1.abs());
            want = (want.0.abs(), want.1.abs());
        }
        assert!(
            complex_close(got, want, 2e-7),
            "cmath.acos({a}, {b}) as complex64 = {got:?}, want {want:?}"
        );
    }
}
}

on_each_backend! {
/// numba-cuda's `intrinsic_forloop_step`: grid-stride `range` loops whose arguments mix
/// int64 and uint64 count in int64; every element of a random-shaped array is written once.
fn numba_range_mixed_signedness(dev) {
    let k = kernel(
        &dev,
        include_str!("../../fixtures/numba/range_mixed_sign.py"),
        "intrinsic_forloop_step",
        "int32[:, ::1]",
    );
    let mut r = Rng(305);
    for _ in 0..4 {
        let (h, w) = (r.i32(1, 300) as usize, r.i32(1, 300) as usize);
        let (cb, ca) = array(
            &dev,
            &vec![-1i32; h * w],
            &[h as u64, w as u64],
            &[w as i64, 1],
        );
        k.launch(&[ca], [3, 2, 1], [16, 8, 1]);
        let c: Vec<i32> = from_bytes(&dev.download(&cb).expect("download"));
        for y in 0..h {
            for x in 0..w {
                assert_eq!(c[y * w + x], (x + y) as i32, "c[{y}, {x}] of {h}x{w}");
            }
        }
    }
}
}

on_each_backend! {
/// numba's `libdevice.sad` and `libdevice.sincos` (numba-cuda's test_libdevice) on random
/// inputs: `sad` exactly (`|x - y| + z` in 32 bits, arguments truncated to int32 as numba
/// converts them), `sincos` against the host's `sin`/`cos`.
fn numba_libdevice_sad_sincos_random(dev) {
    let ks = kernel(
        &dev,
        include_str!("../../fixtures/numba/libdevice_sad.py"),
        "use_sad",
        "int64[::1], int64[::1], int64[::1], int64[::1]",
    );
    let kc = kernel(
        &dev,
        include_str!("../../fixtures/numba/libdevice_sincos.py"),
        "use_sincos",
        "float64[::1], float64[::1], float64[::1]",
    );
    let n = 5000usize;
    let mut r = Rng(306);
    let mut int = |big: bool| {
        if big {
            r.next() as i64
        } else {
            i64::from(r.i32(-100_000, 100_000))
        }
    };
    let x: Vec<i64> = (0..n).map(|i| int(i % 7 == 0)).collect();
    let y: Vec<i64> = (0..n).map(|i| int(i % 5 == 0)).collect();
    let z: Vec<i64> = (0..n).map(|i| int(i % 3 == 0)).collect();
    let (rb, ra) = vec1(&dev, &vec![0i64; n]);
    let (_xb, xa) = vec1(&dev, &x);
    let (_yb, ya) = vec1(&dev, &y);
    let (_zb, za) = vec1(&dev, &z);
    ks.launch(&[ra, xa, ya, za], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let got: Vec<i64> = from_bytes(&dev.download(&rb).expect("download"));
    for i in 0..n {
        let (a, b, c) = (x[i] as i32, y[i] as i32, z[i] as i32);
        let d = if a < b {
            (b as u32).wrapping_sub(a as u32)
        } else {
            (a as u32).wrapping_sub(b as u32)
        };
        let want = i64::from(d.wrapping_add(c as u32) as i32);
        assert_eq!(got[i], want, "sad({}, {}, {})", x[i], y[i], z[i]);
    }
    let v: Vec<f64> = (0..n)
        .map(|i| f64::from(r.f32(-10.0, 10.0)) * if i % 9 == 0 { 1e5 } else { 1.0 })
        .collect();
    let (sb, sa) = vec1(&dev, &vec![0f64; n]);
    let (cb, ca) = vec1(&dev, &vec![0f64; n]);
    let (_vb, va) = vec1(&dev, &v);
    kc.launch(&[sa, ca, va], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let s: Vec<f64> = from_bytes(&dev.download(&sb).expect("download"));
    let c: Vec<f64> = from_bytes(&dev.download(&cb).expect("download"));
    for i in 0..n {
        assert!(
            (s[i] - v[i].sin()).abs() <= 1e-15,
            "sin({}) = {}",
            v[i],
            s[i]
        );
        assert!(
            (c[i] - v[i].cos()).abs() <= 1e-15,
            "cos({}) = {}",
            v[i],
            c[i]
        );
    }
}
}

on_each_backend! {
/// Functions of Python's `operator` module (numba-cuda's test_operator) on random inputs.
fn numba_operator_module_random(dev) {
    let k = kernel(
        &dev,
        include_str!("../../fixtures/numba/operator_module.py"),
        "foo",
        "float64[::1], float64[::1], int64[::1]",
    );
    let n = 3000usize;
    let mut r = Rng(307);
    let a: Vec<f64> = (0..n).map(|_| f64::from(r.f32(-100.0, 100.0))).collect();
    let b: Vec<f64> = (0..n).map(|_| f64::from(r.f32(-100.0, 100.0))).collect();
    let m: Vec<i64> = (0..n)
        .map(|_| i64::from(r.i32(-1_000_000, 1_000_000)))
        .collect();
    let (ab, aa) = vec1(&dev, &a);
    let (bb, ba) = vec1(&dev, &b);
    let (mb, ma) = vec1(&dev, &m);
    k.launch(&[aa, ba, ma], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let ga: Vec<f64> = from_bytes(&dev.download(&ab).expect("download"));
    let gb: Vec<f64> = from_bytes(&dev.download(&bb).expect("download"));
    let gm: Vec<i64> = from_bytes(&dev.download(&mb).expect("download"));
    for i in 0..n {
        let sum = a[i] + b[i];
        assert_eq!(ga[i], sum, "add at {i}");
        assert_eq!(gb[i], -(sum * b[i]), "neg(mul) at {i}");
        assert_eq!(gm[i], m[i].div_euclid(3) ^ (m[i] << 2), "ints at {i}");
    }
}
}

on_each_backend! {
/// `pred is True` on a bool argument (numba-cuda's test_issue5623) for both values.
fn numba_is_on_bools(dev) {
    let k = kernel(
        &dev,
        include_str!("../../fixtures/numba/is_compile_time.py"),
        "foo",
        "bool, int64[::1]",
    );
    for (pred, want) in [(true, [1i64, 1]), (false, [0, 666])] {
        let (sb, sa) = vec1(&dev, &[0i64, 666]);
        k.launch(&[ArgValue::Bool(pred), sa], [1, 1, 1], [1, 1, 1]);
        let got: Vec<i64> = from_bytes(&dev.download(&sb).expect("download"));
        assert_eq!(got, want, "pred = {pred}");
    }
}
}

on_each_backend! {
/// numba-cuda's `atomic_add_double_global_3`: an atomic add at a tuple-valued index `bin`,
/// with the dead `if neg_idx:` branch pruned; every element of a random block-shaped array
/// (strided, not contiguous) is incremented once.
fn numba_atomic_tuple_index_random(dev) {
    let k = kernel(
        &dev,
        include_str!("../../fixtures/numba/atomic_tuple_index.py"),
        "atomic_add_double_global_3",
        "float64[:, :]",
    );
    let mut r = Rng(308);
    for _ in 0..3 {
        let (h, w) = (r.i32(1, 16) as usize, r.i32(1, 32) as usize);
        // Column-major storage, so the view is not C-contiguous.
        let init: Vec<f64> = (0..h * w).map(|_| f64::from(r.f32(-5.0, 5.0))).collect();
        let (ab, aa) = array(&dev, &init, &[h as u64, w as u64], &[1, h as i64]);
        k.launch(&[aa], [1, 1, 1], [h as u32, w as u32, 1]);
        let got: Vec<f64> = from_bytes(&dev.download(&ab).expect("download"));
        for i in 0..h * w {
            assert_eq!(got[i], init[i] + 1.0, "element {i} of {h}x{w}");
        }
    }
}
}

on_each_backend! {
/// numba's vector constructors from vectors and numbers (numba-cuda's
/// `test_fancy_creation_readout`), on random int8 components.
fn numba_vector_from_vectors_random(dev) {
    let k = kernel(
        &dev,
        include_str!("../../fixtures/numba/vector_from_vectors.py"),
        "kernel",
        "float64[::1], int8[::1]",
    );
    let mut r = Rng(309);
    for _ in 0..5 {
        let s: Vec<i8> = (0..4).map(|_| r.i32(-128, 128) as i8).collect();
        let (o, t, h, f) = (
            f64::from(s[0]),
            f64::from(s[1]),
            f64::from(s[2]),
            f64::from(s[3]),
        );
        let (rb, ra) = vec1(&dev, &[0f64; 18]);
        let (_sb, sa) = vec1(&dev, &s);
        k.launch(&[ra, sa], [1, 1, 1], [1, 1, 1]);
        let got: Vec<f64> = from_bytes(&dev.download(&rb).expect("download"));
        let want = [o, o, h, o, t, h, t, h, t, h, f, t, h, o, o, t, h, h];
        assert_eq!(got, want, "components {s:?}");
    }
}
}

on_each_backend! {
/// numba-cuda's `test_explicit_signatures_device_unsafe`: a device function compiled for
/// `(int64, int64)` converts float64 arguments to int64 (truncating) before adding them,
/// as numba's device calls do; random arguments of both signs against that rule.
fn numba_device_explicit_signature_converts_arguments(dev) {
    let k = kernel(
        &dev,
        include_str!("../../fixtures/numba/device_explicit_signature.py"),
        "f",
        "int64[::1], float64, float64",
    );
    let mut r = Rng(309);
    let mut cases = vec![(1.5, 2.5), (-1.5, 0.75), (0.999, 0.999)];
    while cases.len() < 64 {
        cases.push((
            f64::from(r.f32(-1.0e6, 1.0e6)),
            f64::from(r.f32(-1.0e6, 1.0e6)),
        ));
    }
    for (x, y) in cases {
        let (rb, ra) = vec1(&dev, &[0i64]);
        k.launch(
            &[ra, ArgValue::Float(x), ArgValue::Float(y)],
            [1, 1, 1],
            [1, 1, 1],
        );
        let got: Vec<i64> = from_bytes(&dev.download(&rb).expect("download"));
        assert_eq!(
            got[0],
            x.trunc() as i64 + y.trunc() as i64,
            "add_device({x}, {y})"
        );
    }
}
}
