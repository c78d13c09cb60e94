//! GPU tests of the type families: vectors passed by value and built in device code,
//! float16 and bfloat16 arithmetic, against CPU references that round as the types do.

use super::*;

/// float32 → float16 bits, rounding to nearest even (finite, normal-range values).
fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let man = b & 0x7f_ffff;
    if exp <= 0 {
        // Subnormal half: shift the implicit bit in.
        let m = (man | 0x80_0000) >> (1 - exp);
        let r =
            (m >> 13) + u32::from((m >> 12) & 1 == 1 && ((m & 0xfff) != 0 || (m >> 13) & 1 == 1));
        return sign | r as u16;
    }
    let mut h = ((exp as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1;
    }
    sign | h as u16
}

fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let man = f32::from(h & 0x3ff);
    if exp == 0 {
        sign * man * 2f32.powi(-24)
    } else {
        sign * (1.0 + man / 1024.0) * 2f32.powi(exp - 15)
    }
}

fn r16(x: f32) -> f32 {
    f16_value(f16_bits(x))
}

fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let rest = b & 0xffff;
    let mut h = b >> 16;
    if rest > 0x8000 || (rest == 0x8000 && h & 1 == 1) {
        h += 1;
    }
    h as u16
}

fn bf16_value(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

fn rb16(x: f32) -> f32 {
    bf16_value(bf16_bits(x))
}

on_each_backend! {
fn vectors_float16_and_bfloat16(dev) {
    let k = kernel(
        &dev,
        &fixture("vectors_and_half.py"),
        "vec",
        "float32x4, int8x3, float16[::1], bfloat16[::1], float32[:, ::1]",
    );
    let n = 1024;
    let mut r = Rng(41);
    let h: Vec<u16> = (0..n).map(|_| f16_bits(r.f32(-30.0, 30.0))).collect();
    let b: Vec<u16> = (0..n).map(|_| bf16_bits(r.f32(-30.0, 30.0))).collect();
    let v = ArgValue::Tuple(vec![
        ArgValue::Float(1.0),
        ArgValue::Float(2.0),
        ArgValue::Float(3.0),
        ArgValue::Float(4.0),
    ]);
    let w = ArgValue::Tuple(vec![ArgValue::Int(5), ArgValue::Int(-6), ArgValue::Int(7)]);
    let (hb, ha) = vec1(&dev, &h);
    let (bb, ba) = vec1(&dev, &b);
    let (ob, oa) = array(&dev, &vec![0f32; n * 6], &[n as u64, 6], &[6, 1]);
    k.launch(&[v, w, ha, ba, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let ho: Vec<u16> = from_bytes(&dev.download(&hb).expect("download"));
    let bo: Vec<u16> = from_bytes(&dev.download(&bb).expect("download"));
    for i in 0..n {
        let u = [4.0f32, 3.0, 2.0, 1.0];
        let s: f32 = u.iter().sum::<f32>() - u[i % 4] + 100.0;
        let row = &out[i * 6..i * 6 + 6];
        assert_eq!(
            &row[..4],
            &[s, 108.0, 5007.0, 3.5],
            "vector results, thread {i}"
        );
        let x = f16_value(h[i]);
        let want_h = r16(r16(r16(x * 2.0) + r16(x / 3.0)) - r16(x.abs().sqrt()));
        let got_h = f16_value(ho[i]);
        assert!(
            (got_h - want_h).abs() <= want_h.abs() * 1e-3 + 1e-3,
            "float16 {x}: {got_h} vs {want_h}"
        );
        let y = bf16_value(b[i]);
        let want_b = rb16(rb16(y * 2.0) + rb16(y * y));
        let got_b = bf16_value(bo[i]);
        assert!(
            (got_b - want_b).abs() <= want_b.abs() * 8e-3 + 1e-2,
            "bfloat16 {y}: {got_b} vs {want_b}"
        );
        assert_eq!(
            row[4],
            f16_value(h[i / 32 * 32]),
            "shfl of float16, thread {i}"
        );
        assert_eq!(row[5], x + y, "float(x) + float(y), thread {i}");
    }
}
}

const STRUCTS: &str = r#"
from cuda import device
from cuda.device import float32, int16

@device.struct
class box:
    lo: float32
    hi: float32
    tag: int16

    @device.func
    def clamp(self, v):
        return min(max(v, self.lo), self.hi)

    @device.func
    def widened(self, d):
        return box(self.lo - d, self.hi + d, self.tag + 1)

@device.kernel
def clamp_all(b, xs, out, tags):
    i = device.tid(1)
    if i < len(xs):
        w = b.widened(1.0)
        out[i] = w.clamp(xs[i])
        tags[i] = w.tag
"#;

on_each_backend! {
fn structs_by_value_with_methods(dev) {
    let module = Module::parse("structs.py", STRUCTS).expect("parse");
    let bt = module.named_type("box").expect("struct type");
    let layout = pydevice::abi::layout_of(&bt);
    assert_eq!((layout.size, layout.align), (12, 4));
    let f32a = pydevice::Type::array(
        pydevice::types::Scalar::Float32,
        1,
        pydevice::types::Layout::C,
    );
    let i16a = pydevice::Type::array(
        pydevice::types::Scalar::Int16,
        1,
        pydevice::types::Layout::C,
    );
    let arch = arch_for(&dev);
    let compiled = dev.compile(
        &module,
            "clamp_all",
            &[bt, f32a.clone(), f32a, i16a],
            &CompileOptions {
                arch,
                ..CompileOptions::default()
            },
    );
    let k = Kernel {
        dev: &dev,
        k: compiled,
    };
    let n = 3000;
    let mut r = Rng(51);
    let xs: Vec<f32> = (0..n).map(|_| r.f32(-10.0, 10.0)).collect();
    let (_xb, xa) = vec1(&dev, &xs);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    let (tb, ta) = vec1(&dev, &vec![0i16; n]);
    let b = ArgValue::Tuple(vec![
        ArgValue::Float(-2.5),
        ArgValue::Float(4.0),
        ArgValue::Int(41),
    ]);
    k.launch(&[b, xa, oa, ta], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let tags: Vec<i16> = from_bytes(&dev.download(&tb).expect("download"));
    for i in 0..n {
        assert_eq!(out[i], xs[i].clamp(-3.5, 5.0), "x={}", xs[i]);
        assert_eq!(tags[i], 42);
    }
}
}

/// The host mirror of `particle` in `tests/fixtures/structs/particles.py` (C layout).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq)]
struct Particle {
    x: f32,
    id: i32,
    v: f64,
}

on_each_backend! {
fn global_array_of_structs_updated_in_place(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/structs/particles.py",
    ))
    .expect("fixture");
    let module = Module::parse("particles.py", &src).expect("parse");
    let particle = module.named_type("particle").expect("struct type");
    assert_eq!(
        pydevice::abi::layout_of(&particle).size as usize,
        std::mem::size_of::<Particle>()
    );
    let ps_t = pydevice::Type::array_of(&particle, 1, pydevice::types::Layout::C).expect("array");
    let (rest, _) = parse_signature("int32[::1], float64").expect("sig");
    let arch = arch_for(&dev);
    let compiled = dev.compile(
        &module,
        "step",
        &[vec![ps_t], rest].concat(),
        &CompileOptions {
            arch,
            ..CompileOptions::default()
        },
    );
    let k = Kernel {
        dev: &dev,
        k: compiled,
    };
    let n = 5001;
    let mut r = Rng(77);
    let ps: Vec<Particle> = (0..n)
        .map(|_| Particle {
            x: r.f32(-100.0, 100.0),
            id: r.i32(-1000, 1000),
            v: f64::from(r.f32(-5.0, 5.0)),
        })
        .collect();
    let dt = 0.25f64;
    let (pb, pa) = vec1(&dev, &ps);
    let (ob, oa) = vec1(&dev, &vec![0i32; n]);
    k.launch(
        &[pa, oa, ArgValue::Float(dt)],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let got: Vec<Particle> = from_bytes(&dev.download(&pb).expect("download"));
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    for (i, (p, g)) in ps.iter().zip(&got).enumerate() {
        let want = Particle {
            x: p.x + (p.v * dt) as f32,
            id: p.id + 1,
            v: p.v,
        };
        assert_eq!(*g, want, "particle {i}");
        assert_eq!(out[i], p.id * 2 + p.id + 1, "out {i}");
    }
}
}

// ---- complex numbers ----------------------------------------------------------------------

/// A complex number in f64 for the references.
type C = (f64, f64);

fn cmul(a: C, b: C) -> C {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

fn cdiv(a: C, b: C) -> C {
    let d = b.0 * b.0 + b.1 * b.1;
    ((a.0 * b.0 + a.1 * b.1) / d, (a.1 * b.0 - a.0 * b.1) / d)
}

fn cabs(a: C) -> f64 {
    a.0.hypot(a.1)
}

/// Norm-wise relative error of `got` against `want`, in units of `eps`, measured against
/// `max(|want|, floor)` (a floor of 1 makes it absolute near zeros of the function).
fn ulps_floor(got: C, want: C, eps: f64, floor: f64) -> f64 {
    let err = cabs((got.0 - want.0, got.1 - want.1));
    err / (cabs(want).max(floor).max(f64::MIN_POSITIVE) * eps)
}

/// Norm-wise relative error of `got` against `want`, in units of `eps`.
fn ulps(got: C, want: C, eps: f64) -> f64 {
    ulps_floor(got, want, eps, 0.0)
}

const COMPLEX_ARITH: &str = "\
from cuda import device
from cuda.device import complex64

@device.kernel
def carith(a, b, out, ok):
    i = device.tid(1)
    if i < len(a):
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x / y
        out[i, 4] = -x
        out[i, 5] = x.conjugate()
        out[i, 6] = complex64(abs(x), 0.0)
        out[i, 7] = x ** 3
        out[i, 8] = (2 + 0.5j) * x - 1
        ok[i] = (x == y) or (x != x)
";

on_each_backend! {
/// complex64 `+ - * /`, negation, conjugate, `abs`, an integer power and weak Python
/// complex constants on random inputs, against an f64 reference, norm-wise in float32 ulp
/// (2^-24 relative): `+ -`, negation and conjugate exact; `*` (no FMA) within 3 (the bound
/// is sqrt(5)); Smith's `/` within 8; `abs` (libdevice `hypotf`, 3 ulp) within 4; `x ** 3`
/// and `(2 + 0.5j) * x - 1` within 8.
fn complex64_arithmetic_random(dev) {
    let k = kernel(
        &dev,
        COMPLEX_ARITH,
        "carith",
        "complex64[::1], complex64[::1], complex64[:, ::1], bool[::1]",
    );
    let n = 100_000;
    let mut r = Rng(61);
    let mut a: Vec<[f32; 2]> = (0..n)
        .map(|_| [r.f32(-100.0, 100.0), r.f32(-100.0, 100.0)])
        .collect();
    let b: Vec<[f32; 2]> = (0..n)
        .map(|i| {
            // Divisors of very different part sizes exercise both branches of Smith's method.
            let s = if i % 3 == 0 { 1e-3 } else { 1.0 };
            [r.f32(-10.0, 10.0), s * r.f32(-10.0, 10.0)]
        })
        .collect();
    a[7] = b[7];
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = array(&dev, &vec![[0f32; 2]; n * 9], &[n as u64, 9], &[9, 1]);
    let (kb, ka) = vec1(&dev, &vec![0u8; n]);
    k.launch(&[aa, ba, oa, ka], [blocks(n, 256), 1, 1], [256, 1, 1]);
    let out: Vec<[f32; 2]> = from_bytes(&dev.download(&ob).expect("download"));
    let ok: Vec<u8> = from_bytes(&dev.download(&kb).expect("download"));
    let eps = f64::from(f32::EPSILON) / 2.0;
    let mut worst = [0f64; 9];
    for i in 0..n {
        let x: C = (f64::from(a[i][0]), f64::from(a[i][1]));
        let y: C = (f64::from(b[i][0]), f64::from(b[i][1]));
        let want: [C; 9] = [
            (x.0 + y.0, x.1 + y.1),
            (x.0 - y.0, x.1 - y.1),
            cmul(x, y),
            cdiv(x, y),
            (-x.0, -x.1),
            (x.0, -x.1),
            (cabs(x), 0.0),
            cmul(x, cmul(x, x)),
            (2.0 * x.0 - 0.5 * x.1 - 1.0, 2.0 * x.1 + 0.5 * x.0),
        ];
        for (j, w) in want.iter().enumerate() {
            let g = out[i * 9 + j];
            let got = (f64::from(g[0]), f64::from(g[1]));
            // `+` and `-` round once in float32 on the device: do the same here.
            let w = match j {
                0 => (f64::from(a[i][0] + b[i][0]), f64::from(a[i][1] + b[i][1])),
                1 => (f64::from(a[i][0] - b[i][0]), f64::from(a[i][1] - b[i][1])),
                _ => *w,
            };
            let u = ulps(got, w, eps);
            worst[j] = worst[j].max(u);
        }
        assert_eq!(ok[i] != 0, a[i] == b[i], "index {i}: ==");
    }
    let limits = [0.0, 0.0, 3.0, 8.0, 0.0, 0.0, 4.0, 8.0, 8.0];
    for (j, (w, l)) in worst.iter().zip(limits).enumerate() {
        assert!(*w <= l, "operation {j}: {w} ulp (limit {l})");
    }
}
}

const CMATH: &str = "\
import cmath
from cuda import device

@device.kernel
def cm(z, out, re):
    i = device.tid(1)
    if i < len(z):
        x = z[i]
        out[i, 0] = cmath.exp(x)
        out[i, 1] = cmath.log(x)
        out[i, 2] = cmath.sqrt(x)
        out[i, 3] = cmath.sin(x)
        out[i, 4] = cmath.cos(x)
        r, p = cmath.polar(x)
        out[i, 5] = cmath.rect(r, p)
        re[i, 0] = cmath.phase(x)
        re[i, 1] = abs(x)
";

/// The cmath reference: the principal branches, in f64 (std's `exp`, `ln`, `sin_cos`,
/// `sinh`/`cosh`, `atan2`, `hypot`).
fn cmath_ref(x: C) -> [C; 6] {
    let (s, c) = x.1.sin_cos();
    let ex = x.0.exp();
    let m = cabs(x);
    let sqrt = {
        let t = ((x.0.abs() + m) / 2.0).sqrt();
        if t == 0.0 {
            (0.0, x.1)
        } else if x.0 >= 0.0 {
            (t, x.1 / (2.0 * t))
        } else {
            (x.1.abs() / (2.0 * t), t.copysign(x.1))
        }
    };
    let (sx, cx) = x.0.sin_cos();
    [
        (ex * c, ex * s),
        (m.ln(), x.1.atan2(x.0)),
        sqrt,
        (sx * x.1.cosh(), cx * x.1.sinh()),
        (cx * x.1.cosh(), -sx * x.1.sinh()),
        x,
    ]
}

on_each_backend! {
/// cmath on complex64 and complex128 against an f64 reference, norm-wise and absolute below
/// magnitude 1: complex64 within 8 float32 ulp, complex128 within 8 float64 ulp
/// (libdevice's functions are within 1 to 3 ulp; the formulas add a few roundings).
/// `sqrt(z)` squared gives `z` back as a check that does not share the formula.
fn cmath_random(dev) {
    let n = 20_000;
    let mut r = Rng(62);
    let zs: Vec<C> = (0..n)
        .map(|_| (f64::from(r.f32(-4.0, 4.0)), f64::from(r.f32(-4.0, 4.0))))
        .collect();
    for wide in [false, true] {
        let (ty, eps) = if wide {
            ("complex128", f64::EPSILON / 2.0)
        } else {
            ("complex64", f64::from(f32::EPSILON) / 2.0)
        };
        let part = if wide { "float64" } else { "float32" };
        let k = kernel(
            &dev,
            CMATH,
            "cm",
            &format!("{ty}[::1], {ty}[:, ::1], {part}[:, ::1]"),
        );
        let (bytes, out_len, re_len) = if wide {
            let z: Vec<[f64; 2]> = zs.iter().map(|z| [z.0, z.1]).collect();
            (bytes_of(&z), n * 6 * 16, n * 2 * 8)
        } else {
            let z: Vec<[f32; 2]> = zs.iter().map(|z| [z.0 as f32, z.1 as f32]).collect();
            (bytes_of(&z), n * 6 * 8, n * 2 * 4)
        };
        let zb = dev.upload(&bytes).expect("upload");
        let za = ArgValue::Array(pydevice::abi::ArrayArg {
            data: dev.address(&zb),
            shape: vec![n as u64],
            strides: vec![1],
        });
        let (ob, oa) = array(&dev, &vec![0u8; out_len], &[n as u64, 6], &[6, 1]);
        let (rb, ra) = array(&dev, &vec![0u8; re_len], &[n as u64, 2], &[2, 1]);
        k.launch(&[za, oa, ra], [blocks(n, 128), 1, 1], [128, 1, 1]);
        let ob = dev.download(&ob).expect("download");
        let rb = dev.download(&rb).expect("download");
        let (out, re): (Vec<C>, Vec<f64>) = if wide {
            let o: Vec<[f64; 2]> = from_bytes(&ob);
            (o.iter().map(|v| (v[0], v[1])).collect(), from_bytes(&rb))
        } else {
            let o: Vec<[f32; 2]> = from_bytes(&ob);
            let re: Vec<f32> = from_bytes(&rb);
            (
                o.iter()
                    .map(|v| (f64::from(v[0]), f64::from(v[1])))
                    .collect(),
                re.iter().map(|v| f64::from(*v)).collect(),
            )
        };
        for (i, z) in zs.iter().enumerate() {
            let want = cmath_ref(*z);
            for (j, w) in want.iter().enumerate() {
                let got = out[i * 6 + j];
                let u = ulps_floor(got, *w, eps, 1.0);
                assert!(
                    u <= 8.0,
                    "{ty} function {j} of {z:?}: {got:?} vs {w:?} ({u} ulp)"
                );
            }
            let s = out[i * 6 + 2];
            assert!(s.0 >= 0.0, "{ty} sqrt of {z:?} has a negative real part");
            assert!(
                ulps_floor(cmul(s, s), *z, eps, 1.0) <= 8.0,
                "{ty} sqrt({z:?})² = {:?}",
                cmul(s, s)
            );
            let phase = z.1.atan2(z.0);
            assert!(
                (re[i * 2] - phase).abs() <= 4.0 * eps * phase.abs().max(1.0),
                "{ty} phase"
            );
            assert!(
                (re[i * 2 + 1] - cabs(*z)).abs() <= 4.0 * eps * cabs(*z),
                "{ty} abs"
            );
        }
    }
}
}

// ---- fp8 ----------------------------------------------------------------------------------

const FP8: &str = "\
from cuda import device
from cuda.device import float32

@device.kernel
def f8(f, d, e4, e5, e4d, e5d, back):
    i = device.tid(1)
    if i < len(f):
        e4[i] = f[i]
        e5[i] = f[i]
        e4d[i] = d[i]
        e5d[i] = d[i]
        back[i, 0] = float32(e4[i])
        back[i, 1] = float32(e5[i])
";

/// Inputs that exercise every rounding case: each code's value, the midpoints between
/// neighbours (ties), a hair on each side of them, values past the largest finite one,
/// infinities, NaN, subnormals, and random values.
fn fp8_inputs() -> Vec<f64> {
    use pydevice::types::fp8::{E4M3, E5M2};
    let mut v = Vec::new();
    for f in [E4M3, E5M2] {
        let vals: Vec<f64> = (0..=f.max_code()).map(|c| f.decode(c)).collect();
        for w in vals.windows(2) {
            let mid = (w[0] + w[1]) / 2.0;
            for x in [w[0], mid, mid * (1.0 + 1e-6), mid * (1.0 - 1e-6)] {
                v.push(x);
                v.push(-x);
            }
        }
        let top = vals[vals.len() - 1];
        v.extend([top * 1.03, top * 1.2, -top * 4.0, 1e30, -1e30]);
    }
    v.extend([f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.0, -0.0, 1e-40]);
    let mut r = Rng(63);
    for _ in 0..20_000 {
        let m = f64::from(r.f32(-1.0, 1.0));
        let e = r.i32(-20, 18);
        v.push(m * 2f64.powi(e));
    }
    v
}

on_each_backend! {
/// float32 and float64 → fp8 and fp8 → float32 on the device, with the sm_89+ `cvt`
/// instructions (the device's own architecture) and with the software conversion (sm_80),
/// against `pydevice::types::fp8` (round to nearest even, saturating, NaN kept): equal
/// codes for every input (any NaN code for NaN), and exact values back.
fn fp8_round_trips(dev) {
    use pydevice::types::fp8::{E4M3, E5M2};
    let xs = fp8_inputs();
    let n = xs.len();
    let f: Vec<f32> = xs.iter().map(|x| *x as f32).collect();
    let module = Module::parse("f8", FP8).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(
        "float32[::1], float64[::1], float8e4m3[::1], float8e5m2[::1], float8e4m3[::1], float8e5m2[::1], float32[:, ::1]",
    )
    .expect("signature");
    let same = |fmt: pydevice::types::fp8::Format, got: u8, want: u8| {
        got == want || (fmt.decode(got).is_nan() && fmt.decode(want).is_nan())
    };
    for arch in [arch_for(&dev), Arch::SM_80] {
        let compiled = dev.compile(
            &module,
            "f8",
            &args,
            &CompileOptions {
                arch,
                ..CompileOptions::default()
            },
        );
        let k = compiled;
        let (_fb, fa) = vec1(&dev, &f);
        let (_db, da) = vec1(&dev, &xs);
        let outs: Vec<(Buffer, ArgValue)> = (0..4).map(|_| vec1(&dev, &vec![0u8; n])).collect();
        let (bb, ba) = array(&dev, &vec![0f32; 2 * n], &[n as u64, 2], &[2, 1]);
        let mut launch_args = vec![fa, da];
        launch_args.extend(outs.iter().map(|(_, a)| a.clone()));
        launch_args.push(ba);
        let cfg = LaunchConfig {
            grid: [blocks(n, 256), 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
        };
        dev.launch(&k, &launch_args, &cfg).expect("launch");
        dev.synchronize().expect("synchronize");
        let got: Vec<Vec<u8>> = outs
            .iter()
            .map(|(b, _)| dev.download(b).expect("download"))
            .collect();
        let back: Vec<f32> = from_bytes(&dev.download(&bb).expect("download"));
        for i in 0..n {
            let x32 = f64::from(f[i]);
            let cases = [
                (E4M3, got[0][i], E4M3.encode(x32), "float32 → e4m3"),
                (E5M2, got[1][i], E5M2.encode(x32), "float32 → e5m2"),
                (E4M3, got[2][i], E4M3.encode(xs[i]), "float64 → e4m3"),
                (E5M2, got[3][i], E5M2.encode(xs[i]), "float64 → e5m2"),
            ];
            for (fmt, g, w, what) in cases {
                assert!(
                    same(fmt, g, w),
                    "{arch}: {what} of {}: {g:#04x}, want {w:#04x}",
                    xs[i]
                );
            }
            for (j, (fmt, code)) in [(E4M3, got[0][i]), (E5M2, got[1][i])]
                .into_iter()
                .enumerate()
            {
                let want = fmt.decode(code);
                let b = f64::from(back[i * 2 + j]);
                assert!(
                    b == want || (b.is_nan() && want.is_nan()),
                    "{arch}: decoding {code:#04x}: {b}, want {want}"
                );
            }
        }
    }
}
}

const FP8_VECTORS: &str = "\
from cuda import device
from cuda.device import float32, float8e4m3x4, float8e4m3x3, float8e5m2x2, float8e5m2x3


@device.struct
class pair:
    a: float8e4m3x3
    b: float8e5m2x2


@device.func
def swap(v: float8e4m3x4) -> float8e4m3x4:
    return float8e4m3x4(v.w, v.z, v.y, v.x)


@device.func
def mix(p: pair, s: float32):
    return float8e5m2x3(p.a.x, p.b[1], s), p.a


@device.kernel
def f8v(q, r, f, k4, k2, o4, o5, back):
    i = device.tid(1)
    if i < len(f):
        v = q[i]
        w = float8e5m2x2(r[2 * i], r[2 * i + 1])
        x = f[i]
        s = 0.0
        for e in v:
            s += e
        u = swap(v)
        u[i % 4] = x
        p = pair(float8e4m3x3(x, v.y, w.x), w)
        m, a3 = mix(p, x * 3)
        t = (u, m)
        o4[i] = t[0]
        o5[i] = t[1]
        back[i, 0] = s
        back[i, 1] = v[i % 4] * w.y
        back[i, 2] = a3.z + k4.w + k2[i % 2]
        back[i, 3] = float32(len(v) + a3.size) + v.dtype(x)
";

on_each_backend! {
/// fp8 vectors on the device, with the sm_89+ conversions and the software ones (sm_80):
/// vectors read from an array of vectors of random fp8 codes (every code, NaNs included),
/// built from fp8 array elements and from float32 values (rounded as `float8e4m3(x)`
/// rounds), element reads, a run-time `v[i] = x`, iteration, `@func` parameters and
/// results, a struct field, a tuple, `v.dtype(x)`, vector kernel parameters packed on the host, and whole
/// vectors stored into `float8e4m3x4` and (3-byte) `float8e5m2x3` arrays; every fp8 code and
/// float32 result checked exactly against `pydevice::types::fp8`.
fn fp8_vectors_random(dev) {
    use pydevice::types::fp8::{E4M3, E5M2, Format};
    let n = 4096;
    let mut rng = Rng(88);
    let q: Vec<[u8; 4]> = (0..n).map(|_| (rng.next() as u32).to_le_bytes()).collect();
    let r: Vec<u8> = (0..2 * n).map(|_| rng.next() as u8).collect();
    let f: Vec<f32> = (0..n)
        .map(|i| match i % 4 {
            0 => rng.f32(-600.0, 600.0),
            1 => rng.f32(-2.0, 2.0),
            2 => rng.f32(-0.02, 0.02),
            _ => E4M3.decode(rng.next() as u8 & 0x7e) as f32,
        })
        .collect();
    let (k4, k2) = ([1.75f64, -3.0, 0.3, 100.0], [-0.4f64, 7e4]);
    let module = Module::parse("f8v", FP8_VECTORS).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(
        "float8e4m3x4[::1], float8e5m2[::1], float32[::1], float8e4m3x4, float8e5m2x2, \
         float8e4m3x4[::1], float8e5m2x3[::1], float32[:, ::1]",
    )
    .expect("signature");
    let e4 = |x: f64| E4M3.encode(x);
    let e5 = |x: f64| E5M2.encode(x);
    let d4 = |c: u8| E4M3.decode(c) as f32;
    let d5 = |c: u8| E5M2.decode(c) as f32;
    let same_code = |fmt: Format, got: u8, want: u8| {
        got == want || (fmt.decode(got).is_nan() && fmt.decode(want).is_nan())
    };
    let same_f32 = |got: f32, want: f32| got == want || (got.is_nan() && want.is_nan());
    for arch in [arch_for(&dev), Arch::SM_80] {
        let compiled = dev.compile(
            &module,
            "f8v",
            &args,
            &CompileOptions {
                arch,
                ..CompileOptions::default()
            },
        );
        let k = compiled;
        let (_qb, qa) = vec1(&dev, &q);
        let (_rb, ra) = vec1(&dev, &r);
        let (_fb, fa) = vec1(&dev, &f);
        let (o4b, o4a) = vec1(&dev, &vec![[0u8; 4]; n]);
        let (o5b, o5a) = vec1(&dev, &vec![[0u8; 3]; n]);
        let (bb, ba) = array(&dev, &vec![0f32; 4 * n], &[n as u64, 4], &[4, 1]);
        let k4a = ArgValue::Tuple(k4.iter().map(|x| ArgValue::Float(*x)).collect());
        let k2a = ArgValue::Tuple(k2.iter().map(|x| ArgValue::Float(*x)).collect());
        let cfg = LaunchConfig {
            grid: [blocks(n, 128), 1, 1],
            block: [128, 1, 1],
            shared_bytes: 0,
        };
        dev.launch(&k, &[qa, ra, fa, k4a, k2a, o4a, o5a, ba], &cfg)
            .expect("launch");
        dev.synchronize().expect("synchronize");
        let o4 = dev.download(&o4b).expect("download");
        let o5 = dev.download(&o5b).expect("download");
        let back: Vec<f32> = from_bytes(&dev.download(&bb).expect("download"));
        // The kernel parameters, as `abi::pack` rounds them.
        let k4c: Vec<u8> = k4.iter().map(|x| e4(*x)).collect();
        let k2c: Vec<u8> = k2.iter().map(|x| e5(*x)).collect();
        for i in 0..n {
            let v = &q[i];
            let w = &r[2 * i..2 * i + 2];
            let x = f[i];
            let s = v.iter().fold(0f32, |s, c| s + d4(*c));
            let mut u = [v[3], v[2], v[1], v[0]];
            u[i % 4] = e4(f64::from(x));
            let a3 = [e4(f64::from(x)), v[1], e4(f64::from(d5(w[0])))];
            let m = [e5(f64::from(d4(a3[0]))), w[1], e5(f64::from(x * 3.0))];
            for j in 0..4 {
                assert!(
                    same_code(E4M3, o4[4 * i + j], u[j]),
                    "{arch}: thread {i} u[{j}]: {:#04x}, want {:#04x} (x = {x})",
                    o4[4 * i + j],
                    u[j]
                );
            }
            for j in 0..3 {
                assert!(
                    same_code(E5M2, o5[3 * i + j], m[j]),
                    "{arch}: thread {i} m[{j}]: {:#04x}, want {:#04x} (x = {x})",
                    o5[3 * i + j],
                    m[j]
                );
            }
            let want = [
                s,
                d4(v[i % 4]) * d5(w[1]),
                d4(a3[2]) + d4(k4c[3]) + d5(k2c[i % 2]),
                7.0 + d4(e4(f64::from(x))),
            ];
            for j in 0..4 {
                assert!(
                    same_f32(back[4 * i + j], want[j]),
                    "{arch}: thread {i} back[{j}]: {}, want {}",
                    back[4 * i + j],
                    want[j]
                );
            }
        }
    }
}
}

const COMPLEX_PARAMS: &str = "\
from cuda import device
from cuda.device import complex64, complex128

@device.struct
class rot:
    w: complex64
    k: int

@device.func
def apply(r: rot, x: complex128) -> complex128:
    return x * r.w + r.k

@device.kernel
def kp(z, w, a):
    i = device.tid(1)
    if i < len(a):
        a[i] = apply(rot(w, i), a[i] * z)
";

on_each_backend! {
/// Complex scalars as kernel parameters (packed by `abi::pack` as `cuda::std::complex`),
/// a complex `@struct` field, and a `@func` result, against the same arithmetic on the CPU.
fn complex_parameters_and_struct_fields(dev) {
    let k = kernel(
        &dev,
        COMPLEX_PARAMS,
        "kp",
        "complex128, complex64, complex128[::1]",
    );
    let n = 4096;
    let mut r = Rng(64);
    let a: Vec<[f64; 2]> = (0..n)
        .map(|_| [f64::from(r.f32(-3.0, 3.0)), f64::from(r.f32(-3.0, 3.0))])
        .collect();
    let (z, w) = ((0.75, -1.25), (0.5f32, 2.0f32));
    let (ab, aa) = vec1(&dev, &a);
    k.launch(
        &[
            ArgValue::Complex(z.0, z.1),
            ArgValue::Complex(f64::from(w.0), f64::from(w.1)),
            aa,
        ],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let out: Vec<[f64; 2]> = from_bytes(&dev.download(&ab).expect("download"));
    for i in 0..n {
        let x = cmul((a[i][0], a[i][1]), z);
        let y = cmul(x, (f64::from(w.0), f64::from(w.1)));
        let want = (y.0 + i as f64, y.1);
        let got = (out[i][0], out[i][1]);
        assert!(
            ulps_floor(got, want, f64::EPSILON / 2.0, 1.0) <= 4.0,
            "index {i}: {got:?} vs {want:?}"
        );
    }
}
}

on_each_backend! {
/// 16-bit float scalars as kernel parameters: the host packs `ArgValue::Float` into their
/// bits (`types::half`), rounding once as CUDA's `__double2half` does.
fn half_and_bfloat16_scalar_parameters(dev) {
    let src = r#"
from cuda import device
from cuda.device import float16, bfloat16, float32

@device.kernel
def affine(a, h: float16, b: bfloat16, out):
    i = device.tid(1)
    if i < len(a):
        out[i] = a[i] * float32(h) + float32(b)
"#;
    let k = kernel(
        &dev,
        src,
        "affine",
        "float32[::1], float16, bfloat16, float32[::1]",
    );
    let n = 4096;
    let mut r = Rng(77);
    let a: Vec<f32> = (0..n).map(|_| r.f32(-8.0, 8.0)).collect();
    // Keep the buffer alive (`_` would free it before the launch).
    let (_ab, aa) = vec1(&dev, &a);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    // 1/3 rounds in both formats; the kernel must see the rounded values.
    let (h, b) = (1.0f64 / 3.0, -2.0f64 / 3.0);
    k.launch(
        &[aa, ArgValue::Float(h), ArgValue::Float(b), oa],
        [blocks(n, 256), 1, 1],
        [256, 1, 1],
    );
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let hf = half_to_f32(pydevice::types::half::f16_bits(h));
    let bf = f32::from_bits(u32::from(pydevice::types::half::bf16_bits(b)) << 16);
    assert_eq!(hf, 0.333_251_95);
    assert_eq!(bf, -0.667_968_75);
    for i in 0..n {
        let want = a[i] * hf + bf;
        assert!(
            (out[i] - want).abs() <= 1e-6 * want.abs().max(1.0),
            "out[{i}] = {}, want {want}",
            out[i]
        );
    }
}
}

on_each_backend! {
/// float16 → bfloat16 → float16, explicit and through a store, on every float16 value.
fn float16_bfloat16_conversions(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/half_bfloat_conversions.py",
    ))
    .expect("fixture");
    let k = kernel(
        &dev,
        &src,
        "conv",
        "float16[::1], bfloat16[::1], bfloat16[::1]",
    );
    // Every finite float16 value and the infinities (NaNs aside).
    let h: Vec<u16> = (0u16..=0xffff)
        .filter(|b| (b & 0x7c00) != 0x7c00 || (b & 0x3ff) == 0)
        .collect();
    let n = h.len();
    let (hb, ha) = vec1(&dev, &h);
    let (bb, ba) = vec1(&dev, &vec![0u16; n]);
    let (b2b, b2a) = vec1(&dev, &vec![0u16; n]);
    k.launch(&[ha, ba, b2a], [blocks(n, 256), 1, 1], [256, 1, 1]);
    let h_out: Vec<u16> = from_bytes(&dev.download(&hb).expect("download"));
    let b_out: Vec<u16> = from_bytes(&dev.download(&bb).expect("download"));
    let b2_out: Vec<u16> = from_bytes(&dev.download(&b2b).expect("download"));
    for i in 0..n {
        let x = f64::from(half_to_f32(h[i]));
        let want_b = pydevice::types::half::bf16_bits(x);
        assert_eq!(b_out[i], want_b, "bfloat16({:#06x})", h[i]);
        assert_eq!(b2_out[i], want_b, "store of {:#06x}", h[i]);
        let back = f64::from(f32::from_bits(u32::from(want_b) << 16));
        assert_eq!(
            h_out[i],
            pydevice::types::half::f16_bits(back),
            "float16(bfloat16({:#06x}))",
            h[i]
        );
    }
}
}

/// The value of any float16 bits but NaN.
fn half_to_f32(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let e = i32::from((bits >> 10) & 0x1f);
    let m = f32::from(bits & 0x3ff);
    match e {
        0 => sign * m * 2f32.powi(-24),
        31 => sign * f32::INFINITY,
        _ => sign * (1.0 + m / 1024.0) * 2f32.powi(e - 15),
    }
}

on_each_backend! {
/// `cmath.rect` at CPython's special values (numba-cuda's `test_rect` inputs): an infinite
/// radius with a zero angle keeps the zero, a non-finite angle gives `|r|` for `r == 0` and
/// `(r, phi)` for an infinite `r`.
fn cmath_rect_special_values(dev) {
    let src = "import cmath\nfrom cuda import device\n\n@device.kernel\ndef rect(r, phi, out):\n    i = device.tid(1)\n    if i < len(r):\n        out[i] = cmath.rect(r[i], phi[i])\n";
    let k = kernel(
        &dev,
        src,
        "rect",
        "float64[::1], float64[::1], complex128[::1]",
    );
    let inf = f64::INFINITY;
    let nan = f64::NAN;
    // (r, phi, expected real, expected imag), from CPython's cmath.rect (NaN: any NaN).
    let cases: [(f64, f64, f64, f64); 10] = [
        (inf, 0.0, inf, 0.0),
        (inf, -0.0, inf, -0.0),
        (-inf, 0.0, -inf, -0.0),
        (0.0, inf, 0.0, 0.0),
        (-0.0, nan, 0.0, 0.0),
        (inf, nan, inf, nan),
        (-inf, 1.0, -inf, -inf),
        (inf, -2.0, -inf, -inf),
        (2.0, 0.0, 2.0, 0.0),
        (1.5, -0.0, 1.5, -0.0),
    ];
    let r: Vec<f64> = cases.iter().map(|c| c.0).collect();
    let phi: Vec<f64> = cases.iter().map(|c| c.1).collect();
    let (_rb, ra) = vec1(&dev, &r);
    let (_pb, pa) = vec1(&dev, &phi);
    // complex128[::1] of n elements: the bytes of 2n float64.
    let ob = dev
        .upload(&bytes_of(&vec![0f64; 2 * cases.len()]))
        .expect("upload");
    let oa = ArgValue::Array(pydevice::abi::ArrayArg {
        data: dev.address(&ob),
        shape: vec![cases.len() as u64],
        strides: vec![1],
    });
    k.launch(&[ra, pa, oa], [1, 1, 1], [32, 1, 1]);
    let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    for (i, c) in cases.iter().enumerate() {
        let (re, im) = (out[2 * i], out[2 * i + 1]);
        let same = |got: f64, want: f64| {
            (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits()
        };
        assert!(
            same(re, c.2) && same(im, c.3),
            "rect({}, {}) = ({re}, {im}), want ({}, {})",
            c.0,
            c.1,
            c.2,
            c.3
        );
    }
}
}

/// CPython's `c_pow`, the reference for complex powers with a non-constant exponent.
fn c_pow(z: (f64, f64), w: (f64, f64)) -> (f64, f64) {
    if w == (0.0, 0.0) {
        return (1.0, 0.0);
    }
    if z == (0.0, 0.0) {
        return (0.0, 0.0);
    }
    let vabs = z.0.hypot(z.1);
    let mut len = vabs.powf(w.0);
    let at = z.1.atan2(z.0);
    let mut phase = at * w.0;
    if w.1 != 0.0 {
        len /= (at * w.1).exp();
        phase += w.1 * vabs.ln();
    }
    (len * phase.cos(), len * phase.sin())
}

on_each_backend! {
/// `z ** w` for complex128 `z` and `w` at run time, and `z ** 0.5`, against `c_pow`.
fn complex_power_random(dev) {
    let src = "from cuda import device\n\n@device.kernel\ndef p(z, w, out):\n    i = device.tid(1)\n    if i < len(z):\n        out[2 * i] = z[i] ** w[i]\n        out[2 * i + 1] = z[i] ** 0.5\n";
    let k = kernel(
        &dev,
        src,
        "p",
        "complex128[::1], complex128[::1], complex128[::1]",
    );
    let n = 4096;
    let mut r = Rng(91);
    let mut z: Vec<[f64; 2]> = (0..n)
        .map(|_| [f64::from(r.f32(-3.0, 3.0)), f64::from(r.f32(-3.0, 3.0))])
        .collect();
    let mut w: Vec<[f64; 2]> = (0..n)
        .map(|_| [f64::from(r.f32(-2.5, 2.5)), f64::from(r.f32(-1.5, 1.5))])
        .collect();
    // Real exponents, and the special cases.
    for v in w.iter_mut().take(512) {
        v[1] = 0.0;
    }
    z[0] = [0.0, 0.0];
    w[1] = [0.0, 0.0];
    let upload = |v: &[[f64; 2]]| {
        let b = dev.upload(&bytes_of(v)).expect("upload");
        let a = ArgValue::Array(pydevice::abi::ArrayArg {
            data: dev.address(&b),
            shape: vec![v.len() as u64],
            strides: vec![1],
        });
        (b, a)
    };
    let (_zb, za) = upload(&z);
    let (_wb, wa) = upload(&w);
    let (ob, oa) = upload(&vec![[0.0; 2]; 2 * n]);
    k.launch(&[za, wa, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<[f64; 2]> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let zi = (z[i][0], z[i][1]);
        for (got, want) in [
            (out[2 * i], c_pow(zi, (w[i][0], w[i][1]))),
            (out[2 * i + 1], c_pow(zi, (0.5, 0.0))),
        ] {
            let scale = want.0.hypot(want.1).max(1e-300);
            let err = (got[0] - want.0).hypot(got[1] - want.1) / scale;
            assert!(
                err <= 64.0 * f64::EPSILON,
                "z[{i}] = {zi:?}, w = {:?}: got {got:?}, want {want:?} (rel err {err:e})",
                w[i]
            );
        }
    }
}
}
