//! Cooperative groups (`cuda.device.cg`, docs/semantics.md §17): group ranks and sizes from
//! the special registers, tile and coalesced-group collectives as `*.sync` instructions on
//! the group's member mask, `cg.reduce` (`redux.sync` on sm_80+ for 32-bit integers, shuffle
//! trees otherwise) and the grid barrier of `this_grid().sync()`.
//!
//! A group value is an `int32`: the member mask of a coalesced group, 0 for the other
//! kinds (whose members follow from the thread's position). Tiles are `n` consecutive
//! threads by linear rank in the block, so a tile lies inside one warp and its lanes are
//! `lane_id & ~(n - 1)` onwards.

use super::*;
use crate::ir::{CgOp, CgReduce};
use crate::types::GroupKind;

/// The global word of the grid barrier. Its top bit flips once per barrier and its low bits
/// return to their value, so it needs no reset between barriers or launches (CUDA's own
/// `grid.sync()` counts the same way).
pub(crate) const GRID_BARRIER_SYMBOL: &str = "__pyd_grid_barrier";

/// The shared mbarrier of `cg.barrier_arrive`/`barrier_wait` (sm_80+).
const SPLIT_BARRIER_SYMBOL: &str = "__pyd_block_mbarrier";

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    fn sreg32(&self, name: &str) -> R<IntValue<'ctx>> {
        let f = self
            .e
            .intrinsic(&format!("llvm.nvvm.read.ptx.sreg.{name}"), &[])?;
        Ok(self.call1(f, &[])?.into_int_value())
    }

    fn i32c(&self, v: u64) -> IntValue<'ctx> {
        self.e.ctx.i32_type().const_int(v, false)
    }

    /// `(z * ny + y) * nx + x` over a special register triple (`tid`/`ntid`, `ctaid`/`nctaid`).
    fn linear(&self, idx: &str, dim: &str) -> R<IntValue<'ctx>> {
        let b = self.b();
        let (x, y, z) = (
            self.sreg32(&format!("{idx}.x"))?,
            self.sreg32(&format!("{idx}.y"))?,
            self.sreg32(&format!("{idx}.z"))?,
        );
        let (nx, ny) = (
            self.sreg32(&format!("{dim}.x"))?,
            self.sreg32(&format!("{dim}.y"))?,
        );
        let zy = b.build_int_add(b.build_int_mul(z, ny, "")?, y, "")?;
        Ok(b.build_int_add(b.build_int_mul(zy, nx, "")?, x, "")?)
    }

    fn product(&self, dim: &str) -> R<IntValue<'ctx>> {
        let b = self.b();
        let (x, y, z) = (
            self.sreg32(&format!("{dim}.x"))?,
            self.sreg32(&format!("{dim}.y"))?,
            self.sreg32(&format!("{dim}.z"))?,
        );
        Ok(b.build_int_mul(b.build_int_mul(x, y, "")?, z, "")?)
    }

    /// The lanes of the calling thread's tile of `n` threads.
    fn tile_mask(&self, n: u8) -> R<IntValue<'ctx>> {
        if n >= 32 {
            return Ok(self.i32c(0xffff_ffff));
        }
        let b = self.b();
        let lane = self.sreg32("laneid")?;
        let base = b.build_and(lane, self.i32c(!(u64::from(n) - 1) & 0x1f), "")?;
        let ones = self.i32c((1u64 << n) - 1);
        Ok(b.build_left_shift(ones, base, "")?)
    }

    /// The member mask of a tile or coalesced group (`g` is the group value).
    fn member_mask(&self, kind: GroupKind, g: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        match kind {
            GroupKind::Coalesced => Ok(g),
            GroupKind::Tile(n) => self.tile_mask(n),
            GroupKind::Block | GroupKind::Grid => Err(err("warp collective on a block or grid")),
        }
    }

    fn popc32(&self, x: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let f = self
            .e
            .intrinsic("llvm.ctpop", &[self.e.ctx.i32_type().into()])?;
        Ok(self.call1(f, &[x.into()])?.into_int_value())
    }

    /// `fns.b32`: the lane of the `offset`-th member of `mask` counted from `base` (negative
    /// offsets count down), or 0xffffffff when there is none.
    fn fns(
        &self,
        mask: IntValue<'ctx>,
        base: IntValue<'ctx>,
        offset: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let i32t = self.e.ctx.i32_type();
        Ok(self
            .asm_call(
                "fns.b32 $0, $1, $2, $3;",
                "=r,r,r,r",
                Some(i32t.into()),
                &[mask.into(), base.into(), offset.into()],
                false,
            )?
            .ok_or_else(|| err("fns"))?
            .into_int_value())
    }

    pub(super) fn cg(
        &mut self,
        op: CgOp,
        vals: &[BasicValueEnum<'ctx>],
        ty: &Type,
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let i32t = self.e.ctx.i32_type();
        let i64t = self.e.ctx.i64_type();
        let g = || -> R<IntValue<'ctx>> {
            vals.first()
                .map(|v| v.into_int_value())
                .ok_or_else(|| err("group operand"))
        };
        let v: BasicValueEnum<'ctx> = match op {
            CgOp::Make(GroupKind::Coalesced) => self
                .asm("activemask.b32 $0;", "=r,~{memory}", Some(i32t.into()), &[])?
                .ok_or_else(|| err("activemask"))?,
            CgOp::Make(_) => i32t.const_zero().into(),
            CgOp::ThreadRank(kind) => match kind {
                GroupKind::Block => self.linear("tid", "ntid")?.into(),
                GroupKind::Grid => {
                    let b = self.b();
                    let blk = b.build_int_z_extend(self.linear("ctaid", "nctaid")?, i64t, "")?;
                    let size = b.build_int_z_extend(self.product("ntid")?, i64t, "")?;
                    let t = b.build_int_z_extend(self.linear("tid", "ntid")?, i64t, "")?;
                    b.build_int_add(b.build_int_mul(blk, size, "")?, t, "")?
                        .into()
                }
                GroupKind::Tile(n) => {
                    let lane = self.sreg32("laneid")?;
                    self.b()
                        .build_and(lane, self.i32c(u64::from(n) - 1), "")?
                        .into()
                }
                GroupKind::Coalesced => {
                    let lt = self.sreg32("lanemask.lt")?;
                    let m = self.b().build_and(g()?, lt, "")?;
                    self.popc32(m)?.into()
                }
            },
            CgOp::NumThreads(kind) => match kind {
                GroupKind::Block => self.product("ntid")?.into(),
                GroupKind::Grid => {
                    let b = self.b();
                    let blocks = b.build_int_z_extend(self.product("nctaid")?, i64t, "")?;
                    let size = b.build_int_z_extend(self.product("ntid")?, i64t, "")?;
                    b.build_int_mul(blocks, size, "")?.into()
                }
                GroupKind::Tile(n) => self.i32c(u64::from(n)).into(),
                GroupKind::Coalesced => self.popc32(g()?)?.into(),
            },
            CgOp::Sync(kind) => {
                match kind {
                    GroupKind::Block => {
                        let f = self.e.intrinsic("llvm.nvvm.barrier0", &[])?;
                        self.b().build_call(f, &[], "")?;
                    }
                    GroupKind::Grid => self.grid_sync()?,
                    GroupKind::Tile(_) | GroupKind::Coalesced => {
                        let m = self.member_mask(kind, g()?)?;
                        let f = self.e.intrinsic("llvm.nvvm.bar.warp.sync", &[])?;
                        self.b().build_call(f, &[m.into()], "")?;
                    }
                }
                return Ok(None);
            }
            CgOp::MetaRank(GroupKind::Tile(n)) => {
                let r = self.linear("tid", "ntid")?;
                self.b()
                    .build_int_unsigned_div(r, self.i32c(u64::from(n)), "")?
                    .into()
            }
            CgOp::MetaSize(GroupKind::Tile(n)) => {
                let s = self.product("ntid")?;
                let b = self.b();
                let s = b.build_int_add(s, self.i32c(u64::from(n) - 1), "")?;
                b.build_int_unsigned_div(s, self.i32c(u64::from(n)), "")?
                    .into()
            }
            CgOp::MetaRank(_) => i32t.const_zero().into(),
            CgOp::MetaSize(_) => self.i32c(1).into(),
            CgOp::BlockRank => self.linear("ctaid", "nctaid")?.into(),
            CgOp::NumBlocks => self.product("nctaid")?.into(),
            CgOp::Shfl(kind, shfl) => {
                let mask = self.member_mask(kind, g()?)?;
                let value = vals[1];
                let arg = vals[2].into_int_value();
                match kind {
                    GroupKind::Tile(n) => {
                        let seg = u64::from(32 - n) << 8;
                        let c = if shfl == Shfl::Up { seg } else { seg | 0x1f };
                        self.shfl_with(shfl, mask, value, arg, self.i32c(c))?
                    }
                    _ => {
                        // A coalesced group: the source is a member counted by rank.
                        let lane = self.sreg32("laneid")?;
                        let one = self.i32c(1);
                        let b = self.b();
                        let src = match shfl {
                            Shfl::Idx => {
                                let k = b.build_int_add(arg, one, "")?;
                                self.fns(mask, i32t.const_zero(), k)?
                            }
                            Shfl::Down => {
                                let k = b.build_int_add(arg, one, "")?;
                                self.fns(mask, lane, k)?
                            }
                            Shfl::Up => {
                                let k = b.build_int_add(arg, one, "")?;
                                let k = self.b().build_int_neg(k, "")?;
                                self.fns(mask, lane, k)?
                            }
                            Shfl::Xor => return Err(err("shfl_xor on a coalesced group")),
                        };
                        // No such member: the thread keeps its own value, as CUDA's do.
                        let none = self.b().build_int_compare(
                            IntPredicate::EQ,
                            src,
                            self.i32c(0xffff_ffff),
                            "",
                        )?;
                        let src = self.b().build_select(none, lane, src, "")?.into_int_value();
                        self.shfl_with(Shfl::Idx, mask, value, src, self.i32c(0x1f))?
                    }
                }
            }
            CgOp::Vote(GroupKind::Coalesced, Vote::Ballot) => {
                // Bit r for the member of rank r (CUDA's packed lanes): each member's bit is
                // distinct, so their sum is their union.
                let mask = g()?;
                let lt = self.sreg32("lanemask.lt")?;
                let rank = self.popc32(self.b().build_and(mask, lt, "")?)?;
                let b = self.b();
                let p = b.build_int_z_extend(vals[1].into_int_value(), i32t, "")?;
                let bit = b.build_left_shift(p, rank, "")?;
                self.cg_reduce(
                    GroupKind::Coalesced,
                    CgReduce::Add,
                    Scalar::UInt32,
                    mask,
                    bit.into(),
                )?
            }
            CgOp::Vote(kind, vote) => {
                let mask = self.member_mask(kind, g()?)?;
                let name = match vote {
                    Vote::All => "llvm.nvvm.vote.all.sync",
                    Vote::Any => "llvm.nvvm.vote.any.sync",
                    Vote::Uni => "llvm.nvvm.vote.uni.sync",
                    Vote::Ballot => "llvm.nvvm.vote.ballot.sync",
                };
                let f = self.e.intrinsic(name, &[])?;
                let r = self.call1(f, &[mask.into(), vals[1].into()])?;
                match (vote, kind) {
                    // A tile's ballot counts by rank in the tile (CUDA's `thread_block_tile`).
                    (Vote::Ballot, GroupKind::Tile(n)) if n < 32 => {
                        let lane = self.sreg32("laneid")?;
                        let b = self.b();
                        let base = b.build_and(lane, self.i32c(!(u64::from(n) - 1) & 0x1f), "")?;
                        let r = b.build_right_shift(r.into_int_value(), base, false, "")?;
                        b.build_and(r, self.i32c((1u64 << n) - 1), "")?.into()
                    }
                    _ => r,
                }
            }
            CgOp::BarrierArrive => {
                if self.e.sm >= 80 {
                    let bar = self.split_barrier_global();
                    let f = self.e.intrinsic("llvm.nvvm.mbarrier.arrive.shared", &[])?;
                    self.call1(f, &[bar.into()])?
                } else {
                    // Below sm_80 the arrival is only the token; the wait is a whole block
                    // barrier (a barrier counts arrivals, not threads, so an arrive and a
                    // sync of one fast warp could complete a hardware barrier alone).
                    i64t.const_zero().into()
                }
            }
            CgOp::BarrierWait => {
                if self.e.sm >= 80 {
                    let bar = self.split_barrier_global();
                    let f = self
                        .e
                        .intrinsic("llvm.nvvm.mbarrier.test.wait.shared", &[])?;
                    let spin = self.new_block("mbarrier.wait");
                    let done = self.new_block("mbarrier.done");
                    self.b().build_unconditional_branch(spin)?;
                    self.b().position_at_end(spin);
                    let ok = self
                        .call1(f, &[bar.into(), vals[1].into()])?
                        .into_int_value();
                    self.b().build_conditional_branch(ok, done, spin)?;
                    self.b().position_at_end(done);
                } else {
                    let f = self.e.intrinsic("llvm.nvvm.barrier0", &[])?;
                    self.b().build_call(f, &[], "")?;
                }
                return Ok(None);
            }
            CgOp::MemcpyAsync(bytes) => {
                let b = self.b();
                let i8t = self.e.ctx.i8_type();
                let at =
                    |v: BasicValueEnum<'ctx>, off: BasicValueEnum<'ctx>| -> R<PointerValue<'ctx>> {
                        let data = b
                            .build_extract_value(v.into_struct_value(), 0, "data")?
                            .into_pointer_value();
                        // SAFETY (of the GEP): an offset inside the array, as the language
                        // requires of the indices (docs/semantics.md §17.6).
                        Ok(unsafe { b.build_gep(i8t, data, &[off.into_int_value()], "")? })
                    };
                let dst = at(vals[0], vals[1])?;
                let src = at(vals[2], vals[3])?;
                if self.e.sm >= 80 {
                    // `.cg` (L2 only) takes only 16 bytes; `.ca` takes 4, 8 and 16.
                    let level = if bytes == 16 { "cg" } else { "ca" };
                    self.asm_call(
                        &format!("cp.async.{level}.shared.global [$0], [$1], {bytes};"),
                        "l,l,~{memory}",
                        None,
                        &[dst.into(), src.into()],
                        false,
                    )?;
                } else {
                    let t: BasicTypeEnum<'ctx> = match bytes {
                        4 => self.e.ctx.i32_type().into(),
                        8 => self.e.ctx.i64_type().into(),
                        _ => self.e.ctx.i64_type().vec_type(2).into(),
                    };
                    let v = self.b().build_load(t, src, "")?;
                    if let Some(i) = v.as_instruction_value() {
                        i.set_alignment(u32::from(bytes))
                            .map_err(|e| err(e.to_string()))?;
                    }
                    let st = self.b().build_store(dst, v)?;
                    st.set_alignment(u32::from(bytes))
                        .map_err(|e| err(e.to_string()))?;
                }
                return Ok(None);
            }
            CgOp::AsyncCommit | CgOp::AsyncWait(_) | CgOp::AsyncWaitAll => {
                if self.e.sm >= 80 {
                    let text = match op {
                        CgOp::AsyncCommit => "cp.async.commit_group;".to_string(),
                        CgOp::AsyncWait(n) => format!("cp.async.wait_group {n};"),
                        _ => "cp.async.wait_all;".to_string(),
                    };
                    self.asm_call(&text, "~{memory}", None, &[], false)?;
                }
                return Ok(None);
            }
            CgOp::Reduce(kind, red) => {
                let mask = self.member_mask(kind, g()?)?;
                let Type::Scalar(s) = ty else {
                    return Err(err("cg.reduce of a non-number"));
                };
                self.cg_reduce(kind, red, *s, mask, vals[1])?
            }
        };
        Ok(Some(v))
    }

    /// The block's split barrier: an mbarrier in shared memory (sm_80+).
    fn split_barrier_global(&self) -> PointerValue<'ctx> {
        let i64t = self.e.ctx.i64_type();
        let g = self
            .e
            .module
            .get_global(SPLIT_BARRIER_SYMBOL)
            .unwrap_or_else(|| {
                let g = self.e.module.add_global(
                    i64t,
                    Some(AddressSpace::from(3u16)),
                    SPLIT_BARRIER_SYMBOL,
                );
                g.set_initializer(&i64t.get_undef());
                g.set_linkage(Linkage::Internal);
                g.set_alignment(8);
                g
            });
        g.as_pointer_value()
    }

    /// The kernel prologue of a program that uses `cg.barrier_arrive` on sm_80+: the block's
    /// first thread initializes the mbarrier for every thread of the block, then a block
    /// barrier publishes it.
    pub(super) fn init_split_barrier(&mut self) -> R<()> {
        if self.e.sm < 80 {
            return Ok(());
        }
        let i32t = self.e.ctx.i32_type();
        let bar = self.split_barrier_global();
        let t = self.linear("tid", "ntid")?;
        let first = self
            .b()
            .build_int_compare(IntPredicate::EQ, t, i32t.const_zero(), "")?;
        let init = self.new_block("mbarrier.init");
        let go = self.new_block("body");
        self.b().build_conditional_branch(first, init, go)?;
        self.b().position_at_end(init);
        let n = self.product("ntid")?;
        let f = self.e.intrinsic("llvm.nvvm.mbarrier.init.shared", &[])?;
        self.b().build_call(f, &[bar.into(), n.into()], "")?;
        self.b().build_unconditional_branch(go)?;
        self.b().position_at_end(go);
        let b0 = self.e.intrinsic("llvm.nvvm.barrier0", &[])?;
        self.b().build_call(b0, &[], "")?;
        Ok(())
    }

    /// One step of a reduction.
    fn combine(
        &self,
        red: CgReduce,
        s: Scalar,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let bld = self.b();
        if s.is_float() {
            let (a, b) = (a.into_float_value(), b.into_float_value());
            return Ok(match red {
                CgReduce::Add => bld.build_float_add(a, b, "")?.into(),
                CgReduce::Min | CgReduce::Max => {
                    let name = if red == CgReduce::Min {
                        "llvm.minnum"
                    } else {
                        "llvm.maxnum"
                    };
                    let f = self.e.intrinsic(name, &[a.get_type().into()])?;
                    self.call1(f, &[a.into(), b.into()])?
                }
            });
        }
        let (a, b) = (a.into_int_value(), b.into_int_value());
        Ok(match red {
            CgReduce::Add => bld.build_int_add(a, b, "")?.into(),
            CgReduce::Min | CgReduce::Max => {
                let p = match (red, s.is_signed()) {
                    (CgReduce::Min, true) => IntPredicate::SLT,
                    (CgReduce::Min, false) => IntPredicate::ULT,
                    (_, true) => IntPredicate::SGT,
                    (_, false) => IntPredicate::UGT,
                };
                let c = bld.build_int_compare(p, a, b, "")?;
                bld.build_select(c, a, b, "")?
            }
        })
    }

    fn cg_reduce(
        &mut self,
        kind: GroupKind,
        red: CgReduce,
        s: Scalar,
        mask: IntValue<'ctx>,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        if kind == GroupKind::Tile(1) {
            return Ok(v);
        }
        // sm_80's `redux.sync` reduces 32-bit integers over any member mask in one instruction.
        if self.e.sm >= 80 && !s.is_float() && s.bits() == 32 {
            let op = match red {
                CgReduce::Add => "add",
                CgReduce::Min => "min",
                CgReduce::Max => "max",
            };
            let t = if s.is_signed() { "s32" } else { "u32" };
            let i32t = self.e.ctx.i32_type();
            return self
                .asm(
                    &format!("redux.sync.{op}.{t} $0, $1, $2;"),
                    "=r,r,r",
                    Some(i32t.into()),
                    &[v, mask.into()],
                )?
                .ok_or_else(|| err("redux.sync"));
        }
        let full = self.i32c(0x1f);
        match kind {
            GroupKind::Tile(n) => {
                // A butterfly inside the aligned tile: lane ^ off stays in it for off < n.
                let mut acc = v;
                let mut off = u64::from(n) / 2;
                while off >= 1 {
                    let other = self.shfl_with(Shfl::Xor, mask, acc, self.i32c(off), full)?;
                    acc = self.combine(red, s, acc, other)?;
                    off /= 2;
                }
                Ok(acc)
            }
            _ => {
                // A coalesced group: a tree over ranks (rank r takes rank r + off when
                // r % 2off == 0), then the first member's total to every member.
                let lane = self.sreg32("laneid")?;
                let lt = self.sreg32("lanemask.lt")?;
                let rank = self.popc32(self.b().build_and(mask, lt, "")?)?;
                let mut acc = v;
                let mut off = 1u64;
                while off < 32 {
                    let src = self.fns(mask, lane, self.i32c(off + 1))?;
                    let b = self.b();
                    let none =
                        b.build_int_compare(IntPredicate::EQ, src, self.i32c(0xffff_ffff), "")?;
                    let src = b.build_select(none, lane, src, "")?.into_int_value();
                    let other = self.shfl_with(Shfl::Idx, mask, acc, src, full)?;
                    let b = self.b();
                    let low = b.build_and(rank, self.i32c(2 * off - 1), "")?;
                    let lead = b.build_int_compare(IntPredicate::EQ, low, self.i32c(0), "")?;
                    let has = b.build_not(none, "")?;
                    let take = b.build_and(lead, has, "")?;
                    let sum = self.combine(red, s, acc, other)?;
                    acc = self.b().build_select(take, sum, acc, "")?;
                    off *= 2;
                }
                let first = self.fns(mask, self.i32c(0), self.i32c(1))?;
                self.shfl_with(Shfl::Idx, mask, acc, first, full)
            }
        }
    }

    /// `this_grid().sync()`: a block barrier; the block's first thread then adds to the
    /// global barrier word (block 0 adds `0x80000000 - (blocks - 1)`, the others 1, so the
    /// top bit flips when all have arrived) and spins until the top bit differs from what it
    /// read; a second block barrier releases the block. Release and acquire at `.gpu` scope
    /// order every thread's writes before the barrier with every read after it.
    fn grid_sync(&mut self) -> R<()> {
        let i32t = self.e.ctx.i32_type();
        let bar = self.e.intrinsic("llvm.nvvm.barrier0", &[])?;
        self.b().build_call(bar, &[], "")?;
        let g = match self.e.module.get_global(GRID_BARRIER_SYMBOL) {
            Some(g) => g,
            None => {
                let g = self.e.module.add_global(
                    i32t,
                    Some(AddressSpace::from(1u16)),
                    GRID_BARRIER_SYMBOL,
                );
                g.set_initializer(&i32t.const_zero());
                g.set_linkage(Linkage::Internal);
                g.set_alignment(4);
                g
            }
        };
        let ptr = g.as_pointer_value();
        let first = {
            let t = self.linear("tid", "ntid")?;
            self.b()
                .build_int_compare(IntPredicate::EQ, t, i32t.const_zero(), "")?
        };
        let arrive = self.new_block("grid.arrive");
        let spin = self.new_block("grid.spin");
        let done = self.new_block("grid.done");
        self.b().build_conditional_branch(first, arrive, done)?;
        self.b().position_at_end(arrive);
        let blocks = self.product("nctaid")?;
        let is_zero = {
            let r = self.linear("ctaid", "nctaid")?;
            self.b()
                .build_int_compare(IntPredicate::EQ, r, i32t.const_zero(), "")?
        };
        let b = self.b();
        let lead = b.build_int_sub(self.i32c(0x8000_0001), blocks, "")?;
        let inc = b.build_select(is_zero, lead, self.i32c(1), "")?;
        self.asm_call("fence.acq_rel.gpu;", "~{memory}", None, &[], false)?;
        let old = self
            .asm_call(
                "atom.add.release.gpu.global.u32 $0, [$1], $2;",
                "=r,l,r,~{memory}",
                Some(i32t.into()),
                &[ptr.into(), inc],
                false,
            )?
            .ok_or_else(|| err("grid barrier atom"))?
            .into_int_value();
        self.b().build_unconditional_branch(spin)?;
        self.b().position_at_end(spin);
        let now = self
            .asm_call(
                "ld.acquire.gpu.global.u32 $0, [$1];",
                "=r,l,~{memory}",
                Some(i32t.into()),
                &[ptr.into()],
                false,
            )?
            .ok_or_else(|| err("grid barrier load"))?
            .into_int_value();
        let b = self.b();
        let x = b.build_xor(old, now, "")?;
        let flipped = b.build_and(x, self.i32c(0x8000_0000), "")?;
        let go = b.build_int_compare(IntPredicate::NE, flipped, i32t.const_zero(), "")?;
        b.build_conditional_branch(go, done, spin)?;
        self.b().position_at_end(done);
        self.b().build_call(bar, &[], "")?;
        Ok(())
    }
}
