//! Atomic operations as inline PTX (`atom.<sem>.<scope>`, `ld.acquire`, `st.release`, the
//! fences of seq_cst), with compare-and-swap loops for float min/max and inc/dec. The
//! statements state the address's space (`.shared`, `.global`) when its type knows it, and
//! are not `convergent` (which would keep LLVM from unrolling the loops around them). On a
//! thread's own memory (a local array) an atomic is a plain load and store.

use super::*;
use inkwell::values::InstructionOpcode;

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

/// The PTX state space of an atomic on memory of `space` (`.shared`, `.global`), with the
/// LLVM address space its address is converted to; `None` for a generic address.
fn state_space(space: MemSpace) -> Option<(&'static str, u16)> {
    match space {
        MemSpace::Shared => Some((".shared", 3)),
        MemSpace::Global => Some((".global", 1)),
        MemSpace::Local | MemSpace::Const | MemSpace::Cluster => None,
    }
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
    /// Inline PTX that reads or writes memory: a side effect, but not `convergent`.
    fn mem_asm(
        &self,
        text: &str,
        constraints: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        args: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        self.asm_call(text, constraints, ret, args, false)
    }

    /// Atomic operations as inline PTX with explicit semantics and scope (`atom.<sem>.<scope>`,
    /// `ld.acquire`, `st.release`, `fence.sc` for seq_cst); float max/min are CAS loops.
    /// `space` is where the element lives: shared and global addresses are given to PTX in
    /// their own state space, and a local element (one thread's) is loaded and stored plainly.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        dtype: Scalar,
        space: MemSpace,
        ptr: PointerValue<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        if space == MemSpace::Local {
            return self.atomic_private(op, dtype, ptr, vals);
        }
        if matches!(op, AtomicOp::Exch | AtomicOp::Cas) && dtype.bits() < 32 {
            return self.atomic_subword(op, order, scope, dtype, ptr, vals);
        }
        // A field of a struct reference is an offset from a generic address, which LLVM does
        // not convert back to the space (converting it here would cost a `cvta` pair); and
        // with bounds checks, a shared element's address may be the global scratch word
        // instead. Both keep the generic address. (The scratch word is global memory, so a
        // global element's address is global either way.)
        let field = ptr
            .as_instruction()
            .is_some_and(|i| i.get_opcode() == InstructionOpcode::GetElementPtr);
        let scratch = space == MemSpace::Shared && self.e.program.options.bounds_check;
        let known = !field && !scratch;
        let (ss, ptr) = match state_space(space).filter(|_| known) {
            Some((ss, n)) => {
                let t = self.e.ctx.ptr_type(AddressSpace::from(n));
                (ss, self.b().build_address_space_cast(ptr, t, "")?)
            }
            None => ("", ptr),
        };
        let sc = ptx_scope(scope);
        let (rmw_sem, fence) = atomic_semantics(order, sc);
        let bits = dtype.bits();
        if bits == 128 {
            return self.atomic_b128(op, order, sc, ss, &fence, dtype, ptr, vals);
        }
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
                let text = format!("{fence}ld.{sem}.{sc}{ss}.b{bits} $0, [$1];");
                let r = self
                    .mem_asm(
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
                let text = format!("{fence}st.{sem}.{sc}{ss}.b{bits} [$0], $1;");
                let v = to_bits(self, vals[0])?;
                self.mem_asm(
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
                let text = format!("{fence}ld.{sem}.{sc}{ss}.b{bits} $0, [$1];");
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
                    .mem_asm(
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
                let old = self.atomic_inc_dec(op, order, scope, ss, bits, ptr, v)?;
                Ok(Some(from_bits(self, old)?))
            }
            AtomicOp::Max | AtomicOp::Min | AtomicOp::NanMax | AtomicOp::NanMin
                if dtype.is_float() =>
            {
                Ok(Some(self.atomic_float_minmax(
                    op, order, scope, ss, dtype, ptr, vals[0],
                )?))
            }
            _ => {
                let sem = rmw_sem;
                let signed = dtype.is_signed();
                let (name, ty) = match op {
                    AtomicOp::Exch => ("exch", format!("b{bits}")),
                    AtomicOp::Cas => ("cas", format!("b{bits}")),
                    // PTX's float16 add is `.noftz` only (sm_70 on).
                    AtomicOp::Add | AtomicOp::Sub if dtype == Scalar::Float16 => {
                        ("add.noftz", "f16".into())
                    }
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
                        format!("{fence}atom.{sem}.{sc}{ss}.cas.{ty} $0, [$1], $2, $3;"),
                        format!("={reg},l,{reg},{reg},~{{memory}}"),
                        vec![ptr.into(), a.into(), b.into()],
                    )
                } else {
                    (
                        format!("{fence}atom.{sem}.{sc}{ss}.{name}.{ty} $0, [$1], $2;"),
                        format!("={reg},l,{reg},~{{memory}}"),
                        vec![ptr.into(), a.into()],
                    )
                };
                let r = self
                    .mem_asm(&text, &cons, Some(it.into()), &args)?
                    .ok_or_else(|| err("atomic"))?;
                Ok(Some(from_bits(self, r.into_int_value())?))
            }
        }
    }

    /// A 16-byte (`complex128`) atomic `load` or `store`: PTX's `ld`/`st` with `.b128`
    /// (PTX ISA 8.3, 8.4 for `.sys`, sm_90; the module's version is raised by
    /// `require_b128_version`, and the checker refuses older architectures, E0402). LLVM 19's NVPTX
    /// back end has no 128-bit atomics (it would call `__atomic_load_16`), so the statement
    /// declares its own `.b128` register and moves the two 64-bit halves (real part low)
    /// in and out with `mov.b128`.
    #[allow(clippy::too_many_arguments)]
    fn atomic_b128(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        sc: &str,
        ss: &str,
        fence: &str,
        dtype: Scalar,
        ptr: PointerValue<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let t = Type::Scalar(dtype);
        let i64t = self.e.ctx.i64_type();
        let i128t = self.e.int_t(128);
        let sixty_four = i128t.const_int(64, false);
        match op {
            AtomicOp::Load => {
                let sem = if order == MemoryOrder::Relaxed {
                    "relaxed"
                } else {
                    "acquire"
                };
                let text = format!(
                    "{{ .reg .b128 t; {fence}ld.{sem}.{sc}{ss}.b128 t, [$2]; mov.b128 {{$0, $1}}, t; }}"
                );
                let pair = self.e.ctx.struct_type(&[i64t.into(), i64t.into()], false);
                let r = self
                    .mem_asm(&text, "=l,=l,l,~{memory}", Some(pair.into()), &[ptr.into()])?
                    .ok_or_else(|| err("16-byte atomic load"))?
                    .into_struct_value();
                let b = self.b();
                let lo = b.build_extract_value(r, 0, "")?.into_int_value();
                let hi = b.build_extract_value(r, 1, "")?.into_int_value();
                let lo = b.build_int_z_extend(lo, i128t, "")?;
                let hi = b.build_int_z_extend(hi, i128t, "")?;
                let hi = b.build_left_shift(hi, sixty_four, "")?;
                let all = b.build_or(lo, hi, "")?;
                let v = self.int_bits_as(all, self.e.mem_type(&t))?;
                Ok(Some(self.reg_repr(v, &t)?))
            }
            AtomicOp::Store => {
                // seq_cst is the fence and a relaxed store, as for the narrower stores.
                let sem = if order == MemoryOrder::Release {
                    "release"
                } else {
                    "relaxed"
                };
                let text = format!(
                    "{{ .reg .b128 t; mov.b128 t, {{$1, $2}}; {fence}st.{sem}.{sc}{ss}.b128 [$0], t; }}"
                );
                let v = self.mem_repr(vals[0], &t)?;
                let all = self.as_int_bits(v)?;
                let b = self.b();
                let lo = b.build_int_truncate(all, i64t, "")?;
                let hi = b.build_right_shift(all, sixty_four, false, "")?;
                let hi = b.build_int_truncate(hi, i64t, "")?;
                self.mem_asm(
                    &text,
                    "l,l,l,~{memory}",
                    None,
                    &[ptr.into(), lo.into(), hi.into()],
                )?;
                Ok(None)
            }
            AtomicOp::Notify => Ok(None),
            _ => Err(err(format!(
                "atomic `{}` on a 16-byte element passed the checker",
                op.method()
            ))),
        }
    }

    /// `max`/`min`/`nanmax`/`nanmin` on floats: a compare-and-swap loop. Returns the old value.
    #[allow(clippy::too_many_arguments)]
    fn atomic_float_minmax(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        ss: &str,
        dtype: Scalar,
        ptr: PointerValue<'ctx>,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let bits = dtype.bits();
        let it = self.e.int_t(bits);
        let ft = v.get_type().into_float_type();
        let v = v.into_float_value();
        let old_bits = self.atomic_cas_loop(order, scope, ss, bits, ptr, &|cx, old_bits| {
            let b = cx.b();
            let old = b.build_bit_cast(old_bits, ft, "")?.into_float_value();
            let new = cx.float_minmax(op, v, old)?;
            Ok(b.build_bit_cast(new, it, "")?.into_int_value())
        })?;
        Ok(self.b().build_bit_cast(old_bits, ft, "")?)
    }

    /// What float `max`/`min`/`nanmax`/`nanmin` of `v` into `old` stores.
    fn float_minmax(
        &self,
        op: AtomicOp,
        v: FloatValue<'ctx>,
        old: FloatValue<'ctx>,
    ) -> R<FloatValue<'ctx>> {
        let b = self.b();
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
        Ok(b.build_select(better, v, old, "")?.into_float_value())
    }

    /// numba's `inc` and `dec` on unsigned integers: `inc` stores `old >= v ? 0 : old + 1`,
    /// `dec` stores `old == 0 || old > v ? v : old - 1` (CUDA's `atomicInc`/`atomicDec`).
    /// 32 bits have PTX instructions; 64 bits use a compare-and-swap loop. Returns the old
    /// value.
    #[allow(clippy::too_many_arguments)]
    fn atomic_inc_dec(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        ss: &str,
        bits: u32,
        ptr: PointerValue<'ctx>,
        v: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let name = if op == AtomicOp::Inc { "inc" } else { "dec" };
        if bits == 32 {
            let sc = ptx_scope(scope);
            let (sem, fence) = atomic_semantics(order, sc);
            return Ok(self
                .mem_asm(
                    &format!("{fence}atom.{sem}.{sc}{ss}.{name}.u32 $0, [$1], $2;"),
                    "=r,l,r,~{memory}",
                    Some(self.e.int_t(32).into()),
                    &[ptr.into(), v.into()],
                )?
                .ok_or_else(|| err(name))?
                .into_int_value());
        }
        self.atomic_cas_loop(order, scope, ss, bits, ptr, &|cx, old| {
            cx.inc_dec_next(op, old, v)
        })
    }

    /// What `inc`/`dec` with bound `v` stores in place of `old`.
    fn inc_dec_next(
        &self,
        op: AtomicOp,
        old: IntValue<'ctx>,
        v: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let b = self.b();
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
    }

    /// A read-modify-write as a compare-and-swap loop on a `bits`-wide word: `new_of`
    /// computes the value to store from the old one (both as integers). Returns the old
    /// value that was replaced.
    fn atomic_cas_loop(
        &mut self,
        order: MemoryOrder,
        scope: Scope,
        ss: &str,
        bits: u32,
        ptr: PointerValue<'ctx>,
        new_of: &dyn Fn(&Self, IntValue<'ctx>) -> R<IntValue<'ctx>>,
    ) -> R<IntValue<'ctx>> {
        let it = self.e.int_t(bits);
        let reg = if bits == 32 { "r" } else { "l" };
        let sc = ptx_scope(scope);
        let first = self
            .mem_asm(
                &format!("ld.relaxed.{sc}{ss}.b{bits} $0, [$1];"),
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
            .mem_asm(
                &format!("{fence}atom.{sem}.{sc}{ss}.cas.b{bits} $0, [$1], $2, $3;"),
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

    /// `exch` and `cas` on a 1- or 2-byte element: a compare-and-swap loop on the aligned
    /// 32-bit word that holds it (`atom.cas.b32`), replacing only the element's bytes, as
    /// CUDA's `atomicCAS` on `unsigned short` is built where the hardware has no narrower
    /// exchange. `cas` compares the element's bits, as `atom.cas` does, and writes nothing
    /// when they differ. The element stays generic-addressed (its word may be shared or
    /// global). Returns the element's old value.
    fn atomic_subword(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        dtype: Scalar,
        ptr: PointerValue<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let t = Type::Scalar(dtype);
        let bits = dtype.bits();
        let i32t = self.e.ctx.i32_type();
        let i64t = self.e.ctx.i64_type();
        let narrow = self.e.int_t(bits);
        let to_bits = |cx: &Self, v: BasicValueEnum<'ctx>| -> R<IntValue<'ctx>> {
            let i = cx.as_int_bits(cx.mem_repr(v, &t)?)?;
            Ok(cx.b().build_int_z_extend_or_bit_cast(i, i32t, "")?)
        };
        // The word's address and the element's bit offset in it (little-endian).
        let addr = self.b().build_ptr_to_int(ptr, i64t, "")?;
        let low = self.b().build_and(addr, i64t.const_int(3, false), "")?;
        let word_addr = self.b().build_and(addr, i64t.const_int(!3u64, false), "")?;
        let word = self.b().build_int_to_ptr(
            word_addr,
            self.e.ctx.ptr_type(AddressSpace::default()),
            "",
        )?;
        let shift = self.b().build_int_truncate(low, i32t, "")?;
        let shift = self
            .b()
            .build_left_shift(shift, i32t.const_int(3, false), "")?;
        let ones = i32t.const_int((1u64 << bits) - 1, false);
        let mask = self.b().build_left_shift(ones, shift, "")?;
        let keep = self.b().build_not(mask, "")?;
        let new_val = to_bits(self, *vals.last().ok_or_else(|| err("exch value"))?)?;
        let new_field = self.b().build_left_shift(new_val, shift, "")?;
        let expected = if op == AtomicOp::Cas {
            let e = to_bits(self, vals[0])?;
            Some(self.b().build_left_shift(e, shift, "")?)
        } else {
            None
        };
        let new_of = move |cx: &Self, old: IntValue<'ctx>| -> R<IntValue<'ctx>> {
            let rest = cx.b().build_and(old, keep, "")?;
            let replaced = cx.b().build_or(rest, new_field, "")?;
            Ok(match expected {
                // cas: replace only when the element's bits equal `old`'s.
                Some(e) => {
                    let cur = cx.b().build_and(old, mask, "")?;
                    let same = cx.b().build_int_compare(IntPredicate::EQ, cur, e, "")?;
                    cx.b()
                        .build_select(same, replaced, old, "")?
                        .into_int_value()
                }
                None => replaced,
            })
        };
        let old_word = self.atomic_cas_loop(order, scope, "", 32, word, &new_of)?;
        let old = self.b().build_right_shift(old_word, shift, false, "")?;
        let old = self.b().build_int_truncate(old, narrow, "")?;
        let v = self.int_bits_as(old, self.e.mem_type(&t))?;
        Ok(Some(self.reg_repr(v, &t)?))
    }

    /// An atomic on an element of a local array: the array belongs to one thread, so no
    /// other thread can observe the element, and the operation is a plain load, the update
    /// and a plain store (PTX leaves `atom` on a `.local` address undefined). Memory order
    /// and scope order nothing here: they only relate accesses of other threads.
    fn atomic_private(
        &mut self,
        op: AtomicOp,
        dtype: Scalar,
        ptr: PointerValue<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let t = Type::Scalar(dtype);
        let vt = self.e.mem_type(&t);
        let align = ref_align(&t);
        let load = |cx: &Self| -> R<BasicValueEnum<'ctx>> {
            let v = cx.b().build_load(vt, ptr, "")?;
            if let Some(i) = v.as_instruction_value() {
                i.set_alignment(align).map_err(|e| err(e.to_string()))?;
            }
            cx.reg_repr(v, &t)
        };
        let store = |cx: &Self, v: BasicValueEnum<'ctx>| -> R<()> {
            let v = cx.mem_repr(v, &t)?;
            cx.b()
                .build_store(ptr, v)?
                .set_alignment(align)
                .map_err(|e| err(e.to_string()))?;
            Ok(())
        };
        let bits_of = |cx: &Self, v: BasicValueEnum<'ctx>| -> R<IntValue<'ctx>> {
            cx.as_int_bits(cx.mem_repr(v, &t)?)
        };
        match op {
            AtomicOp::Load => Ok(Some(load(self)?)),
            AtomicOp::Store => {
                store(self, vals[0])?;
                Ok(None)
            }
            AtomicOp::Notify => Ok(None),
            AtomicOp::Wait => {
                // No other thread can change the element: wait returns at once if it differs
                // from `old`, and otherwise never (the loop a shared element would spin in).
                let old = bits_of(self, vals[0])?;
                let lp = self.new_block("wait.loop");
                let done = self.new_block("wait.done");
                self.b().build_unconditional_branch(lp)?;
                self.b().position_at_end(lp);
                let cur = load(self)?;
                let cur = bits_of(self, cur)?;
                let same = self.b().build_int_compare(IntPredicate::EQ, cur, old, "")?;
                self.b().build_conditional_branch(same, lp, done)?;
                self.b().position_at_end(done);
                Ok(None)
            }
            _ => {
                let old = load(self)?;
                let v = vals[0];
                let b = self.b();
                let new: BasicValueEnum<'ctx> = match (op, old, v) {
                    (AtomicOp::Exch, _, _) => v,
                    (AtomicOp::Cas, _, _) => {
                        // Compares bits, as `atom.cas.b<N>` does.
                        let same = b.build_int_compare(
                            IntPredicate::EQ,
                            bits_of(self, old)?,
                            bits_of(self, v)?,
                            "",
                        )?;
                        b.build_select(same, vals[1], old, "")?
                    }
                    (
                        AtomicOp::Add | AtomicOp::Sub,
                        BasicValueEnum::FloatValue(o),
                        BasicValueEnum::FloatValue(x),
                    ) => if op == AtomicOp::Add {
                        b.build_float_add(o, x, "")?
                    } else {
                        b.build_float_sub(o, x, "")?
                    }
                    .into(),
                    (
                        AtomicOp::Max | AtomicOp::Min | AtomicOp::NanMax | AtomicOp::NanMin,
                        BasicValueEnum::FloatValue(o),
                        BasicValueEnum::FloatValue(x),
                    ) => self.float_minmax(op, x, o)?.into(),
                    (_, BasicValueEnum::IntValue(o), BasicValueEnum::IntValue(x)) => {
                        let signed = dtype.is_signed();
                        let pick = |p: IntPredicate| -> R<BasicValueEnum<'ctx>> {
                            let c = b.build_int_compare(p, x, o, "")?;
                            Ok(b.build_select(c, x, o, "")?)
                        };
                        match op {
                            AtomicOp::Add => b.build_int_add(o, x, "")?.into(),
                            AtomicOp::Sub => b.build_int_sub(o, x, "")?.into(),
                            AtomicOp::And => b.build_and(o, x, "")?.into(),
                            AtomicOp::Or => b.build_or(o, x, "")?.into(),
                            AtomicOp::Xor => b.build_xor(o, x, "")?.into(),
                            AtomicOp::Max | AtomicOp::NanMax => pick(if signed {
                                IntPredicate::SGT
                            } else {
                                IntPredicate::UGT
                            })?,
                            AtomicOp::Min | AtomicOp::NanMin => pick(if signed {
                                IntPredicate::SLT
                            } else {
                                IntPredicate::ULT
                            })?,
                            AtomicOp::Inc | AtomicOp::Dec => self.inc_dec_next(op, o, x)?.into(),
                            _ => return Err(err("atomic operation on a local element")),
                        }
                    }
                    _ => return Err(err("atomic operation on a local element")),
                };
                store(self, new)?;
                Ok(Some(old))
            }
        }
    }
}
