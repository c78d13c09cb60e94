//! The host's `cmath.tan`, `asin`, `acos`, `atan`, `sinh`, `cosh`, `tanh`, `asinh`, `acosh`
//! and `atanh`: the same algorithms as the device's (`lower::ptx::emit::cmath`, numba's and
//! CPython's `cmathmodule.c`), in `double` for both complex types, written as plain Rust.
//! Each branch the device selects with a `select` is an `if` here, taken in the same order
//! (a later test overrides an earlier one, as the later select does). Host code calls them
//! through `__pyd_cmath_re`/`__pyd_cmath_im`, which take the operation's code
//! ([`code`]) and the argument's parts.

use crate::ir::ComplexOp;
use std::f64::consts::{FRAC_PI_2, SQRT_2};

/// numpy.finfo(float32).max and .tiny, numba's `FLT_MAX` and `FLT_MIN`.
const FLT_MAX: f64 = 3.4028234663852886e38;
const FLT_MIN: f64 = 1.1754943508222875e-38;

type C = (f64, f64);

/// The functions of this module, in the order of their codes.
const OPS: [ComplexOp; 10] = [
    ComplexOp::Tan,
    ComplexOp::Asin,
    ComplexOp::Acos,
    ComplexOp::Atan,
    ComplexOp::Sinh,
    ComplexOp::Cosh,
    ComplexOp::Tanh,
    ComplexOp::Asinh,
    ComplexOp::Acosh,
    ComplexOp::Atanh,
];

/// The code host code passes for `op`, if this module computes it.
pub(crate) fn code(op: ComplexOp) -> Option<i32> {
    OPS.iter().position(|o| *o == op).map(|i| i as i32)
}

/// `cmath.sqrt` as numba computes it (NumPy's `npy_csqrt`).
fn c_sqrt((a, b): C) -> C {
    let thres = f64::MAX / (1.0 + SQRT_2);
    let big = a.abs() >= thres || b.abs() >= thres;
    let (a2, b2) = if big { (a * 0.25, b * 0.25) } else { (a, b) };
    let h = a2.hypot(b2);
    let t = ((a2.abs() + h) * 0.5).sqrt();
    let two_t = 2.0 * t;
    let (re, im) = if a2 >= 0.0 {
        (t, b2 / two_t)
    } else {
        (b2.abs() / two_t, t.copysign(b2))
    };
    let mut r = (if big { re * 2.0 } else { re }, im);
    if a.abs() == f64::INFINITY {
        // `b - b`: 0 for a finite `b`, NaN for an infinite or NaN one (npy_csqrt's).
        #[allow(clippy::eq_op)]
        let bb = b - b;
        r = if a < 0.0 {
            (bb.abs(), a.copysign(b))
        } else {
            (a, bb.copysign(b))
        };
    }
    if a.is_nan() {
        r = (a, a);
    }
    if b.abs() == f64::INFINITY {
        r = (b.abs(), b);
    }
    if a == 0.0 && b == 0.0 {
        r = (b.abs(), b);
    }
    r
}

fn c_cosh((x, y): C) -> C {
    let (cy, sy) = (y.cos(), y.sin());
    if x.abs() != f64::INFINITY {
        return (cy * x.cosh(), sy * x.sinh());
    }
    let (re, mut im) = if y.is_nan() || y == 0.0 {
        (x.abs(), y)
    } else {
        (x.copysign(cy), x.copysign(sy))
    };
    if x < 0.0 {
        im = -im;
    }
    (re, im)
}

fn c_sinh((x, y): C) -> C {
    let (cy, sy) = (y.cos(), y.sin());
    if x.abs() != f64::INFINITY {
        return (cy * x.sinh(), sy * x.cosh());
    }
    if y.is_nan() {
        return (x, y);
    }
    let re = if cy != 0.0 { cy * x } else { cy };
    let im = if sy != 0.0 { sy * x.abs() } else { sy };
    (re, im)
}

fn c_tanh((x, y): C) -> C {
    if x.abs() == f64::INFINITY {
        let im = if y.abs() == f64::INFINITY {
            0.0
        } else {
            0f64.copysign((2.0 * y).sin())
        };
        return (1f64.copysign(x), im);
    }
    let (tx, ty) = (x.tanh(), y.tan());
    let cx = 1.0 / x.cosh();
    let txty = tx * ty;
    let denom = 1.0 + txty * txty;
    (tx * (1.0 + ty * ty) / denom, ty / denom * cx * cx)
}

fn log_abs_large(x: f64, y: f64) -> f64 {
    (x * 0.5).hypot(y * 0.5).ln() + 4f64.ln()
}

fn large(x: f64, y: f64) -> bool {
    x.abs() > FLT_MAX / 4.0 || y.abs() > FLT_MAX / 4.0
}

fn c_acos((x, y): C) -> C {
    if large(x, y) {
        return (y.abs().atan2(x), log_abs_large(x, y).copysign(-y));
    }
    let s1 = c_sqrt((1.0 - x, -y));
    let s2 = c_sqrt((1.0 + x, y));
    (2.0 * s1.0.atan2(s2.0), (s2.0 * s1.1 - s2.1 * s1.0).asinh())
}

fn c_acosh((x, y): C) -> C {
    if large(x, y) {
        return (log_abs_large(x, y), y.atan2(x));
    }
    let s1 = c_sqrt((x - 1.0, y));
    let s2 = c_sqrt((x + 1.0, y));
    ((s1.0 * s2.0 + s1.1 * s2.1).asinh(), 2.0 * s1.1.atan2(s2.0))
}

fn c_asinh((x, y): C) -> C {
    if large(x, y) {
        return (log_abs_large(x, y).copysign(x), y.atan2(x.abs()));
    }
    let s1 = c_sqrt((1.0 + y, -x));
    let s2 = c_sqrt((1.0 - y, x));
    (
        (s1.0 * s2.1 - s2.0 * s1.1).asinh(),
        y.atan2(s1.0 * s2.0 - s1.1 * s2.1),
    )
}

fn c_atanh((x0, y0): C) -> C {
    let negate = x0 < 0.0;
    let (x, y) = if negate { (-x0, -y0) } else { (x0, y0) };
    let ay = y.abs();
    let large_t = (FLT_MAX / 4.0).sqrt();
    let small_t = FLT_MIN.sqrt();
    let (re, mut im) = if x.is_nan() || x > large_t || ay > large_t {
        let h = (x * 0.5).hypot(y * 0.5);
        let mut re = x / 4.0 / h / h;
        if x.abs() == f64::INFINITY {
            re = 0.0;
        }
        if y.abs() == f64::INFINITY {
            re = 0f64.copysign(x);
        }
        (re, -FRAC_PI_2.copysign(-y))
    } else if x == 1.0 && ay < small_t {
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
            -((-2.0 * y).atan2(zr1 * (1.0 + x) - sqay) * 0.5),
        )
    };
    if y.is_nan() {
        im = f64::NAN;
    }
    if negate { (-re, -im) } else { (re, im) }
}

/// `op` (by code) of `x + yj`.
fn eval(op: i32, x: f64, y: f64) -> C {
    // `f(z) = -j g(jz)` for the circular functions: `jz = (-y, x)`, `-j (a, b) = (b, -a)`.
    let rot = |r: C| (r.1, -r.0);
    let jz = (-y, x);
    match OPS.get(op as usize) {
        Some(ComplexOp::Cosh) => c_cosh((x, y)),
        Some(ComplexOp::Sinh) => c_sinh((x, y)),
        Some(ComplexOp::Tanh) => c_tanh((x, y)),
        Some(ComplexOp::Tan) => rot(c_tanh(jz)),
        Some(ComplexOp::Acos) => c_acos((x, y)),
        Some(ComplexOp::Acosh) => c_acosh((x, y)),
        Some(ComplexOp::Asinh) => c_asinh((x, y)),
        Some(ComplexOp::Asin) => rot(c_asinh(jz)),
        Some(ComplexOp::Atanh) => c_atanh((x, y)),
        Some(ComplexOp::Atan) => {
            let r = c_atanh(jz);
            // CPython's odd case: an infinite real part with a NaN imaginary part.
            if x.abs() == f64::INFINITY && y.is_nan() {
                (r.1, r.0)
            } else {
                rot(r)
            }
        }
        _ => (f64::NAN, f64::NAN),
    }
}

/// The real part of `op(x + yj)`.
pub(crate) extern "C" fn cmath_re(op: i32, x: f64, y: f64) -> f64 {
    eval(op, x, y).0
}

/// The imaginary part of `op(x + yj)`.
pub(crate) extern "C" fn cmath_im(op: i32, x: f64, y: f64) -> f64 {
    eval(op, x, y).1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: C, b: C) -> bool {
        let ok = |p: f64, q: f64| p == q || (p - q).abs() <= 1e-14 * q.abs().max(1e-300);
        ok(a.0, b.0) && ok(a.1, b.1)
    }

    /// Values from CPython 3.11's `cmath` (which these algorithms follow).
    #[test]
    fn agrees_with_cpython() {
        let z = (0.3, -1.7);
        let want: [(ComplexOp, C); 10] = [
            (ComplexOp::Tan, (0.035682500915865334, -0.9457340139741869)),
            (ComplexOp::Asin, (0.1513854812624992, -1.3107496902488216)),
            (ComplexOp::Acos, (1.4194108455323973, 1.3107496902488216)),
            (ComplexOp::Atan, (1.4236790442393028, -0.6358752035135133)),
            (
                ComplexOp::Sinh,
                (-0.039235763211921855, -1.0366254194722615),
            ),
            (
                ComplexOp::Cosh,
                (-0.13468611222056817, -0.30198205908019077),
            ),
            (ComplexOp::Tanh, (2.9115207481259047, 1.1686311699363665)),
            (ComplexOp::Asinh, (1.1511827117610314, -1.3583551589067286)),
            (ComplexOp::Acosh, (1.3107496902488216, -1.4194108455323973)),
            (ComplexOp::Atanh, (0.07595582215779155, -1.049069489395666)),
        ];
        for (op, w) in want {
            let c = code(op).expect("code");
            let got = (cmath_re(c, z.0, z.1), cmath_im(c, z.0, z.1));
            assert!(close(got, w), "{op:?}: {got:?} vs {w:?}");
        }
        // Special values.
        let c = code(ComplexOp::Atanh).expect("code");
        assert_eq!(cmath_re(c, 1.0, 0.0), f64::INFINITY);
        let c = code(ComplexOp::Tanh).expect("code");
        assert_eq!(
            (
                cmath_re(c, f64::INFINITY, 2.0),
                cmath_im(c, f64::INFINITY, 2.0)
            ),
            (1.0, -0.0)
        );
    }
}
