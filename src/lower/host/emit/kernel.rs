//! The device intrinsics of a kernel run whole on the CPU (`super::super::kernel`): thread
//! positions are loads from the thread's context, barriers and warp collectives are calls
//! of the runtime (which switches fibers), fences are Cranelift fences, and shared arrays
//! are descriptors into the block's shared memory. One arm per intrinsic; what each means
//! is the PTX back end's (`lower::ptx::emit::intrinsics`, `groups`), restated only where a
//! value is computed here (tile masks, ranks).

use super::super::kernel::{
    BARRIER_SYMBOL, BarrierKind, RACE_SYMBOL, RANDOM_SYMBOLS, WARP_SYMBOL, WarpOp, offset,
};
use super::*;
use crate::ir::{Axis, CgOp, Shfl, Vote};
use crate::types::GroupKind;

fn axis_index(a: Axis) -> i32 {
    match a {
        Axis::X => 0,
        Axis::Y => 1,
        Axis::Z => 2,
    }
}

impl FnCx<'_, '_> {
    /// Whether a kernel lowers `op` here rather than as the host does.
    pub(super) fn is_device_op(&self, op: Intrinsic) -> bool {
        matches!(op, Intrinsic::Rand | Intrinsic::Randn) || super::super::check::device_only(op)
    }

    pub(super) fn ctx(&self) -> R<Value> {
        self.error_word.ok_or_else(|| err("thread context"))
    }

    /// A `u32` field of the thread's context, at byte offset `off`.
    pub(super) fn ctx_u32(&mut self, off: usize) -> R<Value> {
        let c = self.ctx()?;
        let off = i32::try_from(off).map_err(|_| err("context offset"))?;
        Ok(self.b.ins().load(ct::I32, flags(), c, off))
    }

    /// In a kernel run whole on the CPU, the race check of an access of `size` bytes at
    /// `addr` to an array in `space` (docs/semantics.md §22): when the launch checks for
    /// races (the context's `race` word), a call of [`RACE_SYMBOL`] before the access.
    /// Nothing for per-thread and constant memory, nor outside CPU kernels.
    pub(super) fn race_check(
        &mut self,
        space: crate::types::MemSpace,
        addr: Value,
        size: u64,
        write: bool,
        code: i64,
    ) -> R<()> {
        use crate::types::MemSpace;
        let space = match space {
            MemSpace::Global => 0,
            MemSpace::Shared => 1,
            _ => return Ok(()),
        };
        if self.kernel.is_none() {
            return Ok(());
        }
        let ctx = self.ctx()?;
        let off = i32::try_from(offset::RACE).map_err(|_| err("context offset"))?;
        let on = self.b.ins().load(ct::I64, flags(), ctx, off);
        let (check, cont) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(on, check, &[], cont, &[]);
        self.b.switch_to_block(check);
        let size = self.b.ins().iconst(ct::I32, size as i64);
        let write = self.b.ins().iconst(ct::I32, i64::from(write));
        let space = self.b.ins().iconst(ct::I32, space);
        let site = self.b.ins().iconst(ct::I64, code);
        self.call_helper(
            RACE_SYMBOL,
            &[ct::I64, ct::I64, ct::I32, ct::I32, ct::I32, ct::I64],
            ct::I32,
            &[ctx, addr, size, write, space, site],
        )?;
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(cont);
        Ok(())
    }

    /// `line << 32 | column` of expression `h`.
    pub(super) fn site(&self, h: Handle<Expr>) -> i64 {
        let (l, c) = self.program.file.line_col(self.f.exprs.span(h).start);
        ((l as i64) << 32) | c as i64
    }

    /// An integer (or bool) value resized to `t`, extended by its signedness.
    fn resize(&mut self, v: Value, signed: bool, t: ct::Type) -> Value {
        let from = self.b.func.dfg.value_type(v);
        if from == t {
            v
        } else if from.bits() > t.bits() {
            self.b.ins().ireduce(t, v)
        } else if signed {
            self.b.ins().sextend(t, v)
        } else {
            self.b.ins().uextend(t, v)
        }
    }

    /// Operand `h` (an integer, bool or warp mask) as an integer of type `t`.
    pub(super) fn int_operand(&mut self, h: Handle<Expr>, t: ct::Type) -> R<Value> {
        let signed = self.ty(h).as_scalar().is_some_and(Scalar::is_signed);
        let v = self.scalar(h)?;
        if self.b.func.dfg.value_type(v).is_float() {
            return Err(err("an integer operand was a float"));
        }
        Ok(self.resize(v, signed, t))
    }

    /// An `i32`/`i64` result as a value of the expression's type `ty` (an integer, a bool
    /// or a warp mask).
    fn fit(&mut self, v: Value, ty: &Type) -> R<Vec<Value>> {
        let leaf = leaves(ty)
            .and_then(|l| l.first().copied())
            .ok_or_else(|| err("result type of a device intrinsic"))?;
        let t = reg_type(leaf.scalar);
        Ok(vec![if leaf.scalar == Scalar::Bool {
            self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0)
        } else if t.is_float() {
            return Err(err("a float result of an integer intrinsic"));
        } else {
            self.resize(v, false, t)
        }])
    }

    /// Lets the other threads run before an atomic `wait` looks at its value again
    /// ([`BarrierKind::Poll`]).
    pub(super) fn poll(&mut self) -> R<()> {
        let ctx = self.ctx()?;
        let k = self.b.ins().iconst(ct::I32, BarrierKind::Poll as i64);
        let p = self.b.ins().iconst(ct::I32, 0);
        let site = self.b.ins().iconst(ct::I64, 0);
        self.call_helper(
            BARRIER_SYMBOL,
            &[ct::I64, ct::I32, ct::I32, ct::I64],
            ct::I32,
            &[ctx, k, p, site],
        )?;
        Ok(())
    }

    fn barrier(&mut self, kind: BarrierKind, pred: Option<Value>, h: Handle<Expr>) -> R<Value> {
        let ctx = self.ctx()?;
        let k = self.b.ins().iconst(ct::I32, kind as i64);
        let p = match pred {
            Some(p) => p,
            None => self.b.ins().iconst(ct::I32, 0),
        };
        let site = self.site(h);
        let site = self.b.ins().iconst(ct::I64, site);
        self.call_helper(
            BARRIER_SYMBOL,
            &[ct::I64, ct::I32, ct::I32, ct::I64],
            ct::I32,
            &[ctx, k, p, site],
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn warp(
        &mut self,
        op: WarpOp,
        mask: Value,
        value: Option<Value>,
        arg: Option<Value>,
        c: i64,
        h: Handle<Expr>,
    ) -> R<Value> {
        let c = self.b.ins().iconst(ct::I32, c);
        self.warp_with(op, mask, value, arg, c, h)
    }

    /// [`Self::warp`] with the third operand `c` a run-time `i32` (a shuffle's segment
    /// and clamp, from cupyx's `width=`).
    fn warp_with(
        &mut self,
        op: WarpOp,
        mask: Value,
        value: Option<Value>,
        arg: Option<Value>,
        c: Value,
        h: Handle<Expr>,
    ) -> R<Value> {
        let ctx = self.ctx()?;
        let o = self.b.ins().iconst(ct::I32, op as i64);
        let v = match value {
            Some(v) => v,
            None => self.b.ins().iconst(ct::I64, 0),
        };
        let a = match arg {
            Some(a) => a,
            None => self.b.ins().iconst(ct::I32, 0),
        };
        let site = self.site(h);
        let site = self.b.ins().iconst(ct::I64, site);
        self.call_helper(
            WARP_SYMBOL,
            &[
                ct::I64,
                ct::I32,
                ct::I32,
                ct::I64,
                ct::I32,
                ct::I32,
                ct::I64,
            ],
            ct::I64,
            &[ctx, o, mask, v, a, c, site],
        )
    }

    /// A shuffle of every leaf of `value` (a number, or a tuple or vector of them) with the
    /// same mask and lane.
    #[allow(clippy::too_many_arguments)]
    fn shuffle(
        &mut self,
        op: WarpOp,
        mask: Value,
        value: Handle<Expr>,
        arg: Value,
        c: Value,
        h: Handle<Expr>,
    ) -> R<Vec<Value>> {
        let t = self.ty(value).clone();
        let ls = leaves(&t).ok_or_else(|| err("shuffled type"))?;
        let vals = self.expr(value)?;
        let mut out = Vec::new();
        for (l, v) in ls.iter().zip(vals) {
            let bits = self.bits_of(l.scalar, v)?;
            let bt = self.b.func.dfg.value_type(bits);
            let wide = self.resize(bits, false, ct::I64);
            let r = self.warp_with(op, mask, Some(wide), Some(arg), c, h)?;
            let r = self.resize(r, false, bt);
            out.push(self.value_of_bits(l.scalar, r)?);
        }
        Ok(out)
    }

    /// The lanes of the calling thread's tile of `n` threads (`i32`).
    fn tile_mask(&mut self, n: u8) -> R<Value> {
        if n >= 32 {
            return Ok(self.b.ins().iconst(ct::I32, 0xffff_ffff_u32 as i64));
        }
        let lane = self.ctx_u32(offset::LANE)?;
        let base = self
            .b
            .ins()
            .band_imm_s(lane, i64::from(!(u32::from(n) - 1) & 0x1f));
        let ones = self.b.ins().iconst(ct::I32, (1i64 << n) - 1);
        Ok(self.b.ins().ishl(ones, base))
    }

    /// `lanemask_lt`: the lanes below the calling one.
    fn lanemask_lt(&mut self) -> R<Value> {
        let lane = self.ctx_u32(offset::LANE)?;
        let one = self.b.ins().iconst(ct::I32, 1);
        let bit = self.b.ins().ishl(one, lane);
        Ok(self.b.ins().iadd_imm_s(bit, -1))
    }

    fn popc32(&mut self, v: Value) -> Value {
        self.b.ins().popcnt(v)
    }

    /// In a kernel, `a * b + c`, `c + a * b`, `a * b - c` and `c - a * b` on `float32` or
    /// `float64` as one `fma` (one rounding), as the device contracts them (§3.13: nvcc's
    /// `-fmad=true`, LLVM's combine of an `fmul` with the `fadd`/`fsub` that uses it,
    /// trying the left operand first); not with `contract=False`. `None`:
    /// not such an expression. A product stored in a local first is not contracted here,
    /// while the device's optimizer may still fuse it.
    pub(super) fn contracted(
        &mut self,
        op: BinaryOp,
        a: Handle<Expr>,
        b: Handle<Expr>,
    ) -> R<Option<Value>> {
        if self.program.options.no_contract || !matches!(op, BinaryOp::Add | BinaryOp::Sub) {
            return Ok(None);
        }
        let s = self.scalar_of(a)?;
        if !matches!(s, Scalar::Float32 | Scalar::Float64) || self.ty(b).as_scalar() != Some(s) {
            return Ok(None);
        }
        let product = |cx: &Self, h: Handle<Expr>| match &cx.f.exprs[h] {
            Expr::Binary(BinaryOp::Mul, x, y) if cx.ty(h).as_scalar() == Some(s) => Some((*x, *y)),
            _ => None,
        };
        if let Some((x, y)) = product(self, a) {
            let x = self.scalar(x)?;
            let y = self.scalar(y)?;
            let c = self.scalar(b)?;
            let c = if op == BinaryOp::Sub {
                self.b.ins().fneg(c)
            } else {
                c
            };
            return Ok(Some(self.b.ins().fma(x, y, c)));
        }
        if let Some((x, y)) = product(self, b) {
            let c = self.scalar(a)?;
            let x = self.scalar(x)?;
            let y = self.scalar(y)?;
            let x = if op == BinaryOp::Sub {
                self.b.ins().fneg(x)
            } else {
                x
            };
            return Ok(Some(self.b.ins().fma(x, y, c)));
        }
        Ok(None)
    }

    /// A device intrinsic (or random number) of a kernel.
    pub(super) fn device_intrinsic(
        &mut self,
        h: Handle<Expr>,
        op: Intrinsic,
        args: &[Handle<Expr>],
        ty: &Type,
    ) -> R<Vec<Value>> {
        let arg = |k: usize| -> R<Handle<Expr>> {
            args.get(k)
                .copied()
                .ok_or_else(|| err("missing operand of a device intrinsic"))
        };
        let v = match op {
            Intrinsic::ThreadIdx(a) => {
                self.ctx_u32(offset::THREAD_IDX + 4 * axis_index(a) as usize)?
            }
            Intrinsic::BlockIdx(a) => {
                self.ctx_u32(offset::BLOCK_IDX + 4 * axis_index(a) as usize)?
            }
            Intrinsic::BlockDim(a) => {
                self.ctx_u32(offset::BLOCK_DIM + 4 * axis_index(a) as usize)?
            }
            Intrinsic::GridDim(a) => self.ctx_u32(offset::GRID_DIM + 4 * axis_index(a) as usize)?,
            Intrinsic::LaneId => self.ctx_u32(offset::LANE)?,
            Intrinsic::WarpSize => self.b.ins().iconst(ct::I32, 32),
            Intrinsic::DynamicSharedSize => self.ctx_u32(offset::DYNAMIC_SHARED_SIZE)?,
            Intrinsic::SyncThreads => {
                self.barrier(BarrierKind::Sync, None, h)?;
                return Ok(Vec::new());
            }
            Intrinsic::SyncThreadsCount | Intrinsic::SyncThreadsAnd | Intrinsic::SyncThreadsOr => {
                let kind = match op {
                    Intrinsic::SyncThreadsCount => BarrierKind::Count,
                    Intrinsic::SyncThreadsAnd => BarrierKind::And,
                    _ => BarrierKind::Or,
                };
                let p = self.int_operand(arg(0)?, ct::I32)?;
                self.barrier(kind, Some(p), h)?
            }
            Intrinsic::ThreadFence(..) => {
                // The fibers of a block share one OS thread and blocks run on several: a
                // full fence is at least as strong as any order and scope asked for.
                self.b.ins().fence();
                return Ok(Vec::new());
            }
            Intrinsic::ActiveMask => {
                let zero = self.b.ins().iconst(ct::I32, 0);
                self.warp(WarpOp::ActiveMask, zero, None, None, 0, h)?
            }
            Intrinsic::LaneMaskLt => self.lanemask_lt()?,
            Intrinsic::SyncWarp => {
                let mask = self.int_operand(arg(0)?, ct::I32)?;
                self.warp(WarpOp::Sync, mask, None, None, 0, h)?;
                return Ok(Vec::new());
            }
            Intrinsic::Vote(vote) => {
                let mask = self.int_operand(arg(0)?, ct::I32)?;
                let p = self.int_operand(arg(1)?, ct::I64)?;
                let op = match vote {
                    Vote::All => WarpOp::All,
                    Vote::Any => WarpOp::Any,
                    Vote::Uni => WarpOp::Uni,
                    Vote::Ballot => WarpOp::Ballot,
                };
                self.warp(op, mask, Some(p), None, 0, h)?
            }
            Intrinsic::Shfl(kind) => {
                let mask = self.int_operand(arg(0)?, ct::I32)?;
                let lane = self.int_operand(arg(2)?, ct::I32)?;
                let (op, c) = match kind {
                    Shfl::Idx => (WarpOp::ShflIdx, 0x1f),
                    Shfl::Up => (WarpOp::ShflUp, 0),
                    Shfl::Down => (WarpOp::ShflDown, 0x1f),
                    Shfl::Xor => (WarpOp::ShflXor, 0x1f),
                };
                // A fourth operand is the `c` of a shuffle within segments (cupyx's
                // `width`), as PTX's `shfl.sync` takes it.
                let c = match args.get(3) {
                    Some(&e) => self.int_operand(e, ct::I32)?,
                    None => self.b.ins().iconst(ct::I32, c),
                };
                return self.shuffle(op, mask, arg(1)?, lane, c, h);
            }
            Intrinsic::MatchAny | Intrinsic::MatchAll => {
                let mask = self.int_operand(arg(0)?, ct::I32)?;
                let x = arg(1)?;
                let s = self.scalar_of(x)?;
                let v = self.scalar(x)?;
                let bits = self.bits_of(s, v)?;
                let wide = self.resize(bits, false, ct::I64);
                if op == Intrinsic::MatchAny {
                    self.warp(WarpOp::MatchAny, mask, Some(wide), None, 0, h)?
                } else {
                    let r = self.warp(WarpOp::MatchAll, mask, Some(wide), None, 0, h)?;
                    let m = self.b.ins().ireduce(ct::I32, r);
                    let p = self.b.ins().ushr_imm_u(r, 32);
                    let p = self.b.ins().icmp_imm_s(IntCC::NotEqual, p, 0);
                    return Ok(vec![m, p]);
                }
            }
            Intrinsic::Rand | Intrinsic::Randn => {
                let f64 = ty.as_scalar() == Some(Scalar::Float64);
                let k = usize::from(op == Intrinsic::Randn) * 2 + usize::from(f64);
                let t = if f64 { ct::F64 } else { ct::F32 };
                let ctx = self.ctx()?;
                return Ok(vec![self.call_helper(
                    RANDOM_SYMBOLS[k],
                    &[ct::I64],
                    t,
                    &[ctx],
                )?]);
            }
            Intrinsic::Cg(cg) => return self.group_op(h, cg, args, ty),
            Intrinsic::Tensor(t) => return self.tensor(h, t, args, ty),
            Intrinsic::Hopper(o) => return self.hopper(h, o, args),
            Intrinsic::ClusterDim(a) => {
                self.ctx_u32(offset::CLUSTER_DIM + 4 * axis_index(a) as usize)?
            }
            Intrinsic::ClusterIdx(a) | Intrinsic::BlockIdxInCluster(a) => {
                let k = 4 * axis_index(a) as usize;
                let b = self.ctx_u32(offset::BLOCK_IDX + k)?;
                let c = self.ctx_u32(offset::CLUSTER_DIM + k)?;
                if matches!(op, Intrinsic::ClusterIdx(_)) {
                    self.b.ins().udiv(b, c)
                } else {
                    self.b.ins().urem(b, c)
                }
            }
            Intrinsic::BlockRankInCluster => self.rank_in_cluster()?,
            Intrinsic::ClusterSize => self.cluster_size()?,
            Intrinsic::ClusterArrive(_) | Intrinsic::ClusterWait | Intrinsic::ClusterSync => {
                // The fibers of a cluster share one OS thread: arriving is counted, waiting
                // suspends the thread until the cluster has arrived (`runtime::cpu`).
                if op != Intrinsic::ClusterWait {
                    self.barrier(BarrierKind::ClusterArrive, None, h)?;
                }
                if !matches!(op, Intrinsic::ClusterArrive(_)) {
                    self.barrier(BarrierKind::ClusterWait, None, h)?;
                }
                return Ok(Vec::new());
            }
            Intrinsic::MapSharedRank => return self.map_shared_rank(h, arg(0)?, arg(1)?),
            Intrinsic::Ldexp | Intrinsic::Frexp | Intrinsic::Modf | Intrinsic::Sincos => {
                return self.math_pair(op, args);
            }
            Intrinsic::RoundDigits => {
                // `round(x, ndigits)`: the device's algorithm, in the runtime.
                let xh = arg(0)?;
                let s = self.scalar_of(xh)?;
                let (name, t) = match s {
                    Scalar::Float32 => ("__pyd_round_digitsf", ct::F32),
                    Scalar::Float64 => ("__pyd_round_digits", ct::F64),
                    other => {
                        return Err(err(format!(
                            "round(x, ndigits) of {other:?} reached the CPU back end"
                        )));
                    }
                };
                let x = self.scalar(xh)?;
                let n = self.int_operand(arg(1)?, ct::I64)?;
                if ty.as_scalar() != Some(s) {
                    return Err(err("round(x, ndigits) of another type than x"));
                }
                return Ok(vec![self.call_helper(name, &[t, ct::I64], t, &[x, n])?]);
            }
            Intrinsic::Sad => {
                // |x - y| (as an unsigned 32-bit difference) + z, as libdevice's `__nv_sad`.
                let x = self.int_operand(arg(0)?, ct::I32)?;
                let y = self.int_operand(arg(1)?, ct::I32)?;
                let z = self.int_operand(arg(2)?, ct::I32)?;
                let gt = self.b.ins().icmp(IntCC::SignedGreaterThan, x, y);
                let xy = self.b.ins().isub(x, y);
                let yx = self.b.ins().isub(y, x);
                let d = self.b.ins().select(gt, xy, yx);
                self.b.ins().iadd(d, z)
            }
            other => {
                return Err(err(format!(
                    "{other:?} reached the CPU back end (its check should have refused it)"
                )));
            }
        };
        self.fit(v, ty)
    }

    /// `block_rank_in_cluster`: the block's position in its cluster, x fastest.
    fn rank_in_cluster(&mut self) -> R<Value> {
        let mut rank = self.b.ins().iconst(ct::I32, 0);
        let mut scale = self.b.ins().iconst(ct::I32, 1);
        for k in 0..3 {
            let b = self.ctx_u32(offset::BLOCK_IDX + 4 * k)?;
            let c = self.ctx_u32(offset::CLUSTER_DIM + 4 * k)?;
            let p = self.b.ins().urem(b, c);
            let term = self.b.ins().imul(p, scale);
            rank = self.b.ins().iadd(rank, term);
            scale = self.b.ins().imul(scale, c);
        }
        Ok(rank)
    }

    /// `cluster_size`: the blocks of the cluster.
    fn cluster_size(&mut self) -> R<Value> {
        let x = self.ctx_u32(offset::CLUSTER_DIM)?;
        let y = self.ctx_u32(offset::CLUSTER_DIM + 4)?;
        let z = self.ctx_u32(offset::CLUSTER_DIM + 8)?;
        let xy = self.b.ins().imul(x, y);
        Ok(self.b.ins().imul(xy, z))
    }

    /// `map_shared_rank(a, rank)`: the same shared array of block `rank` of the cluster,
    /// whose shared memory lies `(rank - own rank) * cluster_stride` bytes from this
    /// block's. A rank outside the cluster is recorded as an index out of range at the call
    /// and maps to the block's own array (a GPU's result is undefined there).
    fn map_shared_rank(
        &mut self,
        h: Handle<Expr>,
        array: Handle<Expr>,
        rank: Handle<Expr>,
    ) -> R<Vec<Value>> {
        let mut d = self.expr(array)?;
        let r = self.int_operand(rank, ct::I32)?;
        let own = self.rank_in_cluster()?;
        let size = self.cluster_size()?;
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, r, size);
        let r = self.b.ins().select(inside, r, own);
        let (bad, go) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(inside, go, &[], bad, &[]);
        self.b.switch_to_block(bad);
        let site = self.site(h);
        self.record_error(site)?;
        self.b.ins().jump(go, &[]);
        self.b.switch_to_block(go);
        let r = self.b.ins().uextend(ct::I64, r);
        let own = self.b.ins().uextend(ct::I64, own);
        let delta = self.b.ins().isub(r, own);
        let ctx = self.ctx()?;
        let stride = self
            .b
            .ins()
            .load(ct::I64, flags(), ctx, offset::CLUSTER_STRIDE as i32);
        let bytes = self.b.ins().imul(delta, stride);
        let first = d
            .first_mut()
            .ok_or_else(|| err("an array without a data pointer"))?;
        *first = self.b.ins().iadd(*first, bytes);
        Ok(d)
    }

    /// `math.ldexp`, `math.frexp`, `math.modf` and numba's `libdevice.sincos` on `float32`
    /// and `float64` (the C library's functions; pairs as two leaves).
    fn math_pair(&mut self, op: Intrinsic, args: &[Handle<Expr>]) -> R<Vec<Value>> {
        let xh = *args.first().ok_or_else(|| err("math operand"))?;
        let s = self.scalar_of(xh)?;
        if !matches!(s, Scalar::Float32 | Scalar::Float64) {
            return Err(err(format!("{op:?} of {s:?} reached the CPU back end")));
        }
        let x = self.scalar(xh)?;
        let t = reg_type(s);
        let f = if s == Scalar::Float32 { "f" } else { "" };
        Ok(match op {
            Intrinsic::Ldexp => {
                let nh = *args.get(1).ok_or_else(|| err("ldexp exponent"))?;
                let n = self.int_operand(nh, ct::I32)?;
                vec![self.call_helper(&format!("ldexp{f}"), &[t, ct::I32], t, &[x, n])?]
            }
            Intrinsic::Frexp => vec![
                self.call_helper(&format!("__pyd_frexp{f}_m"), &[t], t, &[x])?,
                self.call_helper(&format!("__pyd_frexp{f}_e"), &[t], ct::I32, &[x])?,
            ],
            Intrinsic::Modf => vec![
                self.call_helper(&format!("__pyd_modf{f}_frac"), &[t], t, &[x])?,
                self.call_helper(&format!("__pyd_modf{f}_int"), &[t], t, &[x])?,
            ],
            _ => vec![
                self.call_helper(&format!("sin{f}"), &[t], t, &[x])?,
                self.call_helper(&format!("cos{f}"), &[t], t, &[x])?,
            ],
        })
    }

    /// A cooperative-groups operation (docs/semantics.md §17); a group value is an `int32`.
    fn group_op(
        &mut self,
        h: Handle<Expr>,
        op: CgOp,
        args: &[Handle<Expr>],
        ty: &Type,
    ) -> R<Vec<Value>> {
        let group = |cx: &mut Self| -> R<Value> {
            let g = *args.first().ok_or_else(|| err("group operand"))?;
            cx.expr(g)?
                .first()
                .copied()
                .ok_or_else(|| err("group value"))
        };
        let v = match op {
            CgOp::Make(GroupKind::Coalesced) => {
                let zero = self.b.ins().iconst(ct::I32, 0);
                self.warp(WarpOp::ActiveMask, zero, None, None, 0, h)?
            }
            CgOp::Make(_) => self.b.ins().iconst(ct::I32, 0),
            CgOp::ThreadRank(kind) => match kind {
                GroupKind::Block => self.ctx_u32(offset::RANK)?,
                GroupKind::Grid => {
                    let blk = self.ctx_u32(offset::BLOCK_RANK)?;
                    let size = self.ctx_u32(offset::BLOCK_SIZE)?;
                    let t = self.ctx_u32(offset::RANK)?;
                    let blk = self.b.ins().uextend(ct::I64, blk);
                    let size = self.b.ins().uextend(ct::I64, size);
                    let t = self.b.ins().uextend(ct::I64, t);
                    let p = self.b.ins().imul(blk, size);
                    self.b.ins().iadd(p, t)
                }
                GroupKind::Tile(n) => {
                    let lane = self.ctx_u32(offset::LANE)?;
                    self.b.ins().band_imm_s(lane, i64::from(n) - 1)
                }
                GroupKind::Coalesced => {
                    let g = group(self)?;
                    let lt = self.lanemask_lt()?;
                    let m = self.b.ins().band(g, lt);
                    self.popc32(m)
                }
            },
            CgOp::NumThreads(kind) => match kind {
                GroupKind::Block => self.ctx_u32(offset::BLOCK_SIZE)?,
                GroupKind::Grid => {
                    let blocks = self.ctx_u32(offset::NUM_BLOCKS)?;
                    let size = self.ctx_u32(offset::BLOCK_SIZE)?;
                    let blocks = self.b.ins().uextend(ct::I64, blocks);
                    let size = self.b.ins().uextend(ct::I64, size);
                    self.b.ins().imul(blocks, size)
                }
                GroupKind::Tile(n) => self.b.ins().iconst(ct::I32, i64::from(n)),
                GroupKind::Coalesced => {
                    let g = group(self)?;
                    self.popc32(g)
                }
            },
            CgOp::Sync(kind) => {
                match kind {
                    GroupKind::Block => {
                        self.barrier(BarrierKind::Sync, None, h)?;
                    }
                    GroupKind::Grid => {
                        self.barrier(BarrierKind::Grid, None, h)?;
                    }
                    GroupKind::Tile(n) => {
                        let m = self.tile_mask(n)?;
                        self.warp(WarpOp::Sync, m, None, None, 0, h)?;
                    }
                    GroupKind::Coalesced => {
                        let m = group(self)?;
                        self.warp(WarpOp::Sync, m, None, None, 0, h)?;
                    }
                }
                return Ok(Vec::new());
            }
            CgOp::MetaRank(GroupKind::Tile(n)) => {
                let r = self.ctx_u32(offset::RANK)?;
                self.b.ins().udiv_imm_s(r, i64::from(n))
            }
            CgOp::MetaSize(GroupKind::Tile(n)) => {
                let s = self.ctx_u32(offset::BLOCK_SIZE)?;
                let s = self.b.ins().iadd_imm_s(s, i64::from(n) - 1);
                self.b.ins().udiv_imm_s(s, i64::from(n))
            }
            CgOp::MetaRank(_) => self.b.ins().iconst(ct::I32, 0),
            CgOp::MetaSize(_) => self.b.ins().iconst(ct::I32, 1),
            CgOp::BlockRank => self.ctx_u32(offset::BLOCK_RANK)?,
            CgOp::NumBlocks => self.ctx_u32(offset::NUM_BLOCKS)?,
            CgOp::Shfl(GroupKind::Tile(n), shfl) => {
                group(self)?;
                let mask = self.tile_mask(n)?;
                let lane = *args.get(2).ok_or_else(|| err("shuffle lane"))?;
                let lane = self.int_operand(lane, ct::I32)?;
                let seg = i64::from(32 - n) << 8;
                let (op, c) = match shfl {
                    Shfl::Idx => (WarpOp::ShflIdx, seg | 0x1f),
                    Shfl::Up => (WarpOp::ShflUp, seg),
                    Shfl::Down => (WarpOp::ShflDown, seg | 0x1f),
                    Shfl::Xor => (WarpOp::ShflXor, seg | 0x1f),
                };
                let value = *args.get(1).ok_or_else(|| err("shuffled value"))?;
                let c = self.b.ins().iconst(ct::I32, c);
                return self.shuffle(op, mask, value, lane, c, h);
            }
            CgOp::Shfl(GroupKind::Coalesced, shfl) => {
                // The source is a member counted by rank (`fns`), as on the device; a
                // missing one gives the thread its own value.
                let g = group(self)?;
                let lane = self.ctx_u32(offset::LANE)?;
                let a = *args.get(2).ok_or_else(|| err("shuffle lane"))?;
                let a = self.int_operand(a, ct::I32)?;
                let k = self.b.ins().iadd_imm_s(a, 1);
                let zero = self.b.ins().iconst(ct::I32, 0);
                let (base, k) = match shfl {
                    Shfl::Idx => (zero, k),
                    Shfl::Down => (lane, k),
                    Shfl::Up => (lane, self.b.ins().ineg(k)),
                    Shfl::Xor => return Err(err("shfl_xor on a coalesced group")),
                };
                let src = self.call_helper(
                    "__pyd_fns",
                    &[ct::I32, ct::I32, ct::I32],
                    ct::I32,
                    &[g, base, k],
                )?;
                let none = self.b.ins().icmp_imm_s(IntCC::Equal, src, -1);
                let src = self.b.ins().select(none, lane, src);
                let value = *args.get(1).ok_or_else(|| err("shuffled value"))?;
                let c = self.b.ins().iconst(ct::I32, 0x1f);
                return self.shuffle(WarpOp::ShflIdx, g, value, src, c, h);
            }
            CgOp::Vote(GroupKind::Coalesced, vote) => {
                let g = group(self)?;
                let p = *args.get(1).ok_or_else(|| err("vote predicate"))?;
                let p = self.int_operand(p, ct::I64)?;
                if vote == Vote::Ballot {
                    // Bit r for the member of rank r (CUDA's packed lanes): the sum of the
                    // members' bits, as the device computes it.
                    let lt = self.lanemask_lt()?;
                    let below = self.b.ins().band(g, lt);
                    let rank = self.popc32(below);
                    let rank = self.b.ins().uextend(ct::I64, rank);
                    let bit = self.b.ins().ishl(p, rank);
                    let coalesced = self.b.ins().iconst(ct::I32, 2);
                    self.warp(WarpOp::ReduceAdd, g, Some(bit), Some(coalesced), 0, h)?
                } else {
                    let wop = match vote {
                        Vote::All => WarpOp::All,
                        Vote::Any => WarpOp::Any,
                        _ => WarpOp::Uni,
                    };
                    self.warp(wop, g, Some(p), None, 0, h)?
                }
            }
            CgOp::Vote(GroupKind::Tile(n), vote) => {
                group(self)?;
                let mask = self.tile_mask(n)?;
                let p = *args.get(1).ok_or_else(|| err("vote predicate"))?;
                let p = self.int_operand(p, ct::I64)?;
                let wop = match vote {
                    Vote::All => WarpOp::All,
                    Vote::Any => WarpOp::Any,
                    Vote::Uni => WarpOp::Uni,
                    Vote::Ballot => WarpOp::Ballot,
                };
                let r = self.warp(wop, mask, Some(p), None, 0, h)?;
                if vote == Vote::Ballot && n < 32 {
                    // A tile's ballot counts by rank in the tile.
                    let r = self.b.ins().ireduce(ct::I32, r);
                    let lane = self.ctx_u32(offset::LANE)?;
                    let base = self
                        .b
                        .ins()
                        .band_imm_s(lane, i64::from(!(u32::from(n) - 1) & 0x1f));
                    let r = self.b.ins().ushr(r, base);
                    self.b.ins().band_imm_s(r, (1i64 << n) - 1)
                } else {
                    r
                }
            }
            CgOp::Reduce(kind, red) => {
                // Integers only (the check refuses floats): the result does not depend on
                // the order of the additions, so the runtime adds in lane order.
                let mask = match kind {
                    GroupKind::Tile(n) => {
                        group(self)?;
                        self.tile_mask(n)?
                    }
                    _ => group(self)?,
                };
                let value = *args.get(1).ok_or_else(|| err("reduced value"))?;
                let s = self.scalar_of(value)?;
                let x = self.scalar(value)?;
                let bits = self.bits_of(s, x)?;
                let bt = self.b.func.dfg.value_type(bits);
                let v = self.resize(bits, s.is_signed(), ct::I64);
                let op = match red {
                    crate::ir::CgReduce::Add => WarpOp::ReduceAdd,
                    crate::ir::CgReduce::Min => WarpOp::ReduceMin,
                    crate::ir::CgReduce::Max => WarpOp::ReduceMax,
                };
                // `arg`: bit 0 signed, bit 1 a coalesced group; `c`: a float's width.
                let flags =
                    i64::from(s.is_signed()) | (i64::from(kind == GroupKind::Coalesced) << 1);
                let a = self.b.ins().iconst(ct::I32, flags);
                let width = match s {
                    Scalar::Float32 => 32,
                    Scalar::Float64 => 64,
                    _ => 0,
                };
                let r = self.warp(op, mask, Some(v), Some(a), width, h)?;
                let r = self.resize(r, false, bt);
                return Ok(vec![self.value_of_bits(s, r)?]);
            }
            CgOp::BarrierArrive => {
                // The arrival is only the token; the wait is a whole block barrier (as the
                // device does below sm_80).
                self.b.ins().iconst(ct::I64, 0)
            }
            CgOp::BarrierWait => {
                self.barrier(BarrierKind::Sync, None, h)?;
                return Ok(Vec::new());
            }
            CgOp::MemcpyAsync(bytes) => {
                self.memcpy_async(args, bytes, h)?;
                return Ok(Vec::new());
            }
            // Every copy is done when `memcpy_async` returns: nothing is in flight.
            CgOp::AsyncCommit | CgOp::AsyncWait(_) | CgOp::AsyncWaitAll => return Ok(Vec::new()),
            other => {
                return Err(err(format!(
                    "cg {other:?} reached the CPU back end (its check should have refused it)"
                )));
            }
        };
        self.fit(v, ty)
    }

    /// `cg.memcpy_async(dst, i, src, j)` of `bytes` bytes: a plain copy, as the device
    /// does below sm_80 (`[dst array, byte offset, src array, byte offset]`). The CPU
    /// checks that both byte ranges lie inside their arrays' elements; a copy that does
    /// not is skipped and reported as an out-of-range index at the call.
    fn memcpy_async(&mut self, args: &[Handle<Expr>], bytes: u8, h: Handle<Expr>) -> R<()> {
        let mut ok = self.b.ins().iconst(ct::I8, 1);
        let mut addrs = Vec::new();
        for (a, o) in [(0, 1), (2, 3)] {
            let array = *args.get(a).ok_or_else(|| err("memcpy_async array"))?;
            let off = *args.get(o).ok_or_else(|| err("memcpy_async offset"))?;
            let at = self
                .ty(array)
                .as_array()
                .cloned()
                .ok_or_else(|| err("memcpy_async of a non-array"))?;
            let (es, _) = crate::lower::host::leaf::elem_layout(&at.dtype);
            let d = self.expr(array)?;
            let off = self.int_operand(off, ct::I64)?;
            let mut size = self.b.ins().iconst(ct::I64, es as i64);
            for k in 0..usize::from(at.ndim) {
                size = self.b.ins().imul(size, d[1 + k]);
            }
            let end = self.b.ins().iadd_imm_s(off, i64::from(bytes));
            let from = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, off, 0);
            let to = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, end, size);
            let both = self.b.ins().band(from, to);
            ok = self.b.ins().band(ok, both);
            addrs.push(self.b.ins().iadd(d[0], off));
        }
        let (copy, oob, merge) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().brif(ok, copy, &[], oob, &[]);
        self.b.switch_to_block(copy);
        let (t, step) = match bytes {
            1 => (ct::I8, 1),
            2 => (ct::I16, 2),
            4 => (ct::I32, 4),
            _ => (ct::I64, 8),
        };
        for k in 0..i32::from(bytes) / step {
            let v = self.b.ins().load(t, flags(), addrs[1], k * step);
            self.b.ins().store(flags(), v, addrs[0], k * step);
        }
        self.b.ins().jump(merge, &[]);
        self.b.switch_to_block(oob);
        let (line, col) = self.program.file.line_col(self.f.exprs.span(h).start);
        self.record_error(((line as i64) << 32) | col as i64)?;
        self.b.ins().jump(merge, &[]);
        self.b.switch_to_block(merge);
        Ok(())
    }

    /// A static shared array: the descriptor of its place in the block's shared memory.
    pub(super) fn shared_array(
        &mut self,
        h: Handle<Expr>,
        shape: &[u64],
        ty: &Type,
    ) -> R<Vec<Value>> {
        let at = ty.as_array().ok_or_else(|| err("shared array type"))?;
        let off = self
            .kernel
            .and_then(|k| k.offsets.get(&(self.fn_index, h.index())).copied())
            .ok_or_else(|| err("a shared array without a place"))?;
        let ctx = self.ctx()?;
        let base = self
            .b
            .ins()
            .load(ct::I64, flags(), ctx, offset::SHARED as i32);
        let ptr = self.b.ins().iadd_imm_s(base, off as i64);
        let n = shape.len();
        let mut strides = vec![1u64; n];
        match at.layout {
            crate::types::Layout::F => {
                for k in 1..n {
                    strides[k] = strides[k - 1] * shape[k - 1];
                }
            }
            _ => {
                for k in (0..n.saturating_sub(1)).rev() {
                    strides[k] = strides[k + 1] * shape[k + 1];
                }
            }
        }
        let mut out = vec![ptr];
        for d in shape.iter().chain(&strides) {
            out.push(self.b.ins().iconst(ct::I64, *d as i64));
        }
        Ok(out)
    }

    /// A module-level constant array (§1.3.1): its bytes as read-only data of the JIT
    /// module, and the descriptor of that data.
    pub(super) fn const_array(&mut self, c: &crate::ir::ConstArray) -> R<Vec<Value>> {
        let id = self
            .m
            .declare_anonymous_data(false, false)
            .map_err(|e| err(e.to_string()))?;
        let mut d = cranelift_module::DataDescription::new();
        let mut bytes = c.bytes.clone();
        if bytes.is_empty() {
            bytes.push(0);
        }
        d.define(bytes.into_boxed_slice());
        d.set_align(16);
        self.m.define_data(id, &d).map_err(|e| err(e.to_string()))?;
        let gv = self.m.declare_data_in_func(id, self.b.func);
        let ptr = self.b.ins().symbol_value(ct::I64, gv);
        let n = c.shape.len();
        let mut strides = vec![1u64; n];
        if c.fortran {
            for k in 1..n {
                strides[k] = strides[k - 1] * c.shape[k - 1];
            }
        } else {
            for k in (0..n.saturating_sub(1)).rev() {
                strides[k] = strides[k + 1] * c.shape[k + 1];
            }
        }
        let mut out = vec![ptr];
        for v in c.shape.iter().chain(&strides) {
            out.push(self.b.ins().iconst(ct::I64, *v as i64));
        }
        Ok(out)
    }

    /// `dynamic_shared_array()`: the block's dynamic shared memory as `uint8[:]`.
    pub(super) fn dynamic_shared(&mut self) -> R<Vec<Value>> {
        let start = self
            .kernel
            .map(|k| k.dynamic_offset())
            .ok_or_else(|| err("dynamic shared memory outside a kernel"))?;
        let ctx = self.ctx()?;
        let base = self
            .b
            .ins()
            .load(ct::I64, flags(), ctx, offset::SHARED as i32);
        let ptr = self.b.ins().iadd_imm_s(base, start as i64);
        let size = self.ctx_u32(offset::DYNAMIC_SHARED_SIZE)?;
        let size = self.b.ins().uextend(ct::I64, size);
        let one = self.b.ins().iconst(ct::I64, 1);
        Ok(vec![ptr, size, one])
    }
}
