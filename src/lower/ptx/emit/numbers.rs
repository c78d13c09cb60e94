//! Complex numbers and the fp8 storage formats in LLVM IR.
//!
//! A `complex64` is `<2 x float>` and a `complex128` `<2 x double>` (real part first): LLVM
//! gives these vectors the size and alignment of `cuda::std::complex<float>` (8, 8) and
//! `cuda::std::complex<double>` (16, 16), so loads, stores, struct fields and kernel
//! parameters match CUDA C++ without extra padding. Arithmetic works on the parts.
//!
//! An fp8 value is an `i8` holding its code. Decoding and encoding use the `cvt` instructions
//! of sm_89 and later where they exist (`cvt.rn.f16x2.e4m3x2`, `cvt.rn.satfinite.e4m3x2.f32`
//! and their e5m2 forms), and the same conversion in integer arithmetic on older
//! architectures and for `float64` sources (which the instructions do not take, and which
//! must be rounded once, not through `float32`). Both round to nearest even, saturate to the
//! largest finite value and keep NaN a NaN.

use super::{FnEmitter, R, err};
use crate::ir::{BinaryOp, ComplexOp, UnaryOp};
use crate::types::Scalar;
use crate::types::fp8::Format;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    /// The real and imaginary parts of a complex value.
    pub(super) fn parts(&self, v: BasicValueEnum<'ctx>) -> R<(FloatValue<'ctx>, FloatValue<'ctx>)> {
        let v = v.into_vector_value();
        let i32t = self.e.ctx.i32_type();
        let re = self
            .b()
            .build_extract_element(v, i32t.const_zero(), "re")?
            .into_float_value();
        let im = self
            .b()
            .build_extract_element(v, i32t.const_int(1, false), "im")?
            .into_float_value();
        Ok((re, im))
    }

    /// A complex value from its parts (both of the part type).
    pub(super) fn make_complex(
        &self,
        re: FloatValue<'ctx>,
        im: FloatValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let vt = re.get_type().vec_type(2);
        let i32t = self.e.ctx.i32_type();
        let v = self
            .b()
            .build_insert_element(vt.get_undef(), re, i32t.const_zero(), "")?;
        let v = self
            .b()
            .build_insert_element(v, im, i32t.const_int(1, false), "")?;
        Ok(v.into())
    }

    /// A complex constant.
    pub(super) fn complex_literal(&self, s: Scalar, re: f64, im: f64) -> R<BasicValueEnum<'ctx>> {
        let ft = self.e.scalar_type(s.component()).into_float_type();
        self.make_complex(ft.const_float(re), ft.const_float(im))
    }

    /// Calls a one- or two-argument libdevice function of the parts' width (`__nv_<base>f`
    /// for float32, `__nv_<base>` for float64).
    pub(super) fn libm(&mut self, base: &str, args: &[FloatValue<'ctx>]) -> R<FloatValue<'ctx>> {
        let ft = args[0].get_type();
        let f32 = ft == self.e.ctx.f32_type();
        let name = format!("__nv_{base}{}", if f32 { "f" } else { "" });
        let func = self.e.libdevice_fn(&name, ft.into(), args.len());
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        Ok(self.call1(func, &args)?.into_float_value())
    }

    /// `-z` and `abs(z)` (the modulus, a float).
    pub(super) fn complex_unary(
        &mut self,
        op: UnaryOp,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (re, im) = self.parts(v)?;
        match op {
            UnaryOp::Neg => {
                let nr = self.b().build_float_neg(re, "")?;
                let ni = self.b().build_float_neg(im, "")?;
                self.make_complex(nr, ni)
            }
            UnaryOp::Abs => Ok(self.libm("hypot", &[re, im])?.into()),
            UnaryOp::Not | UnaryOp::Invert => Err(err("bitwise op on a complex number")),
        }
    }

    /// `+ - * /`, `==` and `!=` on two complex values of the same type.
    ///
    /// Multiplication is the textbook `(ac - bd) + (ad + bc)i`; division was expanded into a
    /// call of Smith's algorithm before lowering (`ir::expand`).
    pub(super) fn complex_binary(
        &mut self,
        op: BinaryOp,
        x: BasicValueEnum<'ctx>,
        y: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (a, b) = self.parts(x)?;
        let (c, d) = self.parts(y)?;
        let bld = &self.e.builder;
        match op {
            BinaryOp::Add | BinaryOp::AddNoWrap => {
                let re = bld.build_float_add(a, c, "")?;
                let im = bld.build_float_add(b, d, "")?;
                self.make_complex(re, im)
            }
            BinaryOp::Sub => {
                let re = bld.build_float_sub(a, c, "")?;
                let im = bld.build_float_sub(b, d, "")?;
                self.make_complex(re, im)
            }
            BinaryOp::Mul => {
                let ac = bld.build_float_mul(a, c, "")?;
                let bd = bld.build_float_mul(b, d, "")?;
                let ad = bld.build_float_mul(a, d, "")?;
                let bc = bld.build_float_mul(b, c, "")?;
                let re = bld.build_float_sub(ac, bd, "")?;
                let im = bld.build_float_add(ad, bc, "")?;
                self.make_complex(re, im)
            }
            BinaryOp::Eq => {
                let r = bld.build_float_compare(FloatPredicate::OEQ, a, c, "")?;
                let i = bld.build_float_compare(FloatPredicate::OEQ, b, d, "")?;
                Ok(bld.build_and(r, i, "")?.into())
            }
            BinaryOp::Ne => {
                let r = bld.build_float_compare(FloatPredicate::UNE, a, c, "")?;
                let i = bld.build_float_compare(FloatPredicate::UNE, b, d, "")?;
                Ok(bld.build_or(r, i, "")?.into())
            }
            other => Err(err(format!(
                "`{}` on complex numbers reached the back end",
                other.symbol()
            ))),
        }
    }

    /// Whether a complex value is nonzero.
    pub(super) fn complex_truthy(&self, v: BasicValueEnum<'ctx>) -> R<IntValue<'ctx>> {
        let (re, im) = self.parts(v)?;
        let zero = re.get_type().const_zero();
        let bld = self.b();
        let r = bld.build_float_compare(FloatPredicate::UNE, re, zero, "")?;
        let i = bld.build_float_compare(FloatPredicate::UNE, im, zero, "")?;
        Ok(bld.build_or(r, i, "")?)
    }

    /// Conversions where `from` or `to` is complex: a real number becomes the real part (its
    /// conversion to the part type) with a zero imaginary part; complex to complex converts
    /// each part; complex to `bool` is "nonzero". The front end refuses complex to real.
    pub(super) fn complex_cast(
        &mut self,
        v: BasicValueEnum<'ctx>,
        from: Scalar,
        to: Scalar,
    ) -> R<BasicValueEnum<'ctx>> {
        if to == Scalar::Bool {
            return Ok(self.complex_truthy(v)?.into());
        }
        if !to.is_complex() {
            return Err(err(format!("{from} to {to} reached the back end")));
        }
        let part = to.component();
        let pt = self.e.scalar_type(part).into_float_type();
        if from.is_complex() {
            let (re, im) = self.parts(v)?;
            let re = self.b().build_float_cast(re, pt, "")?;
            let im = self.b().build_float_cast(im, pt, "")?;
            return self.make_complex(re, im);
        }
        let re = self.cast(v, from, part)?.into_float_value();
        self.make_complex(re, pt.const_zero())
    }

    /// Complex construction and the two parts: the operations the back end maps. Every other
    /// complex operation (the `cmath` functions, `abs`, `phase`, `rect`, `**`, ...) was
    /// expanded into IR before lowering (`ir::expand::cmath`).
    pub(super) fn complex_op(
        &mut self,
        op: ComplexOp,
        vals: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        let first = *vals
            .first()
            .ok_or_else(|| err("complex op without operands"))?;
        match op {
            ComplexOp::New => {
                let im = vals
                    .get(1)
                    .ok_or_else(|| err("complex construction needs two parts"))?;
                self.make_complex(first.into_float_value(), im.into_float_value())
            }
            ComplexOp::Real => Ok(self.parts(first)?.0.into()),
            ComplexOp::Imag => Ok(self.parts(first)?.1.into()),
            other => Err(err(format!(
                "{other:?} reached the back end unexpanded (ir::expand::cmath)"
            ))),
        }
    }

    /// `round(x, ndigits)` (`x` a `double`, `ndigits` an `i64`) exactly as numba-cuda's
    /// `round_to_impl` computes it, so that results match bit for bit:
    ///
    /// ```text
    /// x infinite or NaN: x
    /// ndigits >= 0: pow1 = 10.0 ** (ndigits - 22), pow2 = 1e22 if ndigits > 22
    ///               else pow1 = 10.0 ** ndigits, pow2 = 1.0
    ///               y = (x * pow1) * pow2; y infinite: x
    /// ndigits < 0:  pow1 = 10.0 ** -ndigits; y = x / pow1
    /// z = float(llrint(y)); if |y - z| == 0.5: z = 2.0 * float(llrint(y / 2.0))
    /// ndigits >= 0: (z / pow2) / pow1, else z * pow1
    /// ```
    ///
    /// `10.0 ** e` is numba's `int_power_impl`: repeated squaring (exact up to `1e22`, and
    /// the same roundings as numba's above), `math.pow` beyond `e = 0x10000` (infinite).
    pub(super) fn round_digits(
        &mut self,
        x: BasicValueEnum<'ctx>,
        n: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let x = x.into_float_value();
        let n = n.into_int_value();
        let ft = x.get_type();
        let it = n.get_type();
        let fabs = self.e.intrinsic("llvm.fabs", &[ft.into()])?;
        let llrint = {
            self.e.uses_libdevice = true;
            match self.e.module.get_function("__nv_llrint") {
                Some(f) => f,
                None => {
                    self.e
                        .module
                        .add_function("__nv_llrint", it.fn_type(&[ft.into()], false), None)
                }
            }
        };
        let inf = ft.const_float(f64::INFINITY);
        let one = ft.const_float(1.0);
        let b = self.b();
        let nonneg = b.build_int_compare(IntPredicate::SGE, n, it.const_zero(), "")?;
        let big = b.build_int_compare(IntPredicate::SGT, n, it.const_int(22, false), "")?;
        let big = b.build_and(nonneg, big, "")?;
        let n22 = b.build_int_sub(n, it.const_int(22, false), "")?;
        let neg_n = b.build_int_neg(n, "")?;
        let e = b.build_select(big, n22, n, "")?.into_int_value();
        let e = b.build_select(nonneg, e, neg_n, "")?.into_int_value();
        // 10.0 ** e by repeated squaring over e's low 17 bits (e <= 0x10000 here).
        let mut r = one;
        let mut a = ft.const_float(10.0);
        for bit in 0..17u64 {
            let b = self.b();
            let m = b.build_and(e, it.const_int(1 << bit, false), "")?;
            let set = b.build_int_compare(IntPredicate::NE, m, it.const_zero(), "")?;
            let ra = b.build_float_mul(r, a, "")?;
            r = b.build_select(set, ra, r, "")?.into_float_value();
            a = b.build_float_mul(a, a, "")?;
        }
        let b = self.b();
        let huge = b.build_int_compare(IntPredicate::SGT, e, it.const_int(0x10000, false), "")?;
        let pow1 = b.build_select(huge, inf, r, "")?.into_float_value();
        let pow2 = b
            .build_select(big, ft.const_float(1e22), one, "")?
            .into_float_value();
        let y_pos = b.build_float_mul(b.build_float_mul(x, pow1, "")?, pow2, "")?;
        let y_neg = b.build_float_div(x, pow1, "")?;
        let y = b.build_select(nonneg, y_pos, y_neg, "")?.into_float_value();
        let to_f = |cx: &mut Self, v: FloatValue<'ctx>| -> R<FloatValue<'ctx>> {
            let i = cx.call1(llrint, &[v.into()])?.into_int_value();
            Ok(cx.b().build_signed_int_to_float(i, ft, "")?)
        };
        let z = to_f(self, y)?;
        let half_y = self.b().build_float_mul(y, ft.const_float(0.5), "")?;
        let z_half = to_f(self, half_y)?;
        let b = self.b();
        let diff = b.build_float_sub(y, z, "")?;
        let diff = self.call1(fabs, &[diff.into()])?.into_float_value();
        let b = self.b();
        let tie = b.build_float_compare(FloatPredicate::OEQ, diff, ft.const_float(0.5), "")?;
        let z_even = b.build_float_mul(ft.const_float(2.0), z_half, "")?;
        let z = b.build_select(tie, z_even, z, "")?.into_float_value();
        let back_pos = b.build_float_div(b.build_float_div(z, pow2, "")?, pow1, "")?;
        let back_neg = b.build_float_mul(z, pow1, "")?;
        let res = b
            .build_select(nonneg, back_pos, back_neg, "")?
            .into_float_value();
        // x itself where x is not finite, or where scaling it up overflows.
        let ax = self.call1(fabs, &[x.into()])?.into_float_value();
        let ay = self.call1(fabs, &[y_pos.into()])?.into_float_value();
        let b = self.b();
        let x_finite = b.build_float_compare(FloatPredicate::OLT, ax, inf, "")?;
        let y_inf = b.build_float_compare(FloatPredicate::OEQ, ay, inf, "")?;
        let overflow = b.build_and(nonneg, y_inf, "")?;
        let res = b.build_select(overflow, x, res, "")?.into_float_value();
        Ok(b.build_select(x_finite, res, x, "")?)
    }

    /// The `i8` constant of an fp8 value (rounded once from the exact constant).
    pub(super) fn fp8_literal(&self, s: Scalar, x: f64) -> R<BasicValueEnum<'ctx>> {
        let f = Format::of(s).ok_or_else(|| err("fp8 literal of a non-fp8 type"))?;
        Ok(self
            .e
            .ctx
            .i8_type()
            .const_int(u64::from(f.encode(x)), false)
            .into())
    }

    /// Conversions where `from` or `to` is an fp8 format. Decoding goes through `float32`
    /// (which holds every fp8 value exactly); encoding rounds `float64` values directly and
    /// every other source through `float32`, which holds every value that does not saturate.
    pub(super) fn fp8_cast(
        &mut self,
        v: BasicValueEnum<'ctx>,
        from: Scalar,
        to: Scalar,
    ) -> R<BasicValueEnum<'ctx>> {
        if let Some(f) = Format::of(from) {
            if to == Scalar::Bool {
                let iv = v.into_int_value();
                let i8t = self.e.ctx.i8_type();
                let mag = self.b().build_and(iv, i8t.const_int(0x7f, false), "")?;
                return Ok(self
                    .b()
                    .build_int_compare(IntPredicate::NE, mag, i8t.const_zero(), "")?
                    .into());
            }
            let x = self.fp8_decode(f, v.into_int_value())?;
            return self.cast(x.into(), Scalar::Float32, to);
        }
        let f = Format::of(to).ok_or_else(|| err("fp8 conversion without an fp8 type"))?;
        let x = if from == Scalar::Float64 {
            v.into_float_value()
        } else {
            self.cast(v, from, Scalar::Float32)?.into_float_value()
        };
        self.fp8_encode(f, x)
    }

    /// Whether the architecture has the fp8 `cvt` instructions (sm_89 and later).
    fn has_fp8_cvt(&self) -> bool {
        self.e.sm >= 89
    }

    fn fp8_name(f: Format) -> &'static str {
        if f.ieee { "e5m2x2" } else { "e4m3x2" }
    }

    /// An fp8 code as a `float32`.
    fn fp8_decode(&mut self, f: Format, code: IntValue<'ctx>) -> R<FloatValue<'ctx>> {
        let ctx = self.e.ctx;
        let (i16t, i32t, f32t) = (ctx.i16_type(), ctx.i32_type(), ctx.f32_type());
        if self.has_fp8_cvt() {
            let wide = self.b().build_int_z_extend(code, i16t, "")?;
            let text = format!("cvt.rn.f16x2.{} $0, $1;", Self::fp8_name(f));
            let pair = self
                .asm(&text, "=r,h", Some(i32t.into()), &[wide.into()])?
                .ok_or_else(|| err("fp8 cvt"))?
                .into_int_value();
            let low = self.b().build_int_truncate(pair, i16t, "")?;
            let h = self
                .b()
                .build_bit_cast(low, ctx.f16_type(), "")?
                .into_float_value();
            return Ok(self.b().build_float_ext(h, f32t, "")?);
        }
        let b = self.b();
        let k = |v: u64| i32t.const_int(v, false);
        let u = b.build_int_z_extend(code, i32t, "")?;
        let m = u64::from(f.man_bits);
        let e = b.build_and(
            b.build_right_shift(u, k(m), false, "")?,
            k((1 << f.exp_bits) - 1),
            "",
        )?;
        let frac = b.build_and(u, k((1 << m) - 1), "")?;
        // A normal code: rebias the exponent and move the fraction to float32's top bits.
        let exp = b.build_int_add(e, k((127 - f.bias()) as u64), "")?;
        let bits = b.build_or(
            b.build_left_shift(exp, k(23), "")?,
            b.build_left_shift(frac, k(23 - m), "")?,
            "",
        )?;
        let top = k((1 << f.exp_bits) - 1);
        let special = b.build_int_compare(IntPredicate::EQ, e, top, "")?;
        let bits = if f.ieee {
            // e5m2: an all-ones exponent is infinity or NaN, as in float32.
            let inf_nan =
                b.build_or(k(0x7f80_0000), b.build_left_shift(frac, k(23 - m), "")?, "")?;
            b.build_select(special, inf_nan, bits, "")?.into_int_value()
        } else {
            // e4m3: only S.1111.111 is NaN; the rest of the top binade is finite.
            let all = b.build_int_compare(IntPredicate::EQ, frac, k((1 << m) - 1), "")?;
            let nan = b.build_and(special, all, "")?;
            b.build_select(nan, k(0x7fc0_0000), bits, "")?
                .into_int_value()
        };
        let normal = b.build_bit_cast(bits, f32t, "")?.into_float_value();
        // A subnormal code (zero exponent): fraction × 2^(1 - bias - m), exact in float32.
        let scale = f32t.const_float(2f64.powi(1 - f.bias() - f.man_bits as i32));
        let sub = b.build_float_mul(b.build_unsigned_int_to_float(frac, f32t, "")?, scale, "")?;
        let is_sub = b.build_int_compare(IntPredicate::EQ, e, k(0), "")?;
        let mag = b.build_select(is_sub, sub, normal, "")?.into_float_value();
        let neg = b.build_int_compare(IntPredicate::UGE, u, k(0x80), "")?;
        let negated = b.build_float_neg(mag, "")?;
        Ok(b.build_select(neg, negated, mag, "")?.into_float_value())
    }

    /// A `float32` or `float64` rounded to an fp8 code.
    fn fp8_encode(&mut self, f: Format, x: FloatValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let ctx = self.e.ctx;
        let i8t = ctx.i8_type();
        let is64 = x.get_type() == ctx.f64_type();
        if self.has_fp8_cvt() && !is64 {
            let f32t = ctx.f32_type();
            let text = format!("cvt.rn.satfinite.{}.f32 $0, $1, $2;", Self::fp8_name(f));
            let pair = self
                .asm(
                    &text,
                    "=h,f,f",
                    Some(ctx.i16_type().into()),
                    &[f32t.const_zero().into(), x.into()],
                )?
                .ok_or_else(|| err("fp8 cvt"))?
                .into_int_value();
            return Ok(self.b().build_int_truncate(pair, i8t, "")?.into());
        }
        // Integer rounding on the source's bits. `w`: source width, `sm`: its mantissa
        // bits, `sb`: its exponent bias.
        let (w, sm, sb): (u32, u64, u64) = if is64 { (64, 52, 1023) } else { (32, 23, 127) };
        let it = self.e.int_t(w);
        let ft = x.get_type();
        let k = |v: u64| it.const_int(v, false);
        let m = u64::from(f.man_bits);
        let fabs = self.e.intrinsic("llvm.fabs", &[ft.into()])?;
        let rint = self.e.intrinsic("llvm.rint", &[ft.into()])?;
        let a = self.call1(fabs, &[x.into()])?.into_float_value();
        let b = self.b();
        let bits = b.build_bit_cast(x, it, "")?.into_int_value();
        let abits = b.build_bit_cast(a, it, "")?.into_int_value();
        // Normal results: round the mantissa to m bits, ties to even, then rebias.
        let shift = sm - m;
        let odd = b.build_and(b.build_right_shift(abits, k(shift), false, "")?, k(1), "")?;
        let r = b.build_int_add(abits, k((1 << (shift - 1)) - 1), "")?;
        let r = b.build_int_add(r, odd, "")?;
        let r = b.build_right_shift(r, k(shift), false, "")?;
        let rebias = (sb - f.bias() as u64) << m;
        let normal = b.build_int_sub(r, k(rebias), "")?;
        // Below the smallest normal: scale so the smallest subnormal is 1 and round to an
        // integer (ties to even); 2^m means the smallest normal, which is also its code.
        let min_normal = ft.const_float(2f64.powi(1 - f.bias()));
        let scale = ft.const_float(2f64.powi(f.bias() - 1 + f.man_bits as i32));
        let scaled = b.build_float_mul(a, scale, "")?;
        let rounded = self.call1(rint, &[scaled.into()])?.into_float_value();
        let b = self.b();
        let sub = b.build_float_to_unsigned_int(rounded, it, "")?;
        let is_sub = b.build_float_compare(FloatPredicate::OLT, a, min_normal, "")?;
        let code = b.build_select(is_sub, sub, normal, "")?.into_int_value();
        // Saturate (infinities included), then NaN.
        let max = k(u64::from(f.max_code()));
        let over = b.build_int_compare(IntPredicate::UGT, code, max, "")?;
        let code = b.build_select(over, max, code, "")?.into_int_value();
        let nan = b.build_float_compare(FloatPredicate::UNO, x, x, "")?;
        let code = b
            .build_select(nan, k(u64::from(f.nan_code())), code, "")?
            .into_int_value();
        let sign = b.build_right_shift(bits, k(u64::from(w) - 8), false, "")?;
        let sign = b.build_and(sign, k(0x80), "")?;
        let code = b.build_or(code, sign, "")?;
        Ok(b.build_int_truncate(code, i8t, "")?.into())
    }
}
