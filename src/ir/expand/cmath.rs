//! The `cmath` functions and the other complex operations that are algorithms (`conjugate`,
//! `abs`, `phase`, `rect`, `isfinite`/`isnan`/`isinf`, `z ** w`), stated once for every back
//! end as IR over real operations: the back ends keep only construction and the two parts
//! (`ComplexOp::New`, `Real`, `Imag`) and the arithmetic operators.
//!
//! Two families, as numba computes them:
//! - `exp`, `log`, `sqrt`, `sin`, `cos`, `rect`, `**` and the rest are the textbook formulas
//!   over the real functions of the parts' width: `exp(x+iy) = e^x (cos y + i sin y)`,
//!   `log z = log|z| + i atan2(y, x)`, `sin(x+iy) = sin x cosh y + i cos x sinh y`,
//!   `cos(x+iy) = cos x cosh y - i sin x sinh y`, and for `sqrt` the stable form
//!   `t = sqrt((|x| + |z|) / 2)`, giving `t + i y/(2t)` for `x >= 0` and
//!   `|y|/(2t) + i copysign(t, y)` otherwise; `rect` keeps CPython's special values
//!   (numba-cuda's); `z ** w` is CPython's `c_pow` in polar form.
//! - `tan`, `asin`, `acos`, `atan`, `sinh`, `cosh`, `tanh`, `asinh`, `acosh`, `atanh` are
//!   CPython's `cmathmodule.c` algorithms (numba's `cmathimpl.py`), computed in `float64`
//!   for both complex types and rounded once for `complex64`. Each branch of those
//!   algorithms is computed and the one CPython takes selected, a later test overriding an
//!   earlier one, so each helper is straight-line code over operations that cannot trap.
//!
//! Each function is one helper per complex type (`super::Helper::Cmath`), built with
//! [`Calc`].

use super::*;

/// numpy.finfo(float32).max and .tiny, numba's `FLT_MAX` and `FLT_MIN`.
const FLT_MAX: f64 = 3.4028234663852886e38;
const FLT_MIN: f64 = 1.1754943508222875e-38;

/// The helper expression `e` of `f` must become a call of, if any: a complex operation
/// other than construction and the parts.
pub(super) fn wants_helper(f: &Function, e: Handle<Expr>) -> Option<Helper> {
    let Expr::Intrinsic(Intrinsic::Complex(op), args) = &f.exprs[e] else {
        return None;
    };
    // The complex type the helper is made for: the operand's, or for `rect` the result's.
    let s = match op {
        ComplexOp::New | ComplexOp::Real | ComplexOp::Imag => return None,
        ComplexOp::Rect => f.ty(e).as_scalar()?,
        _ => f.ty(*args.first()?).as_scalar()?,
    };
    s.is_complex().then_some(Helper::Cmath(*op, s))
}

/// The helper computing `op` for complex type `s`.
pub(super) fn function(op: ComplexOp, s: Scalar, span: Span) -> Function {
    let part = s.component();
    let (ct, pt) = (Type::Scalar(s), Type::Scalar(part));
    let name = format!("cmath_{}_{s}", format!("{op:?}").to_lowercase());
    let params: &[(&str, Type)] = match op {
        ComplexOp::Rect => &[("r", pt.clone()), ("phi", pt.clone())],
        ComplexOp::Pow => &[("z", ct.clone()), ("w", ct.clone())],
        _ => &[("z", ct.clone())],
    };
    let ret = match op {
        ComplexOp::Abs | ComplexOp::Phase => pt,
        ComplexOp::IsFinite | ComplexOp::IsNan | ComplexOp::IsInf => Type::Scalar(Scalar::Bool),
        _ => ct,
    };
    let b = Builder::new(&name, params, ret, span);
    let mut c = Calc { b, t: part };
    let (p0, p1) = (Handle::new(0), Handle::new(1));
    if op == ComplexOp::Rect {
        let r = rect(&mut c, V::L(p0), V::L(p1));
        return c.ret_complex(r, s);
    }
    let (x, y) = c.parts(p0, part);
    let r = match op {
        ComplexOp::New | ComplexOp::Real | ComplexOp::Imag | ComplexOp::Rect => {
            unreachable!("not expanded (wants_helper)")
        }
        ComplexOp::Conj => (x, c.neg(y)),
        ComplexOp::Abs => {
            let m = c.math(MathFn::Hypot, &[x, y]);
            return c.ret(m);
        }
        ComplexOp::Phase => {
            let m = c.math(MathFn::Atan2, &[y, x]);
            return c.ret(m);
        }
        ComplexOp::IsFinite | ComplexOp::IsNan | ComplexOp::IsInf => {
            let f = match op {
                ComplexOp::IsFinite => MathFn::Isfinite,
                ComplexOp::IsNan => MathFn::Isnan,
                _ => MathFn::Isinf,
            };
            let (a, b) = (c.math(f, &[x]), c.math(f, &[y]));
            let v = if op == ComplexOp::IsFinite {
                c.and(a, b)
            } else {
                c.or(a, b)
            };
            return c.ret(v);
        }
        ComplexOp::Exp => {
            let m = c.math(MathFn::Exp, &[x]);
            let cy = c.math(MathFn::Cos, &[y]);
            let sy = c.math(MathFn::Sin, &[y]);
            (c.mul(m, cy), c.mul(m, sy))
        }
        ComplexOp::Log => {
            let m = c.math(MathFn::Hypot, &[x, y]);
            (c.math(MathFn::Log, &[m]), c.math(MathFn::Atan2, &[y, x]))
        }
        ComplexOp::Log10 => {
            let m = c.math(MathFn::Hypot, &[x, y]);
            let (re, im) = (c.math(MathFn::Log, &[m]), c.math(MathFn::Atan2, &[y, x]));
            let ln10 = V::K(std::f64::consts::LN_10);
            (c.div(re, ln10), c.div(im, ln10))
        }
        ComplexOp::Sin | ComplexOp::Cos => {
            let sx = c.math(MathFn::Sin, &[x]);
            let cx = c.math(MathFn::Cos, &[x]);
            let shy = c.math(MathFn::Sinh, &[y]);
            let chy = c.math(MathFn::Cosh, &[y]);
            if op == ComplexOp::Sin {
                (c.mul(sx, chy), c.mul(cx, shy))
            } else {
                let re = c.mul(cx, chy);
                let im = c.mul(sx, shy);
                (re, c.neg(im))
            }
        }
        ComplexOp::Sqrt => sqrt(&mut c, (x, y)),
        ComplexOp::Pow => {
            let w = c.parts(p1, part);
            pow(&mut c, (x, y), w)
        }
        ComplexOp::Tan
        | ComplexOp::Asin
        | ComplexOp::Acos
        | ComplexOp::Atan
        | ComplexOp::Sinh
        | ComplexOp::Cosh
        | ComplexOp::Tanh
        | ComplexOp::Asinh
        | ComplexOp::Acosh
        | ComplexOp::Atanh => {
            let wide = part != Scalar::Float64;
            let z = if wide {
                (c.cast(x, Scalar::Float64), c.cast(y, Scalar::Float64))
            } else {
                (x, y)
            };
            c.t = Scalar::Float64;
            let (a, b) = cpython(&mut c, op, z);
            c.t = part;
            if wide {
                (c.cast(a, part), c.cast(b, part))
            } else {
                (a, b)
            }
        }
    };
    c.ret_complex(r, s)
}

/// `cmath.sqrt`: the stable textbook form; `sqrt(0 ± 0i)` is `0 ± 0i`.
fn sqrt(c: &mut Calc, (x, y): P) -> P {
    let m = c.math(MathFn::Hypot, &[x, y]);
    let ax = c.fabs(x);
    let ay = c.fabs(y);
    let s = c.add(ax, m);
    let s = c.mul(s, V::K(0.5));
    let t = c.math(MathFn::Sqrt, &[s]);
    let two_t = c.add(t, t);
    let q = c.div(y, two_t);
    let aq = c.div(ay, two_t);
    let st = c.copysign(t, y);
    let nonneg = c.bin(BinaryOp::Ge, x, V::K(0.0));
    let re = c.sel(nonneg, t, aq);
    let im = c.sel(nonneg, q, st);
    // sqrt(0 + 0i): t = 0 and y/(2t) is NaN; the answer is 0 with y's sign.
    let zero = c.bin(BinaryOp::Eq, t, V::K(0.0));
    (c.sel(zero, t, re), c.sel(zero, y, im))
}

/// `(a + bi) ** (c + di)` as CPython's `c_pow` (and numba) computes it: `1` for a zero
/// exponent, `0` for a zero base (where Python raises), otherwise in polar form: with
/// `r = |z|` and `t = atan2(b, a)`, `r**c / e**(t d)` at angle `t c + d log r`.
fn pow(k: &mut Calc, (a, b): P, (c, d): P) -> P {
    let vabs = k.math(MathFn::Hypot, &[a, b]);
    let len = k.math(MathFn::Pow, &[vabs, c]);
    let at = k.math(MathFn::Atan2, &[b, a]);
    let atd = k.mul(at, d);
    let shrink = k.math(MathFn::Exp, &[atd]);
    let logr = k.math(MathFn::Log, &[vabs]);
    let phase = k.mul(at, c);
    let turn = k.mul(d, logr);
    // Only where the exponent has an imaginary part, as CPython does (it keeps `len` and
    // `phase` exact for real exponents).
    let d_nonzero = k.bin(BinaryOp::Ne, d, V::K(0.0));
    let len_d = k.div(len, shrink);
    let len = k.sel(d_nonzero, len_d, len);
    let phase_d = k.add(phase, turn);
    let phase = k.sel(d_nonzero, phase_d, phase);
    let cos = k.math(MathFn::Cos, &[phase]);
    let sin = k.math(MathFn::Sin, &[phase]);
    let re = k.mul(len, cos);
    let im = k.mul(len, sin);
    // A zero exponent gives 1, a zero base 0.
    let cz = k.bin(BinaryOp::Eq, c, V::K(0.0));
    let dz = k.bin(BinaryOp::Eq, d, V::K(0.0));
    let w_zero = k.and(cz, dz);
    let az = k.bin(BinaryOp::Eq, a, V::K(0.0));
    let bz = k.bin(BinaryOp::Eq, b, V::K(0.0));
    let z_zero = k.and(az, bz);
    let r = k.sel2(z_zero, (V::K(0.0), V::K(0.0)), (re, im));
    k.sel2(w_zero, (V::K(1.0), V::K(0.0)), r)
}

/// `cmath.rect(r, phi)` as numba-cuda computes it, which keeps CPython's special values
/// where the naive `r*cos(phi), r*sin(phi)` would make NaNs: an infinite `r` times a zero
/// `cos`/`sin` gives a signed zero (`0 / r`), and a non-finite `phi` gives `|r| + 0j` for
/// `r == 0` and `r + phi*j` for an infinite `r`.
fn rect(c: &mut Calc, r: V, phi: V) -> P {
    let cp = c.math(MathFn::Cos, &[phi]);
    let sp = c.math(MathFn::Sin, &[phi]);
    let abs_r = c.fabs(r);
    let r_inf = c.math(MathFn::Isinf, &[r]);
    let r_zero = c.bin(BinaryOp::Eq, r, V::K(0.0));
    let phi_finite = c.math(MathFn::Isfinite, &[phi]);
    let part = |c: &mut Calc, v: V| {
        let is_zero = c.bin(BinaryOp::Eq, v, V::K(0.0));
        let keep_zero = c.and(is_zero, r_inf);
        let div = c.div(v, r);
        let mul = c.mul(v, r);
        c.sel(keep_zero, div, mul)
    };
    let re = part(c, cp);
    let im = part(c, sp);
    // phi is NaN or infinite: r == 0 gives |r|, an infinite r gives (r, phi).
    let re_special = c.sel(r_inf, r, re);
    let re_special = c.sel(r_zero, abs_r, re_special);
    let im_special = c.sel(r_inf, phi, im);
    let im_special = c.sel(r_zero, V::K(0.0), im_special);
    c.sel2(phi_finite, (re, im), (re_special, im_special))
}

/// CPython's algorithm for `op` (one of the ten), in `float64`.
fn cpython(c: &mut Calc, op: ComplexOp, (x, y): P) -> P {
    // `f(z) = -j g(jz)` for the circular functions: `jz = (-y, x)`, `-j (a, b) = (b, -a)`.
    let rot = |c: &mut Calc, r: P| (r.1, c.neg(r.0));
    match op {
        ComplexOp::Cosh => c_cosh(c, (x, y)),
        ComplexOp::Sinh => c_sinh(c, (x, y)),
        ComplexOp::Tanh => c_tanh(c, (x, y)),
        ComplexOp::Acos => c_acos(c, (x, y)),
        ComplexOp::Acosh => c_acosh(c, (x, y)),
        ComplexOp::Asinh => c_asinh(c, (x, y)),
        ComplexOp::Atanh => c_atanh(c, (x, y)),
        ComplexOp::Tan => {
            let jz = (c.neg(y), x);
            let r = c_tanh(c, jz);
            rot(c, r)
        }
        ComplexOp::Asin => {
            let jz = (c.neg(y), x);
            let r = c_asinh(c, jz);
            rot(c, r)
        }
        _ => {
            // Atan. CPython's odd case: an infinite real part with a NaN imaginary part
            // gives `(r.imag, r.real)`.
            let jz = (c.neg(y), x);
            let r = c_atanh(c, jz);
            let x_inf = c.math(MathFn::Isinf, &[x]);
            let y_nan = c.math(MathFn::Isnan, &[y]);
            let odd = c.and(x_inf, y_nan);
            let plain = rot(c, r);
            c.sel2(odd, (r.1, r.0), plain)
        }
    }
}

/// `cmath.sqrt` as numba computes it inside the inverse functions (NumPy's `npy_csqrt`):
/// special values first, then Algorithm 312 with a scaling by 1/4 near the top of the range.
fn npy_csqrt(c: &mut Calc, (a, b): P) -> P {
    let thres = V::K(f64::MAX / (1.0 + std::f64::consts::SQRT_2));
    let (aa, ab) = (c.fabs(a), c.fabs(b));
    let big_a = c.bin(BinaryOp::Ge, aa, thres);
    let big_b = c.bin(BinaryOp::Ge, ab, thres);
    let big = c.or(big_a, big_b);
    let (sa, sb) = (c.mul(a, V::K(0.25)), c.mul(b, V::K(0.25)));
    let (a2, b2) = (c.sel(big, sa, a), c.sel(big, sb, b));
    let h = c.math(MathFn::Hypot, &[a2, b2]);
    let aa2 = c.fabs(a2);
    let s = c.add(aa2, h);
    let s = c.mul(s, V::K(0.5));
    let t = c.math(MathFn::Sqrt, &[s]);
    let two_t = c.mul(V::K(2.0), t);
    let pos = (t, c.div(b2, two_t));
    let fb2 = c.fabs(b2);
    let neg = (c.div(fb2, two_t), c.copysign(t, b2));
    let nonneg = c.bin(BinaryOp::Ge, a2, V::K(0.0));
    let (re, im) = c.sel2(nonneg, pos, neg);
    let re2 = c.mul(re, V::K(2.0));
    let mut r = (c.sel(big, re2, re), im);
    // Special values, the last test taking precedence as numba's first `if` does.
    let a_inf = c.math(MathFn::Isinf, &[a]);
    // `b - b`: 0 for a finite `b`, NaN for an infinite or NaN one (npy_csqrt's).
    let bb = c.sub(b, b);
    let inf_neg = (c.fabs(bb), c.copysign(a, b));
    let inf_pos = (a, c.copysign(bb, b));
    let a_negative = c.bin(BinaryOp::Lt, a, V::K(0.0));
    let inf_case = c.sel2(a_negative, inf_neg, inf_pos);
    r = c.sel2(a_inf, inf_case, r);
    let a_nan = c.math(MathFn::Isnan, &[a]);
    r = c.sel2(a_nan, (a, a), r);
    let b_inf = c.math(MathFn::Isinf, &[b]);
    let fb = c.fabs(b);
    r = c.sel2(b_inf, (fb, b), r);
    let a0 = c.bin(BinaryOp::Eq, a, V::K(0.0));
    let b0 = c.bin(BinaryOp::Eq, b, V::K(0.0));
    let both_zero = c.and(a0, b0);
    c.sel2(both_zero, (fb, b), r)
}

/// `cmath.cosh`.
fn c_cosh(c: &mut Calc, (x, y): P) -> P {
    let (cy, sy) = (c.math(MathFn::Cos, &[y]), c.math(MathFn::Sin, &[y]));
    let (chx, shx) = (c.math(MathFn::Cosh, &[x]), c.math(MathFn::Sinh, &[x]));
    let normal = (c.mul(cy, chx), c.mul(sy, shx));
    let ax = c.fabs(x);
    let y_nan = c.math(MathFn::Isnan, &[y]);
    let y_zero = c.bin(BinaryOp::Eq, y, V::K(0.0));
    let keep = c.or(y_nan, y_zero);
    let general = (c.copysign(x, cy), c.copysign(x, sy));
    let (re, im) = c.sel2(keep, (ax, y), general);
    let x_neg = c.bin(BinaryOp::Lt, x, V::K(0.0));
    let nim = c.neg(im);
    let im = c.sel(x_neg, nim, im);
    let x_inf = c.math(MathFn::Isinf, &[x]);
    c.sel2(x_inf, (re, im), normal)
}

/// `cmath.sinh`.
fn c_sinh(c: &mut Calc, (x, y): P) -> P {
    let (cy, sy) = (c.math(MathFn::Cos, &[y]), c.math(MathFn::Sin, &[y]));
    let (chx, shx) = (c.math(MathFn::Cosh, &[x]), c.math(MathFn::Sinh, &[x]));
    let normal = (c.mul(cy, shx), c.mul(sy, chx));
    let re_nz = c.bin(BinaryOp::Ne, cy, V::K(0.0));
    let im_nz = c.bin(BinaryOp::Ne, sy, V::K(0.0));
    let ax = c.fabs(x);
    let cyx = c.mul(cy, x);
    let re = c.sel(re_nz, cyx, cy);
    let syax = c.mul(sy, ax);
    let im = c.sel(im_nz, syax, sy);
    let y_nan = c.math(MathFn::Isnan, &[y]);
    let inf_case = c.sel2(y_nan, (x, y), (re, im));
    let x_inf = c.math(MathFn::Isinf, &[x]);
    c.sel2(x_inf, inf_case, normal)
}

/// `cmath.tanh` (CPython's `c_tanh` for finite `x`).
fn c_tanh(c: &mut Calc, (x, y): P) -> P {
    let one = V::K(1.0);
    let tx = c.math(MathFn::Tanh, &[x]);
    let ty = c.math(MathFn::Tan, &[y]);
    let chx = c.math(MathFn::Cosh, &[x]);
    let cx = c.div(one, chx);
    let txty = c.mul(tx, ty);
    let t2 = c.mul(txty, txty);
    let denom = c.add(one, t2);
    let ty2 = c.mul(ty, ty);
    let n = c.add(one, ty2);
    let n = c.mul(tx, n);
    let re = c.div(n, denom);
    let im = c.div(ty, denom);
    let im = c.mul(im, cx);
    let im = c.mul(im, cx);
    let y2 = c.mul(V::K(2.0), y);
    let s2y = c.math(MathFn::Sin, &[y2]);
    let y_inf = c.math(MathFn::Isinf, &[y]);
    let z = c.copysign(V::K(0.0), s2y);
    let im_inf = c.sel(y_inf, V::K(0.0), z);
    let inf_case = (c.copysign(one, x), im_inf);
    let x_inf = c.math(MathFn::Isinf, &[x]);
    c.sel2(x_inf, inf_case, (re, im))
}

/// `log(hypot(x/2, y/2)) + log(4)`: `log|z|` for arguments near the top of the range.
fn log_abs_large(c: &mut Calc, x: V, y: V) -> V {
    let (hx, hy) = (c.mul(x, V::K(0.5)), c.mul(y, V::K(0.5)));
    let hyp = c.math(MathFn::Hypot, &[hx, hy]);
    let l = c.math(MathFn::Log, &[hyp]);
    c.add(l, V::K(4f64.ln()))
}

/// `|x| > FLT_MAX / 4 or |y| > FLT_MAX / 4`.
fn large(c: &mut Calc, x: V, y: V) -> V {
    let (ax, ay) = (c.fabs(x), c.fabs(y));
    let a = c.bin(BinaryOp::Gt, ax, V::K(FLT_MAX / 4.0));
    let b = c.bin(BinaryOp::Gt, ay, V::K(FLT_MAX / 4.0));
    c.or(a, b)
}

/// `cmath.acos` (CPython's `c_acos`).
fn c_acos(c: &mut Calc, (x, y): P) -> P {
    let one = V::K(1.0);
    let big = large(c, x, y);
    let ay = c.fabs(y);
    let b_re = c.math(MathFn::Atan2, &[ay, x]);
    let l = log_abs_large(c, x, y);
    let ny = c.neg(y);
    let b_im = c.copysign(l, ny);
    let s1 = (c.sub(one, x), c.neg(y));
    let s1 = npy_csqrt(c, s1);
    let s2 = (c.add(one, x), y);
    let s2 = npy_csqrt(c, s2);
    let at = c.math(MathFn::Atan2, &[s1.0, s2.0]);
    let re = c.mul(V::K(2.0), at);
    let (p, q) = (c.mul(s2.0, s1.1), c.mul(s2.1, s1.0));
    let d = c.sub(p, q);
    let im = c.math(MathFn::Asinh, &[d]);
    c.sel2(big, (b_re, b_im), (re, im))
}

/// `cmath.acosh` (CPython's `c_acosh`).
fn c_acosh(c: &mut Calc, (x, y): P) -> P {
    let one = V::K(1.0);
    let big = large(c, x, y);
    let b_re = log_abs_large(c, x, y);
    let b_im = c.math(MathFn::Atan2, &[y, x]);
    let s1 = (c.sub(x, one), y);
    let s1 = npy_csqrt(c, s1);
    let s2 = (c.add(x, one), y);
    let s2 = npy_csqrt(c, s2);
    let (p, q) = (c.mul(s1.0, s2.0), c.mul(s1.1, s2.1));
    let d = c.add(p, q);
    let re = c.math(MathFn::Asinh, &[d]);
    let at = c.math(MathFn::Atan2, &[s1.1, s2.0]);
    let im = c.mul(V::K(2.0), at);
    c.sel2(big, (b_re, b_im), (re, im))
}

/// `cmath.asinh` (CPython's `c_asinh`).
fn c_asinh(c: &mut Calc, (x, y): P) -> P {
    let one = V::K(1.0);
    let big = large(c, x, y);
    let l = log_abs_large(c, x, y);
    let b_re = c.copysign(l, x);
    let ax = c.fabs(x);
    let b_im = c.math(MathFn::Atan2, &[y, ax]);
    let s1 = (c.add(one, y), c.neg(x));
    let s1 = npy_csqrt(c, s1);
    let s2 = (c.sub(one, y), x);
    let s2 = npy_csqrt(c, s2);
    let (p, q) = (c.mul(s1.0, s2.1), c.mul(s2.0, s1.1));
    let d = c.sub(p, q);
    let re = c.math(MathFn::Asinh, &[d]);
    let (p, q) = (c.mul(s1.0, s2.0), c.mul(s1.1, s2.1));
    let e = c.sub(p, q);
    let im = c.math(MathFn::Atan2, &[y, e]);
    c.sel2(big, (b_re, b_im), (re, im))
}

/// `cmath.atanh` (CPython's `c_atanh`).
fn c_atanh(c: &mut Calc, (x0, y0): P) -> P {
    let (zero, one) = (V::K(0.0), V::K(1.0));
    // atanh(z) = -atanh(-z) for a negative real part.
    let negate = c.bin(BinaryOp::Lt, x0, zero);
    let flipped = (c.neg(x0), c.neg(y0));
    let (x, y) = c.sel2(negate, flipped, (x0, y0));
    let ay = c.fabs(y);
    let large_t = V::K((FLT_MAX / 4.0).sqrt());
    let small_t = V::K(FLT_MIN.sqrt());
    // Large or NaN real part.
    let n = c.math(MathFn::Isnan, &[x]);
    let a = c.bin(BinaryOp::Gt, x, large_t);
    let b = c.bin(BinaryOp::Gt, ay, large_t);
    let ab = c.or(a, b);
    let big = c.or(n, ab);
    let (hx, hy) = (c.mul(x, V::K(0.5)), c.mul(y, V::K(0.5)));
    let h = c.math(MathFn::Hypot, &[hx, hy]);
    let r = c.div(x, V::K(4.0));
    let r = c.div(r, h);
    let r = c.div(r, h);
    let x_inf = c.math(MathFn::Isinf, &[x]);
    let r = c.sel(x_inf, zero, r);
    let y_inf = c.math(MathFn::Isinf, &[y]);
    let zx = c.copysign(zero, x);
    let big_re = c.sel(y_inf, zx, r);
    let ny = c.neg(y);
    let p = c.copysign(V::K(std::f64::consts::FRAC_PI_2), ny);
    let big_im = c.neg(p);
    // x == 1 and |y| tiny.
    let a = c.bin(BinaryOp::Eq, x, one);
    let b = c.bin(BinaryOp::Lt, ay, small_t);
    let near_one = c.and(a, b);
    let sq = c.math(MathFn::Sqrt, &[ay]);
    let hyp = c.math(MathFn::Hypot, &[ay, V::K(2.0)]);
    let hh = c.math(MathFn::Sqrt, &[hyp]);
    let q = c.div(sq, hh);
    let l = c.math(MathFn::Log, &[q]);
    let one_re = c.neg(l);
    let nay = c.neg(ay);
    let a = c.math(MathFn::Atan2, &[V::K(2.0), nay]);
    let a = c.div(a, V::K(2.0));
    let one_im = c.copysign(a, y);
    let ay_zero = c.bin(BinaryOp::Eq, ay, zero);
    let one_case = c.sel2(ay_zero, (V::K(f64::INFINITY), y), (one_re, one_im));
    // The general case.
    let sqay = c.mul(ay, ay);
    let zr1 = c.sub(one, x);
    let zz = c.mul(zr1, zr1);
    let den = c.add(zz, sqay);
    let x4 = c.mul(V::K(4.0), x);
    let q = c.div(x4, den);
    let l = c.math(MathFn::Log1p, &[q]);
    let gen_re = c.mul(l, V::K(0.25));
    let a = c.mul(V::K(-2.0), y);
    let xp = c.add(one, x);
    let b = c.mul(zr1, xp);
    let b = c.sub(b, sqay);
    let at = c.math(MathFn::Atan2, &[a, b]);
    let at = c.mul(at, V::K(0.5));
    let gen_im = c.neg(at);
    let r = c.sel2(near_one, one_case, (gen_re, gen_im));
    let (re, im) = c.sel2(big, (big_re, big_im), r);
    let y_nan = c.math(MathFn::Isnan, &[y]);
    let im = c.sel(y_nan, V::K(f64::NAN), im);
    let flipped = (c.neg(re), c.neg(im));
    c.sel2(negate, flipped, (re, im))
}
