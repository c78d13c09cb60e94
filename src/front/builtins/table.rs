//! The builtin table: one row per builtin, saying everything the compiler knows about it
//! outside its typing rule and its lowering.
//!
//! A row gives the builtin's spellings in each namespace (`cuda.device`, `numba.cuda`,
//! `cupyx.jit`, `math`, Python's builtins, …), its parameters and their defaults, the typing
//! rule that checks a call of it (one [`Rule`] shared by the builtins that type alike), the
//! IR operation a call produces, and whether the host can run it. Member lookup
//! ([`member`]), the name diagnostics use ([`name`]), the checker's dispatch
//! (`check::calls::builtin_call`, an exhaustive match on [`Rule`]) and the host column are
//! all derived from these rows; nothing else lists builtins.
//!
//! Builtins that come in families named by another enum (number types, vector types,
//! `math` functions, `operator` functions, the `cuda.fp16` arithmetic, NumPy reductions,
//! atomic operations) are one [`Family`] each: the family's own name table spells its
//! members.
//!
//! This module must not depend on the checker: a rule is data here, a function there.

use super::{Builtin, CgFn, HopperFn as H, Namespace as N};
use crate::ir::{AtomicOp, CgOp, HopperOp, Intrinsic, Shfl, Swizzle, TensorOp, Vote};
use crate::types::GroupKind;
use crate::types::tensor::MatrixLayout;
use std::collections::HashMap;
use std::sync::OnceLock;

/// How a call of a builtin is checked and typed: each rule is one function of the checker
/// (`check::calls::builtin_call` matches on it exhaustively), shared by the builtins that
/// type alike; the row's [`Op`] says which IR operation the rule produces.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// Not a function (a decorator, a type, a value, a namespace entity): calling it is E0202.
    NotCallable,
    /// A conversion to a number type (`float32(x)`, `int(x)`, `complex(re, im)`).
    Conversion,
    /// A function of `cmath`.
    Cmath,
    /// A NumPy whole-array reduction (`np.sum(a)`).
    NpReduce,
    /// Only the iterable of a `for` loop: `literal_unroll(t)` (E0307).
    UnrollOnly,
    /// Only the iterable of a `for` loop: `range(...)` (E0304).
    LoopOnly,
    /// Only the whole condition of an `if`: `target(...)`, `is_exactly(sm)` (E0410).
    TargetOnly,
    /// A type for struct fields and dtypes: `align(t, n)` (E0423).
    AlignType,
    /// `Atomic(dtype)`: a struct field's type, an array's dtype, or a new object as the whole
    /// value of an assignment (`check/atomic_object.rs`); elsewhere E0261.
    AtomicField,
    /// `len(x)`.
    Len,
    /// `tuple(x)` of a tuple or a vector (`tuple(block_dim)`).
    TupleOf,
    /// `machine_representation()`: a string, so only an operand of `==`/`!=` with a string
    /// literal (decided at compile time); anywhere else E0202.
    StringOnly,
    /// `print(...)`: only a statement (`check::print`); as a value it is E0308.
    PrintOnly,
    /// `abs(x)`.
    Abs,
    /// `pow(x, y)`.
    Pow,
    /// A binary `operator` function.
    OperatorBinary,
    /// A unary `operator` function.
    OperatorUnary,
    /// `min`/`max` of several values or of a tuple.
    MinMax,
    /// `tid(n)`/`grid_size(n)` (int32), numba's `grid(n)`/`gridsize(n)` (int64).
    Positions,
    /// A call with no arguments that produces the row's intrinsic.
    Nullary,
    /// `shared_array`/`local_array`.
    LocalMemory,
    /// `dynamic_shared_array()`.
    DynamicShared,
    /// A block barrier with a predicate (`syncthreads_count(pred)`).
    SyncPredicate,
    /// `threadfence(memory, scope)`.
    Fence,
    /// `atomic_ref(array, index)`.
    AtomicRef,
    /// `syncwarp(mask)`.
    SyncWarp,
    /// A warp vote (`all_sync(mask, pred)`).
    Vote,
    /// A warp shuffle (`shfl_sync(mask, value, lane)`).
    Shfl,
    /// A warp match (`match_any_sync(mask, value)`).
    Match,
    /// A bit count or reversal of an integer (`popc(x)`).
    Bits,
    /// A floating-point function of floats (`cbrt(a)`, `fma(a, b, c)`).
    FloatOp,
    /// `WarpMask(x)`.
    WarpMask,
    /// A function of `math` of one or two floats.
    Math,
    /// A `math` function with two results or an int operand (`frexp`, `ldexp`, `modf`).
    MathPair,
    /// An intrinsic whose declaration gives its signature ([`Intrinsic::signature`]): each
    /// argument is converted to its parameter's type, the result has the declared type.
    Declared,
    /// A vector constructor (`float32x4(...)`).
    Vector,
    /// numba's value-predicate barriers (`cuda.syncthreads_count(pred)`).
    NumbaSyncthreads,
    /// numba's value-predicate votes (`cuda.all_sync(mask, pred)`).
    NumbaVote,
    /// numba's and cupyx's array atomics (`cuda.atomic.add(ary, idx, val)`).
    NumbaAtomic,
    /// numba's `cuda.fp16`/`cuda.bf16` arithmetic.
    Fp16,
    /// numba's cache-hinted loads and stores.
    CacheHint,
    /// numba's `cuda.const.array_like` (E0602).
    ConstArrayLike,
    /// `round(x)` / `round(x, ndigits)`.
    Round,
    /// numba's `cuda.threadfence*()`.
    NumbaFence,
    /// numba's `cuda.selp(cond, a, b)`.
    Selp,
    /// numba's `to_fixed_tuple(array, n)`: a tuple of the array's first `n` elements.
    ToFixedTuple,
    /// cupyx's `jit.shared_memory(dtype, size)`.
    CupyxSharedMemory,
    /// `random.rand(dtype)` / `random.randn(dtype)`: a float of the dtype (float32 or float64;
    /// the dialect's `float` by default).
    Random,
    /// A function of `cuda.device.cg` (`check::groups`, docs/semantics.md §17).
    Cg,
    /// A thread block cluster barrier (`cluster_arrive(memory)`, `cluster_wait()`,
    /// `cluster_sync()`; sm_90, §18.1).
    ClusterBarrier,
    /// `map_shared_rank(array, rank)`: another block's shared array (sm_90, §18.1).
    MapSharedRank,
    /// `asm(...)`: inline PTX (§18.2).
    Asm,
    /// `launch(kernel, *args, grid, block, shared)` in device code (§18.3).
    DeviceLaunch,
    /// A tensor-core operation that gives a value or stores (`wmma.fragment`,
    /// `wmma.store_matrix_sync`, `mma.mma_sync_m16n8k16`, `mma.ldmatrix`; §19).
    Tensor,
    /// A function of `cuda.device.hopper` (`check::hopper`, §18.4).
    Hopper,
    /// A `wmma` operation that writes its first argument, a fragment local
    /// (`wmma.mma_sync(d, a, b, c)`): only a statement (`check::tensor`), E0763 as a value.
    TensorInPlace,
}

/// The IR operation a call of a builtin produces.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `Expr::Intrinsic` with this intrinsic.
    Intrinsic(Intrinsic),
    /// `Expr::Atomic` with this operation.
    Atomic(AtomicOp),
    /// Another IR expression, said in words (a cast, a load, an array allocation, …).
    Expr(&'static str),
    /// None: the builtin is not called (a decorator, a type, a namespace entity), or the call
    /// is a diagnostic.
    None,
}

/// One builtin.
#[derive(Clone, Debug)]
pub struct Row {
    /// The entity.
    pub builtin: Builtin,
    /// Its spellings, one per namespace that has it; the first is the name diagnostics use.
    pub names: &'static [(N, &'static str)],
    /// Its parameters, by name, in order.
    pub params: &'static [&'static str],
    /// The defaults of its last parameters, as Python spells them; the parameters before
    /// them are required.
    pub defaults: &'static [&'static str],
    /// How a call is checked and typed.
    pub rule: Rule,
    /// What a call produces in the IR.
    pub op: Op,
    /// Whether the host back end can run it (`Module::host_function`), and if not, whether
    /// it is device-only by the spec.
    pub host: Host,
}

impl Row {
    /// How many leading parameters a call must give.
    pub fn required(&self) -> usize {
        self.params.len() - self.defaults.len()
    }

    /// The name diagnostics use.
    pub fn name(&self) -> &'static str {
        self.names[0].1
    }
}

/// A family of builtins named by another enum (number types, `math` functions, …).
#[derive(Clone, Debug)]
pub struct Family {
    /// What the family is, for documentation and test output.
    pub what: &'static str,
    /// Whether `b` belongs to the family.
    pub contains: fn(Builtin) -> bool,
    /// The member of namespace `ns` spelled `name`, if it is in the family.
    pub member: fn(N, &str) -> Option<Builtin>,
    /// The name diagnostics use for a member.
    pub name: fn(Builtin) -> String,
    /// Every namespace that spells members of the family.
    pub namespaces: &'static [N],
    /// How a call is checked and typed.
    pub rule: Rule,
    /// What a call of member `b` produces in the IR.
    pub op: fn(Builtin) -> Op,
    /// Whether the host back end can run a call of a member.
    pub host: Host,
}

/// The host column: whether the host back end runs a builtin, and if not, why not. The one
/// place that says which entities are device-only: the host checker's E0501 and the
/// front end's E0243 (a `@func` using a device-only entity without a `target` guard) both
/// follow it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Host {
    /// The host runs it.
    Runs,
    /// Heterogeneous by the spec, but the host back end does not run it yet (complex
    /// numbers, `math.frexp`, …): a `@func` may use it unguarded.
    Later,
    /// Device-only by the spec (thread positions, barriers, warp functions, shared memory,
    /// fences) or by its dialect (numba's and cupyx's device intrinsics): a `@func` needs
    /// a `target(...)` guard around it.
    DeviceOnly,
}

impl Host {
    /// Whether the host back end can run it.
    pub const fn runs(self) -> bool {
        matches!(self, Host::Runs)
    }
}

use Builtin as B;
use Intrinsic as I;

const fn row(
    builtin: Builtin,
    names: &'static [(N, &'static str)],
    params: &'static [&'static str],
    defaults: &'static [&'static str],
    rule: Rule,
    op: Op,
    host: Host,
) -> Row {
    Row {
        builtin,
        names,
        params,
        defaults,
        rule,
        op,
        host,
    }
}

/// Not a call: a decorator, a type or a value the checker reads in its own place.
const fn entity(builtin: Builtin, names: &'static [(N, &'static str)], host: Host) -> Row {
    row(builtin, names, &[], &[], Rule::NotCallable, Op::None, host)
}

const DEVICE_ONLY: Host = Host::DeviceOnly;
const HOST: Host = Host::Runs;
const HOST_LATER: Host = Host::Later;

/// Every builtin that is not in a [`Family`], one line each.
#[rustfmt::skip]
pub static ROWS: &[Row] = &[
    // Decorators.
    entity(B::Kernel, &[(N::Device, "kernel")], HOST),
    entity(B::Func, &[(N::Device, "func")], HOST),
    entity(B::Struct, &[(N::Device, "struct")], HOST),
    entity(B::Jit, &[(N::NumbaCuda, "jit")], DEVICE_ONLY),
    entity(B::RawKernel, &[(N::CupyxJit, "rawkernel")], DEVICE_ONLY),
    entity(
        B::Void,
        &[(N::Numba, "void"), (N::Numba, "none"), (N::NumbaTypes, "void"), (N::NumbaTypes, "none"), (N::NumbaCuda, "void"), (N::NumbaCuda, "none")],
        DEVICE_ONLY,
    ),
    // Conversions: Python's number types.
    row(B::Int, &[(N::Builtins, "int")], &["x"], &["0"], Rule::Conversion, Op::Expr("cast"), HOST),
    row(B::Float, &[(N::Builtins, "float")], &["x"], &["0.0"], Rule::Conversion, Op::Expr("cast"), HOST),
    row(B::Bool, &[(N::Builtins, "bool")], &["x"], &["False"], Rule::Conversion, Op::Expr("cast"), HOST),
    row(B::Complex, &[(N::Builtins, "complex")], &["real", "imag"], &["0.0", "0.0"], Rule::Conversion, Op::Expr("complex"), HOST),
    // Python builtins.
    row(B::Range, &[(N::Builtins, "range"), (N::CupyxJit, "range")], &["start", "stop", "step"], &["None", "1"], Rule::LoopOnly, Op::None, HOST),
    row(B::Print, &[(N::Builtins, "print")], &["*args"], &[], Rule::PrintOnly, Op::Expr("print statement"), HOST),
    row(B::Len, &[(N::Builtins, "len")], &["x"], &[], Rule::Len, Op::Expr("shape"), HOST),
    row(B::Abs, &[(N::Builtins, "abs")], &["x"], &[], Rule::Abs, Op::Expr("abs"), HOST),
    row(B::Min, &[(N::Builtins, "min")], &["*args"], &[], Rule::MinMax, Op::Expr("min"), HOST),
    row(B::Max, &[(N::Builtins, "max")], &["*args"], &[], Rule::MinMax, Op::Expr("max"), HOST),
    row(B::Round, &[(N::Builtins, "round")], &["number", "ndigits"], &["None"], Rule::Round, Op::Intrinsic(I::RoundDigits), HOST),
    row(B::Pow, &[(N::Builtins, "pow")], &["base", "exp", "mod"], &["None"], Rule::Pow, Op::Expr("pow"), HOST),
    row(B::LiteralUnroll, &[(N::NumbaCuda, "literal_unroll"), (N::Numba, "literal_unroll")], &["t"], &[], Rule::UnrollOnly, Op::None, DEVICE_ONLY),
    row(B::ToFixedTuple, &[(N::Numba, "to_fixed_tuple")], &["array", "length"], &[], Rule::ToFixedTuple, Op::Expr("tuple"), DEVICE_ONLY),
    row(B::StaticRange, &[(N::Device, "static_range")], &["start", "stop", "step"], &["None", "1"], Rule::UnrollOnly, Op::None, HOST),
    // Thread positioning (§ "Thread Positioning").
    entity(B::ThreadIdx, &[(N::Device, "thread_idx"), (N::NumbaCuda, "threadIdx"), (N::CupyxJit, "threadIdx")], DEVICE_ONLY),
    entity(B::BlockIdx, &[(N::Device, "block_idx"), (N::NumbaCuda, "blockIdx"), (N::CupyxJit, "blockIdx")], DEVICE_ONLY),
    entity(B::BlockDim, &[(N::Device, "block_dim"), (N::NumbaCuda, "blockDim"), (N::CupyxJit, "blockDim")], DEVICE_ONLY),
    entity(B::GridDim, &[(N::Device, "grid_dim"), (N::NumbaCuda, "gridDim"), (N::CupyxJit, "gridDim")], DEVICE_ONLY),
    entity(B::LaneId, &[(N::Device, "lane_id"), (N::NumbaCuda, "laneid")], DEVICE_ONLY),
    entity(B::WarpSize, &[(N::Device, "warp_size"), (N::NumbaCuda, "warpsize"), (N::CupyxJit, "warpsize")], DEVICE_ONLY),
    // Thread block clusters (sm_90; a pydevice extension, §18.1).
    entity(B::ClusterIdx, &[(N::Device, "cluster_idx")], DEVICE_ONLY),
    entity(B::ClusterDim, &[(N::Device, "cluster_dim")], DEVICE_ONLY),
    entity(B::BlockIdxInCluster, &[(N::Device, "block_idx_in_cluster")], DEVICE_ONLY),
    entity(B::BlockRankInCluster, &[(N::Device, "block_rank_in_cluster")], DEVICE_ONLY),
    entity(B::ClusterSize, &[(N::Device, "cluster_size")], DEVICE_ONLY),
    row(B::ClusterArrive, &[(N::Device, "cluster_arrive")], &["memory"], &["'release'"], Rule::ClusterBarrier, Op::Intrinsic(I::ClusterArrive(false)), DEVICE_ONLY),
    row(B::ClusterWait, &[(N::Device, "cluster_wait")], &[], &[], Rule::ClusterBarrier, Op::Intrinsic(I::ClusterWait), DEVICE_ONLY),
    row(B::ClusterSync, &[(N::Device, "cluster_sync")], &[], &[], Rule::ClusterBarrier, Op::Intrinsic(I::ClusterSync), DEVICE_ONLY),
    row(B::MapSharedRank, &[(N::Device, "map_shared_rank")], &["array", "rank"], &[], Rule::MapSharedRank, Op::Intrinsic(I::MapSharedRank), DEVICE_ONLY),
    // Inline PTX and launches from device code (extensions, §18.2, §18.3).
    row(B::Asm, &[(N::Device, "asm")], &["template", "result", "args", "constraints", "volatile", "memory"], &["()", "None", "False", "False"], Rule::Asm, Op::Expr("inline PTX"), DEVICE_ONLY),
    row(B::Launch, &[(N::Device, "launch")], &["kernel", "*args", "grid", "block", "shared"], &["0"], Rule::DeviceLaunch, Op::Expr("device-side launch"), DEVICE_ONLY),
    row(B::CupyxLaneId, &[(N::CupyxJit, "laneid")], &[], &[], Rule::Nullary, Op::Intrinsic(I::LaneId), DEVICE_ONLY),
    row(B::Tid, &[(N::Device, "tid")], &["ndim"], &[], Rule::Positions, Op::Expr("block_idx * block_dim + thread_idx"), DEVICE_ONLY),
    row(B::GridSize, &[(N::Device, "grid_size")], &["ndim"], &[], Rule::Positions, Op::Expr("block_dim * grid_dim"), DEVICE_ONLY),
    row(B::NumbaGrid, &[(N::NumbaCuda, "grid"), (N::CupyxJit, "grid")], &["ndim"], &[], Rule::Positions, Op::Expr("block_idx * block_dim + thread_idx"), DEVICE_ONLY),
    row(B::NumbaGridsize, &[(N::NumbaCuda, "gridsize"), (N::CupyxJit, "gridsize")], &["ndim"], &[], Rule::Positions, Op::Expr("block_dim * grid_dim"), DEVICE_ONLY),
    // Memory.
    row(B::SharedArray, &[(N::Device, "shared_array"), (N::NumbaShared, "array")], &["shape", "dtype", "order", "align"], &["'C'", "0"], Rule::LocalMemory, Op::Expr("static array"), DEVICE_ONLY),
    row(B::LocalArray, &[(N::Device, "local_array"), (N::NumbaLocal, "array")], &["shape", "dtype", "order", "align"], &["'C'", "0"], Rule::LocalMemory, Op::Expr("static array"), HOST),
    row(B::DynamicSharedArray, &[(N::Device, "dynamic_shared_array")], &[], &[], Rule::DynamicShared, Op::Expr("dynamic shared array"), DEVICE_ONLY),
    row(B::CupyxSharedMemory, &[(N::CupyxJit, "shared_memory")], &["dtype", "size", "alignment"], &["None"], Rule::CupyxSharedMemory, Op::Expr("static array"), DEVICE_ONLY),
    row(B::NumbaConstArrayLike, &[(N::NumbaConst, "array_like")], &["ary"], &[], Rule::ConstArrayLike, Op::None, DEVICE_ONLY),
    row(B::NumbaCacheHint(false), &[(N::NumbaCuda, "ldca"), (N::NumbaCuda, "ldcg"), (N::NumbaCuda, "ldcs"), (N::NumbaCuda, "ldlu"), (N::NumbaCuda, "ldcv")], &["array", "i"], &[], Rule::CacheHint, Op::Expr("load"), DEVICE_ONLY),
    row(B::NumbaCacheHint(true), &[(N::NumbaCuda, "stcg"), (N::NumbaCuda, "stcs"), (N::NumbaCuda, "stwb"), (N::NumbaCuda, "stwt")], &["array", "i", "value"], &[], Rule::CacheHint, Op::Expr("store"), DEVICE_ONLY),
    // Synchronization.
    row(B::SyncThreads, &[(N::Device, "syncthreads"), (N::NumbaCuda, "syncthreads"), (N::CupyxJit, "syncthreads")], &[], &[], Rule::Nullary, Op::Intrinsic(I::SyncThreads), DEVICE_ONLY),
    row(B::SyncThreadsCount, &[(N::Device, "syncthreads_count")], &["pred"], &[], Rule::SyncPredicate, Op::Intrinsic(I::SyncThreadsCount), DEVICE_ONLY),
    row(B::SyncThreadsAnd, &[(N::Device, "syncthreads_and")], &["pred"], &[], Rule::SyncPredicate, Op::Intrinsic(I::SyncThreadsAnd), DEVICE_ONLY),
    row(B::SyncThreadsOr, &[(N::Device, "syncthreads_or")], &["pred"], &[], Rule::SyncPredicate, Op::Intrinsic(I::SyncThreadsOr), DEVICE_ONLY),
    row(B::NumbaSyncthreads(0), &[(N::NumbaCuda, "syncthreads_count")], &["predicate"], &[], Rule::NumbaSyncthreads, Op::Intrinsic(I::SyncThreadsCount), DEVICE_ONLY),
    row(B::NumbaSyncthreads(1), &[(N::NumbaCuda, "syncthreads_and")], &["predicate"], &[], Rule::NumbaSyncthreads, Op::Intrinsic(I::SyncThreadsAnd), DEVICE_ONLY),
    row(B::NumbaSyncthreads(2), &[(N::NumbaCuda, "syncthreads_or")], &["predicate"], &[], Rule::NumbaSyncthreads, Op::Intrinsic(I::SyncThreadsOr), DEVICE_ONLY),
    row(B::ThreadFence, &[(N::Device, "threadfence")], &["memory", "scope"], &["'seq_cst'", "'system'"], Rule::Fence, Op::Intrinsic(I::ThreadFence(crate::ir::MemoryOrder::SeqCst, crate::ir::Scope::System)), DEVICE_ONLY),
    row(B::NumbaFence(0), &[(N::NumbaCuda, "threadfence")], &[], &[], Rule::NumbaFence, Op::Intrinsic(I::ThreadFence(crate::ir::MemoryOrder::SeqCst, crate::ir::Scope::Device)), DEVICE_ONLY),
    row(B::NumbaFence(1), &[(N::NumbaCuda, "threadfence_block")], &[], &[], Rule::NumbaFence, Op::Intrinsic(I::ThreadFence(crate::ir::MemoryOrder::SeqCst, crate::ir::Scope::Block)), DEVICE_ONLY),
    row(B::NumbaFence(2), &[(N::NumbaCuda, "threadfence_system")], &[], &[], Rule::NumbaFence, Op::Intrinsic(I::ThreadFence(crate::ir::MemoryOrder::SeqCst, crate::ir::Scope::System)), DEVICE_ONLY),
    // Atomics.
    row(B::AtomicRef, &[(N::Device, "atomic_ref")], &["array", "index"], &[], Rule::AtomicRef, Op::Expr("element reference"), HOST),
    row(B::AtomicClass, &[(N::Device, "Atomic")], &["dtype", "align"], &["0"], Rule::AtomicField, Op::None, HOST),
    row(B::NumbaCompareAndSwap, &[(N::NumbaAtomic, "compare_and_swap")], &["ary", "old", "val"], &[], Rule::NumbaAtomic, Op::Atomic(AtomicOp::Cas), DEVICE_ONLY),
    // Warp operations.
    row(B::ActiveMask, &[(N::Device, "activemask"), (N::NumbaCuda, "activemask")], &[], &[], Rule::Nullary, Op::Intrinsic(I::ActiveMask), DEVICE_ONLY),
    row(B::LaneMaskLt, &[(N::Device, "lanemask_lt"), (N::NumbaCuda, "lanemask_lt")], &[], &[], Rule::Nullary, Op::Intrinsic(I::LaneMaskLt), DEVICE_ONLY),
    row(B::SyncWarp, &[(N::Device, "syncwarp"), (N::NumbaCuda, "syncwarp"), (N::CupyxJit, "syncwarp")], &["mask"], &["0xFFFFFFFF"], Rule::SyncWarp, Op::Intrinsic(I::SyncWarp), DEVICE_ONLY),
    row(B::AllSync, &[(N::Device, "all_sync")], &["mask", "pred"], &[], Rule::Vote, Op::Intrinsic(I::Vote(Vote::All)), DEVICE_ONLY),
    row(B::AnySync, &[(N::Device, "any_sync")], &["mask", "pred"], &[], Rule::Vote, Op::Intrinsic(I::Vote(Vote::Any)), DEVICE_ONLY),
    row(B::EqSync, &[(N::Device, "eq_sync")], &["mask", "pred"], &[], Rule::Vote, Op::Intrinsic(I::Vote(Vote::Uni)), DEVICE_ONLY),
    row(B::BallotSync, &[(N::Device, "ballot_sync")], &["mask", "pred"], &[], Rule::Vote, Op::Intrinsic(I::Vote(Vote::Ballot)), DEVICE_ONLY),
    row(B::NumbaVote(0), &[(N::NumbaCuda, "all_sync")], &["mask", "predicate"], &[], Rule::NumbaVote, Op::Intrinsic(I::Vote(Vote::All)), DEVICE_ONLY),
    row(B::NumbaVote(1), &[(N::NumbaCuda, "any_sync")], &["mask", "predicate"], &[], Rule::NumbaVote, Op::Intrinsic(I::Vote(Vote::Any)), DEVICE_ONLY),
    row(B::NumbaVote(2), &[(N::NumbaCuda, "eq_sync")], &["mask", "predicate"], &[], Rule::NumbaVote, Op::Intrinsic(I::Vote(Vote::Uni)), DEVICE_ONLY),
    row(B::NumbaVote(3), &[(N::NumbaCuda, "ballot_sync")], &["mask", "predicate"], &[], Rule::NumbaVote, Op::Intrinsic(I::Vote(Vote::Ballot)), DEVICE_ONLY),
    row(B::ShflSync, &[(N::Device, "shfl_sync"), (N::NumbaCuda, "shfl_sync"), (N::CupyxJit, "shfl_sync")], &["mask", "value", "src_lane"], &[], Rule::Shfl, Op::Intrinsic(I::Shfl(Shfl::Idx)), DEVICE_ONLY),
    row(B::ShflUpSync, &[(N::Device, "shfl_up_sync"), (N::NumbaCuda, "shfl_up_sync"), (N::CupyxJit, "shfl_up_sync")], &["mask", "value", "delta"], &[], Rule::Shfl, Op::Intrinsic(I::Shfl(Shfl::Up)), DEVICE_ONLY),
    row(B::ShflDownSync, &[(N::Device, "shfl_down_sync"), (N::NumbaCuda, "shfl_down_sync"), (N::CupyxJit, "shfl_down_sync")], &["mask", "value", "delta"], &[], Rule::Shfl, Op::Intrinsic(I::Shfl(Shfl::Down)), DEVICE_ONLY),
    row(B::ShflXorSync, &[(N::Device, "shfl_xor_sync"), (N::NumbaCuda, "shfl_xor_sync"), (N::CupyxJit, "shfl_xor_sync")], &["mask", "value", "flag"], &[], Rule::Shfl, Op::Intrinsic(I::Shfl(Shfl::Xor)), DEVICE_ONLY),
    row(B::MatchAnySync, &[(N::Device, "match_any_sync"), (N::NumbaCuda, "match_any_sync")], &["mask", "value", "flag"], &["0"], Rule::Match, Op::Intrinsic(I::MatchAny), DEVICE_ONLY),
    row(B::MatchAllSync, &[(N::Device, "match_all_sync"), (N::NumbaCuda, "match_all_sync")], &["mask", "value", "flag"], &["0"], Rule::Match, Op::Intrinsic(I::MatchAll), DEVICE_ONLY),
    row(B::WarpMask, &[(N::Device, "WarpMask")], &["x"], &["0"], Rule::WarpMask, Op::Expr("warp mask"), HOST),
    // Numeric intrinsics.
    row(B::Popc, &[(N::Device, "popc"), (N::NumbaCuda, "popc")], &["x"], &[], Rule::Bits, Op::Intrinsic(I::Popc), HOST),
    row(B::Brev, &[(N::Device, "brev"), (N::NumbaCuda, "brev")], &["x"], &[], Rule::Bits, Op::Intrinsic(I::Brev), HOST),
    row(B::Clz, &[(N::Device, "clz"), (N::NumbaCuda, "clz")], &["x"], &[], Rule::Bits, Op::Intrinsic(I::Clz), HOST),
    row(B::Ffs, &[(N::Device, "ffs"), (N::NumbaCuda, "ffs")], &["x"], &[], Rule::Bits, Op::Intrinsic(I::Ffs), HOST),
    row(B::Declared(I::FunnelShiftL), &[(N::Device, "funnelshift_l")], &["lo", "hi", "shift"], &[], Rule::Declared, Op::Intrinsic(I::FunnelShiftL), HOST),
    row(B::Declared(I::FunnelShiftR), &[(N::Device, "funnelshift_r")], &["lo", "hi", "shift"], &[], Rule::Declared, Op::Intrinsic(I::FunnelShiftR), HOST),
    row(B::Cbrt, &[(N::Device, "cbrt"), (N::NumbaCuda, "cbrt")], &["a"], &[], Rule::FloatOp, Op::Intrinsic(I::Math(crate::ir::MathFn::Cbrt)), HOST),
    row(B::Rsqrt, &[(N::Device, "rsqrt"), (N::NumbaLibdevice, "rsqrt"), (N::NumbaLibdevice, "rsqrtf")], &["x"], &[], Rule::FloatOp, Op::Intrinsic(I::Math(crate::ir::MathFn::Rsqrt)), HOST),
    row(B::Fma, &[(N::Device, "fma"), (N::NumbaCuda, "fma")], &["a", "b", "c"], &[], Rule::FloatOp, Op::Intrinsic(I::Fma), HOST),
    row(B::Selp, &[(N::NumbaCuda, "selp")], &["cond", "a", "b"], &[], Rule::Selp, Op::Expr("select"), DEVICE_ONLY),
    row(B::MathPair(I::Frexp), &[(N::Math, "frexp"), (N::NumbaLibdevice, "frexp"), (N::NumbaLibdevice, "frexpf")], &["x"], &[], Rule::MathPair, Op::Intrinsic(I::Frexp), HOST_LATER),
    row(B::MathPair(I::Ldexp), &[(N::Math, "ldexp"), (N::NumbaLibdevice, "ldexp"), (N::NumbaLibdevice, "ldexpf")], &["x", "i"], &[], Rule::MathPair, Op::Intrinsic(I::Ldexp), HOST_LATER),
    row(B::MathPair(I::Modf), &[(N::Math, "modf"), (N::NumbaLibdevice, "modf"), (N::NumbaLibdevice, "modff")], &["x"], &[], Rule::MathPair, Op::Intrinsic(I::Modf), HOST_LATER),
    row(B::MathPair(I::Sincos), &[(N::NumbaLibdevice, "sincos"), (N::NumbaLibdevice, "sincosf")], &["x"], &[], Rule::MathPair, Op::Intrinsic(I::Sincos), HOST_LATER),
    row(B::MathPair(I::Sad), &[(N::NumbaLibdevice, "sad")], &["x", "y", "z"], &[], Rule::MathPair, Op::Intrinsic(I::Sad), HOST_LATER),
    // Struct field types and target descriptions.
    row(B::Align, &[(N::Device, "align")], &["t", "n"], &[], Rule::AlignType, Op::None, HOST),
    entity(B::ConstExpr, &[(N::Device, "ConstExpr")], HOST),
    row(B::MachineRepresentation, &[(N::Device, "machine_representation")], &[], &[], Rule::StringOnly, Op::None, HOST),
    row(B::TupleType, &[(N::Builtins, "tuple")], &["x"], &[], Rule::TupleOf, Op::Expr("tuple"), HOST),
    entity(B::Dim3Like, &[(N::Device, "Dim3Like")], HOST),
    row(B::Target, &[(N::Device, "target")], &["desc"], &[], Rule::TargetOnly, Op::None, HOST),
    row(B::IsExactly, &[(N::Device, "is_exactly")], &["sm"], &[], Rule::TargetOnly, Op::None, HOST),
    row(B::Provides, &[(N::Device, "provides")], &["sm"], &[], Rule::TargetOnly, Op::None, HOST),
    entity(B::IsHost, &[(N::Device, "is_host")], HOST),
    entity(B::IsDevice, &[(N::Device, "is_device")], HOST),
    entity(B::AnyTarget, &[(N::Device, "any_target")], HOST),
    entity(B::NoTarget, &[(N::Device, "no_target")], HOST),
    entity(B::TargetDescription, &[(N::Device, "TargetDescription")], HOST),
    entity(B::SmSelector, &[(N::Device, "SMSelector")], HOST),
    // Random numbers: pydevice's extension `cuda.device.random` (§6.4).
    row(B::Rand, &[(N::DeviceRandom, "rand")], &["dtype"], &["float"], Rule::Random, Op::Intrinsic(I::Rand), HOST),
    row(B::Randn, &[(N::DeviceRandom, "randn")], &["dtype"], &["float"], Rule::Random, Op::Intrinsic(I::Randn), HOST),
    // Cooperative groups: a pydevice extension (`cuda.device.cg`, docs/semantics.md §17).
    row(B::Cg(CgFn::ThisThreadBlock), &[(N::Cg, "this_thread_block"), (N::CupyxCg, "this_thread_block")], &[], &[], Rule::Cg, Op::Intrinsic(I::Cg(CgOp::Make(GroupKind::Block))), DEVICE_ONLY),
    row(B::Cg(CgFn::ThisGrid), &[(N::Cg, "this_grid"), (N::CupyxCg, "this_grid"), (N::NumbaCg, "this_grid")], &[], &[], Rule::Cg, Op::Intrinsic(I::Cg(CgOp::Make(GroupKind::Grid))), DEVICE_ONLY),
    row(B::Cg(CgFn::CoalescedThreads), &[(N::Cg, "coalesced_threads")], &[], &[], Rule::Cg, Op::Intrinsic(I::Cg(CgOp::Make(GroupKind::Coalesced))), DEVICE_ONLY),
    row(B::Cg(CgFn::TiledPartition), &[(N::Cg, "tiled_partition")], &["parent", "size"], &[], Rule::Cg, Op::Expr("tile group"), DEVICE_ONLY),
    row(B::Cg(CgFn::Reduce), &[(N::Cg, "reduce")], &["group", "value", "op"], &[], Rule::Cg, Op::Expr("group reduction"), DEVICE_ONLY),
    row(B::Cg(CgFn::Sync), &[(N::Cg, "sync"), (N::CupyxCg, "sync")], &["group"], &[], Rule::Cg, Op::Expr("group barrier"), DEVICE_ONLY),
    row(B::Cg(CgFn::BarrierArrive), &[(N::Cg, "barrier_arrive")], &["group"], &[], Rule::Cg, Op::Intrinsic(I::Cg(CgOp::BarrierArrive)), DEVICE_ONLY),
    row(B::Cg(CgFn::MemcpyAsync), &[(N::Cg, "memcpy_async")], &["dst", "dst_index", "src", "src_index", "count"], &["1"], Rule::Cg, Op::Expr("asynchronous copy"), DEVICE_ONLY),
    row(B::Cg(CgFn::AsyncCommit), &[(N::Cg, "memcpy_async_commit")], &[], &[], Rule::Cg, Op::Intrinsic(I::Cg(CgOp::AsyncCommit)), DEVICE_ONLY),
    row(B::Cg(CgFn::AsyncWait), &[(N::Cg, "memcpy_async_wait")], &["n"], &["0"], Rule::Cg, Op::Expr("cp.async.wait_group"), DEVICE_ONLY),
    row(B::Cg(CgFn::AsyncWaitAll), &[(N::Cg, "memcpy_async_wait_all")], &[], &[], Rule::Cg, Op::Intrinsic(I::Cg(CgOp::AsyncWaitAll)), DEVICE_ONLY),
    row(B::Cg(CgFn::GroupMemcpy), &[(N::CupyxCg, "memcpy_async")], &["group", "dst", "dst_idx", "src", "src_idx", "size", "aligned_size"], &["None"], Rule::Cg, Op::Expr("group copy loop"), DEVICE_ONLY),
    row(B::Cg(CgFn::GroupWait), &[(N::CupyxCg, "wait")], &["group"], &[], Rule::Cg, Op::Expr("group barrier"), DEVICE_ONLY),
    row(B::Cg(CgFn::GroupWaitPrior), &[(N::CupyxCg, "wait_prior")], &["group", "step"], &[], Rule::Cg, Op::Expr("group barrier"), DEVICE_ONLY),
    row(B::Cg(CgFn::BarrierWait), &[(N::Cg, "barrier_wait")], &["group", "token"], &[], Rule::Cg, Op::Intrinsic(I::Cg(CgOp::BarrierWait)), DEVICE_ONLY),
    // Tensor cores (a pydevice extension, §19). A load's and a store's layout is their
    // fragment's or their `layout` argument, read by the checker.
    row(B::WmmaFragment, &[(N::Wmma, "fragment")], &["use", "shape", "dtype", "layout"], &["None"], Rule::Tensor, Op::Intrinsic(I::Tensor(TensorOp::Fill)), DEVICE_ONLY),
    row(B::WmmaFillFragment, &[(N::Wmma, "fill_fragment")], &["frag", "value"], &[], Rule::TensorInPlace, Op::Intrinsic(I::Tensor(TensorOp::Fill)), DEVICE_ONLY),
    row(B::WmmaLoadMatrix, &[(N::Wmma, "load_matrix_sync")], &["frag", "array", "index", "ldm", "layout"], &["None"], Rule::TensorInPlace, Op::Intrinsic(I::Tensor(TensorOp::Load(MatrixLayout::RowMajor))), DEVICE_ONLY),
    row(B::WmmaStoreMatrix, &[(N::Wmma, "store_matrix_sync")], &["array", "index", "frag", "ldm", "layout"], &[], Rule::Tensor, Op::Intrinsic(I::Tensor(TensorOp::Store(MatrixLayout::RowMajor))), DEVICE_ONLY),
    row(B::WmmaMmaSync, &[(N::Wmma, "mma_sync")], &["d", "a", "b", "c", "satfinite"], &["False"], Rule::TensorInPlace, Op::Intrinsic(I::Tensor(TensorOp::Mma { satfinite: false })), DEVICE_ONLY),
    entity(B::WmmaTf32, &[(N::Wmma, "tf32")], DEVICE_ONLY),
    row(B::MmaM16n8k16, &[(N::Mma, "mma_sync_m16n8k16")], &["a", "b", "c"], &[], Rule::Tensor, Op::Intrinsic(I::Tensor(TensorOp::MmaM16n8k16)), DEVICE_ONLY),
    row(B::Ldmatrix, &[(N::Mma, "ldmatrix")], &["array", "index", "count", "trans"], &["False"], Rule::Tensor, Op::Intrinsic(I::Tensor(TensorOp::Ldmatrix { count: 4, trans: false })), DEVICE_ONLY),
    // Hopper's asynchronous pipeline (sm_90, sm_90a; a pydevice extension, §18.4). The
    // checker picks the exact operation (constants, shapes, types).
    row(B::Hopper(H::MbarrierInit), &[(N::Hopper, "mbarrier_init")], &["bar", "count"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::MbarrierInit)), DEVICE_ONLY),
    row(B::Hopper(H::MbarrierArrive), &[(N::Hopper, "mbarrier_arrive")], &["bar"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::MbarrierArrive)), DEVICE_ONLY),
    row(B::Hopper(H::MbarrierArriveExpectTx), &[(N::Hopper, "mbarrier_arrive_expect_tx")], &["bar", "bytes"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::MbarrierArriveExpectTx)), DEVICE_ONLY),
    row(B::Hopper(H::MbarrierExpectTx), &[(N::Hopper, "mbarrier_expect_tx")], &["bar", "bytes"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::MbarrierExpectTx)), DEVICE_ONLY),
    row(B::Hopper(H::MbarrierTryWaitParity), &[(N::Hopper, "mbarrier_try_wait_parity")], &["bar", "phase"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::MbarrierTryWaitParity)), DEVICE_ONLY),
    row(B::Hopper(H::MbarrierWaitParity), &[(N::Hopper, "mbarrier_wait_parity")], &["bar", "phase"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::MbarrierWaitParity)), DEVICE_ONLY),
    row(B::Hopper(H::FenceMbarrierInit), &[(N::Hopper, "fence_mbarrier_init")], &[], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::FenceMbarrierInit)), DEVICE_ONLY),
    row(B::Hopper(H::FenceProxyAsync), &[(N::Hopper, "fence_proxy_async")], &[], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::FenceProxyAsync)), DEVICE_ONLY),
    row(B::Hopper(H::ElectOne), &[(N::Hopper, "elect_one")], &[], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::ElectOne)), DEVICE_ONLY),
    row(B::Hopper(H::SetMaxNReg), &[(N::Hopper, "setmaxnreg")], &["count", "inc"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::SetMaxNReg { inc: true, count: 0 })), DEVICE_ONLY),
    row(B::Hopper(H::BulkCopyToShared), &[(N::Hopper, "bulk_copy_to_shared")], &["dst", "src", "bytes", "bar"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::BulkCopyToShared)), DEVICE_ONLY),
    row(B::Hopper(H::BulkCopyToGlobal), &[(N::Hopper, "bulk_copy_to_global")], &["dst", "src", "bytes"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::BulkCopyToGlobal)), DEVICE_ONLY),
    row(B::Hopper(H::BulkCommit), &[(N::Hopper, "bulk_commit_group")], &[], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::BulkCommit)), DEVICE_ONLY),
    row(B::Hopper(H::BulkWait), &[(N::Hopper, "bulk_wait_group")], &["n", "read"], &["0", "False"], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::BulkWait { n: 0, read: false })), DEVICE_ONLY),
    row(B::Hopper(H::TmaLoad), &[(N::Hopper, "tma_load")], &["dst", "tmap", "coords", "bar", "multicast"], &["None"], Rule::Hopper, Op::Expr("cp.async.bulk.tensor"), DEVICE_ONLY),
    row(B::Hopper(H::TmaStore), &[(N::Hopper, "tma_store")], &["tmap", "coords", "src"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::TmaStore { dims: 1, reduce: false })), DEVICE_ONLY),
    row(B::Hopper(H::TmaReduceAdd), &[(N::Hopper, "tma_reduce_add")], &["tmap", "coords", "src"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::TmaStore { dims: 1, reduce: true })), DEVICE_ONLY),
    row(B::Hopper(H::WgmmaDesc), &[(N::Hopper, "wgmma_desc")], &["array", "index", "leading", "stride", "swizzle"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::WgmmaDesc(Swizzle::None))), DEVICE_ONLY),
    row(B::Hopper(H::TmaPrefetch), &[(N::Hopper, "tma_prefetch")], &["tmap"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::TmaPrefetch)), DEVICE_ONLY),
    row(B::Hopper(H::TensorMap), &[(N::Hopper, "TensorMap")], &[], &[], Rule::Hopper, Op::Expr("tensor map type"), DEVICE_ONLY),
    row(B::Hopper(H::SharedAddress), &[(N::Hopper, "shared_address")], &["element"], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::SharedAddress)), DEVICE_ONLY),
    row(B::Hopper(H::WgmmaFence), &[(N::Hopper, "wgmma_fence")], &[], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::WgmmaFence)), DEVICE_ONLY),
    row(B::Hopper(H::WgmmaCommit), &[(N::Hopper, "wgmma_commit_group")], &[], &[], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::WgmmaCommit)), DEVICE_ONLY),
    row(B::Hopper(H::WgmmaWait), &[(N::Hopper, "wgmma_wait_group")], &["n"], &["0"], Rule::Hopper, Op::Intrinsic(I::Hopper(HopperOp::WgmmaWait(0))), DEVICE_ONLY),
    row(B::Hopper(H::Wgmma), &[(N::Hopper, "wgmma")], &["acc", "a_desc", "b_desc", "n", "a_type", "b_type", "scale_d", "trans_a", "trans_b"], &["'bf16'", "'bf16'", "True", "False", "False"], Rule::Hopper, Op::Expr("wgmma.mma_async"), DEVICE_ONLY),
];

/// The families of builtins named by another enum.
pub static FAMILIES: &[Family] = &[
    Family {
        what: "vector types (`float32x4`, numba's `cuda.float4`)",
        contains: |b| matches!(b, B::Vector(..)),
        member: |ns, n| {
            let v = match ns {
                N::Device => super::vector_name(n),
                N::NumbaCuda => super::vector_name(n).or_else(|| super::cuda_vector_alias(n)),
                _ => None,
            }?;
            Some(B::Vector(v.0, v.1))
        },
        name: |b| match b {
            B::Vector(s, n) => format!("{}x{n}", s.name()),
            _ => String::new(),
        },
        namespaces: &[N::Device, N::NumbaCuda],
        rule: Rule::Vector,
        op: |_| Op::Expr("vector"),
        host: HOST,
    },
    Family {
        what: "number types (`float32`, numba's `f4`, `np.int64`)",
        contains: |b| matches!(b, B::Scalar(_)),
        member: scalar_member,
        name: |b| match b {
            B::Scalar(s) => s.name().into(),
            _ => String::new(),
        },
        namespaces: &[
            N::Device,
            N::Numba,
            N::NumbaTypes,
            N::NumbaCuda,
            N::NumbaBf16,
            N::Numpy,
        ],
        rule: Rule::Conversion,
        op: |_| Op::Expr("cast"),
        host: HOST,
    },
    Family {
        what: "architecture selectors (`sm_90`, `sm90`)",
        contains: |b| matches!(b, B::Sm(_)),
        member: |ns, n| {
            let digits = n.strip_prefix("sm")?.trim_start_matches('_');
            (ns == N::Device && !digits.is_empty())
                .then(|| digits.parse().ok().map(B::Sm))
                .flatten()
        },
        name: |b| match b {
            B::Sm(n) => format!("sm_{n}"),
            _ => String::new(),
        },
        namespaces: &[N::Device],
        rule: Rule::NotCallable,
        op: |_| Op::None,
        host: HOST,
    },
    Family {
        what: "functions of `math` (and numba's `cuda.libdevice`)",
        contains: |b| matches!(b, B::Math(_)),
        member: |ns, n| match ns {
            N::Math => crate::ir::MathFn::from_name(n).map(B::Math),
            N::NumbaLibdevice => crate::ir::MathFn::from_name(n)
                .or_else(|| n.strip_suffix('f').and_then(crate::ir::MathFn::from_name))
                .map(B::Math),
            _ => None,
        },
        name: |b| match b {
            B::Math(f) => format!("math.{}", f.name()),
            _ => String::new(),
        },
        namespaces: &[N::Math, N::NumbaLibdevice],
        rule: Rule::Math,
        op: |b| match b {
            B::Math(f) => Op::Intrinsic(I::Math(f)),
            _ => Op::None,
        },
        host: HOST,
    },
    Family {
        what: "functions of `cmath`",
        contains: |b| matches!(b, B::Cmath(_)),
        member: |ns, n| match (ns, n) {
            (N::Cmath, "polar") => Some(B::Cmath(super::CmathFn::Polar)),
            (N::Cmath, n) => {
                crate::ir::ComplexOp::cmath(n).map(|op| B::Cmath(super::CmathFn::Op(op)))
            }
            _ => None,
        },
        name: |b| match b {
            B::Cmath(super::CmathFn::Polar) => "cmath.polar".into(),
            B::Cmath(super::CmathFn::Op(op)) => format!("cmath.{}", super::cmath_name(op)),
            _ => String::new(),
        },
        namespaces: &[N::Cmath],
        rule: Rule::Cmath,
        op: |b| match b {
            B::Cmath(super::CmathFn::Op(op)) => Op::Intrinsic(I::Complex(op)),
            _ => Op::Expr("complex tuple"),
        },
        host: HOST,
    },
    Family {
        what: "functions of `operator`",
        contains: |b| matches!(b, B::OperatorBinary(_) | B::OperatorUnary(_)),
        member: |ns, n| {
            (ns == N::Operator)
                .then(|| super::operator_member(n))
                .flatten()
        },
        name: |b| match b {
            B::OperatorBinary(op) => format!("operator.{}", super::operator_name(op)),
            B::OperatorUnary(u) => format!("operator.{}", u.name()),
            _ => String::new(),
        },
        namespaces: &[N::Operator],
        rule: Rule::OperatorBinary,
        op: |_| Op::Expr("operator"),
        host: HOST,
    },
    Family {
        what: "numba's `cuda.fp16` and `cuda.bf16` arithmetic",
        contains: |b| matches!(b, B::NumbaFp16(_) | B::NumbaBf16(_) | B::NumbaBf16Cvt(_)),
        member: |ns, n| match ns {
            N::NumbaFp16 => super::numba_fp16_member(n),
            N::NumbaBf16 => super::numba_bf16_member(n),
            _ => None,
        },
        name: |b| match b {
            B::NumbaFp16(op) => format!("fp16.{}", op.name()),
            B::NumbaBf16(op) => format!("bf16.{}", op.name()),
            B::NumbaBf16Cvt(c) => format!("bf16.{}", c.name()),
            _ => String::new(),
        },
        namespaces: &[N::NumbaFp16, N::NumbaBf16],
        rule: Rule::Fp16,
        op: |_| Op::Expr("half-precision arithmetic"),
        host: DEVICE_ONLY,
    },
    Family {
        what: "NumPy whole-array reductions (`np.sum(a)`)",
        contains: |b| matches!(b, B::NpReduce(_)),
        member: |ns, n| {
            (ns == N::Numpy)
                .then(|| crate::front::check::reduce::Reduce::from_function(n).map(B::NpReduce))
                .flatten()
        },
        name: |b| match b {
            B::NpReduce(r) => format!("np.{}", r.name()),
            _ => String::new(),
        },
        namespaces: &[N::Numpy],
        rule: Rule::NpReduce,
        op: |_| Op::Expr("loop"),
        host: HOST_LATER,
    },
    Family {
        what: "numba's `cuda.atomic.<op>` and cupyx's `jit.atomic_<op>`",
        contains: |b| matches!(b, B::NumbaAtomic(_)),
        member: |ns, n| {
            // cupyx drops the trailing underscore: `jit.atomic_and`.
            let (numba, n) = match ns {
                N::NumbaAtomic => (true, n),
                N::CupyxJit => (false, n.strip_prefix("atomic_")?),
                _ => return None,
            };
            let op = AtomicOp::ALL.into_iter().find(|op| {
                let m = op.method();
                (if numba { m } else { m.trim_end_matches('_') }) == n
            })?;
            numba_atomic(op, numba).then_some(B::NumbaAtomic(op))
        },
        name: |b| match b {
            B::NumbaAtomic(op) => format!("atomic.{}", op.method()),
            _ => String::new(),
        },
        namespaces: &[N::NumbaAtomic, N::CupyxJit],
        rule: Rule::NumbaAtomic,
        op: |b| match b {
            B::NumbaAtomic(op) => Op::Atomic(op),
            _ => Op::None,
        },
        host: DEVICE_ONLY,
    },
];

/// The atomic operations of numba's `cuda.atomic` (`numba`) and cupyx's `jit.atomic_*`.
fn numba_atomic(op: AtomicOp, numba: bool) -> bool {
    match op {
        AtomicOp::Add
        | AtomicOp::Sub
        | AtomicOp::And
        | AtomicOp::Or
        | AtomicOp::Xor
        | AtomicOp::Exch
        | AtomicOp::Max
        | AtomicOp::Min
        | AtomicOp::Cas => true,
        // cupyx.jit has `atomic_inc`/`atomic_dec` too (CUDA's `atomicInc`/`atomicDec`).
        AtomicOp::Inc | AtomicOp::Dec => true,
        AtomicOp::NanMax | AtomicOp::NanMin => numba,
        AtomicOp::Load | AtomicOp::Store | AtomicOp::Wait | AtomicOp::Notify => false,
    }
}

/// A number type by its name in namespace `ns`.
fn scalar_member(ns: N, n: &str) -> Option<Builtin> {
    use crate::types::Scalar;
    let s = match ns {
        N::Device => Scalar::from_name(n).filter(|s| s.name() == n),
        N::Numba | N::NumbaTypes | N::NumbaCuda => match n {
            "int_" | "intp" => Some(Scalar::Int64),
            "intc" => Some(Scalar::Int32),
            "float_" => Some(Scalar::Float64),
            n => Scalar::from_name(n),
        },
        // The exact widening and the round-to-nearest narrowing are the type conversions.
        N::NumbaBf16 => match n {
            "bfloat16_to_float32" => Some(Scalar::Float32),
            "float32_to_bfloat16" | "float32_to_bfloat16_rn" => Some(Scalar::BFloat16),
            _ => None,
        },
        N::Numpy => crate::front::numpy_scalar(n),
        _ => None,
    }?;
    Some(B::Scalar(s))
}

/// The index of rows by spelling and by entity, built once per process.
struct Index {
    by_name: HashMap<(N, &'static str), usize, Fx>,
    by_builtin: HashMap<Builtin, usize, Fx>,
}

/// FxHash (rustc's hasher) for the index. Its keys are the table's own spellings, so an
/// unkeyed hash is enough; with SipHash and a growing map, building the index was the front
/// end's largest part of a process's first compile.
type Fx = std::hash::BuildHasherDefault<FxHasher>;

#[derive(Default)]
struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let names = ROWS.iter().map(|r| r.names.len()).sum();
        let mut by_name = HashMap::with_capacity_and_hasher(names, Fx::default());
        let mut by_builtin = HashMap::with_capacity_and_hasher(ROWS.len(), Fx::default());
        for (i, r) in ROWS.iter().enumerate() {
            for &(ns, n) in r.names {
                let dup = by_name.insert((ns, n), i);
                debug_assert!(dup.is_none(), "{ns:?}.{n} is spelled by two rows");
            }
            let dup = by_builtin.insert(r.builtin, i);
            debug_assert!(dup.is_none(), "{:?} has two rows", r.builtin);
        }
        Index {
            by_name,
            by_builtin,
        }
    })
}

/// The builtin namespace `ns` spells `name`, if any.
pub fn member(ns: N, name: &str) -> Option<Builtin> {
    if let Some(&i) = index().by_name.get(&(ns, name)) {
        return Some(ROWS[i].builtin);
    }
    FAMILIES.iter().find_map(|f| (f.member)(ns, name))
}

/// The names the table's rows spell in namespace `ns` (not the families' members, such as
/// the scalar types, which are spelled by rule).
pub fn names_in(ns: N) -> impl Iterator<Item = &'static str> {
    ROWS.iter()
        .flat_map(|r| r.names.iter())
        .filter(move |(n, _)| *n == ns)
        .map(|&(_, name)| name)
}

/// What the table says about one builtin: its row, or its family.
#[derive(Copy, Clone, Debug)]
pub enum Entry {
    /// A builtin with its own row.
    Row(&'static Row),
    /// A member of a family.
    Family(&'static Family, Builtin),
}

impl Entry {
    /// How a call is checked and typed.
    pub fn rule(self) -> Rule {
        match self {
            Entry::Row(r) => r.rule,
            Entry::Family(f, _) => f.rule,
        }
    }

    /// What a call produces in the IR.
    pub fn op(self) -> Op {
        match self {
            Entry::Row(r) => r.op,
            Entry::Family(f, b) => (f.op)(b),
        }
    }

    /// Whether the host can run a call.
    pub fn host(self) -> bool {
        self.host_column().runs()
    }

    /// The host column: whether the host runs it, and if not, whether it is device-only.
    pub fn host_column(self) -> Host {
        match self {
            Entry::Row(r) => r.host,
            Entry::Family(f, _) => f.host,
        }
    }

    /// The parameters, by name (a family's members check their own arguments: none here).
    pub fn params(self) -> &'static [&'static str] {
        match self {
            Entry::Row(r) => r.params,
            Entry::Family(..) => &[],
        }
    }

    /// How many leading parameters a call must give.
    pub fn required(self) -> usize {
        match self {
            Entry::Row(r) => r.required(),
            Entry::Family(..) => 0,
        }
    }
}

/// The table's entry for `b`. Every builtin has one; `tests::every_builtin_has_an_entry`
/// checks it.
pub fn entry(b: Builtin) -> Entry {
    if let Some(&i) = index().by_builtin.get(&b) {
        return Entry::Row(&ROWS[i]);
    }
    match FAMILIES.iter().find(|f| (f.contains)(b)) {
        Some(f) => Entry::Family(f, b),
        // Unreachable while the table is complete (tested); a name that says so.
        None => Entry::Row(&MISSING),
    }
}

static MISSING: Row = row(
    B::Kernel,
    &[(N::Device, "<builtin missing from the table>")],
    &[],
    &[],
    Rule::NotCallable,
    Op::None,
    DEVICE_ONLY,
);

/// The name diagnostics use for `b`: its first spelling, or its family's name for it.
pub fn name(b: Builtin) -> String {
    match entry(b) {
        Entry::Row(r) => r.name().to_string(),
        Entry::Family(f, b) => (f.name)(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_found_by_each_of_its_spellings() {
        for r in ROWS {
            for &(ns, n) in r.names {
                assert_eq!(member(ns, n), Some(r.builtin), "{ns:?}.{n}");
            }
            assert!(matches!(entry(r.builtin), Entry::Row(x) if std::ptr::eq(x, r)));
        }
    }

    #[test]
    fn every_family_member_belongs_to_its_family() {
        let probes: &[(N, &str)] = &[
            (N::Device, "float32"),
            (N::Device, "float32x4"),
            (N::Device, "sm_90"),
            (N::Math, "sin"),
            (N::NumbaLibdevice, "sinf"),
            (N::Cmath, "exp"),
            (N::Cmath, "polar"),
            (N::Operator, "add"),
            (N::Operator, "neg"),
            (N::NumbaFp16, "hadd"),
            (N::NumbaBf16, "hfma_relu"),
            (N::Numpy, "sum"),
            (N::NumbaAtomic, "inc"),
            (N::CupyxJit, "atomic_add"),
        ];
        for &(ns, n) in probes {
            let b = member(ns, n).unwrap_or_else(|| panic!("{ns:?}.{n}"));
            let Entry::Family(f, _) = entry(b) else {
                panic!("{ns:?}.{n} has a row, not a family");
            };
            assert!(f.namespaces.contains(&ns), "{ns:?}.{n}: {}", f.what);
            assert!(!name(b).is_empty());
        }
        // cupyx has `atomic_inc` (CuPy v14's `jit.atomic_inc`) but no `atomic_nanmax`.
        assert!(member(N::CupyxJit, "atomic_inc").is_some());
        assert_eq!(member(N::CupyxJit, "atomic_nanmax"), None);
    }

    #[test]
    fn rows_spell_no_name_twice_and_have_sane_defaults() {
        let mut seen = std::collections::HashSet::new();
        for r in ROWS {
            assert!(r.defaults.len() <= r.params.len(), "{}", r.name());
            for &(ns, n) in r.names {
                assert!(seen.insert((ns, n)), "{ns:?}.{n} is spelled twice");
                // No family may also claim a row's spelling.
                assert!(
                    FAMILIES.iter().all(|f| (f.member)(ns, n).is_none()),
                    "{ns:?}.{n} is both a row and a family member"
                );
            }
        }
    }
}
