//! Atomic operations as inline PTX (`atom.<sem>.<scope>`, `ld.acquire`, `st.release`, the
//! fences of seq_cst), with compare-and-swap loops for float min/max and inc/dec.

use super::*;

/// The `.sem` qualifier of an `atom` instruction for `order`, and the fence that a
/// sequentially consistent one needs before it (PTX has no `.seq_cst` atom).
fn atomic_semantics(order: MemoryOrder, sc: &str) -> (&'static str, String) {
    let sem = match order {
        MemoryOrder::Relaxed => "relaxed",
        MemoryOrder::Acquire | MemoryOrder::Consume => "acquire",
        MemoryOrder::Release => "release",
        MemoryOrder::AcqRel | MemoryOrder::SeqCst => "acq_rel",
    };
    let fence = if order == MemoryOrder::SeqCst {
        format!("fence.sc.{sc}; ")
    } else {
        String::new()
    };
    (sem, fence)
}

/// The PTX name of a thread scope (a thread's own accesses need no more than its block's).
pub(super) fn ptx_scope(s: Scope) -> &'static str {
    match s {
        Scope::Thread | Scope::Block => "cta",
        Scope::Device => "gpu",
        Scope::System => "sys",
    }
}

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    /// Atomic operations as inline PTX with explicit semantics and scope (`atom.<sem>.<scope>`,
    /// `ld.acquire`, `st.release`, `fence.sc` for seq_cst); float max/min are CAS loops.
    pub(super) fn atomic(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        dtype: Scalar,
        ptr: PointerValue<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let sc = ptx_scope(scope);
        let (rmw_sem, fence) = atomic_semantics(order, sc);
        let bits = dtype.bits();
        let it = self.e.int_t(bits.max(16));
        let reg = match bits {
            8 | 16 => "h",
            32 => "r",
            _ => "l",
        };
        let vt = self.e.mem_type(&Type::Scalar(dtype));
        let to_bits = |cx: &Self, v: BasicValueEnum<'ctx>| -> R<IntValue<'ctx>> {
            let v = cx.mem_repr(v, &Type::Scalar(dtype))?;
            let i = cx.as_int_bits(v)?;
            Ok(if i.get_type().get_bit_width() < 16 {
                cx.b().build_int_z_extend(i, it, "")?
            } else {
                i
            })
        };
        let from_bits = |cx: &Self, i: IntValue<'ctx>| -> R<BasicValueEnum<'ctx>> {
            let i = if bits < 16 {
                cx.b().build_int_truncate(i, cx.e.ctx.i8_type(), "")?
            } else {
                i
            };
            let v = cx.int_bits_as(i, vt)?;
            cx.reg_repr(v, &Type::Scalar(dtype))
        };
        match op {
            AtomicOp::Load => {
                let sem = if order == MemoryOrder::Relaxed {
                    "relaxed"
                } else {
                    "acquire"
                };
                let text = format!("{fence}ld.{sem}.{sc}.b{bits} $0, [$1];");
                let r = self
                    .asm(
                        &text,
                        &format!("={reg},l,~{{memory}}"),
                        Some(it.into()),
                        &[ptr.into()],
                    )?
                    .ok_or_else(|| err("atomic load"))?;
                Ok(Some(from_bits(self, r.into_int_value())?))
            }
            AtomicOp::Store => {
                let sem = if order == MemoryOrder::Release {
                    "release"
                } else {
                    "relaxed"
                };
                let sem = if order == MemoryOrder::SeqCst {
                    "relaxed"
                } else {
                    sem
                };
                let text = format!("{fence}st.{sem}.{sc}.b{bits} [$0], $1;");
                let v = to_bits(self, vals[0])?;
                self.asm(
                    &text,
                    &format!("l,{reg},~{{memory}}"),
                    None,
                    &[ptr.into(), v.into()],
                )?;
                Ok(None)
            }
            AtomicOp::Notify => Ok(None),
            AtomicOp::Wait => {
                // while load(order) == old: nanosleep(backoff), doubling up to 1 µs.
                let sem = if order == MemoryOrder::Relaxed {
                    "relaxed"
                } else {
                    "acquire"
                };
                let text = format!("{fence}ld.{sem}.{sc}.b{bits} $0, [$1];");
                let old = to_bits(self, vals[0])?;
                let i32t = self.e.ctx.i32_type();
                let entry = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                let lp = self.new_block("wait.loop");
                let sleep = self.new_block("wait.sleep");
                let done = self.new_block("wait.done");
                self.b().build_unconditional_branch(lp)?;
                self.b().position_at_end(lp);
                let backoff = self.b().build_phi(i32t, "backoff")?;
                let cur = self
                    .asm(
                        &text,
                        &format!("={reg},l,~{{memory}}"),
                        Some(it.into()),
                        &[ptr.into()],
                    )?
                    .ok_or_else(|| err("wait load"))?
                    .into_int_value();
                let same = self.b().build_int_compare(IntPredicate::EQ, cur, old, "")?;
                self.b().build_conditional_branch(same, sleep, done)?;
                self.b().position_at_end(sleep);
                let ns = backoff.as_basic_value().into_int_value();
                self.asm("nanosleep.u32 $0;", "r,~{memory}", None, &[ns.into()])?;
                let doubled = self
                    .b()
                    .build_left_shift(ns, i32t.const_int(1, false), "")?;
                let cap = i32t.const_int(1024, false);
                let over = self
                    .b()
                    .build_int_compare(IntPredicate::UGT, doubled, cap, "")?;
                let next = self
                    .b()
                    .build_select(over, cap, doubled, "")?
                    .into_int_value();
                self.b().build_unconditional_branch(lp)?;
                backoff.add_incoming(&[(&i32t.const_int(32, false), entry), (&next, sleep)]);
                self.b().position_at_end(done);
                Ok(None)
            }
            AtomicOp::Inc | AtomicOp::Dec => {
                let v = to_bits(self, vals[0])?;
                let old = self.atomic_inc_dec(op, order, scope, bits, ptr, v)?;
                Ok(Some(from_bits(self, old)?))
            }
            AtomicOp::Max | AtomicOp::Min | AtomicOp::NanMax | AtomicOp::NanMin
                if dtype.is_float() =>
            {
                Ok(Some(self.atomic_float_minmax(
                    op, order, scope, dtype, ptr, vals[0],
                )?))
            }
            _ => {
                let sem = rmw_sem;
                let signed = dtype.is_signed();
                let (name, ty) = match op {
                    AtomicOp::Exch => ("exch", format!("b{bits}")),
                    AtomicOp::Cas => ("cas", format!("b{bits}")),
                    AtomicOp::Add | AtomicOp::Sub => (
                        "add",
                        if dtype.is_float() {
                            format!("f{bits}")
                        } else if bits == 32 && signed {
                            "s32".into()
                        } else {
                            format!("u{bits}")
                        },
                    ),
                    AtomicOp::And => ("and", format!("b{bits}")),
                    AtomicOp::Or => ("or", format!("b{bits}")),
                    AtomicOp::Xor => ("xor", format!("b{bits}")),
                    AtomicOp::Max | AtomicOp::NanMax => {
                        ("max", format!("{}{bits}", if signed { "s" } else { "u" }))
                    }
                    AtomicOp::Min | AtomicOp::NanMin => {
                        ("min", format!("{}{bits}", if signed { "s" } else { "u" }))
                    }
                    AtomicOp::Load
                    | AtomicOp::Store
                    | AtomicOp::Wait
                    | AtomicOp::Notify
                    | AtomicOp::Inc
                    | AtomicOp::Dec => {
                        unreachable!("handled above")
                    }
                };
                let mut operand = vals[0];
                if op == AtomicOp::Sub {
                    operand = match operand {
                        BasicValueEnum::FloatValue(f) => self.b().build_float_neg(f, "")?.into(),
                        BasicValueEnum::IntValue(i) => self.b().build_int_neg(i, "")?.into(),
                        other => other,
                    };
                }
                let a = to_bits(self, operand)?;
                let (text, cons, args) = if op == AtomicOp::Cas {
                    let b = to_bits(self, vals[1])?;
                    (
                        format!("{fence}atom.{sem}.{sc}.cas.{ty} $0, [$1], $2, $3;"),
                        format!("={reg},l,{reg},{reg},~{{memory}}"),
                        vec![ptr.into(), a.into(), b.into()],
                    )
                } else {
                    (
                        format!("{fence}atom.{sem}.{sc}.{name}.{ty} $0, [$1], $2;"),
                        format!("={reg},l,{reg},~{{memory}}"),
                        vec![ptr.into(), a.into()],
                    )
                };
                let r = self
                    .asm(&text, &cons, Some(it.into()), &args)?
                    .ok_or_else(|| err("atomic"))?;
                Ok(Some(from_bits(self, r.into_int_value())?))
            }
        }
    }

    /// `max`/`min`/`nanmax`/`nanmin` on floats: a compare-and-swap loop. Returns the old value.
    fn atomic_float_minmax(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        dtype: Scalar,
        ptr: PointerValue<'ctx>,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let bits = dtype.bits();
        let it = self.e.int_t(bits);
        let ft = v.get_type().into_float_type();
        let v = v.into_float_value();
        let old_bits = self.atomic_cas_loop(order, scope, bits, ptr, &|cx, old_bits| {
            let b = cx.b();
            let old = b.build_bit_cast(old_bits, ft, "")?.into_float_value();
            let better = match op {
                AtomicOp::Max => b.build_float_compare(FloatPredicate::OGT, v, old, "")?,
                AtomicOp::Min => b.build_float_compare(FloatPredicate::OLT, v, old, "")?,
                _ => {
                    // NaN is a missing value: take v if old is NaN, keep old if v is NaN.
                    let p = if op == AtomicOp::NanMax {
                        FloatPredicate::OGT
                    } else {
                        FloatPredicate::OLT
                    };
                    let c = b.build_float_compare(p, v, old, "")?;
                    let old_nan = b.build_float_compare(FloatPredicate::UNO, old, old, "")?;
                    b.build_or(c, old_nan, "")?
                }
            };
            let new = b.build_select(better, v, old, "")?.into_float_value();
            Ok(b.build_bit_cast(new, it, "")?.into_int_value())
        })?;
        Ok(self.b().build_bit_cast(old_bits, ft, "")?)
    }

    /// numba's `inc` and `dec` on unsigned integers: `inc` stores `old >= v ? 0 : old + 1`,
    /// `dec` stores `old == 0 || old > v ? v : old - 1` (CUDA's `atomicInc`/`atomicDec`).
    /// 32 bits have PTX instructions; 64 bits use a compare-and-swap loop. Returns the old
    /// value.
    fn atomic_inc_dec(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        bits: u32,
        ptr: PointerValue<'ctx>,
        v: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let name = if op == AtomicOp::Inc { "inc" } else { "dec" };
        if bits == 32 {
            let sc = ptx_scope(scope);
            let (sem, fence) = atomic_semantics(order, sc);
            return Ok(self
                .asm(
                    &format!("{fence}atom.{sem}.{sc}.{name}.u32 $0, [$1], $2;"),
                    "=r,l,r,~{memory}",
                    Some(self.e.int_t(32).into()),
                    &[ptr.into(), v.into()],
                )?
                .ok_or_else(|| err(name))?
                .into_int_value());
        }
        self.atomic_cas_loop(order, scope, bits, ptr, &|cx, old| {
            let b = cx.b();
            let one = old.get_type().const_int(1, false);
            let zero = old.get_type().const_zero();
            Ok(if op == AtomicOp::Inc {
                let wrap = b.build_int_compare(IntPredicate::UGE, old, v, "")?;
                let next = b.build_int_add(old, one, "")?;
                b.build_select(wrap, zero, next, "")?.into_int_value()
            } else {
                let is_zero = b.build_int_compare(IntPredicate::EQ, old, zero, "")?;
                let above = b.build_int_compare(IntPredicate::UGT, old, v, "")?;
                let reset = b.build_or(is_zero, above, "")?;
                let next = b.build_int_sub(old, one, "")?;
                b.build_select(reset, v, next, "")?.into_int_value()
            })
        })
    }

    /// A read-modify-write as a compare-and-swap loop on a `bits`-wide word: `new_of`
    /// computes the value to store from the old one (both as integers). Returns the old
    /// value that was replaced.
    fn atomic_cas_loop(
        &mut self,
        order: MemoryOrder,
        scope: Scope,
        bits: u32,
        ptr: PointerValue<'ctx>,
        new_of: &dyn Fn(&Self, IntValue<'ctx>) -> R<IntValue<'ctx>>,
    ) -> R<IntValue<'ctx>> {
        let it = self.e.int_t(bits);
        let reg = if bits == 32 { "r" } else { "l" };
        let sc = ptx_scope(scope);
        let first = self
            .asm(
                &format!("ld.relaxed.{sc}.b{bits} $0, [$1];"),
                &format!("={reg},l,~{{memory}}"),
                Some(it.into()),
                &[ptr.into()],
            )?
            .ok_or_else(|| err("load"))?
            .into_int_value();
        let entry = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
        let lp = self.new_block("atomic.loop");
        let done = self.new_block("atomic.done");
        self.b().build_unconditional_branch(lp)?;
        self.b().position_at_end(lp);
        let phi = self.b().build_phi(it, "old")?;
        let old_bits = phi.as_basic_value().into_int_value();
        let new_bits = new_of(self, old_bits)?;
        let same = self
            .b()
            .build_int_compare(IntPredicate::EQ, new_bits, old_bits, "")?;
        let cas_block = self.new_block("atomic.cas");
        self.b().build_conditional_branch(same, done, cas_block)?;
        self.b().position_at_end(cas_block);
        let (sem, fence) = atomic_semantics(order, sc);
        let prev = self
            .asm(
                &format!("{fence}atom.{sem}.{sc}.cas.b{bits} $0, [$1], $2, $3;"),
                &format!("={reg},l,{reg},{reg},~{{memory}}"),
                Some(it.into()),
                &[ptr.into(), old_bits.into(), new_bits.into()],
            )?
            .ok_or_else(|| err("cas"))?
            .into_int_value();
        let ok = self
            .b()
            .build_int_compare(IntPredicate::EQ, prev, old_bits, "")?;
        let cas_end = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
        self.b().build_conditional_branch(ok, done, lp)?;
        phi.add_incoming(&[(&first, entry), (&prev, cas_end)]);
        self.b().position_at_end(done);
        let res = self.b().build_phi(it, "")?;
        res.add_incoming(&[(&old_bits, lp), (&old_bits, cas_end)]);
        Ok(res.as_basic_value().into_int_value())
    }
}
