//! Heterogeneous functions: the same `@func` runs on the host (JIT-compiled through
//! Cranelift) and on the device (inside a wrapper kernel that stores its result), on random
//! inputs. Integer code must agree exactly; float code within the bounds docs/semantics.md
//! §16.4 gives (IEEE operations agree except where the device contracts `a * b + c` into
//! one fma; libm and libdevice math functions differ by a few ulps).

use super::{Rng, blocks, from_bytes, kernel, vec1};
use pydevice::types::{Scalar, Type};
use pydevice::{HostValue, Module};

const SRC: &str = r#"
from cuda import device
from cuda.device import int8, int32, int64, uint32, float32, float64
import math


@device.func
def mix_int(a: int32, b: int32) -> int32:
    acc = a // (b % 97 - 48) + a % (b | 1)
    for k in range(b & 7):
        acc = acc * 3 + (a >> (k + b % 40)) - (b << k)
    return max(acc ^ (a * b), min(a, b)) + int32(int8(a + b))


@device.func
def mix_u32(a: uint32, b: uint32) -> uint32:
    s = a
    while b > uint32(0):
        s = s * uint32(2654435761) + (b >> uint32(3)) % (a | uint32(1))
        b = b // uint32(5)
    return s ^ (a << (b & uint32(63)))


@device.func
def mix_f32(x: float32, y: float32) -> float32:
    q = x // y + x % y
    return q + math.sqrt(abs(x)) / (abs(y) + float32(1)) + math.sin(x) * math.exp(y * float32(0.01))


@device.func
def mix_f64(x: float64, y: float64) -> float64:
    return (x - y) / (x * x + float64(1)) + math.floor(y) + x ** 2.0


@device.struct
class stats:
    lo: float32
    hi: float32
    n: int32


@device.func
def summarize(x: float32, y: float32, k: int32) -> stats:
    # A struct result, and a local array on both sides.
    t = device.local_array(8, device.int32)
    for j in range(8):
        t[j] = k * j - (k >> j)
    return stats(min(x, y), max(x, y) * float32(2), k // 3 - (k % 7) + t[k & 7])


@device.kernel
def run_struct(a, b, k, lo, hi, n):
    i = device.tid(1)
    if i < len(lo):
        s = summarize(a[i], b[i], k[i])
        lo[i] = s.lo
        hi[i] = s.hi
        n[i] = s.n


@device.kernel
def run_int(a, b, out):
    i = device.tid(1)
    if i < len(out):
        out[i] = mix_int(a[i], b[i])


@device.kernel
def run_u32(a, b, out):
    i = device.tid(1)
    if i < len(out):
        out[i] = mix_u32(a[i], b[i])


@device.kernel
def run_f32(a, b, out):
    i = device.tid(1)
    if i < len(out):
        out[i] = mix_f32(a[i], b[i])


@device.kernel
def run_f64(a, b, out):
    i = device.tid(1)
    if i < len(out):
        out[i] = mix_f64(a[i], b[i])
"#;

const N: usize = 4099;

fn host(func: &str, s: Scalar) -> pydevice::HostFunction {
    let m = Module::parse("host_device.py", SRC).unwrap_or_else(|d| panic!("{}", d.render()));
    let t = Type::Scalar(s);
    m.host_function(func, &[t.clone(), t])
        .unwrap_or_else(|e| panic!("{func}: {e}"))
}

/// Distance in units in the last place between two floats of the same sign (else a lot).
fn ulps64(a: f64, b: f64) -> u64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    if a.is_sign_negative() != b.is_sign_negative() {
        return u64::MAX;
    }
    a.to_bits().abs_diff(b.to_bits())
}

fn ulps32(a: f32, b: f32) -> u64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    if a.is_sign_negative() != b.is_sign_negative() {
        return u64::MAX;
    }
    u64::from(a.to_bits().abs_diff(b.to_bits()))
}

on_each_backend! {
fn host_and_device_agree_on_integer_functions(dev) {
    let mut r = Rng(0x5eed);
    let a: Vec<i32> = (0..N).map(|_| r.next() as i32).collect();
    let b: Vec<i32> = (0..N)
        .map(|i| {
            if i % 3 == 0 {
                r.i32(-200, 200)
            } else {
                r.next() as i32
            }
        })
        .collect();
    let k = kernel(&dev, SRC, "run_int", "int32[::1], int32[::1], int32[::1]");
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = vec1(&dev, &vec![0i32; N]);
    k.launch(&[aa, ba, oa], [blocks(N, 128), 1, 1], [128, 1, 1]);
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    let f = host("mix_int", Scalar::Int32);
    for i in 0..N {
        let h = f
            .call(&[HostValue::Int(a[i].into()), HostValue::Int(b[i].into())])
            .expect("host call");
        assert_eq!(
            h,
            HostValue::Int(out[i].into()),
            "mix_int({}, {})",
            a[i],
            b[i]
        );
    }

    let ua: Vec<u32> = (0..N).map(|_| r.next() as u32).collect();
    let ub: Vec<u32> = (0..N).map(|_| r.next() as u32).collect();
    let k = kernel(
        &dev,
        SRC,
        "run_u32",
        "uint32[::1], uint32[::1], uint32[::1]",
    );
    let (_ab, aa) = vec1(&dev, &ua);
    let (_bb, ba) = vec1(&dev, &ub);
    let (ob, oa) = vec1(&dev, &vec![0u32; N]);
    k.launch(&[aa, ba, oa], [blocks(N, 128), 1, 1], [128, 1, 1]);
    let out: Vec<u32> = from_bytes(&dev.download(&ob).expect("download"));
    let f = host("mix_u32", Scalar::UInt32);
    for i in 0..N {
        let h = f
            .call(&[HostValue::UInt(ua[i].into()), HostValue::UInt(ub[i].into())])
            .expect("host call");
        assert_eq!(
            h,
            HostValue::UInt(out[i].into()),
            "mix_u32({}, {})",
            ua[i],
            ub[i]
        );
    }
}
}

on_each_backend! {
fn host_and_device_agree_on_float_functions(dev) {
    let mut r = Rng(0xf10a7);
    let x: Vec<f32> = (0..N).map(|_| r.f32(-50.0, 50.0)).collect();
    let y: Vec<f32> = (0..N)
        .map(|i| if i % 17 == 0 { 0.0 } else { r.f32(-8.0, 8.0) })
        .collect();
    let k = kernel(
        &dev,
        SRC,
        "run_f32",
        "float32[::1], float32[::1], float32[::1]",
    );
    let (_ab, aa) = vec1(&dev, &x);
    let (_bb, ba) = vec1(&dev, &y);
    let (ob, oa) = vec1(&dev, &vec![0f32; N]);
    k.launch(&[aa, ba, oa], [blocks(N, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let f = host("mix_f32", Scalar::Float32);
    let mut worst = 0;
    for i in 0..N {
        let HostValue::Float32(h) = f
            .call(&[HostValue::Float32(x[i]), HostValue::Float32(y[i])])
            .expect("host call")
        else {
            panic!("not a float32");
        };
        // Several roundings and two libm/libdevice functions: allow 16 ulps of the result,
        // or an absolute 1e-5 where the result nearly cancels.
        let d = ulps32(h, out[i]);
        worst = worst.max(if d == u64::MAX { 0 } else { d });
        assert!(
            d <= 16 || (h - out[i]).abs() <= 1e-5,
            "mix_f32({}, {}): host {h} device {} ({d} ulps)",
            x[i],
            y[i],
            out[i]
        );
    }
    eprintln!("mix_f32: worst difference {worst} ulps");

    let x: Vec<f64> = (0..N).map(|_| f64::from(r.f32(-1e3, 1e3))).collect();
    let y: Vec<f64> = (0..N).map(|_| f64::from(r.f32(-1e3, 1e3))).collect();
    let k = kernel(
        &dev,
        SRC,
        "run_f64",
        "float64[::1], float64[::1], float64[::1]",
    );
    let (_ab, aa) = vec1(&dev, &x);
    let (_bb, ba) = vec1(&dev, &y);
    let (ob, oa) = vec1(&dev, &vec![0f64; N]);
    k.launch(&[aa, ba, oa], [blocks(N, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    let f = host("mix_f64", Scalar::Float64);
    for i in 0..N {
        let HostValue::Float64(h) = f
            .call(&[HostValue::Float64(x[i]), HostValue::Float64(y[i])])
            .expect("host call")
        else {
            panic!("not a float64");
        };
        let d = ulps64(h, out[i]);
        assert!(
            d <= 4 || (h - out[i]).abs() <= 1e-12 * h.abs().max(1.0),
            "mix_f64({}, {}): host {h} device {} ({d} ulps)",
            x[i],
            y[i],
            out[i]
        );
    }
}
}

on_each_backend! {
fn host_and_device_agree_on_struct_results(dev) {
    let mut r = Rng(0x57a75);
    let x: Vec<f32> = (0..N).map(|_| r.f32(-1e3, 1e3)).collect();
    let y: Vec<f32> = (0..N).map(|_| r.f32(-1e3, 1e3)).collect();
    let k: Vec<i32> = (0..N).map(|_| r.next() as i32).collect();
    let kern = kernel(
        &dev,
        SRC,
        "run_struct",
        "float32[::1], float32[::1], int32[::1], float32[::1], float32[::1], int32[::1]",
    );
    let (_xb, xa) = vec1(&dev, &x);
    let (_yb, ya) = vec1(&dev, &y);
    let (_kb, ka) = vec1(&dev, &k);
    let (lob, loa) = vec1(&dev, &vec![0f32; N]);
    let (hib, hia) = vec1(&dev, &vec![0f32; N]);
    let (nb, na) = vec1(&dev, &vec![0i32; N]);
    kern.launch(
        &[xa, ya, ka, loa, hia, na],
        [blocks(N, 128), 1, 1],
        [128, 1, 1],
    );
    let lo: Vec<f32> = from_bytes(&dev.download(&lob).expect("download"));
    let hi: Vec<f32> = from_bytes(&dev.download(&hib).expect("download"));
    let n: Vec<i32> = from_bytes(&dev.download(&nb).expect("download"));
    let m = Module::parse("host_device.py", SRC).unwrap_or_else(|d| panic!("{}", d.render()));
    let f32t = Type::Scalar(Scalar::Float32);
    let f = m
        .host_function(
            "summarize",
            &[f32t.clone(), f32t, Type::Scalar(Scalar::Int32)],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    for i in 0..N {
        let h = f
            .call(&[
                HostValue::Float32(x[i]),
                HostValue::Float32(y[i]),
                HostValue::Int(k[i].into()),
            ])
            .expect("host call");
        let want = HostValue::Struct {
            name: "stats".into(),
            fields: vec![
                ("lo".into(), HostValue::Float32(lo[i])),
                ("hi".into(), HostValue::Float32(hi[i])),
                ("n".into(), HostValue::Int(n[i].into())),
            ],
        };
        assert_eq!(h, want, "summarize({}, {}, {})", x[i], y[i], k[i]);
    }
}
}

/// Without a GPU: both sides of every function above still build (PTX for the wrappers,
/// native code for the host), so the GPU run cannot fail for want of compiling.
#[test]
fn host_device_functions_build_on_both_sides() {
    let m = Module::parse("host_device.py", SRC).unwrap_or_else(|d| panic!("{}", d.render()));
    let f32t = Type::Scalar(Scalar::Float32);
    let s = m
        .host_function(
            "summarize",
            &[f32t.clone(), f32t, Type::Scalar(Scalar::Int32)],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let got = s
        .call(&[
            HostValue::Float32(1.5),
            HostValue::Float32(-2.0),
            HostValue::Int(10),
        ])
        .expect("host call");
    // t[10 & 7] = t[2] = 10 * 2 - (10 >> 2) = 18; 10 // 3 - 10 % 7 = 0.
    assert_eq!(got.to_string(), "stats(lo=-2.0, hi=3.0, n=18)");
    let arr = Type::array(Scalar::Float32, 1, pydevice::types::Layout::C);
    let iarr = Type::array(Scalar::Int32, 1, pydevice::types::Layout::C);
    m.compile(
        "run_struct",
        &[
            arr.clone(),
            arr.clone(),
            iarr.clone(),
            arr.clone(),
            arr,
            iarr,
        ],
        &pydevice::CompileOptions::default(),
    )
    .unwrap_or_else(|e| panic!("run_struct: {e}"));
    for (kernel, func, s) in [
        ("run_int", "mix_int", Scalar::Int32),
        ("run_u32", "mix_u32", Scalar::UInt32),
        ("run_f32", "mix_f32", Scalar::Float32),
        ("run_f64", "mix_f64", Scalar::Float64),
    ] {
        let arr = pydevice::types::Type::array(s, 1, pydevice::types::Layout::C);
        m.compile(
            kernel,
            &[arr.clone(), arr.clone(), arr],
            &pydevice::CompileOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        let f = host(func, s);
        let one = match s {
            Scalar::Float32 => HostValue::Float32(1.5),
            Scalar::Float64 => HostValue::Float64(1.5),
            Scalar::UInt32 => HostValue::UInt(7),
            _ => HostValue::Int(7),
        };
        f.call(&[one.clone(), one]).expect("host call");
    }
}

const COMPLEX_SRC: &str = r#"
import cmath
from cuda import device
from cuda.device import complex64, complex128


@device.func
def cmix(z: complex128, w: complex128) -> tuple[complex128, complex128, complex128, complex128]:
    a = z * w - z / (w + 1.0)
    b = cmath.exp(z * 0.25) + cmath.log(w) + cmath.sqrt(z) + cmath.sin(w) * cmath.cos(z)
    c = (cmath.tan(z * 0.5) + cmath.asin(w * 0.5) + cmath.acos(z * 0.5) + cmath.atan(w)
         + cmath.sinh(z) + cmath.cosh(w) + cmath.tanh(z) + cmath.asinh(w) + cmath.acosh(z)
         + cmath.atanh(w * 0.5))
    d = z ** w + cmath.rect(abs(z), cmath.phase(w)) + z.conjugate() * w.imag - w.real
    return (a, b, c, d)


@device.func
def cmix64(z: complex64, w: complex64) -> complex64:
    return z * w - z / (w + complex64(1)) + cmath.exp(z * complex64(0.25)) + cmath.sqrt(w) + cmath.tanh(z)


@device.kernel
def run_cmix(z, w, out, out64):
    i = device.tid(1)
    if i < len(z):
        r = cmix(z[i], w[i])
        out[i, 0] = r[0]
        out[i, 1] = r[1]
        out[i, 2] = r[2]
        out[i, 3] = r[3]
        out64[i] = cmix64(complex64(z[i]), complex64(w[i]))
"#;

on_each_backend! {
/// Complex numbers (docs/semantics.md §16.1): the same `@func`s on the host (Cranelift, the
/// C library and the runtime's `cmath` algorithms) and on the device (libdevice), on random
/// arguments: arithmetic, every `cmath` function, powers, `rect`, `phase`, `abs`, parts.
fn host_and_device_agree_on_complex_functions(dev) {
    let n = 2053;
    let mut r = Rng(0xc0ffee);
    let z: Vec<[f64; 2]> = (0..n)
        .map(|_| [f64::from(r.f32(-2.0, 2.0)), f64::from(r.f32(-2.0, 2.0))])
        .collect();
    let w: Vec<[f64; 2]> = (0..n)
        .map(|_| [f64::from(r.f32(-2.0, 2.0)), f64::from(r.f32(-2.0, 2.0))])
        .collect();
    let k = kernel(
        &dev,
        COMPLEX_SRC,
        "run_cmix",
        "complex128[::1], complex128[::1], complex128[:, ::1], complex64[::1]",
    );
    let (_zb, za) = vec1(&dev, &z);
    let (_wb, wa) = vec1(&dev, &w);
    let (ob, oa) = super::array(&dev, &vec![[0f64; 2]; n * 4], &[n as u64, 4], &[4, 1]);
    let (o64b, o64a) = vec1(&dev, &vec![[0f32; 2]; n]);
    k.launch(&[za, wa, oa, o64a], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<[f64; 2]> = from_bytes(&dev.download(&ob).expect("download"));
    let out64: Vec<[f32; 2]> = from_bytes(&dev.download(&o64b).expect("download"));
    let m = Module::parse("complex.py", COMPLEX_SRC).unwrap_or_else(|d| panic!("{}", d.render()));
    let c128 = Type::Scalar(Scalar::Complex128);
    let c64 = Type::Scalar(Scalar::Complex64);
    let f = m
        .host_function("cmix", &[c128.clone(), c128])
        .unwrap_or_else(|e| panic!("{e}"));
    let f64_ = m
        .host_function("cmix64", &[c64.clone(), c64])
        .unwrap_or_else(|e| panic!("{e}"));
    // libdevice and the C library differ by an ulp or two per function; sums of a dozen
    // such terms keep that relative to their size.
    let close = |h: (f64, f64), d: [f64; 2], tol: f64| {
        let scale = 1.0 + d[0].hypot(d[1]);
        (h.0 - d[0]).abs() <= tol * scale && (h.1 - d[1]).abs() <= tol * scale
    };
    for i in 0..n {
        let args = [
            HostValue::Complex128(z[i][0], z[i][1]),
            HostValue::Complex128(w[i][0], w[i][1]),
        ];
        let HostValue::Tuple(items) = f.call(&args).expect("host call") else {
            panic!("cmix: not a tuple");
        };
        for (k, item) in items.iter().enumerate() {
            let HostValue::Complex128(re, im) = item else {
                panic!("cmix result {k}: {item}");
            };
            let d = out[i * 4 + k];
            assert!(
                close((*re, *im), d, 1e-11),
                "cmix({:?}, {:?})[{k}]: host ({re}, {im}), device {d:?}",
                z[i],
                w[i]
            );
        }
        let h = f64_.call(&args).expect("host call");
        let HostValue::Complex64(re, im) = h else {
            panic!("cmix64: {h}");
        };
        let d = [f64::from(out64[i][0]), f64::from(out64[i][1])];
        assert!(
            close((f64::from(re), f64::from(im)), d, 1e-4),
            "cmix64({:?}, {:?}): host ({re}, {im}), device {d:?}",
            z[i],
            w[i]
        );
    }
}
}
