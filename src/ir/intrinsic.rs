//! The hardware values and operations (`Intrinsic`) and their families: cooperative groups, tensor cores, memory orders and scopes, warp votes and shuffles, atomics.

use super::*;

/// Hardware values and operations, each lowered by every back end.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    /// `thread_idx.<axis>` (uint32)
    ThreadIdx(Axis),
    /// `block_idx.<axis>` (uint32)
    BlockIdx(Axis),
    /// `block_dim.<axis>` (uint32)
    BlockDim(Axis),
    /// `grid_dim.<axis>` (uint32)
    GridDim(Axis),
    /// `lane_id` (int32)
    LaneId,
    /// `warp_size` (int32)
    WarpSize,
    /// `syncthreads()`
    SyncThreads,
    /// `syncthreads_count(pred)`: the number of threads whose predicate (arg 0, bool) holds.
    SyncThreadsCount,
    /// `syncthreads_and(pred)`
    SyncThreadsAnd,
    /// `syncthreads_or(pred)`
    SyncThreadsOr,
    /// `threadfence(memory, scope)`
    ThreadFence(MemoryOrder, Scope),
    /// `activemask()`
    ActiveMask,
    /// `lanemask_lt()`
    LaneMaskLt,
    /// `syncwarp(mask)`
    SyncWarp,
    /// `all_sync(mask, pred)`, `any_sync`, `eq_sync`, `ballot_sync`.
    Vote(Vote),
    /// `shfl_*_sync(mask, value, lane_or_delta)` for 32- and 64-bit values (smaller ones are
    /// widened by the front end); an optional fourth operand, an int32, is `shfl.sync`'s `c`
    /// (segment mask and clamp) for cupyx's `width=`, instead of the whole warp's.
    Shfl(Shfl),
    /// `match_any_sync(mask, value)` → WarpMask
    MatchAny,
    /// `match_all_sync(mask, value)` → (WarpMask, bool)
    MatchAll,
    /// `popc(x)` → int32
    Popc,
    /// `brev(x)` (same type)
    Brev,
    /// The bits of the number `x` as a number of another type of the same size (the
    /// expression's type): `bfloat16` <-> `int16`/`uint16`, `float32` <-> `int32`/`uint32`,
    /// `float64` <-> `int64`/`uint64` (numba's `bf16.bfloat16_as_int16`, CUDA's
    /// `__float_as_uint`).
    BitCast,
    /// `clz(x)` → int32
    Clz,
    /// `ffs(x)` → int32, 1-based, 0 when x == 0
    Ffs,
    /// `fma(a, b, c)`, one rounding
    Fma,
    /// `funnelshift_l(lo, hi, shift)` on uint32 (CUDA's `__funnelshift_l`): the high word of
    /// the 64-bit `hi:lo` shifted left by `shift & 31`.
    FunnelShiftL,
    /// `funnelshift_r(lo, hi, shift)` on uint32 (CUDA's `__funnelshift_r`): the low word of
    /// the 64-bit `hi:lo` shifted right by `shift & 31`.
    FunnelShiftR,
    /// `math.ldexp(x, n)`: `x * 2**n` rounded once (libdevice's `ldexp`; `n` is int32)
    Ldexp,
    /// `math.frexp(x)`: `(mantissa, exponent)` as `(float, int32)` (libdevice's `frexp`)
    Frexp,
    /// `math.modf(x)`: `(fractional part, integral part)`, both with `x`'s sign (libdevice's
    /// `modf`)
    Modf,
    /// numba's `libdevice.sincos(x)`: `(sin x, cos x)` (libdevice's `sincos`)
    Sincos,
    /// numba's `libdevice.sad(x, y, z)`: `|x - y| + z` on int32 (libdevice's `sad`)
    Sad,
    /// `round(x, ndigits)` on a `float64` `x` and an `int64` `ndigits` → `float64`, by
    /// numba-cuda's `round_to_impl` (CPython's fallback `double_round`: scale by a power of
    /// ten, round half to even, scale back).
    RoundDigits,
    /// A function of the `math` module.
    Math(MathFn),
    /// An operation on complex numbers (see [`ComplexOp`]).
    Complex(ComplexOp),
    /// `dynamic_shared_array()`'s size in bytes (the launch's `shared` parameter).
    DynamicSharedSize,
    /// `cluster_idx.<axis>` (uint32, sm_90): the cluster's index in the grid (`%clusterid`).
    ClusterIdx(Axis),
    /// `cluster_dim.<axis>` (uint32, sm_90): the cluster's extent in blocks
    /// (`%cluster_nctaid`).
    ClusterDim(Axis),
    /// `block_idx_in_cluster.<axis>` (uint32, sm_90): the block's index in its cluster
    /// (`%cluster_ctaid`).
    BlockIdxInCluster(Axis),
    /// `block_rank_in_cluster` (int32, sm_90): the block's linear rank in its cluster
    /// (`%cluster_ctarank`).
    BlockRankInCluster,
    /// `cluster_size` (int32, sm_90): the number of blocks in the cluster
    /// (`%cluster_nctarank`).
    ClusterSize,
    /// `cluster_arrive(memory)` (sm_90): `barrier.cluster.arrive`, with release semantics, or
    /// `.relaxed` when the field is true.
    ClusterArrive(bool),
    /// `cluster_wait()` (sm_90): `barrier.cluster.wait`, with acquire semantics.
    ClusterWait,
    /// `cluster_sync()` (sm_90): `barrier.cluster.arrive` (release) then
    /// `barrier.cluster.wait` (acquire).
    ClusterSync,
    /// `map_shared_rank(array, rank)` (sm_90): the shared array (operand 0) of the block of
    /// rank operand 1 (int32) in the cluster, as an array of [`crate::types::MemSpace::Cluster`]
    /// (generic addresses from `mapa`) with the same shape and strides.
    MapSharedRank,
    /// `random.rand(dtype)`: the next uniform in [0, 1) of the thread's Philox stream, of
    /// the expression's type (float32 or float64; `crate::random` defines the stream).
    Rand,
    /// `random.randn(dtype)`: the next standard normal of the thread's Philox stream.
    Randn,
    /// The seed of the thread's random stream (uint64; `crate::random` defines the stream):
    /// the launch's. `rand`/`randn` are expanded into Philox over this, [`Intrinsic::RandThread`]
    /// and [`Intrinsic::RandCall`] (`ir::expand::philox`); the back ends map these three.
    RandSeed,
    /// The thread's index in the random stream (uint64): its global linear index (x fastest).
    RandThread,
    /// How many draws the thread made before this one (uint64); it advances the stream.
    RandCall,
    /// A cooperative-groups operation (`cuda.device.cg`, docs/semantics.md §17); its first
    /// argument, where it has one, is the group value.
    Cg(CgOp),
    /// A tensor-core operation of `device.wmma` or `device.mma` (§19).
    Tensor(TensorOp),
    /// A Hopper asynchronous-pipeline operation of `device.hopper` (§18.4).
    Hopper(HopperOp),
}

/// The operations of cooperative groups (docs/semantics.md §17). `Group` values are
/// `int32` at run time: a coalesced group's member mask, 0 for the other kinds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CgOp {
    /// `this_thread_block()`, `this_grid()`, `coalesced_threads()`, `tiled_partition(g, n)`:
    /// no arguments → the group value (`activemask` for a coalesced group).
    Make(GroupKind),
    /// `g.thread_rank()` → int32 (int64 for the grid).
    ThreadRank(GroupKind),
    /// `g.num_threads()` → int32 (int64 for the grid).
    NumThreads(GroupKind),
    /// `g.sync()`; the grid's is a grid-wide barrier (needs a cooperative launch).
    Sync(GroupKind),
    /// `g.meta_group_rank()` → int32: which tile of the block (0 for a coalesced group).
    MetaRank(GroupKind),
    /// `g.meta_group_size()` → int32: how many tiles the block has (1 for a coalesced group).
    MetaSize(GroupKind),
    /// The grid's `block_rank()` → int32: the block's linear index.
    BlockRank,
    /// The grid's `num_blocks()` → int32.
    NumBlocks,
    /// `g.shfl*(value, lane_or_delta)` on a tile or coalesced group: `[group, value,
    /// int32]` → the value's type (32- or 64-bit; the front end widens smaller ones).
    Shfl(GroupKind, Shfl),
    /// `g.any(p)`, `g.all(p)` → bool, `g.ballot(p)` → WarpMask: `[group, bool]`.
    Vote(GroupKind, Vote),
    /// `cg.reduce(g, value, op)`: `[group, value]` → the value's type, in every member.
    Reduce(GroupKind, CgReduce),
    /// `cg.barrier_arrive(block)`: `[group]` → the arrival token (uint64): an arrival on
    /// the block's split barrier (an mbarrier on sm_80+; below, only a token, and the wait
    /// is a whole block barrier).
    BarrierArrive,
    /// `cg.barrier_wait(block, token)`: `[group, uint64]`: waits until every thread of
    /// the block has arrived in the token's phase.
    BarrierWait,
    /// `cg.memcpy_async(dst, i, src, j, count)`: `[shared array, int64 byte offset, global
    /// array, int64 byte offset]`; copies this many bytes (4, 8 or 16) asynchronously
    /// (`cp.async` on sm_80+, a plain load and store below).
    MemcpyAsync(u8),
    /// `cg.memcpy_async_commit()`: `cp.async.commit_group` (nothing below sm_80).
    AsyncCommit,
    /// `cg.memcpy_async_wait(n)`: `cp.async.wait_group n` (nothing below sm_80).
    AsyncWait(u8),
    /// `cg.memcpy_async_wait_all()`: `cp.async.wait_all` (nothing below sm_80).
    AsyncWaitAll,
}

/// The operations of `cg.reduce`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CgReduce {
    /// `'add'`
    Add,
    /// `'min'`
    Min,
    /// `'max'`
    Max,
}

impl CgReduce {
    /// Parses the language's spelling.
    pub fn from_name(s: &str) -> Option<CgReduce> {
        Some(match s {
            "add" => CgReduce::Add,
            "min" => CgReduce::Min,
            "max" => CgReduce::Max,
            _ => return None,
        })
    }
}

/// A tensor-core operation (§19). WMMA operations read shapes, element types and layouts
/// from their fragments' types (`Type::Fragment`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TensorOp {
    /// A fragment (the expression's type) with every element arg 0 (of the fragment's
    /// element type): `wmma.fragment`, `wmma.fill_fragment`.
    Fill,
    /// `wmma.load_matrix_sync`: args [reference to the first element (`ElementRef`), ldm
    /// (int32)] → the fragment; the layout is the fragment's, or this one for accumulators.
    Load(MatrixLayout),
    /// `wmma.store_matrix_sync`: args [reference to the first element (`ElementRef`),
    /// accumulator fragment, ldm (int32)].
    Store(MatrixLayout),
    /// `wmma.mma_sync`: args [a, b, c] → d (the expression's type).
    Mma {
        /// Integer saturation (`.satfinite`).
        satfinite: bool,
    },
    /// `frag[i]`: args [fragment, index (int32, already reduced modulo the number of
    /// elements)] → the element (the fragment's element type; float32 for tf32).
    Element,
    /// `frag[i] = v`: args [fragment, index (int32, reduced), value] → the fragment with
    /// element i replaced.
    SetElement,
    /// `mma.mma_sync_m16n8k16`: args [a: four `float16x2`/`bfloat16x2`, b: two of the same,
    /// c: four `float32`] as tuples → four `float32` (PTX's
    /// `mma.sync.aligned.m16n8k16.row.col.f32.<t>.<t>.f32`).
    MmaM16n8k16,
    /// `mma.ldmatrix`: args [reference to this thread's row (`ElementRef` into a shared
    /// array of 16-bit elements)] → a tuple of `count` two-element vectors (PTX's
    /// `ldmatrix.sync.aligned.m8n8.x<count>[.trans].shared.b16`).
    Ldmatrix {
        /// 1, 2 or 4 matrices.
        count: u8,
        /// Whether each 8×8 matrix is transposed.
        trans: bool,
    },
}

impl TensorOp {
    /// The builtin that produces it, as Python spells it (for diagnostics).
    pub fn python_name(self) -> &'static str {
        match self {
            TensorOp::Fill => "wmma.fragment",
            TensorOp::Load(_) => "wmma.load_matrix_sync",
            TensorOp::Store(_) => "wmma.store_matrix_sync",
            TensorOp::Mma { .. } => "wmma.mma_sync",
            TensorOp::MmaM16n8k16 => "mma.mma_sync_m16n8k16",
            TensorOp::Ldmatrix { .. } => "mma.ldmatrix",
            TensorOp::Element | TensorOp::SetElement => "fragment element",
        }
    }

    /// The name in printed IR.
    pub fn name(self) -> String {
        match self {
            TensorOp::Fill => "wmma.fill".into(),
            TensorOp::Load(l) => format!("wmma.load.{}", l.name()),
            TensorOp::Store(l) => format!("wmma.store.{}", l.name()),
            TensorOp::Mma { satfinite } => {
                format!("wmma.mma{}", if satfinite { ".satfinite" } else { "" })
            }
            TensorOp::MmaM16n8k16 => "mma.m16n8k16".into(),
            TensorOp::Element => "wmma.element".into(),
            TensorOp::SetElement => "wmma.set_element".into(),
            TensorOp::Ldmatrix { count, trans } => {
                format!("mma.ldmatrix.x{count}{}", if trans { ".trans" } else { "" })
            }
        }
    }
}

/// A memory order of the C++ memory model, as the spec's `memory=` parameter names it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemoryOrder {
    /// `'relaxed'`
    Relaxed,
    /// `'consume'` (treated as acquire, as every C++ implementation does)
    Consume,
    /// `'acquire'`
    Acquire,
    /// `'release'`
    Release,
    /// `'acq_rel'`
    AcqRel,
    /// `'seq_cst'`
    SeqCst,
}

impl MemoryOrder {
    /// The spec's spelling.
    pub fn name(self) -> &'static str {
        match self {
            MemoryOrder::Relaxed => "relaxed",
            MemoryOrder::Consume => "consume",
            MemoryOrder::Acquire => "acquire",
            MemoryOrder::Release => "release",
            MemoryOrder::AcqRel => "acq_rel",
            MemoryOrder::SeqCst => "seq_cst",
        }
    }

    /// Parses the spec's spelling.
    pub fn from_name(s: &str) -> Option<MemoryOrder> {
        Some(match s {
            "relaxed" => MemoryOrder::Relaxed,
            "consume" => MemoryOrder::Consume,
            "acquire" => MemoryOrder::Acquire,
            "release" => MemoryOrder::Release,
            "acq_rel" => MemoryOrder::AcqRel,
            "seq_cst" => MemoryOrder::SeqCst,
            _ => return None,
        })
    }
}

/// A thread scope (libcu++'s `cuda::thread_scope`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `'thread'`
    Thread,
    /// `'block'`
    Block,
    /// `'device'`
    Device,
    /// `'system'`
    System,
}

impl Scope {
    /// Parses the spec's spelling.
    pub fn from_name(s: &str) -> Option<Scope> {
        Some(match s {
            "thread" => Scope::Thread,
            "block" => Scope::Block,
            "device" => Scope::Device,
            "system" => Scope::System,
            _ => return None,
        })
    }
}

/// Warp votes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Vote {
    /// `all_sync`
    All,
    /// `any_sync`
    Any,
    /// `eq_sync`
    Uni,
    /// `ballot_sync`
    Ballot,
}

/// Warp shuffles.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Shfl {
    /// `shfl_sync`: from lane `src_lane`
    Idx,
    /// `shfl_up_sync`: from `lane_id - delta`
    Up,
    /// `shfl_down_sync`: from `lane_id + delta`
    Down,
    /// `shfl_xor_sync`: from `lane_id ^ flag`
    Xor,
}

/// Atomic read-modify-write operations and accesses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// `load()`
    Load,
    /// `store(v)`
    Store,
    /// `exch(v)`
    Exch,
    /// `cas(old, v)`
    Cas,
    /// `add(v)`
    Add,
    /// `sub(v)`
    Sub,
    /// `and_(v)`
    And,
    /// `or_(v)`
    Or,
    /// `xor(v)`
    Xor,
    /// `max(v)`
    Max,
    /// `min(v)`
    Min,
    /// `nanmax(v)`: NaN is a missing value
    NanMax,
    /// `nanmin(v)`
    NanMin,
    /// `wait(old)`: block until the value differs from `old` (C++20 `atomic_ref::wait`);
    /// the thread polls with the memory order given, backing off with `nanosleep`.
    Wait,
    /// numba's `cuda.atomic.inc(ary, idx, val)`: `old >= val ? 0 : old + 1` (unsigned)
    Inc,
    /// numba's `cuda.atomic.dec(ary, idx, val)`: `old == 0 || old > val ? val : old - 1`
    Dec,
    /// `notify_all()` / `notify_one()`: waiters poll, so there is nothing to wake; kept
    /// for the spec's examples (the store that changed the value already released it).
    Notify,
}

impl AtomicOp {
    /// Every operation.
    pub const ALL: [AtomicOp; 17] = [
        AtomicOp::Load,
        AtomicOp::Store,
        AtomicOp::Exch,
        AtomicOp::Cas,
        AtomicOp::Add,
        AtomicOp::Sub,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Max,
        AtomicOp::Min,
        AtomicOp::NanMax,
        AtomicOp::NanMin,
        AtomicOp::Wait,
        AtomicOp::Inc,
        AtomicOp::Dec,
        AtomicOp::Notify,
    ];

    /// The method name (`atomic_ref(a, i).and_(v)`); numba's `cuda.atomic.<name>` and
    /// cupyx's `jit.atomic_<name>` are spelled from it. The one place atomic names live.
    pub fn method(self) -> &'static str {
        match self {
            AtomicOp::Load => "load",
            AtomicOp::Store => "store",
            AtomicOp::Exch => "exch",
            AtomicOp::Cas => "cas",
            AtomicOp::Add => "add",
            AtomicOp::Sub => "sub",
            AtomicOp::And => "and_",
            AtomicOp::Or => "or_",
            AtomicOp::Xor => "xor",
            AtomicOp::Max => "max",
            AtomicOp::Min => "min",
            AtomicOp::NanMax => "nanmax",
            AtomicOp::NanMin => "nanmin",
            AtomicOp::Wait => "wait",
            AtomicOp::Inc => "inc",
            AtomicOp::Dec => "dec",
            AtomicOp::Notify => "notify_all",
        }
    }

    /// The operation of an atomic reference's method name ([`AtomicOp::method`], and
    /// `notify_one`); `inc` and `dec` are numba's functions, not methods.
    pub fn from_method(s: &str) -> Option<AtomicOp> {
        if s == "notify_one" {
            return Some(AtomicOp::Notify);
        }
        AtomicOp::ALL
            .into_iter()
            .find(|op| op.method() == s && !matches!(op, AtomicOp::Inc | AtomicOp::Dec))
    }
}

impl Intrinsic {
    /// The name used when printing the IR.
    pub fn name(self) -> String {
        match self {
            Intrinsic::ThreadIdx(a) => format!("thread_idx.{}", a.letter()),
            Intrinsic::BlockIdx(a) => format!("block_idx.{}", a.letter()),
            Intrinsic::BlockDim(a) => format!("block_dim.{}", a.letter()),
            Intrinsic::GridDim(a) => format!("grid_dim.{}", a.letter()),
            Intrinsic::LaneId => "lane_id".into(),
            Intrinsic::WarpSize => "warp_size".into(),
            Intrinsic::SyncThreads => "syncthreads".into(),
            Intrinsic::ClusterIdx(a) => format!("cluster_idx.{}", a.letter()),
            Intrinsic::ClusterDim(a) => format!("cluster_dim.{}", a.letter()),
            Intrinsic::BlockIdxInCluster(a) => format!("block_idx_in_cluster.{}", a.letter()),
            Intrinsic::BlockRankInCluster => "block_rank_in_cluster".into(),
            Intrinsic::ClusterSize => "cluster_size".into(),
            Intrinsic::ClusterArrive(false) => "cluster_arrive".into(),
            Intrinsic::ClusterArrive(true) => "cluster_arrive_relaxed".into(),
            Intrinsic::ClusterWait => "cluster_wait".into(),
            Intrinsic::ClusterSync => "cluster_sync".into(),
            Intrinsic::MapSharedRank => "map_shared_rank".into(),
            Intrinsic::Complex(op) => format!("complex.{op:?}").to_lowercase(),
            Intrinsic::Cg(op) => format!("cg.{op:?}").to_lowercase(),
            Intrinsic::Tensor(op) => op.name(),
            Intrinsic::FunnelShiftL | Intrinsic::FunnelShiftR => self.python_name(),
            Intrinsic::Hopper(op) => op.name(),
            other => format!("{other:?}").to_lowercase(),
        }
    }
}
