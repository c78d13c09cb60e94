//! Atomic operations on the host: Cranelift's `atomic_rmw` where it has the operation, and
//! compare-and-swap loops for the rest (floats, min/max, inc/dec); in a kernel on the CPU,
//! `wait` polls, letting the other threads run between looks.

use super::*;

impl FnCx<'_, '_> {
    /// An atomic operation on the element at `ptr` (x86-64's locked instructions are
    /// sequentially consistent, at least as strong as any order asked for). Returns the old
    /// value, or nothing for `store` and `notify`.
    pub(super) fn atomic(
        &mut self,
        op: AtomicOp,
        dtype: Scalar,
        ptr: Value,
        vals: &[Value],
    ) -> R<Vec<Value>> {
        // The integer type of the element's bits.
        let it = match dtype {
            Scalar::Float32 => ct::I32,
            Scalar::Float64 => ct::I64,
            s => mem_type(s),
        };
        let arg = |cx: &mut Self, k: usize| -> R<Value> {
            let v = *vals.get(k).ok_or_else(|| err("atomic operand"))?;
            cx.bits_of(dtype, v)
        };
        let old = match op {
            // Nothing sleeps on the CPU: a waiter polls (`Wait`), so there is no one to wake.
            AtomicOp::Notify => return Ok(Vec::new()),
            AtomicOp::Wait => {
                // while load() == old: let the other threads run, then look again (the
                // device polls with `nanosleep` backoff; a kernel on the CPU yields its
                // fiber). The bits are compared, as the device compares them.
                let old = arg(self, 0)?;
                let (lp, poll, done) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().jump(lp, &[]);
                self.b.switch_to_block(lp);
                let cur = self.b.ins().atomic_load(it, flags(), ptr);
                let same = self.b.ins().icmp(IntCC::Equal, cur, old);
                self.b.ins().brif(same, poll, &[], done, &[]);
                self.b.switch_to_block(poll);
                self.poll()?;
                self.b.ins().jump(lp, &[]);
                self.b.switch_to_block(done);
                return Ok(Vec::new());
            }
            AtomicOp::Load => self.b.ins().atomic_load(it, flags(), ptr),
            AtomicOp::Store => {
                let v = arg(self, 0)?;
                self.b.ins().atomic_store(flags(), v, ptr);
                return Ok(Vec::new());
            }
            AtomicOp::Cas => {
                let expected = arg(self, 0)?;
                let new = arg(self, 1)?;
                self.b.ins().atomic_cas(flags(), ptr, expected, new)
            }
            AtomicOp::Add | AtomicOp::Sub if dtype.is_float() => {
                // old + v (or old - v), rounded as the device's `atom.add` rounds.
                let v = *vals.first().ok_or_else(|| err("atomic operand"))?;
                let bop = if op == AtomicOp::Add {
                    BinaryOp::Add
                } else {
                    BinaryOp::Sub
                };
                self.cas_loop(dtype, it, ptr, &|cx, old| {
                    cx.float_binary(bop, dtype, old, v)
                })?
            }
            AtomicOp::Max | AtomicOp::Min | AtomicOp::NanMax | AtomicOp::NanMin
                if dtype.is_float() =>
            {
                // Python's order: v replaces old when v > old (max) or v < old (min); for
                // nanmax/nanmin a NaN old is replaced too (NaN is a missing value).
                let v = *vals.first().ok_or_else(|| err("atomic operand"))?;
                let cc = if matches!(op, AtomicOp::Max | AtomicOp::NanMax) {
                    FloatCC::GreaterThan
                } else {
                    FloatCC::LessThan
                };
                let nan_aware = matches!(op, AtomicOp::NanMax | AtomicOp::NanMin);
                self.cas_loop(dtype, it, ptr, &|cx, old| {
                    let better = cx.b.ins().fcmp(cc, v, old);
                    let better = if nan_aware {
                        let nan = cx.b.ins().fcmp(FloatCC::Unordered, old, old);
                        cx.b.ins().bor(better, nan)
                    } else {
                        better
                    };
                    Ok(cx.b.ins().select(better, v, old))
                })?
            }
            AtomicOp::Inc | AtomicOp::Dec => {
                // numba's inc: old >= v ? 0 : old + 1; dec: old == 0 || old > v ? v : old - 1.
                let v = *vals.first().ok_or_else(|| err("atomic operand"))?;
                self.cas_loop(dtype, it, ptr, &|cx, old| {
                    let b = &mut cx.b;
                    Ok(if op == AtomicOp::Inc {
                        let wrap = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, old, v);
                        let next = b.ins().iadd_imm_s(old, 1);
                        let zero = b.ins().iconst(it, 0);
                        b.ins().select(wrap, zero, next)
                    } else {
                        let is_zero = b.ins().icmp_imm_s(IntCC::Equal, old, 0);
                        let above = b.ins().icmp(IntCC::UnsignedGreaterThan, old, v);
                        let reset = b.ins().bor(is_zero, above);
                        let next = b.ins().iadd_imm_s(old, -1);
                        b.ins().select(reset, v, next)
                    })
                })?
            }
            _ => {
                let rmw = match op {
                    AtomicOp::Exch => AtomicRmwOp::Xchg,
                    AtomicOp::Add => AtomicRmwOp::Add,
                    AtomicOp::Sub => AtomicRmwOp::Sub,
                    AtomicOp::And => AtomicRmwOp::And,
                    AtomicOp::Or => AtomicRmwOp::Or,
                    AtomicOp::Xor => AtomicRmwOp::Xor,
                    AtomicOp::Max if dtype.is_signed() => AtomicRmwOp::Smax,
                    AtomicOp::Max => AtomicRmwOp::Umax,
                    AtomicOp::Min if dtype.is_signed() => AtomicRmwOp::Smin,
                    AtomicOp::Min => AtomicRmwOp::Umin,
                    other => {
                        return Err(err(format!("atomic {other:?} reached the host back end")));
                    }
                };
                let v = arg(self, 0)?;
                self.b.ins().atomic_rmw(it, flags(), rmw, ptr, v)
            }
        };
        Ok(vec![self.value_of_bits(dtype, old)?])
    }

    /// An atomic `load`, `store`, `exch` or `cas` of a `complex64` element at `ptr`: the 64
    /// bits move as one, as the device's `b64` atomics move them (the real part's bits low,
    /// at the lower address); `cas` compares the bits. `vals` are the operands' parts.
    pub(super) fn complex_atomic(
        &mut self,
        op: AtomicOp,
        ptr: Value,
        vals: &[(Value, Value)],
    ) -> R<Vec<Value>> {
        let pack = |cx: &mut Self, k: usize| -> R<Value> {
            let (re, im) = *vals.get(k).ok_or_else(|| err("atomic operand"))?;
            let re = cx.b.ins().bitcast(ct::I32, flags(), re);
            let im = cx.b.ins().bitcast(ct::I32, flags(), im);
            let lo = cx.b.ins().uextend(ct::I64, re);
            let hi = cx.b.ins().uextend(ct::I64, im);
            let hi = cx.b.ins().ishl_imm_u(hi, 32);
            Ok(cx.b.ins().bor(hi, lo))
        };
        let old = match op {
            AtomicOp::Notify => return Ok(Vec::new()),
            AtomicOp::Load => self.b.ins().atomic_load(ct::I64, flags(), ptr),
            AtomicOp::Store => {
                let v = pack(self, 0)?;
                self.b.ins().atomic_store(flags(), v, ptr);
                return Ok(Vec::new());
            }
            AtomicOp::Exch => {
                let v = pack(self, 0)?;
                self.b
                    .ins()
                    .atomic_rmw(ct::I64, flags(), AtomicRmwOp::Xchg, ptr, v)
            }
            AtomicOp::Cas => {
                let expected = pack(self, 0)?;
                let new = pack(self, 1)?;
                self.b.ins().atomic_cas(flags(), ptr, expected, new)
            }
            other => {
                return Err(err(format!(
                    "atomic {other:?} of a complex64 element reached the host back end"
                )));
            }
        };
        let lo = self.b.ins().ireduce(ct::I32, old);
        let hi = self.b.ins().ushr_imm_u(old, 32);
        let hi = self.b.ins().ireduce(ct::I32, hi);
        let re = self.b.ins().bitcast(ct::F32, flags(), lo);
        let im = self.b.ins().bitcast(ct::F32, flags(), hi);
        Ok(vec![re, im])
    }

    /// An atomic `load`, `store`, `exch` or `cas` of a `complex128` element at `ptr` (the
    /// device's `.b128`, sm_90): Cranelift has no 16-byte atomics, so the runtime's
    /// `__pyd_atomic16` moves the 16 bytes under a lock that every 16-byte atomic of that
    /// address takes (`lower::host::runtime::atomic16`); `cas` compares the bits. The operands
    /// go through a stack slot: the value (or `cas`'s expected value then the new one), and
    /// the old value comes back in its first 16 bytes.
    pub(super) fn wide_complex_atomic(
        &mut self,
        op: AtomicOp,
        ptr: Value,
        vals: &[(Value, Value)],
    ) -> R<Vec<Value>> {
        let code = match op {
            AtomicOp::Notify => return Ok(Vec::new()),
            AtomicOp::Load => 0,
            AtomicOp::Store => 1,
            AtomicOp::Exch => 2,
            AtomicOp::Cas => 3,
            other => {
                return Err(err(format!(
                    "atomic {other:?} of a complex128 element reached the host back end"
                )));
            }
        };
        let slot =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 32, 4));
        let io = self.b.ins().stack_addr(ct::I64, slot, 0);
        for (k, (re, im)) in vals.iter().take(2).enumerate() {
            let at = 16 * k as i32;
            self.b.ins().store(flags(), *re, io, at);
            self.b.ins().store(flags(), *im, io, at + 8);
        }
        let code = self.b.ins().iconst(ct::I32, code);
        self.call_helper(
            "__pyd_atomic16",
            &[ct::I32, ct::I64, ct::I64],
            ct::I32,
            &[code, ptr, io],
        )?;
        if op == AtomicOp::Store {
            return Ok(Vec::new());
        }
        let re = self.b.ins().load(ct::F64, flags(), io, 0);
        let im = self.b.ins().load(ct::F64, flags(), io, 8);
        Ok(vec![re, im])
    }

    /// A read-modify-write as a compare-and-swap loop on the element's bits: `new_of`
    /// computes the new value from the old one (register forms). Returns the old bits.
    fn cas_loop(
        &mut self,
        dtype: Scalar,
        it: ct::Type,
        ptr: Value,
        new_of: &dyn Fn(&mut Self, Value) -> R<Value>,
    ) -> R<Value> {
        let first = self.b.ins().atomic_load(it, flags(), ptr);
        let (lp, done) = (self.b.create_block(), self.b.create_block());
        self.b.append_block_param(lp, it);
        self.b.append_block_param(done, it);
        self.b.ins().jump(lp, &[BlockArg::from(first)]);
        self.b.switch_to_block(lp);
        let cur = self.b.block_params(lp)[0];
        let old = self.value_of_bits(dtype, cur)?;
        let new = new_of(self, old)?;
        let new = self.bits_of(dtype, new)?;
        let seen = self.b.ins().atomic_cas(flags(), ptr, cur, new);
        let same = self.b.ins().icmp(IntCC::Equal, seen, cur);
        self.b.ins().brif(
            same,
            done,
            &[BlockArg::from(cur)],
            lp,
            &[BlockArg::from(seen)],
        );
        self.b.switch_to_block(done);
        Ok(self.b.block_params(done)[0])
    }
}
