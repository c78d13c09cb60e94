//! Hopper's mbarriers and bulk copies in a kernel run whole on the CPU (docs/semantics.md
//! §18.4, §22.1). An mbarrier is its `uint64` word of shared memory in a layout of the CPU's
//! own (the device's is opaque too; `lower::host::runtime`'s `__pyd_mbar_*` functions
//! read and change it): the current phase's parity, the arrivals it still waits for, the
//! arrival count it was initialized with, and its pending transaction bytes. A phase
//! completes when both its arrivals and its transactions are done. A bulk copy is done when
//! it is issued (the bytes are copied, then retired on its mbarrier), so `bulk_commit_group`
//! and `bulk_wait_group` have nothing in flight; waiting for a phase polls, letting the
//! block's other threads run. `elect_one()` elects the lowest lane of the warp that reaches
//! it together (a ballot), the fences are full fences, `setmaxnreg` changes nothing, and
//! `shared_address` is the element's offset in the block's shared memory. TMA copies
//! (`runtime::cpu_tma`) and `wgmma` (`runtime::cpu_wgmma`) are done when issued, by the
//! runtime; `wgmma_desc` builds PTX's matrix descriptor of the shared window's offset.

use super::super::kernel::{WarpOp, offset};
use super::*;
use crate::ir::{Expr, HopperOp};

impl FnCx<'_, '_> {
    /// A Hopper operation of a kernel on the CPU.
    pub(super) fn hopper(
        &mut self,
        h: Handle<Expr>,
        op: HopperOp,
        args: &[Handle<Expr>],
    ) -> R<Vec<Value>> {
        let arg = |k: usize| -> R<Handle<Expr>> {
            args.get(k)
                .copied()
                .ok_or_else(|| err("missing operand of a hopper operation"))
        };
        let u32_of = |cx: &mut Self, k: usize| -> R<Value> {
            let a = arg(k)?;
            let signed = cx.ty(a).as_scalar().is_some_and(Scalar::is_signed);
            let v = cx.scalar(a)?;
            Ok(if cx.b.func.dfg.value_type(v) == ct::I64 {
                cx.b.ins().ireduce(ct::I32, v)
            } else if cx.b.func.dfg.value_type(v) == ct::I32 {
                v
            } else if signed {
                cx.b.ins().sextend(ct::I32, v)
            } else {
                cx.b.ins().uextend(ct::I32, v)
            })
        };
        match op {
            HopperOp::MbarrierInit => {
                let bar = self.scalar(arg(0)?)?;
                let n = u32_of(self, 1)?;
                self.call_helper("__pyd_mbar_init", &[ct::I64, ct::I32], ct::I32, &[bar, n])?;
                Ok(Vec::new())
            }
            HopperOp::MbarrierArrive
            | HopperOp::MbarrierArriveExpectTx
            | HopperOp::MbarrierExpectTx => {
                let bar = self.scalar(arg(0)?)?;
                let tx = if op == HopperOp::MbarrierArrive {
                    self.b.ins().iconst(ct::I32, 0)
                } else {
                    u32_of(self, 1)?
                };
                let arrive = self
                    .b
                    .ins()
                    .iconst(ct::I32, i64::from(op != HopperOp::MbarrierExpectTx));
                let state = self.call_helper(
                    "__pyd_mbar_arrive",
                    &[ct::I64, ct::I32, ct::I32],
                    ct::I64,
                    &[bar, tx, arrive],
                )?;
                Ok(if op == HopperOp::MbarrierExpectTx {
                    Vec::new()
                } else {
                    vec![state]
                })
            }
            HopperOp::MbarrierTryWaitParity | HopperOp::MbarrierWaitParity => {
                let bar = self.scalar(arg(0)?)?;
                let parity = u32_of(self, 1)?;
                let test = |cx: &mut Self| -> R<Value> {
                    cx.call_helper(
                        "__pyd_mbar_done",
                        &[ct::I64, ct::I32],
                        ct::I32,
                        &[bar, parity],
                    )
                };
                if op == HopperOp::MbarrierTryWaitParity {
                    // One look; when the phase is still open, the others run first (the
                    // device's try_wait may suspend the thread a while) and it looks again.
                    let (wait, done) = (self.b.create_block(), self.b.create_block());
                    self.b.append_block_param(done, ct::I32);
                    let first = test(self)?;
                    self.b
                        .ins()
                        .brif(first, done, &[BlockArg::from(first)], wait, &[]);
                    self.b.switch_to_block(wait);
                    self.poll()?;
                    let again = test(self)?;
                    self.b.ins().jump(done, &[BlockArg::from(again)]);
                    self.b.switch_to_block(done);
                    let r = self.b.block_params(done)[0];
                    return Ok(vec![self.b.ins().icmp_imm_s(IntCC::NotEqual, r, 0)]);
                }
                let (lp, wait, done) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().jump(lp, &[]);
                self.b.switch_to_block(lp);
                let ok = test(self)?;
                self.b.ins().brif(ok, done, &[], wait, &[]);
                self.b.switch_to_block(wait);
                self.poll()?;
                self.b.ins().jump(lp, &[]);
                self.b.switch_to_block(done);
                Ok(Vec::new())
            }
            HopperOp::FenceMbarrierInit | HopperOp::FenceProxyAsync => {
                self.b.ins().fence();
                Ok(Vec::new())
            }
            // `prefetch.tensormap` is a cache hint: nothing to do on the CPU.
            HopperOp::SetMaxNReg { .. }
            | HopperOp::BulkCommit
            | HopperOp::BulkWait { .. }
            | HopperOp::TmaPrefetch => Ok(Vec::new()),
            HopperOp::ElectOne => {
                let mask = self.b.ins().iconst(ct::I32, -1);
                let one = self.b.ins().iconst(ct::I64, 1);
                let ballot = self.warp(WarpOp::Ballot, mask, Some(one), None, 0, h)?;
                let low = self.b.ins().ctz(ballot);
                let lane = self.ctx_u32(offset::LANE)?;
                let lane = self.b.ins().uextend(ct::I64, lane);
                Ok(vec![self.b.ins().icmp(IntCC::Equal, low, lane)])
            }
            HopperOp::SharedAddress => {
                let addr = self.scalar(arg(0)?)?;
                let ctx = self.ctx()?;
                let base = self
                    .b
                    .ins()
                    .load(ct::I64, flags(), ctx, offset::SHARED as i32);
                let off = self.b.ins().isub(addr, base);
                Ok(vec![self.b.ins().ireduce(ct::I32, off)])
            }
            HopperOp::BulkCopyToShared | HopperOp::BulkCopyToGlobal => {
                let n = u32_of(self, 2)?;
                let n = self.b.ins().uextend(ct::I64, n);
                let dst = self.byte_range(arg(0)?, n)?;
                let src = self.byte_range(arg(1)?, n)?;
                // A copy whose bytes do not all lie in their arrays is skipped and reported
                // at the first reference that leaves its array.
                let ok = self.b.ins().band(dst.1, src.1);
                let (copy, cont) = (self.b.create_block(), self.b.create_block());
                self.b.ins().brif(ok, copy, &[], cont, &[]);
                self.b.switch_to_block(copy);
                self.call_helper(
                    "__pyd_bulk_copy",
                    &[ct::I64, ct::I64, ct::I64],
                    ct::I32,
                    &[dst.0, src.0, n],
                )?;
                self.b.ins().jump(cont, &[]);
                self.b.switch_to_block(cont);
                let bad_dst = self.b.ins().bxor_imm_u(dst.1, 1);
                self.record_if(bad_dst, dst.2)?;
                let bad_src = self.b.ins().bxor_imm_u(src.1, 1);
                self.record_if(bad_src, src.2)?;
                if op == HopperOp::BulkCopyToShared {
                    // Its bytes retire on the mbarrier (all of them: a skipped copy too, so
                    // that the waiters go on to report it rather than hang).
                    let bar = self.scalar(arg(3)?)?;
                    let n32 = self.b.ins().ireduce(ct::I32, n);
                    self.call_helper(
                        "__pyd_mbar_complete_tx",
                        &[ct::I64, ct::I32],
                        ct::I32,
                        &[bar, n32],
                    )?;
                }
                Ok(Vec::new())
            }
            HopperOp::WgmmaFence | HopperOp::WgmmaCommit | HopperOp::WgmmaWait(_) => {
                // Each `wgmma` is done when it is issued: nothing is in flight.
                Ok(Vec::new())
            }
            HopperOp::WgmmaDesc(swizzle) => {
                // PTX's matrix descriptor of the element's offset in the shared window.
                let addr = self.scalar(arg(0)?)?;
                let ctx = self.ctx()?;
                let base = self
                    .b
                    .ins()
                    .load(ct::I64, flags(), ctx, offset::SHARED as i32);
                let off = self.b.ins().isub(addr, base);
                let lbo = u32_of(self, 1)?;
                let sbo = u32_of(self, 2)?;
                let mut desc = self.b.ins().iconst(ct::I64, (swizzle.code() << 62) as i64);
                for (k, v) in [(0, off), (16, lbo), (32, sbo)] {
                    let v = if self.b.func.dfg.value_type(v) == ct::I64 {
                        v
                    } else {
                        self.b.ins().uextend(ct::I64, v)
                    };
                    let f = self.b.ins().ushr_imm_u(v, 4);
                    let f = self.b.ins().band_imm_u(f, 0x3fff);
                    let f = self.b.ins().ishl_imm_u(f, k);
                    desc = self.b.ins().bor(desc, f);
                }
                Ok(vec![desc])
            }
            HopperOp::Wgmma(w) => {
                // [accumulator element, A descriptor, B descriptor, scale_d]
                let code = |i: crate::ir::WgmmaInput| -> i64 {
                    use crate::ir::WgmmaInput as I;
                    match i {
                        I::F16 => 0,
                        I::BF16 => 1,
                        I::TF32 => 2,
                        I::E4M3 => 3,
                        I::E5M2 => 4,
                        I::S8 => 5,
                        I::U8 => 6,
                    }
                };
                let acc_kind = match w.acc {
                    Scalar::Float16 => 1,
                    Scalar::Int32 => 2,
                    _ => 0,
                };
                let info = i64::from(w.n) | code(w.a) << 9 | code(w.b) << 12 | acc_kind << 15;
                let acc = self.scalar(arg(0)?)?;
                let da = self.scalar(arg(1)?)?;
                let db = self.scalar(arg(2)?)?;
                let scale = self.int_operand(arg(3)?, ct::I32)?;
                let info = self.b.ins().iconst(ct::I32, info);
                let layout = self
                    .kernel
                    .ok_or_else(|| err("wgmma outside a kernel"))?
                    .dynamic_offset();
                let dynamic = self.ctx_u32(offset::DYNAMIC_SHARED_SIZE)?;
                let dynamic = self.b.ins().uextend(ct::I64, dynamic);
                let bytes = self.b.ins().iadd_imm_s(dynamic, layout as i64);
                let ctx = self.ctx()?;
                let status = self.call_helper(
                    super::super::kernel::WGMMA_SYMBOL,
                    &[
                        ct::I64,
                        ct::I64,
                        ct::I64,
                        ct::I64,
                        ct::I32,
                        ct::I32,
                        ct::I64,
                    ],
                    ct::I32,
                    &[ctx, acc, da, db, info, scale, bytes],
                )?;
                let bad = self.b.ins().icmp_imm_s(IntCC::NotEqual, status, 0);
                let site = self.site(h);
                self.record_if(bad, site)?;
                Ok(Vec::new())
            }
            HopperOp::TmaLoad { dims, multicast } => {
                // [dst, map, mbarrier, coordinates..., mask?]
                let mask = if multicast {
                    self.int_operand(arg(3 + usize::from(dims))?, ct::I32)?
                } else {
                    self.b.ins().iconst(ct::I32, 0)
                };
                self.tma(
                    h,
                    0,
                    arg(0)?,
                    arg(1)?,
                    Some(arg(2)?),
                    &args[3..3 + usize::from(dims)],
                    mask,
                )?;
                Ok(Vec::new())
            }
            HopperOp::TmaStore { dims, reduce } => {
                // [map, src, coordinates...]
                let zero = self.b.ins().iconst(ct::I32, 0);
                let op = if reduce { 2 } else { 1 };
                self.tma(
                    h,
                    op,
                    arg(1)?,
                    arg(0)?,
                    None,
                    &args[2..2 + usize::from(dims)],
                    zero,
                )?;
                Ok(Vec::new())
            }
        }
    }

    /// A TMA copy (`runtime::cpu_tma::tma`, op 0 load, 1 store, 2 reduce-add) between the
    /// box of the tensor map at `map` and the shared array element `smem`; a copy the
    /// runtime refuses (not a CPU tensor map, a box that does not fit in the shared array,
    /// an element type reduce-add does not add) is reported at the call.
    #[allow(clippy::too_many_arguments)]
    fn tma(
        &mut self,
        h: Handle<Expr>,
        op: i64,
        smem: Handle<Expr>,
        map: Handle<Expr>,
        bar: Option<Handle<Expr>>,
        coords: &[Handle<Expr>],
        mask: Value,
    ) -> R<()> {
        let Expr::ElementRef { array, .. } = &self.f.exprs[smem] else {
            return Err(err("a TMA copy without a shared element reference"));
        };
        let array = *array;
        let s = self.scalar(smem)?;
        let (_, limit) = self.extent(array)?;
        let m = self.tensor_map_addr(map)?;
        let bar = match bar {
            Some(b) => self.scalar(b)?,
            None => self.b.ins().iconst(ct::I64, 0),
        };
        let mut c = Vec::new();
        for k in 0..5 {
            c.push(match coords.get(k) {
                Some(&e) => self.int_operand(e, ct::I32)?,
                None => self.b.ins().iconst(ct::I32, 0),
            });
        }
        let ctx = self.ctx()?;
        let op = self.b.ins().iconst(ct::I32, op);
        let mut params = vec![ct::I64, ct::I32, ct::I64, ct::I64, ct::I64, ct::I64];
        params.extend([ct::I32; 6]);
        let mut vals = vec![ctx, op, s, limit, m, bar];
        vals.extend(c);
        vals.push(mask);
        let status = self.call_helper(super::super::kernel::TMA_SYMBOL, &params, ct::I32, &vals)?;
        let bad = self.b.ins().icmp_imm_s(IntCC::NotEqual, status, 0);
        let code = self.site(h);
        self.record_if(bad, code)
    }

    /// The address of a TMA copy's tensor map: an element of a global array, or a
    /// `hopper.TensorMap` parameter (a map by value, §18.4), whose sixteen words are stored
    /// to a 128-byte stack slot aligned to 64 for the runtime to read.
    fn tensor_map_addr(&mut self, map: Handle<Expr>) -> R<Value> {
        let Expr::Local(l) = self.f.exprs[map] else {
            return self.scalar(map);
        };
        if !self.f.locals[l].ty.is_tensor_map() {
            return Err(err(
                "a tensor map that is neither an element nor a TensorMap",
            ));
        }
        let words = self.expr(map)?;
        if words.len() != 16 {
            return Err(err("a TensorMap of other than sixteen words"));
        }
        let slot =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 128, 6));
        let p = self.b.ins().stack_addr(ct::I64, slot, 0);
        for (i, w) in words.into_iter().enumerate() {
            self.b.ins().store(flags(), w, p, (i * 8) as i32);
        }
        Ok(p)
    }

    /// The address of element reference `r` and whether `n` bytes from it lie inside its
    /// array, with the error code of the reference.
    fn byte_range(&mut self, r: Handle<Expr>, n: Value) -> R<(Value, Value, i64)> {
        let Expr::ElementRef { array, indices } = &self.f.exprs[r] else {
            return Err(err("a bulk copy without an element reference"));
        };
        let (array, indices) = (*array, indices.clone());
        let span = self.f.exprs.span(r);
        let (addr, ok, code, _) = self.element(array, &indices, span)?;
        let (_, hi) = self.extent(array)?;
        let end = self.b.ins().iadd(addr, n);
        let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, hi);
        let ok = self.b.ins().band(ok, fits);
        Ok((addr, ok, code))
    }

    /// Records error `code` when `bad` (an `i8` 0/1) is 1.
    fn record_if(&mut self, bad: Value, code: i64) -> R<()> {
        let (rec, cont) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(bad, rec, &[], cont, &[]);
        self.b.switch_to_block(rec);
        self.record_error(code)?;
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(cont);
        Ok(())
    }
}
