//! `cmath`'s trigonometric, hyperbolic and inverse functions on complex numbers, as
//! numba (`numba/cpython/cmathimpl.py`, CPython's `cmathmodule.c` algorithms) computes them.
//!
//! Branches of those algorithms become selects: every branch is computed (pure float
//! arithmetic and libdevice calls, which cannot trap) and the one numba takes is chosen, so
//! each function is straight-line code. Parts are computed in `double` for both complex
//! types and rounded once at the end for `complex64`: numba's own complex64 versions mix
//! float32 and float64 operations (its Python float constants are float64), so this is
//! within an ulp of numba's result there, and identical for `complex128`.

use super::{FnEmitter, R};
use crate::ir::ComplexOp;
use inkwell::FloatPredicate;
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};

/// A complex number as its two parts.
type Parts<'ctx> = (FloatValue<'ctx>, FloatValue<'ctx>);

/// numpy.finfo(float32).max and .tiny, numba's `FLT_MAX` and `FLT_MIN`.
const FLT_MAX: f64 = 3.4028234663852886e38;
const FLT_MIN: f64 = 1.1754943508222875e-38;

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    fn k(&self, v: f64) -> FloatValue<'ctx> {
        self.e.ctx.f64_type().const_float(v)
    }
    fn add(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        Ok(self.b().build_float_add(a, b, "")?)
    }
    fn sub(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        Ok(self.b().build_float_sub(a, b, "")?)
    }
    fn mul(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        Ok(self.b().build_float_mul(a, b, "")?)
    }
    fn div(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        Ok(self.b().build_float_div(a, b, "")?)
    }
    fn neg(&self, a: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        Ok(self.b().build_float_neg(a, "")?)
    }
    fn cmp(
        &self,
        p: FloatPredicate,
        a: FloatValue<'ctx>,
        b: FloatValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        Ok(self.b().build_float_compare(p, a, b, "")?)
    }
    fn sel(
        &self,
        c: IntValue<'ctx>,
        a: FloatValue<'ctx>,
        b: FloatValue<'ctx>,
    ) -> R<FloatValue<'ctx>> {
        Ok(self.b().build_select(c, a, b, "")?.into_float_value())
    }
    fn sel2(&self, c: IntValue<'ctx>, a: Parts<'ctx>, b: Parts<'ctx>) -> R<Parts<'ctx>> {
        Ok((self.sel(c, a.0, b.0)?, self.sel(c, a.1, b.1)?))
    }
    fn or(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        Ok(self.b().build_or(a, b, "")?)
    }
    fn and(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        Ok(self.b().build_and(a, b, "")?)
    }
    fn fabs(&self, a: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let f = self
            .e
            .intrinsic("llvm.fabs", &[self.e.ctx.f64_type().into()])?;
        Ok(self.call1(f, &[a.into()])?.into_float_value())
    }
    fn copysign(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let f = self
            .e
            .intrinsic("llvm.copysign", &[self.e.ctx.f64_type().into()])?;
        Ok(self.call1(f, &[a.into(), b.into()])?.into_float_value())
    }
    fn is_inf(&self, a: FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        let m = self.fabs(a)?;
        self.cmp(FloatPredicate::OEQ, m, self.k(f64::INFINITY))
    }
    fn is_nan(&self, a: FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        self.cmp(FloatPredicate::UNO, a, a)
    }
    fn m1(&mut self, name: &str, a: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        self.libm(name, &[a])
    }
    fn m2(&mut self, name: &str, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        self.libm(name, &[a, b])
    }

    /// `cmath.sqrt` as numba computes it (NumPy's `npy_csqrt`): special values first, then
    /// Algorithm 312 with a scaling by 1/4 near the top of the range.
    fn c_sqrt(&mut self, (a, b): Parts<'ctx>) -> R<Parts<'ctx>> {
        let thres = self.k(f64::MAX / (1.0 + std::f64::consts::SQRT_2));
        let zero = self.k(0.0);
        let big = {
            let (aa, ab) = (self.fabs(a)?, self.fabs(b)?);
            let x = self.cmp(FloatPredicate::OGE, aa, thres)?;
            let y = self.cmp(FloatPredicate::OGE, ab, thres)?;
            self.or(x, y)?
        };
        let q = self.k(0.25);
        let (sa, sb) = (self.mul(a, q)?, self.mul(b, q)?);
        let (a2, b2) = (self.sel(big, sa, a)?, self.sel(big, sb, b)?);
        let h = self.m2("hypot", a2, b2)?;
        let aa2 = self.fabs(a2)?;
        let t = {
            let s = self.mul(self.add(aa2, h)?, self.k(0.5))?;
            self.m1("sqrt", s)?
        };
        let two_t = self.mul(self.k(2.0), t)?;
        let pos = (t, self.div(b2, two_t)?);
        let neg = (self.div(self.fabs(b2)?, two_t)?, self.copysign(t, b2)?);
        let nonneg = self.cmp(FloatPredicate::OGE, a2, zero)?;
        let (re, im) = self.sel2(nonneg, pos, neg)?;
        let re2 = self.mul(re, self.k(2.0))?;
        let mut r = (self.sel(big, re2, re)?, im);
        // Special values, the last test taking precedence as numba's first `if` does.
        let a_inf = self.is_inf(a)?;
        let bb = self.sub(b, b)?;
        let inf_neg = (self.fabs(bb)?, self.copysign(a, b)?);
        let inf_pos = (a, self.copysign(bb, b)?);
        let a_negative = self.cmp(FloatPredicate::OLT, a, zero)?;
        let inf_case = self.sel2(a_negative, inf_neg, inf_pos)?;
        r = self.sel2(a_inf, inf_case, r)?;
        let a_nan = self.is_nan(a)?;
        r = self.sel2(a_nan, (a, a), r)?;
        let b_inf = self.is_inf(b)?;
        let fb = self.fabs(b)?;
        r = self.sel2(b_inf, (fb, b), r)?;
        let both_zero = {
            let x = self.cmp(FloatPredicate::OEQ, a, zero)?;
            let y = self.cmp(FloatPredicate::OEQ, b, zero)?;
            self.and(x, y)?
        };
        self.sel2(both_zero, (fb, b), r)
    }

    /// `cmath.cosh`.
    fn c_cosh(&mut self, (x, y): Parts<'ctx>) -> R<Parts<'ctx>> {
        let (cy, sy) = (self.m1("cos", y)?, self.m1("sin", y)?);
        let (chx, shx) = (self.m1("cosh", x)?, self.m1("sinh", x)?);
        let normal = (self.mul(cy, chx)?, self.mul(sy, shx)?);
        let ax = self.fabs(x)?;
        let y_nan = self.is_nan(y)?;
        let y_zero = self.cmp(FloatPredicate::OEQ, y, self.k(0.0))?;
        let keep = self.or(y_nan, y_zero)?;
        let general = (self.copysign(x, cy)?, self.copysign(x, sy)?);
        let (re, im) = self.sel2(keep, (ax, y), general)?;
        let x_neg = self.cmp(FloatPredicate::OLT, x, self.k(0.0))?;
        let nim = self.neg(im)?;
        let im = self.sel(x_neg, nim, im)?;
        let x_inf = self.is_inf(x)?;
        self.sel2(x_inf, (re, im), normal)
    }

    /// `cmath.sinh`.
    fn c_sinh(&mut self, (x, y): Parts<'ctx>) -> R<Parts<'ctx>> {
        let (cy, sy) = (self.m1("cos", y)?, self.m1("sin", y)?);
        let (chx, shx) = (self.m1("cosh", x)?, self.m1("sinh", x)?);
        let normal = (self.mul(cy, shx)?, self.mul(sy, chx)?);
        let zero = self.k(0.0);
        let re_nz = self.cmp(FloatPredicate::UNE, cy, zero)?;
        let im_nz = self.cmp(FloatPredicate::UNE, sy, zero)?;
        let ax = self.fabs(x)?;
        let re = self.sel(re_nz, self.mul(cy, x)?, cy)?;
        let im = self.sel(im_nz, self.mul(sy, ax)?, sy)?;
        let y_nan = self.is_nan(y)?;
        let inf_case = self.sel2(y_nan, (x, y), (re, im))?;
        let x_inf = self.is_inf(x)?;
        self.sel2(x_inf, inf_case, normal)
    }

    /// `cmath.tanh` (CPython's `c_tanh` for finite `x`).
    fn c_tanh(&mut self, (x, y): Parts<'ctx>) -> R<Parts<'ctx>> {
        let one = self.k(1.0);
        let tx = self.m1("tanh", x)?;
        let ty = self.m1("tan", y)?;
        let chx = self.m1("cosh", x)?;
        let cx = self.div(one, chx)?;
        let txty = self.mul(tx, ty)?;
        let denom = self.add(one, self.mul(txty, txty)?)?;
        let re = self.div(self.mul(tx, self.add(one, self.mul(ty, ty)?)?)?, denom)?;
        let im = self.mul(self.mul(self.div(ty, denom)?, cx)?, cx)?;
        let s2y = self.m1("sin", self.mul(self.k(2.0), y)?)?;
        let y_inf = self.is_inf(y)?;
        let im_inf = self.sel(y_inf, self.k(0.0), self.copysign(self.k(0.0), s2y)?)?;
        let inf_case = (self.copysign(one, x)?, im_inf);
        let x_inf = self.is_inf(x)?;
        self.sel2(x_inf, inf_case, (re, im))
    }

    /// `log(hypot(x/2, y/2)) + log(4)`: `log|z|` for arguments near the top of the range.
    fn log_abs_large(&mut self, x: FloatValue<'ctx>, y: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let h = self.k(0.5);
        let (hx, hy) = (self.mul(x, h)?, self.mul(y, h)?);
        let hyp = self.m2("hypot", hx, hy)?;
        let l = self.m1("log", hyp)?;
        self.add(l, self.k(4f64.ln()))
    }

    fn large(&self, x: FloatValue<'ctx>, y: FloatValue<'ctx>, t: f64) -> R<IntValue<'ctx>> {
        let a = self.cmp(FloatPredicate::OGT, self.fabs(x)?, self.k(t))?;
        let b = self.cmp(FloatPredicate::OGT, self.fabs(y)?, self.k(t))?;
        self.or(a, b)
    }

    /// `cmath.acos` (CPython's `c_acos`).
    fn c_acos(&mut self, (x, y): Parts<'ctx>) -> R<Parts<'ctx>> {
        let one = self.k(1.0);
        let big = self.large(x, y, FLT_MAX / 4.0)?;
        let b_re = self.m2("atan2", self.fabs(y)?, x)?;
        let l = self.log_abs_large(x, y)?;
        let b_im = self.copysign(l, self.neg(y)?)?;
        let s1 = self.c_sqrt((self.sub(one, x)?, self.neg(y)?))?;
        let s2 = self.c_sqrt((self.add(one, x)?, y))?;
        let at = self.m2("atan2", s1.0, s2.0)?;
        let re = self.mul(self.k(2.0), at)?;
        let d = self.sub(self.mul(s2.0, s1.1)?, self.mul(s2.1, s1.0)?)?;
        let im = self.m1("asinh", d)?;
        self.sel2(big, (b_re, b_im), (re, im))
    }

    /// `cmath.acosh` (CPython's `c_acosh`).
    fn c_acosh(&mut self, (x, y): Parts<'ctx>) -> R<Parts<'ctx>> {
        let one = self.k(1.0);
        let big = self.large(x, y, FLT_MAX / 4.0)?;
        let b_re = self.log_abs_large(x, y)?;
        let b_im = self.m2("atan2", y, x)?;
        let s1 = self.c_sqrt((self.sub(x, one)?, y))?;
        let s2 = self.c_sqrt((self.add(x, one)?, y))?;
        let d = self.add(self.mul(s1.0, s2.0)?, self.mul(s1.1, s2.1)?)?;
        let re = self.m1("asinh", d)?;
        let at = self.m2("atan2", s1.1, s2.0)?;
        let im = self.mul(self.k(2.0), at)?;
        self.sel2(big, (b_re, b_im), (re, im))
    }

    /// `cmath.asinh` (CPython's `c_asinh`).
    fn c_asinh(&mut self, (x, y): Parts<'ctx>) -> R<Parts<'ctx>> {
        let one = self.k(1.0);
        let big = self.large(x, y, FLT_MAX / 4.0)?;
        let l = self.log_abs_large(x, y)?;
        let b_re = self.copysign(l, x)?;
        let b_im = self.m2("atan2", y, self.fabs(x)?)?;
        let s1 = self.c_sqrt((self.add(one, y)?, self.neg(x)?))?;
        let s2 = self.c_sqrt((self.sub(one, y)?, x))?;
        let d = self.sub(self.mul(s1.0, s2.1)?, self.mul(s2.0, s1.1)?)?;
        let re = self.m1("asinh", d)?;
        let e = self.sub(self.mul(s1.0, s2.0)?, self.mul(s1.1, s2.1)?)?;
        let im = self.m2("atan2", y, e)?;
        self.sel2(big, (b_re, b_im), (re, im))
    }

    /// `cmath.atanh` (CPython's `c_atanh`).
    fn c_atanh(&mut self, (x0, y0): Parts<'ctx>) -> R<Parts<'ctx>> {
        let zero = self.k(0.0);
        let one = self.k(1.0);
        // atanh(z) = -atanh(-z) for a negative real part.
        let negate = self.cmp(FloatPredicate::OLT, x0, zero)?;
        let (x, y) = self.sel2(negate, (self.neg(x0)?, self.neg(y0)?), (x0, y0))?;
        let ay = self.fabs(y)?;
        let large_t = (FLT_MAX / 4.0).sqrt();
        let small_t = FLT_MIN.sqrt();
        // Large or NaN real part.
        let big = {
            let n = self.is_nan(x)?;
            let a = self.cmp(FloatPredicate::OGT, x, self.k(large_t))?;
            let b = self.cmp(FloatPredicate::OGT, ay, self.k(large_t))?;
            self.or(n, self.or(a, b)?)?
        };
        let h = {
            let hf = self.k(0.5);
            self.m2("hypot", self.mul(x, hf)?, self.mul(y, hf)?)?
        };
        let big_re = {
            let r = self.div(self.div(self.div(x, self.k(4.0))?, h)?, h)?;
            let x_inf = self.is_inf(x)?;
            let r = self.sel(x_inf, zero, r)?;
            let y_inf = self.is_inf(y)?;
            self.sel(y_inf, self.copysign(zero, x)?, r)?
        };
        let pi_2 = self.k(std::f64::consts::FRAC_PI_2);
        let big_im = self.neg(self.copysign(pi_2, self.neg(y)?)?)?;
        // x == 1 and |y| tiny.
        let near_one = {
            let a = self.cmp(FloatPredicate::OEQ, x, one)?;
            let b = self.cmp(FloatPredicate::OLT, ay, self.k(small_t))?;
            self.and(a, b)?
        };
        let one_re = {
            let sq = self.m1("sqrt", ay)?;
            let hyp = self.m2("hypot", ay, self.k(2.0))?;
            let hh = self.m1("sqrt", hyp)?;
            let q = self.div(sq, hh)?;
            let l = self.m1("log", q)?;
            self.neg(l)?
        };
        let one_im = {
            let a = self.m2("atan2", self.k(2.0), self.neg(ay)?)?;
            self.copysign(self.div(a, self.k(2.0))?, y)?
        };
        let ay_zero = self.cmp(FloatPredicate::OEQ, ay, zero)?;
        let one_case = self.sel2(ay_zero, (self.k(f64::INFINITY), y), (one_re, one_im))?;
        // The general case.
        let sqay = self.mul(ay, ay)?;
        let zr1 = self.sub(one, x)?;
        let gen_re = {
            let den = self.add(self.mul(zr1, zr1)?, sqay)?;
            let q = self.div(self.mul(self.k(4.0), x)?, den)?;
            let l = self.m1("log1p", q)?;
            self.mul(l, self.k(0.25))?
        };
        let gen_im = {
            let a = self.mul(self.k(-2.0), y)?;
            let b = self.sub(self.mul(zr1, self.add(one, x)?)?, sqay)?;
            let at = self.m2("atan2", a, b)?;
            self.neg(self.mul(at, self.k(0.5))?)?
        };
        let r = self.sel2(near_one, one_case, (gen_re, gen_im))?;
        let (re, im) = self.sel2(big, (big_re, big_im), r)?;
        let y_nan = self.is_nan(y)?;
        let im = self.sel(y_nan, self.k(f64::NAN), im)?;
        self.sel2(negate, (self.neg(re)?, self.neg(im)?), (re, im))
    }

    /// The `cmath` functions of this module on a complex value of either width.
    pub(super) fn cmath_function(
        &mut self,
        op: ComplexOp,
        z: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (re, im) = self.parts(z)?;
        let part = re.get_type();
        let f64t = self.e.ctx.f64_type();
        let wide = part == f64t;
        let (x, y) = if wide {
            (re, im)
        } else {
            (
                self.b().build_float_ext(re, f64t, "")?,
                self.b().build_float_ext(im, f64t, "")?,
            )
        };
        // `f(z) = -j g(jz)` for the circular functions: `jz = (-y, x)`, `-j (a, b) = (b, -a)`.
        let rot = |cx: &mut Self, r: Parts<'ctx>| -> R<Parts<'ctx>> { Ok((r.1, cx.neg(r.0)?)) };
        let jz = (self.neg(y)?, x);
        let (a, b) = match op {
            ComplexOp::Cosh => self.c_cosh((x, y))?,
            ComplexOp::Sinh => self.c_sinh((x, y))?,
            ComplexOp::Tanh => self.c_tanh((x, y))?,
            ComplexOp::Tan => {
                let r = self.c_tanh(jz)?;
                rot(self, r)?
            }
            ComplexOp::Acos => self.c_acos((x, y))?,
            ComplexOp::Acosh => self.c_acosh((x, y))?,
            ComplexOp::Asinh => self.c_asinh((x, y))?,
            ComplexOp::Asin => {
                let r = self.c_asinh(jz)?;
                rot(self, r)?
            }
            ComplexOp::Atanh => self.c_atanh((x, y))?,
            ComplexOp::Atan => {
                let r = self.c_atanh(jz)?;
                // numba's (and CPython's) odd case: an infinite real part with a NaN
                // imaginary part gives `(r.imag, r.real)`.
                let odd = self.and(self.is_inf(x)?, self.is_nan(y)?)?;
                let plain = rot(self, r)?;
                self.sel2(odd, (r.1, r.0), plain)?
            }
            other => {
                return Err(super::err(format!(
                    "{other:?} is not a cmath function here"
                )));
            }
        };
        if wide {
            return self.make_complex(a, b);
        }
        let a = self.b().build_float_trunc(a, part, "")?;
        let b = self.b().build_float_trunc(b, part, "")?;
        self.make_complex(a, b)
    }
}
