//! Operators on numbers: truthiness, casts, unary and binary operators with Python's
//! semantics (floor division and modulo, shifts, integer powers), and the helpers for math
//! functions that return pairs.

use super::*;

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    pub(super) fn truthy(&self, v: BasicValueEnum<'ctx>, s: Scalar) -> R<IntValue<'ctx>> {
        Ok(match s {
            Scalar::Bool => v.into_int_value(),
            s if s.is_complex() => self.complex_truthy(v)?,
            s if s.is_fp8() => {
                let iv = v.into_int_value();
                let mag = self
                    .b()
                    .build_and(iv, iv.get_type().const_int(0x7f, false), "")?;
                self.b()
                    .build_int_compare(IntPredicate::NE, mag, iv.get_type().const_zero(), "")?
            }
            s if s.is_float() => {
                let fv = v.into_float_value();
                self.b().build_float_compare(
                    FloatPredicate::UNE,
                    fv,
                    fv.get_type().const_zero(),
                    "",
                )?
            }
            _ => {
                let iv = v.into_int_value();
                self.b()
                    .build_int_compare(IntPredicate::NE, iv, iv.get_type().const_zero(), "")?
            }
        })
    }

    pub(super) fn cast(
        &mut self,
        v: BasicValueEnum<'ctx>,
        from: Scalar,
        to: Scalar,
    ) -> R<BasicValueEnum<'ctx>> {
        if from == to {
            return Ok(v);
        }
        if from.is_complex() || to.is_complex() {
            return self.complex_cast(v, from, to);
        }
        if from.is_fp8() || to.is_fp8() {
            return self.fp8_cast(v, from, to);
        }
        let tt = self.e.scalar_type(to);
        Ok(match (from.is_float(), to.is_float()) {
            _ if to == Scalar::Bool => self.truthy(v, from)?.into(),
            (false, false) => {
                let signed = from.is_signed();
                self.b()
                    .build_int_cast_sign_flag(v.into_int_value(), tt.into_int_type(), signed, "")?
                    .into()
            }
            (false, true) => {
                let iv = v.into_int_value();
                if from.is_signed() {
                    self.b()
                        .build_signed_int_to_float(iv, tt.into_float_type(), "")?
                        .into()
                } else {
                    self.b()
                        .build_unsigned_int_to_float(iv, tt.into_float_type(), "")?
                        .into()
                }
            }
            (true, false) => {
                // Saturating, NaN to 0: one `cvt.rzi` instruction, never poison.
                let name = if to.is_signed() {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                let f = self.e.intrinsic(name, &[tt, v.get_type()])?;
                self.call1(f, &[v.into()])?
            }
            (true, true) => {
                let x = v.into_float_value();
                let tt = tt.into_float_type();
                if x.get_type() != tt && x.get_type().get_bit_width() == tt.get_bit_width() {
                    // float16 <-> bfloat16: LLVM has no cast between equal widths; float32
                    // holds every float16 exactly, so this rounds once.
                    let f32t = self.e.ctx.f32_type();
                    let wide = self.b().build_float_ext(x, f32t, "")?;
                    self.b().build_float_trunc(wide, tt, "")?.into()
                } else {
                    self.b().build_float_cast(x, tt, "")?.into()
                }
            }
        })
    }

    /// `ldexp`, `frexp` and `modf` through libdevice (`__nv_frexpf(float, int*)` …): the
    /// out-parameter is a stack slot of the entry block; the pairs are built as tuples.
    pub(super) fn math_pair(
        &mut self,
        op: Intrinsic,
        vals: &[BasicValueEnum<'ctx>],
        ty: &Type,
    ) -> R<BasicValueEnum<'ctx>> {
        let x = vals[0].into_float_value();
        let ft = x.get_type();
        let suffix = if ft == self.e.ctx.f32_type() { "f" } else { "" };
        let i32t = self.e.ctx.i32_type();
        let ptr = self.e.ctx.ptr_type(inkwell::AddressSpace::default());
        let (base, second): (&str, BasicTypeEnum<'ctx>) = match op {
            Intrinsic::Ldexp => ("ldexp", i32t.into()),
            Intrinsic::Frexp => ("frexp", ptr.into()),
            _ => ("modf", ptr.into()),
        };
        let name = format!("__nv_{base}{suffix}");
        self.e.uses_libdevice = true;
        if op == Intrinsic::Sincos {
            // void __nv_sincos(double x, double *s, double *c)
            let name = format!("__nv_sincos{suffix}");
            let func = match self.e.module.get_function(&name) {
                Some(f) => f,
                None => self.e.module.add_function(
                    &name,
                    self.e
                        .ctx
                        .void_type()
                        .fn_type(&[ft.into(), ptr.into(), ptr.into()], false),
                    None,
                ),
            };
            let s = self.entry_alloca(ft, "sin")?;
            let c = self.entry_alloca(ft, "cos")?;
            self.b()
                .build_call(func, &[x.into(), s.into(), c.into()], "")?;
            let sv = self.b().build_load(ft, s, "")?;
            let cv = self.b().build_load(ft, c, "")?;
            return self.pair_tuple(ty, [sv, cv]);
        }
        let func = match self.e.module.get_function(&name) {
            Some(f) => f,
            None => self.e.module.add_function(
                &name,
                ft.fn_type(&[ft.into(), second.into()], false),
                None,
            ),
        };
        if op == Intrinsic::Ldexp {
            return self.call1(func, &[x.into(), vals[1].into()]);
        }
        let slot_ty: BasicTypeEnum<'ctx> = if op == Intrinsic::Frexp {
            i32t.into()
        } else {
            ft.into()
        };
        let slot = self.entry_alloca(slot_ty, base)?;
        let first = self.call1(func, &[x.into(), slot.into()])?;
        let other = self.b().build_load(slot_ty, slot, "")?;
        self.pair_tuple(ty, [first, other])
    }

    /// A two-element tuple value of type `ty`.
    fn pair_tuple(
        &mut self,
        ty: &Type,
        items: [BasicValueEnum<'ctx>; 2],
    ) -> R<BasicValueEnum<'ctx>> {
        let st = self
            .e
            .ty(ty)
            .ok_or_else(|| err("math pair of None"))?
            .into_struct_type();
        let mut agg = st.get_undef().as_basic_value_enum();
        for (i, v) in items.into_iter().enumerate() {
            let at = self.e.field_index(ty, i as u32);
            agg = self
                .b()
                .build_insert_value(agg.into_struct_value(), v, at, "")?
                .as_basic_value_enum();
        }
        Ok(agg)
    }

    pub(super) fn call1(
        &self,
        f: FunctionValue<'ctx>,
        args: &[BasicMetadataValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        match self.b().build_call(f, args, "")?.try_as_basic_value() {
            ValueKind::Basic(v) => Ok(v),
            _ => Err(err("call returned nothing")),
        }
    }

    pub(super) fn unary(
        &mut self,
        op: UnaryOp,
        s: Scalar,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        if s.is_complex() {
            return self.complex_unary(op, v);
        }
        Ok(if s.is_float() {
            let f = v.into_float_value();
            match op {
                UnaryOp::Neg => self.b().build_float_neg(f, "")?.into(),
                UnaryOp::Abs => {
                    let fabs = self.e.intrinsic("llvm.fabs", &[f.get_type().into()])?;
                    self.call1(fabs, &[f.into()])?
                }
                UnaryOp::Not | UnaryOp::Invert => return Err(err("bitwise op on a float")),
            }
        } else {
            let i = v.into_int_value();
            match op {
                UnaryOp::Neg => self.b().build_int_neg(i, "")?.into(),
                UnaryOp::Not | UnaryOp::Invert => self.b().build_not(i, "")?.into(),
                UnaryOp::Abs => {
                    if s.is_signed() {
                        let neg = self.b().build_int_compare(
                            IntPredicate::SLT,
                            i,
                            i.get_type().const_zero(),
                            "",
                        )?;
                        let n = self.b().build_int_neg(i, "")?;
                        self.b().build_select(neg, n, i, "")?
                    } else {
                        i.into()
                    }
                }
            }
        })
    }

    pub(super) fn binary(
        &mut self,
        op: BinaryOp,
        s: Scalar,
        x: BasicValueEnum<'ctx>,
        y: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        if s.is_complex() {
            self.complex_binary(op, x, y)
        } else if s.is_float() {
            self.float_binary(op, s, x.into_float_value(), y.into_float_value())
        } else {
            self.int_binary(op, s, x.into_int_value(), y.into_int_value())
        }
    }

    fn float_binary(
        &mut self,
        op: BinaryOp,
        s: Scalar,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        if s.bits() == 16 && op == BinaryOp::Pow {
            // No 16-bit libdevice functions: compute in float32 and round once.
            let f32t = self.e.ctx.f32_type();
            let xe = self.b().build_float_ext(x, f32t, "")?;
            let ye = self.b().build_float_ext(y, f32t, "")?;
            let r = self
                .float_binary(op, Scalar::Float32, xe, ye)?
                .into_float_value();
            return Ok(self.b().build_float_trunc(r, x.get_type(), "")?.into());
        }
        use BinaryOp::*;
        let b = &self.e.builder;
        let cmp = |p| -> R<BasicValueEnum<'ctx>> { Ok(b.build_float_compare(p, x, y, "")?.into()) };
        // A float32/float64 `+ - *` of the program may be contracted with another into one
        // fused multiply-add (a single rounding), as nvcc, NVRTC and numba-cuda do by default:
        // LLVM's `contract` flag, which the code generator honours when both the multiplication
        // and the addition carry it (§3.13). 16-bit floats and the compiler's own expansions
        // (complex arithmetic, random numbers, `//`, `%`, rounding) never carry it, nor does
        // anything in a kernel compiled with `contract=False`.
        // `contract=False` (§12) keeps every rounding, as do the helpers of `ir::expand`.
        let may_contract = !self.e.program.options.no_contract && !self.f.expansion;
        let contractible = |v: FloatValue<'ctx>| -> BasicValueEnum<'ctx> {
            if may_contract
                && matches!(s, Scalar::Float32 | Scalar::Float64)
                && let Some(i) = v.as_instruction()
            {
                let _ = i.set_fast_math_flags(inkwell::values::FastMathFlags::AllowContract);
            }
            v.into()
        };
        Ok(match op {
            Add | AddNoWrap => contractible(b.build_float_add(x, y, "")?),
            Sub => contractible(b.build_float_sub(x, y, "")?),
            Mul => contractible(b.build_float_mul(x, y, "")?),
            Div => b.build_float_div(x, y, "")?.into(),
            Eq => cmp(FloatPredicate::OEQ)?,
            Ne => cmp(FloatPredicate::UNE)?,
            Lt => cmp(FloatPredicate::OLT)?,
            Le => cmp(FloatPredicate::OLE)?,
            Gt => cmp(FloatPredicate::OGT)?,
            Ge => cmp(FloatPredicate::OGE)?,
            Min | Max => {
                // Python: min(a, b) is b if b < a else a (so NaN handling follows argument order).
                let p = if op == Min {
                    FloatPredicate::OLT
                } else {
                    FloatPredicate::OGT
                };
                let c = b.build_float_compare(p, y, x, "")?;
                b.build_select(c, y, x, "")?
            }
            Pow => {
                let name = if s == Scalar::Float32 {
                    "__nv_powf"
                } else {
                    "__nv_pow"
                };
                let f = self.e.libdevice_fn(name, x.get_type().into(), 2);
                self.call1(f, &[x.into(), y.into()])?
            }
            FloorDiv | Mod => {
                return Err(err(
                    "float `//` or `%` reached the back end (ir::expand lowers it)",
                ));
            }
            BitAnd | BitOr | BitXor | Shl | Shr => return Err(err("bitwise op on floats")),
        })
    }

    fn int_binary(
        &mut self,
        op: BinaryOp,
        s: Scalar,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        use BinaryOp::*;
        let signed = s.is_signed();
        let t = x.get_type();
        let bits = t.get_bit_width();
        let b = &self.e.builder;
        let icmp = |p: IntPredicate, a: IntValue<'ctx>, c: IntValue<'ctx>| {
            b.build_int_compare(p, a, c, "")
        };
        let (lt, le, gt, ge) = if signed {
            (
                IntPredicate::SLT,
                IntPredicate::SLE,
                IntPredicate::SGT,
                IntPredicate::SGE,
            )
        } else {
            (
                IntPredicate::ULT,
                IntPredicate::ULE,
                IntPredicate::UGT,
                IntPredicate::UGE,
            )
        };
        Ok(match op {
            Add => b.build_int_add(x, y, "")?.into(),
            AddNoWrap if signed => b.build_int_nsw_add(x, y, "")?.into(),
            AddNoWrap => b.build_int_nuw_add(x, y, "")?.into(),
            Sub => b.build_int_sub(x, y, "")?.into(),
            Mul => b.build_int_mul(x, y, "")?.into(),
            BitAnd => b.build_and(x, y, "")?.into(),
            BitOr => b.build_or(x, y, "")?.into(),
            BitXor => b.build_xor(x, y, "")?.into(),
            Eq => icmp(IntPredicate::EQ, x, y)?.into(),
            Ne => icmp(IntPredicate::NE, x, y)?.into(),
            Lt => icmp(lt, x, y)?.into(),
            Le => icmp(le, x, y)?.into(),
            Gt => icmp(gt, x, y)?.into(),
            Ge => icmp(ge, x, y)?.into(),
            Min => {
                let c = icmp(lt, y, x)?;
                b.build_select(c, y, x, "")?
            }
            Max => {
                let c = icmp(gt, y, x)?;
                b.build_select(c, y, x, "")?
            }
            Shl | Shr => {
                // Shifting by the width or more gives 0 (or the sign) as in NumPy; LLVM
                // would give poison.
                let width = t.const_int(u64::from(bits), false);
                let big = icmp(IntPredicate::UGE, y, width)?;
                let (shifted, saturated) = if op == Shl {
                    (b.build_left_shift(x, y, "")?, t.const_zero())
                } else if signed {
                    let sign =
                        b.build_right_shift(x, t.const_int(u64::from(bits - 1), false), true, "")?;
                    (b.build_right_shift(x, y, true, "")?, sign)
                } else {
                    (b.build_right_shift(x, y, false, "")?, t.const_zero())
                };
                b.build_select(big, saturated, shifted, "")?
            }
            FloorDiv | Mod if signed && bits == 64 => {
                return self.deferred_floor_divmod(op, x, y);
            }
            FloorDiv | Mod => {
                // Python semantics: floor division, remainder with the divisor's sign.
                // Division by zero gives 0 (as NumPy does); MIN // -1 wraps.
                let zero = t.const_zero();
                let one = t.const_int(1, false);
                let y_zero = icmp(IntPredicate::EQ, y, zero)?;
                let bad = if signed {
                    let m1 = icmp(IntPredicate::EQ, y, t.const_all_ones())?;
                    b.build_or(y_zero, m1, "")?
                } else {
                    y_zero
                };
                let y1 = b.build_select(bad, one, y, "")?.into_int_value();
                let result = if signed {
                    let q = b.build_int_signed_div(x, y1, "")?;
                    let r = b.build_int_signed_rem(x, y1, "")?;
                    let r_nz = icmp(IntPredicate::NE, r, zero)?;
                    let rx = b.build_xor(r, y1, "")?;
                    let differ = icmp(IntPredicate::SLT, rx, zero)?;
                    let adjust = b.build_and(r_nz, differ, "")?;
                    if op == FloorDiv {
                        let q1 = b.build_int_sub(q, one, "")?;
                        let q = b.build_select(adjust, q1, q, "")?.into_int_value();
                        let m1 = icmp(IntPredicate::EQ, y, t.const_all_ones())?;
                        let negx = b.build_int_neg(x, "")?;
                        b.build_select(m1, negx, q, "")?.into_int_value()
                    } else {
                        let r1 = b.build_int_add(r, y1, "")?;
                        b.build_select(adjust, r1, r, "")?.into_int_value()
                    }
                } else if op == FloorDiv {
                    b.build_int_unsigned_div(x, y1, "")?
                } else {
                    b.build_int_unsigned_rem(x, y1, "")?
                };
                b.build_select(y_zero, zero, result, "")?
            }
            Pow => {
                let f = self.ipow_fn(s)?;
                self.call1(f, &[x.into(), y.into()])?
            }
            Div => return Err(err("true division on integers reached the back end")),
        })
    }

    /// Signed 64-bit `x // y` or `x % y` (Python's semantics, as [`Self::int_binary`]'s
    /// expansion), as a call to `__pyd_floordiv.i64` / `__pyd_floormod.i64`, which the
    /// optimizer expands once SROA has put the operands in registers (pipeline.cpp's
    /// `FloorDivPass`): at 32 bits when their value ranges fit (an index split by a shape,
    /// `idx // C` with `idx: uint32` and `C: int32`), else at 64. The functions are declared
    /// without side effects, so they are merged and deleted like the operators; not
    /// `speculatable`, as a division by a divisor that may be zero is not, so that a
    /// division under a condition stays there and the expansion sees the condition
    /// (`(stop - start - 1) // step` in a `range` whose step is positive there).
    fn deferred_floor_divmod(
        &mut self,
        op: BinaryOp,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let name = if op == BinaryOp::FloorDiv {
            FLOORDIV_I64
        } else {
            FLOORMOD_I64
        };
        let f = match self.e.module.get_function(name) {
            Some(f) => f,
            None => {
                let t = self.e.ctx.i64_type();
                let f =
                    self.e
                        .module
                        .add_function(name, t.fn_type(&[t.into(), t.into()], false), None);
                for (attr, value) in [
                    ("memory", 0),
                    ("nounwind", 0),
                    ("willreturn", 0),
                    ("nosync", 0),
                    ("nofree", 0),
                ] {
                    let kind = Attribute::get_named_enum_kind_id(attr);
                    f.add_attribute(
                        AttributeLoc::Function,
                        self.e.ctx.create_enum_attribute(kind, value),
                    );
                }
                f
            }
        };
        self.call1(f, &[x.into(), y.into()])
    }

    /// `x ** y` on integers by repeated squaring (wrapping), as an internal helper function
    /// per type. A negative exponent gives 1 for 1, ±1 for -1, and 0 otherwise.
    fn ipow_fn(&mut self, s: Scalar) -> R<FunctionValue<'ctx>> {
        let name = format!("__pyd_ipow_{}", s.name());
        if let Some(f) = self.e.module.get_function(&name) {
            return Ok(f);
        }
        let ctx = self.e.ctx;
        let t = self.e.scalar_type(s).into_int_type();
        let f = self.e.module.add_function(
            &name,
            t.fn_type(&[t.into(), t.into()], false),
            Some(Linkage::Internal),
        );
        let saved = self.b().get_insert_block();
        let b = ctx.create_builder();
        let entry = ctx.append_basic_block(f, "entry");
        let neg = ctx.append_basic_block(f, "neg");
        let lp = ctx.append_basic_block(f, "loop");
        let done = ctx.append_basic_block(f, "done");
        let base = f
            .get_nth_param(0)
            .ok_or_else(|| err("ipow"))?
            .into_int_value();
        let exp = f
            .get_nth_param(1)
            .ok_or_else(|| err("ipow"))?
            .into_int_value();
        let zero = t.const_zero();
        let one = t.const_int(1, false);
        b.position_at_end(entry);
        let is_neg = if s.is_signed() {
            b.build_int_compare(IntPredicate::SLT, exp, zero, "")?
        } else {
            ctx.bool_type().const_zero()
        };
        b.build_conditional_branch(is_neg, neg, lp)?;
        b.position_at_end(neg);
        let is_one = b.build_int_compare(IntPredicate::EQ, base, one, "")?;
        let is_m1 = b.build_int_compare(IntPredicate::EQ, base, t.const_all_ones(), "")?;
        let odd = b.build_and(exp, one, "")?;
        let odd = b.build_int_compare(IntPredicate::NE, odd, zero, "")?;
        let m1r = b
            .build_select(odd, t.const_all_ones(), one, "")?
            .into_int_value();
        let r = b.build_select(is_m1, m1r, zero, "")?.into_int_value();
        let r = b.build_select(is_one, one, r, "")?;
        b.build_return(Some(&r))?;
        b.position_at_end(lp);
        let acc = b.build_phi(t, "acc")?;
        let bb = b.build_phi(t, "base")?;
        let e = b.build_phi(t, "exp")?;
        let ev = e.as_basic_value().into_int_value();
        let bv = bb.as_basic_value().into_int_value();
        let av = acc.as_basic_value().into_int_value();
        let low = b.build_and(ev, one, "")?;
        let low = b.build_int_compare(IntPredicate::NE, low, zero, "")?;
        let prod = b.build_int_mul(av, bv, "")?;
        let acc2 = b.build_select(low, prod, av, "")?.into_int_value();
        let base2 = b.build_int_mul(bv, bv, "")?;
        let exp2 = b.build_right_shift(ev, one, false, "")?;
        let more = b.build_int_compare(IntPredicate::NE, exp2, zero, "")?;
        b.build_conditional_branch(more, lp, done)?;
        acc.add_incoming(&[(&one, entry), (&acc2, lp)]);
        bb.add_incoming(&[(&base, entry), (&base2, lp)]);
        e.add_incoming(&[(&exp, entry), (&exp2, lp)]);
        b.position_at_end(done);
        // exp == 0 on entry: the loop runs once with exp's low bit 0, leaving acc = 1.
        let res = b.build_phi(t, "")?;
        res.add_incoming(&[(&acc2, lp)]);
        b.build_return(Some(&res.as_basic_value()))?;
        if let Some(bb) = saved {
            self.b().position_at_end(bb);
        }
        Ok(f)
    }
}
