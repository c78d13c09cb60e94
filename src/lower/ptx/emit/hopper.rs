//! Hopper's asynchronous pipeline (`device.hopper`, §18.4) as inline PTX: mbarriers with
//! transaction counts, the async-proxy fences, `elect.sync`, `setmaxnreg`, bulk copies and
//! `wgmma`. LLVM 19 has no intrinsics for most of these, so each is one `asm` call with the
//! exact instruction; the front end has checked every operand, shape and constant, and
//! `compile` retargets a program that uses sm_90a-only instructions to `.target sm_90a`.
//!
//! An mbarrier, copy end or descriptor base is an `ElementRef`; its address is taken without
//! the bounds check of `boundscheck=True` (the hardware faults on a shared address out of
//! the block's window).

use super::*;
use crate::ir::{HopperOp, Wgmma};

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    pub(super) fn hopper(
        &mut self,
        op: HopperOp,
        args: &[Handle<Expr>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let ctx = self.e.ctx;
        let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
        // Inline PTX with side effects that is not convergent (per-thread operations).
        let call =
            |me: &Self,
             text: &str,
             cons: &str,
             ret: Option<BasicTypeEnum<'ctx>>,
             a: &[BasicValueEnum<'ctx>]| { me.asm_call(text, cons, ret, a, false) };
        let truth = |me: &Self, v: Option<BasicValueEnum<'ctx>>| -> R<BasicValueEnum<'ctx>> {
            let v = v.ok_or_else(|| err("a predicate without a value"))?;
            Ok(me
                .b()
                .build_int_compare(IntPredicate::NE, v.into_int_value(), i32t.const_zero(), "")?
                .into())
        };
        let v: BasicValueEnum<'ctx> = match op {
            HopperOp::MbarrierInit => {
                let bar = self.shared_addr(args[0])?;
                let n = self.value(args[1])?;
                call(
                    self,
                    "mbarrier.init.shared::cta.b64 [$0], $1;",
                    "r,r,~{memory}",
                    None,
                    &[bar, n],
                )?;
                return Ok(None);
            }
            HopperOp::MbarrierArrive => {
                let bar = self.shared_addr(args[0])?;
                call(
                    self,
                    "mbarrier.arrive.shared::cta.b64 $0, [$1];",
                    "=l,r,~{memory}",
                    Some(i64t.into()),
                    &[bar],
                )?
                .ok_or_else(|| err("mbarrier.arrive"))?
            }
            HopperOp::MbarrierArriveExpectTx => {
                let bar = self.shared_addr(args[0])?;
                let n = self.value(args[1])?;
                call(
                    self,
                    "mbarrier.arrive.expect_tx.shared::cta.b64 $0, [$1], $2;",
                    "=l,r,r,~{memory}",
                    Some(i64t.into()),
                    &[bar, n],
                )?
                .ok_or_else(|| err("mbarrier.arrive.expect_tx"))?
            }
            HopperOp::MbarrierExpectTx => {
                let bar = self.shared_addr(args[0])?;
                let n = self.value(args[1])?;
                call(
                    self,
                    "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;",
                    "r,r,~{memory}",
                    None,
                    &[bar, n],
                )?;
                return Ok(None);
            }
            HopperOp::MbarrierTryWaitParity => {
                let bar = self.shared_addr(args[0])?;
                let phase = self.value(args[1])?;
                let r = self.try_wait_parity(bar, phase)?;
                truth(self, Some(r))?
            }
            HopperOp::MbarrierWaitParity => {
                let bar = self.shared_addr(args[0])?;
                let phase = self.value(args[1])?;
                let spin = self.new_block("mbarrier.wait");
                let done = self.new_block("mbarrier.done");
                self.b().build_unconditional_branch(spin)?;
                self.b().position_at_end(spin);
                let r = self.try_wait_parity(bar, phase)?;
                let ok = truth(self, Some(r))?.into_int_value();
                self.b().build_conditional_branch(ok, done, spin)?;
                self.b().position_at_end(done);
                return Ok(None);
            }
            HopperOp::FenceMbarrierInit => {
                call(
                    self,
                    "fence.mbarrier_init.release.cluster;",
                    "~{memory}",
                    None,
                    &[],
                )?;
                return Ok(None);
            }
            HopperOp::FenceProxyAsync => {
                call(
                    self,
                    "fence.proxy.async.shared::cta;",
                    "~{memory}",
                    None,
                    &[],
                )?;
                return Ok(None);
            }
            HopperOp::ElectOne => {
                let r = self.asm(
                    "{\n\t.reg .pred %p;\n\telect.sync _|%p, 0xffffffff;\n\tselp.u32 $0, 1, 0, %p;\n\t}",
                    "=r",
                    Some(i32t.into()),
                    &[],
                )?;
                truth(self, r)?
            }
            HopperOp::SetMaxNReg { inc, count } => {
                let dir = if inc { "inc" } else { "dec" };
                self.asm(
                    &format!("setmaxnreg.{dir}.sync.aligned.u32 {count};"),
                    "~{memory}",
                    None,
                    &[],
                )?;
                return Ok(None);
            }
            HopperOp::BulkCopyToShared => {
                let dst = self.shared_addr(args[0])?;
                let src = self.global_addr(args[1])?;
                let n = self.value(args[2])?;
                let bar = self.shared_addr(args[3])?;
                call(
                    self,
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
                    "r,l,r,r,~{memory}",
                    None,
                    &[dst, src, n, bar],
                )?;
                return Ok(None);
            }
            HopperOp::BulkCopyToGlobal => {
                let dst = self.global_addr(args[0])?;
                let src = self.shared_addr(args[1])?;
                let n = self.value(args[2])?;
                call(
                    self,
                    "cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;",
                    "l,r,r,~{memory}",
                    None,
                    &[dst, src, n],
                )?;
                return Ok(None);
            }
            HopperOp::BulkCommit => {
                call(self, "cp.async.bulk.commit_group;", "~{memory}", None, &[])?;
                return Ok(None);
            }
            HopperOp::BulkWait { n, read } => {
                let r = if read { ".read" } else { "" };
                call(
                    self,
                    &format!("cp.async.bulk.wait_group{r} {n};"),
                    "~{memory}",
                    None,
                    &[],
                )?;
                return Ok(None);
            }
            HopperOp::TmaLoad { dims, multicast } => {
                let dst = self.shared_addr(args[0])?;
                let map = self.tensor_map_addr(args[1])?;
                let bar = self.shared_addr(args[2])?;
                let d = usize::from(dims);
                let mut ops = vec![dst, map, bar];
                for &c in &args[3..3 + d] {
                    ops.push(self.value(c)?);
                }
                let coords = (0..d)
                    .map(|i| format!("${}", 3 + i))
                    .collect::<Vec<_>>()
                    .join(", ");
                let (mc, mask, mcons) = if multicast {
                    ops.push(self.value(args[3 + d])?);
                    (".multicast::cluster", format!(", ${}", 3 + d), ",h")
                } else {
                    ("", String::new(), "")
                };
                let text = format!(
                    "cp.async.bulk.tensor.{dims}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{mc} [$0], [$1, {{{coords}}}], [$2]{mask};"
                );
                let cons = format!("r,l,r{}{mcons},~{{memory}}", ",r".repeat(d));
                call(self, &text, &cons, None, &ops)?;
                return Ok(None);
            }
            HopperOp::TmaStore { dims, reduce } => {
                let map = self.tensor_map_addr(args[0])?;
                let src = self.shared_addr(args[1])?;
                let d = usize::from(dims);
                let mut ops = vec![map, src];
                for &c in &args[2..2 + d] {
                    ops.push(self.value(c)?);
                }
                let coords = (0..d)
                    .map(|i| format!("${}", 2 + i))
                    .collect::<Vec<_>>()
                    .join(", ");
                let text = if reduce {
                    format!(
                        "cp.reduce.async.bulk.tensor.{dims}d.global.shared::cta.add.tile.bulk_group [$0, {{{coords}}}], [$1];"
                    )
                } else {
                    format!(
                        "cp.async.bulk.tensor.{dims}d.global.shared::cta.tile.bulk_group [$0, {{{coords}}}], [$1];"
                    )
                };
                let cons = format!("l,r{},~{{memory}}", ",r".repeat(d));
                call(self, &text, &cons, None, &ops)?;
                return Ok(None);
            }
            HopperOp::TmaPrefetch => {
                let map = self.tensor_map_addr(args[0])?;
                call(
                    self,
                    "prefetch.tensormap [$0];",
                    "l,~{memory}",
                    None,
                    &[map],
                )?;
                return Ok(None);
            }
            HopperOp::WgmmaDesc(sw) => {
                let addr = self.shared_addr(args[0])?.into_int_value();
                let lead = self.value(args[1])?.into_int_value();
                let stride = self.value(args[2])?.into_int_value();
                let b = self.b();
                let field = |v: IntValue<'ctx>, shift: u64| -> R<IntValue<'ctx>> {
                    let v = b.build_int_z_extend(v, i64t, "")?;
                    let v = b.build_right_shift(v, i64t.const_int(4, false), false, "")?;
                    let v = b.build_and(v, i64t.const_int(0x3FFF, false), "")?;
                    Ok(b.build_left_shift(v, i64t.const_int(shift, false), "")?)
                };
                let mut d = field(addr, 0)?;
                d = b.build_or(d, field(lead, 16)?, "")?;
                d = b.build_or(d, field(stride, 32)?, "")?;
                d = b.build_or(d, i64t.const_int(sw.code() << 62, false), "")?;
                d.into()
            }
            HopperOp::SharedAddress => self.shared_addr(args[0])?,
            HopperOp::WgmmaFence => {
                self.asm("wgmma.fence.sync.aligned;", "~{memory}", None, &[])?;
                return Ok(None);
            }
            HopperOp::WgmmaCommit => {
                self.asm("wgmma.commit_group.sync.aligned;", "~{memory}", None, &[])?;
                return Ok(None);
            }
            HopperOp::WgmmaWait(n) => {
                self.asm(
                    &format!("wgmma.wait_group.sync.aligned {n};"),
                    "~{memory}",
                    None,
                    &[],
                )?;
                for pair in args.chunks(2) {
                    self.pin_accumulator(pair[0], pair[1])?;
                }
                return Ok(None);
            }
            HopperOp::Wgmma(w) => {
                self.wgmma(w, args)?;
                return Ok(None);
            }
        };
        Ok(Some(v))
    }

    /// Reads and rewrites the first `count` 32-bit registers of accumulator array `array`
    /// through an empty `asm` with side effects, placed after a `wgmma.wait_group`: later
    /// reads use its results, so none is scheduled before the wait.
    fn pin_accumulator(&mut self, array: Handle<Expr>, count: Handle<Expr>) -> R<()> {
        let Expr::Literal(crate::ir::Literal::Int(regs)) = self.f.exprs[count] else {
            return Err(err("wgmma_wait_group without a register count"));
        };
        let ctx = self.e.ctx;
        let (i64t, i8t) = (ctx.i64_type(), ctx.i8_type());
        let (reg_t, letter): (BasicTypeEnum<'ctx>, &str) = match self.ty(array) {
            Type::Array(at) if at.dtype.scalar() == Some(Scalar::Float32) => {
                (ctx.f32_type().into(), "f")
            }
            _ => (ctx.i32_type().into(), "r"),
        };
        let r = usize::try_from(regs).map_err(|_| err("a negative register count"))?;
        let desc = self.value(array)?.into_struct_value();
        let data = self
            .b()
            .build_extract_value(desc, 0, "")?
            .into_pointer_value();
        let base =
            self.b()
                .build_address_space_cast(data, ctx.ptr_type(AddressSpace::default()), "")?;
        // The array holds them: the `wgmma` that wrote it checked its length.
        let mut ptrs = Vec::new();
        let mut ins: Vec<BasicValueEnum<'ctx>> = Vec::new();
        for i in 0..r {
            // SAFETY: within the accumulator, as above.
            let p = unsafe {
                self.b()
                    .build_gep(i8t, base, &[i64t.const_int(i as u64 * 4, false)], "")?
            };
            ins.push(self.b().build_load(reg_t, p, "")?);
            ptrs.push(p);
        }
        let mut cons: Vec<String> = (0..r).map(|_| format!("={letter}")).collect();
        cons.extend((0..r).map(|i| i.to_string()));
        let ret = ctx.struct_type(&vec![reg_t; r], false);
        let out = self
            .asm_call("", &cons.join(","), Some(ret.into()), &ins, false)?
            .ok_or_else(|| err("a pinned accumulator without a value"))?
            .into_struct_value();
        for (i, p) in ptrs.into_iter().enumerate() {
            let v = self.b().build_extract_value(out, i as u32, "")?;
            self.b().build_store(p, v)?;
        }
        Ok(())
    }

    /// `mbarrier.try_wait.parity` as an int32 (1 when the phase of that parity completed).
    fn try_wait_parity(
        &self,
        bar: BasicValueEnum<'ctx>,
        phase: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        self.asm_call(
            "{\n\t.reg .pred %p;\n\tmbarrier.try_wait.parity.shared::cta.b64 %p, [$1], $2;\n\tselp.u32 $0, 1, 0, %p;\n\t}",
            "=r,r,r,~{memory}",
            Some(self.e.ctx.i32_type().into()),
            &[bar, phase],
            false,
        )?
        .ok_or_else(|| err("mbarrier.try_wait.parity"))
    }

    /// The address of an element of a shared array (an `ElementRef`), as PTX's 32-bit
    /// shared-window address.
    fn shared_addr(&mut self, r: Handle<Expr>) -> R<BasicValueEnum<'ctx>> {
        let (p, at) = self.ref_ptr(r)?;
        if at.space != MemSpace::Shared {
            return Err(err("a Hopper shared operand outside shared memory"));
        }
        Ok(self
            .b()
            .build_ptr_to_int(p, self.e.ctx.i32_type(), "")?
            .into())
    }

    /// The address of an element of a global array (an `ElementRef`), as a 64-bit integer.
    fn global_addr(&mut self, r: Handle<Expr>) -> R<BasicValueEnum<'ctx>> {
        let (p, at) = self.ref_ptr(r)?;
        if at.space != MemSpace::Global {
            return Err(err("a Hopper global operand outside global memory"));
        }
        Ok(self
            .b()
            .build_ptr_to_int(p, self.e.ctx.i64_type(), "")?
            .into())
    }

    /// The generic address of a TMA operation's tensor map: an element of a global array, or
    /// a `hopper.TensorMap` kernel parameter (`Expr::Local`), whose `byval` pointer, marked
    /// `grid_constant`, NVPTX lowers to `cvta.param` of the parameter's address.
    fn tensor_map_addr(&mut self, r: Handle<Expr>) -> R<BasicValueEnum<'ctx>> {
        let Expr::Local(l) = self.f.exprs[r] else {
            return self.global_addr(r);
        };
        if l.index() >= self.f.params || !self.f.locals[l].ty.is_tensor_map() {
            return Err(err(
                "a tensor map that is not a kernel's TensorMap parameter",
            ));
        }
        let p = self
            .llfn
            .get_nth_param(l.index() as u32)
            .ok_or_else(|| err("missing tensor map parameter"))?
            .into_pointer_value();
        Ok(self
            .b()
            .build_ptr_to_int(p, self.e.ctx.i64_type(), "")?
            .into())
    }

    /// The pointer an `ElementRef` names (in its array's address space), and the array type.
    fn ref_ptr(&mut self, r: Handle<Expr>) -> R<(PointerValue<'ctx>, ArrayType)> {
        let Expr::ElementRef { array, indices } = &self.f.exprs[r] else {
            return Err(err("a Hopper operand without an element reference"));
        };
        let (array, indices) = (*array, indices.clone());
        let span = self.f.exprs.span(r);
        let (p, at, _) = self.element_ptr_checked(array, &indices, span)?;
        Ok((p, at))
    }

    /// `wgmma.mma_async`: args [accumulator array's first element, A descriptor, B
    /// descriptor, scale_d]. The accumulator's elements are loaded, passed as tied
    /// register operands, and stored back, so a local array indexed by constants stays in
    /// registers. An array shorter than the fragment traps.
    fn wgmma(&mut self, w: Wgmma, args: &[Handle<Expr>]) -> R<()> {
        let ctx = self.e.ctx;
        let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
        let Expr::ElementRef { array, indices } = &self.f.exprs[args[0]] else {
            return Err(err("wgmma without an accumulator reference"));
        };
        let (array, indices) = (*array, indices.clone());
        // The array must hold the whole fragment: N/2 elements.
        let desc = self.value(array)?.into_struct_value();
        let len = self.dim(desc, 1, 0)?;
        let need = i64t.const_int(u64::from(w.acc_elems()), false);
        let short = self
            .b()
            .build_int_compare(IntPredicate::ULT, len, need, "")?;
        let trap = self.new_block("wgmma.short");
        let ok = self.new_block("wgmma.ok");
        self.b().build_conditional_branch(short, trap, ok)?;
        self.b().position_at_end(trap);
        let f = self.e.intrinsic("llvm.trap", &[])?;
        self.b().build_call(f, &[], "")?;
        self.b().build_unreachable()?;
        self.b().position_at_end(ok);
        let span = self.f.exprs.span(args[0]);
        let (base, _, _) = self.element_ptr_checked(array, &indices, span)?;
        let base =
            self.b()
                .build_address_space_cast(base, ctx.ptr_type(AddressSpace::default()), "")?;
        // Registers: one per float32/int32 element, one per pair of float16 elements.
        let (regs, reg_t, letter): (u32, BasicTypeEnum<'ctx>, &str) = match w.acc {
            Scalar::Float16 => (w.acc_elems() / 2, i32t.into(), "r"),
            Scalar::Int32 => (w.acc_elems(), i32t.into(), "r"),
            _ => (w.acc_elems(), ctx.f32_type().into(), "f"),
        };
        let i8t = ctx.i8_type();
        let mut ptrs = Vec::new();
        let mut ins: Vec<BasicValueEnum<'ctx>> = Vec::new();
        for i in 0..regs {
            // SAFETY: the array holds at least `acc_elems` elements (checked above), and
            // each register covers 4 bytes of them.
            let p = unsafe {
                self.b()
                    .build_gep(i8t, base, &[i64t.const_int(u64::from(i) * 4, false)], "")?
            };
            ins.push(self.b().build_load(reg_t, p, "")?);
            ptrs.push(p);
        }
        let a = self.value(args[1])?;
        let bd = self.value(args[2])?;
        let scale = self.value(args[3])?.into_int_value();
        let scale = self.b().build_int_z_extend(scale, i32t, "")?;
        let r = regs as usize;
        let dlist = (0..r)
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let tail = match w.a.family() {
            0 => format!(", 1, 1, {}, {}", u8::from(w.trans_a), u8::from(w.trans_b)),
            1 | 2 => ", 1, 1".to_string(),
            _ => String::new(),
        };
        let text = format!(
            "{{\n\t.reg .pred %p;\n\tsetp.ne.b32 %p, ${}, 0;\n\t{} {{{dlist}}}, ${}, ${}, %p{tail};\n\t}}",
            r + 2,
            w.mnemonic(),
            r,
            r + 1
        );
        let mut cons: Vec<String> = (0..r).map(|_| format!("={letter}")).collect();
        cons.extend(["l".to_string(), "l".to_string(), "r".to_string()]);
        cons.extend((0..r).map(|i| i.to_string()));
        cons.push("~{memory}".into());
        let mut operands = vec![a, bd, scale.into()];
        operands.extend(ins);
        let fields: Vec<BasicTypeEnum<'ctx>> = vec![reg_t; r];
        let ret = ctx.struct_type(&fields, false);
        let out = self
            .asm(&text, &cons.join(","), Some(ret.into()), &operands)?
            .ok_or_else(|| err("wgmma without a result"))?
            .into_struct_value();
        for (i, p) in ptrs.into_iter().enumerate() {
            let v = self.b().build_extract_value(out, i as u32, "")?;
            self.b().build_store(p, v)?;
        }
        Ok(())
    }
}
