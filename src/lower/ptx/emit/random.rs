//! `rand()` and `randn()` on the device: Philox4x32-10 and the conversions of
//! `crate::random`, operation for operation, so the device's numbers are the reference's bits.
//!
//! A function that draws random numbers (itself or through a callee, `Program::uses_random`)
//! takes the thread's generator state as a trailing pointer to `{ i64 seed, i64 call }`; a
//! kernel that does takes the launch's seed as a trailing `i64` parameter and keeps the state
//! in a stack slot (which the optimizer promotes to registers once the calls are inlined).
//! Each call of `rand`/`randn` uses one Philox block, `__pyd_rand_block`.

use super::*;

/// The names of the helper functions (internal, defined once per module).
const BLOCK: &str = "__pyd_rand_block";
const UNIFORM64: &str = "__pyd_rand_uniform_f64";
const NORMAL: &str = "__pyd_rand_normal";

impl<'ctx> Emitter<'_, 'ctx> {
    /// The type of the generator state: `{ i64 seed, i64 call }`.
    pub(super) fn rand_state_type(&self) -> StructType<'ctx> {
        let i64t = self.ctx.i64_type();
        self.ctx.struct_type(&[i64t.into(), i64t.into()], false)
    }

    /// `__pyd_rand_block(ptr state) -> [4 x i32]`: the Philox block of the state's call for
    /// this thread (its global linear index), and the call count incremented.
    fn rand_block_fn(&self) -> R<FunctionValue<'ctx>> {
        if let Some(f) = self.module.get_function(BLOCK) {
            return Ok(f);
        }
        let ctx = self.ctx;
        let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
        let words = i32t.array_type(4);
        let ptr = ctx.ptr_type(AddressSpace::default());
        let f = self.module.add_function(
            BLOCK,
            words.fn_type(&[ptr.into()], false),
            Some(Linkage::Internal),
        );
        let b = ctx.create_builder();
        b.position_at_end(ctx.append_basic_block(f, "entry"));
        let state = f
            .get_nth_param(0)
            .ok_or_else(|| err("rand state"))?
            .into_pointer_value();
        let st = self.rand_state_type();
        let seed_p = b.build_struct_gep(st, state, 0, "")?;
        let call_p = b.build_struct_gep(st, state, 1, "")?;
        let seed = b.build_load(i64t, seed_p, "seed")?.into_int_value();
        let call = b.build_load(i64t, call_p, "call")?.into_int_value();
        let next = b.build_int_add(call, i64t.const_int(1, false), "")?;
        b.build_store(call_p, next)?;
        // The global linear thread index: (block linear index) · (threads per block) + (thread
        // linear index in its block), x fastest.
        let sreg = |name: &str| -> R<IntValue<'ctx>> {
            let i = self.intrinsic(&format!("llvm.nvvm.read.ptx.sreg.{name}"), &[])?;
            let v = match b.build_call(i, &[], "")?.try_as_basic_value() {
                ValueKind::Basic(v) => v.into_int_value(),
                _ => return Err(err("sreg")),
            };
            Ok(b.build_int_z_extend(v, i64t, "")?)
        };
        let linear = |z: IntValue<'ctx>,
                      y: IntValue<'ctx>,
                      x: IntValue<'ctx>,
                      ny: IntValue<'ctx>,
                      nx: IntValue<'ctx>|
         -> R<IntValue<'ctx>> {
            let zy = b.build_int_mul(z, ny, "")?;
            let zy = b.build_int_add(zy, y, "")?;
            let zyx = b.build_int_mul(zy, nx, "")?;
            Ok(b.build_int_add(zyx, x, "")?)
        };
        let (ntx, nty, ntz) = (sreg("ntid.x")?, sreg("ntid.y")?, sreg("ntid.z")?);
        let block = linear(
            sreg("ctaid.z")?,
            sreg("ctaid.y")?,
            sreg("ctaid.x")?,
            sreg("nctaid.y")?,
            sreg("nctaid.x")?,
        )?;
        let inside = linear(sreg("tid.z")?, sreg("tid.y")?, sreg("tid.x")?, nty, ntx)?;
        let per_block = b.build_int_mul(b.build_int_mul(ntx, nty, "")?, ntz, "")?;
        let thread = b.build_int_add(b.build_int_mul(block, per_block, "")?, inside, "")?;
        let lo = |v: IntValue<'ctx>| b.build_int_truncate(v, i32t, "");
        let hi = |v: IntValue<'ctx>| -> R<IntValue<'ctx>> {
            let s = b.build_right_shift(v, i64t.const_int(32, false), false, "")?;
            Ok(b.build_int_truncate(s, i32t, "")?)
        };
        // crate::random::counter and key.
        let mut c = [lo(call)?, hi(call)?, lo(thread)?, hi(thread)?];
        let mut k = [lo(seed)?, hi(seed)?];
        let konst = |v: u32| i32t.const_int(u64::from(v), false);
        let mul_wide = |a: IntValue<'ctx>, m: u32| -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
            let a = b.build_int_z_extend(a, i64t, "")?;
            let p = b.build_int_mul(a, i64t.const_int(u64::from(m), false), "")?;
            let h = b.build_right_shift(p, i64t.const_int(32, false), false, "")?;
            Ok((
                b.build_int_truncate(h, i32t, "")?,
                b.build_int_truncate(p, i32t, "")?,
            ))
        };
        for r in 0..10 {
            if r > 0 {
                k = [
                    b.build_int_add(k[0], konst(0x9E37_79B9), "")?,
                    b.build_int_add(k[1], konst(0xBB67_AE85), "")?,
                ];
            }
            let (hi0, lo0) = mul_wide(c[0], 0xD251_1F53)?;
            let (hi1, lo1) = mul_wide(c[2], 0xCD9E_8D57)?;
            let w0 = b.build_xor(b.build_xor(hi1, c[1], "")?, k[0], "")?;
            let w2 = b.build_xor(b.build_xor(hi0, c[3], "")?, k[1], "")?;
            c = [w0, lo1, w2, lo0];
        }
        let mut out = words.get_undef();
        for (i, w) in c.into_iter().enumerate() {
            out = b
                .build_insert_value(out, w, i as u32, "")?
                .into_array_value();
        }
        b.build_return(Some(&out))?;
        Ok(f)
    }

    /// `__pyd_rand_uniform_f64(i32 hi, i32 lo) -> double`: `crate::random::uniform_f64`.
    fn uniform64_fn(&self) -> R<FunctionValue<'ctx>> {
        if let Some(f) = self.module.get_function(UNIFORM64) {
            return Ok(f);
        }
        let ctx = self.ctx;
        let (i32t, i64t, f64t) = (ctx.i32_type(), ctx.i64_type(), ctx.f64_type());
        let f = self.module.add_function(
            UNIFORM64,
            f64t.fn_type(&[i32t.into(), i32t.into()], false),
            Some(Linkage::Internal),
        );
        let b = ctx.create_builder();
        b.position_at_end(ctx.append_basic_block(f, "entry"));
        let p = |i| -> R<IntValue<'ctx>> {
            let v = f.get_nth_param(i).ok_or_else(|| err("uniform"))?;
            Ok(b.build_int_z_extend(v.into_int_value(), i64t, "")?)
        };
        let hi = b.build_left_shift(p(0)?, i64t.const_int(32, false), "")?;
        let bits = b.build_or(hi, p(1)?, "")?;
        let bits = b.build_right_shift(bits, i64t.const_int(11, false), false, "")?;
        let x = b.build_unsigned_int_to_float(bits, f64t, "")?;
        let u = b.build_float_mul(x, f64t.const_float(1.0 / 9_007_199_254_740_992.0), "")?;
        b.build_return(Some(&u))?;
        Ok(f)
    }

    /// `__pyd_rand_normal([4 x i32]) -> double`: `crate::random::normal_f64` (Box–Muller with
    /// that module's `ln` and `cos_2pi`, the same operations in the same order).
    fn normal_fn(&self) -> R<FunctionValue<'ctx>> {
        if let Some(f) = self.module.get_function(NORMAL) {
            return Ok(f);
        }
        let uniform = self.uniform64_fn()?;
        let ctx = self.ctx;
        let (i32t, i64t, f64t) = (ctx.i32_type(), ctx.i64_type(), ctx.f64_type());
        let f = self.module.add_function(
            NORMAL,
            f64t.fn_type(&[i32t.array_type(4).into()], false),
            Some(Linkage::Internal),
        );
        let b = ctx.create_builder();
        b.position_at_end(ctx.append_basic_block(f, "entry"));
        let w = f
            .get_nth_param(0)
            .ok_or_else(|| err("normal"))?
            .into_array_value();
        let word =
            |i| -> R<BasicMetadataValueEnum<'ctx>> { Ok(b.build_extract_value(w, i, "")?.into()) };
        let call = |g: FunctionValue<'ctx>, args: &[BasicMetadataValueEnum<'ctx>]| match b
            .build_call(g, args, "")?
            .try_as_basic_value()
        {
            ValueKind::Basic(v) => Ok(v.into_float_value()),
            _ => Err(err("call returned nothing")),
        };
        let u1 = call(uniform, &[word(0)?, word(1)?])?;
        let u2 = call(uniform, &[word(2)?, word(3)?])?;
        let c = |x: f64| f64t.const_float(x);
        let horner = |coeffs: &[f64], z: FloatValue<'ctx>| -> R<FloatValue<'ctx>> {
            let mut p = c(coeffs[coeffs.len() - 1]);
            for &k in coeffs[..coeffs.len() - 1].iter().rev() {
                p = b.build_float_add(b.build_float_mul(p, z, "")?, c(k), "")?;
            }
            Ok(p)
        };
        // ln(y), y = 1 - u1 (crate::random::ln).
        let y = b.build_float_sub(c(1.0), u1, "")?;
        let bits = b.build_bit_cast(y, i64t, "")?.into_int_value();
        let exp = b.build_right_shift(bits, i64t.const_int(52, false), false, "")?;
        let exp = b.build_and(exp, i64t.const_int(0x7ff, false), "")?;
        let exp = b.build_int_sub(exp, i64t.const_int(1023, false), "")?;
        let mant = b.build_and(bits, i64t.const_int(0x000f_ffff_ffff_ffff, false), "")?;
        let mant = b.build_or(mant, i64t.const_int(0x3ff0_0000_0000_0000, false), "")?;
        let m = b.build_bit_cast(mant, f64t, "")?.into_float_value();
        let big = b.build_float_compare(FloatPredicate::OGT, m, c(std::f64::consts::SQRT_2), "")?;
        let half = b.build_float_mul(m, c(0.5), "")?;
        let m = b.build_select(big, half, m, "")?.into_float_value();
        let bumped = b.build_int_add(exp, i64t.const_int(1, false), "")?;
        let exp = b.build_select(big, bumped, exp, "")?.into_int_value();
        let s = b.build_float_div(
            b.build_float_sub(m, c(1.0), "")?,
            b.build_float_add(m, c(1.0), "")?,
            "",
        )?;
        let p = horner(&crate::random::LN_COEFFS, b.build_float_mul(s, s, "")?)?;
        let e = b.build_signed_int_to_float(exp, f64t, "")?;
        let eln2 = b.build_float_mul(e, c(std::f64::consts::LN_2), "")?;
        let two_s = b.build_float_mul(c(2.0), s, "")?;
        let ln = b.build_float_add(eln2, b.build_float_mul(two_s, p, "")?, "")?;
        let sqrt = self.intrinsic("llvm.sqrt", &[f64t.into()])?;
        let r = call(sqrt, &[b.build_float_mul(c(-2.0), ln, "")?.into()])?;
        // cos(2π u2) (crate::random::cos_2pi).
        let t = b.build_float_mul(u2, c(4.0), "")?;
        let q = b.build_float_to_unsigned_int(t, i32t, "")?;
        let qf = b.build_unsigned_int_to_float(q, f64t, "")?;
        let fr = b.build_float_sub(t, qf, "")?;
        let swap = b.build_float_compare(FloatPredicate::OGT, fr, c(0.5), "")?;
        let g = b.build_select(swap, b.build_float_sub(c(1.0), fr, "")?, fr, "")?;
        let x = b.build_float_mul(g.into_float_value(), c(std::f64::consts::FRAC_PI_2), "")?;
        let z = b.build_float_mul(x, x, "")?;
        let sin = b.build_float_mul(x, horner(&crate::random::SIN_COEFFS, z)?, "")?;
        let cos = horner(&crate::random::COS_COEFFS, z)?;
        let a = b.build_select(swap, sin, cos, "")?.into_float_value();
        let bb = b.build_select(swap, cos, sin, "")?.into_float_value();
        let (na, nb) = (b.build_float_neg(a, "")?, b.build_float_neg(bb, "")?);
        let is = |n: u64| b.build_int_compare(IntPredicate::EQ, q, i32t.const_int(n, false), "");
        let v = b.build_select(is(3)?, bb, a, "")?.into_float_value();
        let v = b.build_select(is(2)?, na, v, "")?.into_float_value();
        let v = b.build_select(is(1)?, nb, v, "")?.into_float_value();
        let z = b.build_float_mul(r, v, "")?;
        b.build_return(Some(&z))?;
        Ok(f)
    }
}

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    /// `rand()` / `randn()` of type `ty` (float32 or float64).
    pub(super) fn random(&mut self, op: Intrinsic, ty: &Type) -> R<BasicValueEnum<'ctx>> {
        let state = self
            .rng
            .ok_or_else(|| err("rand() in a function without generator state"))?;
        let block = self.e.rand_block_fn()?;
        let w = self.call1(block, &[state.into()])?.into_array_value();
        let f32 = ty.as_scalar() == Some(Scalar::Float32);
        let v = match op {
            Intrinsic::Rand if f32 => {
                // crate::random::uniform_f32: (x >> 8) · 2⁻²⁴.
                let i32t = self.e.ctx.i32_type();
                let x = self.b().build_extract_value(w, 0, "")?.into_int_value();
                let x = self
                    .b()
                    .build_right_shift(x, i32t.const_int(8, false), false, "")?;
                let f32t = self.e.ctx.f32_type();
                let x = self.b().build_unsigned_int_to_float(x, f32t, "")?;
                let u = self
                    .b()
                    .build_float_mul(x, f32t.const_float(1.0 / 16_777_216.0), "")?;
                return Ok(u.into());
            }
            Intrinsic::Rand => {
                let f = self.e.uniform64_fn()?;
                let hi = self.b().build_extract_value(w, 0, "")?;
                let lo = self.b().build_extract_value(w, 1, "")?;
                self.call1(f, &[hi.into(), lo.into()])?
            }
            _ => {
                let f = self.e.normal_fn()?;
                self.call1(f, &[w.into()])?
            }
        };
        if f32 {
            let v = self
                .b()
                .build_float_trunc(v.into_float_value(), self.e.ctx.f32_type(), "")?;
            return Ok(v.into());
        }
        Ok(v)
    }
}
