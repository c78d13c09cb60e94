//! The names device code can use that the program does not define: the `cuda.device`
//! namespace, Python builtins, the dialects' namespaces, and the scalar types. The entities
//! are [`Builtin`]s; [`table`] says everything about each (spellings, parameters, typing
//! rule, IR operation, host support), and `member` is the one resolver of a namespace's
//! members that the front end uses.

pub mod table;

use super::consts::Const;
use crate::types::Scalar;

/// A namespace that can be imported.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// The package `cuda` (only `cuda.device` is used from it).
    Cuda,
    /// `cuda.device`.
    Device,
    /// `cuda.device.random`: pydevice's extension for random numbers (`rand`, `randn`).
    DeviceRandom,
    /// Python's `math` module.
    Math,
    /// Python's `cmath` module.
    Cmath,
    /// The package `numba` (its type objects and `numba.cuda`).
    Numba,
    /// `numba.cuda`.
    NumbaCuda,
    /// `numba.cuda.shared`
    NumbaShared,
    /// `numba.cuda.local`
    NumbaLocal,
    /// `numba.cuda.atomic`
    NumbaAtomic,
    /// `numba.cuda.fp16`
    NumbaFp16,
    /// `numba.cuda.bf16`
    NumbaBf16,
    /// `numba.cuda.libdevice`
    NumbaLibdevice,
    /// `numba.cuda.const`
    NumbaConst,
    /// `numba.cuda.cg`: numba's cooperative groups (`this_grid()` and the grid's `sync()`),
    /// onto `cuda.device.cg`'s (§17).
    NumbaCg,
    /// `numba.types`
    NumbaTypes,
    /// The package `cupyx` (only `cupyx.jit` is used from it).
    Cupyx,
    /// `cupyx.jit`.
    CupyxJit,
    /// `cupyx.jit.cg`: cupyx's cooperative groups, onto `cuda.device.cg`'s (§15.4).
    CupyxCg,
    /// `numpy` or `cupy`: only their dtype objects (`np.float32`) are usable in device code.
    Numpy,
    /// Python's `operator` module: its arithmetic, bitwise and comparison functions.
    Operator,
    /// Python's builtins (`len`, `int`): not importable, the names every module sees.
    Builtins,
    /// `cuda.device.cg`: cooperative groups and asynchronous copies, a pydevice extension
    /// (docs/semantics.md §17).
    Cg,
    /// `cuda.device.wmma`: warp matrix multiply-accumulate fragments (a pydevice extension,
    /// §19.1).
    Wmma,
    /// `cuda.device.mma`: `mma.sync` on explicit fragment layouts and `ldmatrix` (a pydevice
    /// extension, §19.2).
    Mma,
    /// `cuda.device.hopper`: mbarriers, bulk copies, `elect.sync`, `setmaxnreg` and warpgroup
    /// MMA (sm_90/sm_90a, a pydevice extension, §18.4).
    Hopper,
}

impl Namespace {
    /// The module path the namespace is imported as (`numba.cuda`, `cupyx.jit`), for
    /// diagnostics.
    pub fn path(self) -> &'static str {
        match self {
            Namespace::Cuda => "cuda",
            Namespace::Device => "cuda.device",
            Namespace::DeviceRandom => "cuda.device.random",
            Namespace::Math => "math",
            Namespace::Cmath => "cmath",
            Namespace::Numba => "numba",
            Namespace::NumbaCuda => "numba.cuda",
            Namespace::NumbaShared => "numba.cuda.shared",
            Namespace::NumbaLocal => "numba.cuda.local",
            Namespace::NumbaAtomic => "numba.cuda.atomic",
            Namespace::NumbaFp16 => "numba.cuda.fp16",
            Namespace::NumbaBf16 => "numba.cuda.bf16",
            Namespace::NumbaLibdevice => "numba.cuda.libdevice",
            Namespace::NumbaConst => "numba.cuda.const",
            Namespace::NumbaCg => "numba.cuda.cg",
            Namespace::NumbaTypes => "numba.types",
            Namespace::Cupyx => "cupyx",
            Namespace::CupyxJit => "cupyx.jit",
            Namespace::CupyxCg => "cupyx.jit.cg",
            Namespace::Numpy => "numpy",
            Namespace::Operator => "operator",
            Namespace::Builtins => "builtins",
            Namespace::Cg => "cuda.device.cg",
            Namespace::Wmma => "cuda.device.wmma",
            Namespace::Mma => "cuda.device.mma",
            Namespace::Hopper => "cuda.device.hopper",
        }
    }
}

/// The namespaces that are members of other namespaces (`numba.cuda`, `cuda.device`).
const SUBSPACES: &[(Namespace, &str, Namespace)] = &[
    (Namespace::Cuda, "device", Namespace::Device),
    (Namespace::Device, "random", Namespace::DeviceRandom),
    (Namespace::Device, "cg", Namespace::Cg),
    (Namespace::Device, "wmma", Namespace::Wmma),
    (Namespace::Device, "mma", Namespace::Mma),
    (Namespace::Device, "hopper", Namespace::Hopper),
    (Namespace::Numba, "cuda", Namespace::NumbaCuda),
    (Namespace::Numba, "types", Namespace::NumbaTypes),
    // numba-cuda's own copy of `numba.types` (`from numba.cuda import types`).
    (Namespace::NumbaCuda, "types", Namespace::NumbaTypes),
    (Namespace::NumbaCuda, "shared", Namespace::NumbaShared),
    (Namespace::NumbaCuda, "local", Namespace::NumbaLocal),
    (Namespace::NumbaCuda, "atomic", Namespace::NumbaAtomic),
    (Namespace::NumbaCuda, "fp16", Namespace::NumbaFp16),
    (Namespace::NumbaCuda, "bf16", Namespace::NumbaBf16),
    (Namespace::NumbaCuda, "libdevice", Namespace::NumbaLibdevice),
    (Namespace::NumbaCuda, "const", Namespace::NumbaConst),
    (Namespace::NumbaCuda, "cg", Namespace::NumbaCg),
    (Namespace::Cupyx, "jit", Namespace::CupyxJit),
    (Namespace::CupyxJit, "cg", Namespace::CupyxCg),
];

/// Member `name` of namespace `ns`: a sub-namespace, a constant (`math.pi`, `cmath.infj`,
/// `np.nan`), or a builtin of the [`table`]. The one namespace-member resolver: module-level
/// imports (`front::resolve_static`) and attribute expressions in device code
/// (`check::expr`) both call it.
pub(crate) fn member(ns: Namespace, name: &str) -> Option<super::Item> {
    use super::Item;
    if let Some(&(_, _, sub)) = SUBSPACES.iter().find(|(p, n, _)| *p == ns && *n == name) {
        return Some(Item::Namespace(sub));
    }
    let float = |v: f64| Some(Item::Const(Const::Float(v)));
    let konst = match (ns, name) {
        (Namespace::Math | Namespace::Cmath, "tau") => float(std::f64::consts::TAU),
        (Namespace::Math | Namespace::Cmath | Namespace::Numpy, "pi") => {
            float(std::f64::consts::PI)
        }
        (Namespace::Math | Namespace::Cmath | Namespace::Numpy, "e") => float(std::f64::consts::E),
        (Namespace::Math | Namespace::Cmath | Namespace::Numpy, "inf") => float(f64::INFINITY),
        (Namespace::Math | Namespace::Cmath | Namespace::Numpy, "nan") => float(f64::NAN),
        (Namespace::Cmath, "infj") => Some(Item::Const(Const::Complex(0.0, f64::INFINITY))),
        (Namespace::Cmath, "nanj") => Some(Item::Const(Const::Complex(0.0, f64::NAN))),
        // The spec: "`Dim3` is a subclass of `uint32x3`" (the type of `thread_idx` and its
        // siblings): the same type here, usable as a hint and as a constructor.
        (Namespace::Device, "Dim3") => Some(Item::Builtin(Builtin::Vector(
            crate::types::Scalar::UInt32,
            3,
        ))),
        _ => None,
    };
    konst
        .or_else(|| table::member(ns, name).map(Item::Builtin))
        .or_else(|| {
            (ns == Namespace::Device && is_planned_device_member(name))
                .then(|| Item::Planned(name.to_string()))
        })
}

/// The names namespace `ns` has (its sub-namespaces, constants and builtins), for "did you
/// mean" suggestions; unordered.
pub(crate) fn member_names(ns: Namespace) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = SUBSPACES
        .iter()
        .filter(|(p, _, _)| *p == ns)
        .map(|(_, n, _)| *n)
        .collect();
    if matches!(ns, Namespace::Math | Namespace::Cmath) {
        names.extend(["tau", "pi", "e", "inf", "nan"]);
    }
    if ns == Namespace::Cmath {
        names.extend(["infj", "nanj"]);
    }
    if ns == Namespace::Device {
        names.push("Dim3");
        names.extend(crate::types::Scalar::ALL.iter().map(|s| s.name()));
    }
    if matches!(ns, Namespace::Math | Namespace::NumbaLibdevice) {
        names.extend(crate::ir::MathFn::ALL.iter().map(|m| m.name()));
    }
    names.extend(table::names_in(ns));
    names
}

/// Folds `abs(x)`, `min(a, b, ...)`, `max(a, b, ...)`, `int(x)` and `round(x)` of real
/// constants as Python computes them: `min`/`max` return the first least/greatest argument
/// itself (an `int` stays an `int`), `int` truncates toward zero, `round` rounds half to
/// even and gives an `int`. `None` where Python raises or for other arguments.
pub fn fold_builtin(b: Builtin, args: &[Const]) -> Option<Const> {
    use Builtin as B;
    let real = |c: &Const| matches!(c, Const::Bool(_) | Const::Int(_) | Const::Float(_));
    if !args.iter().all(real) {
        return None;
    }
    let float_to_int = |f: f64| (f.is_finite() && f.abs() < 1.0e38).then_some(f as i128);
    match (b, args) {
        (B::Abs, [Const::Float(f)]) => Some(Const::Float(f.abs())),
        (B::Abs, [a]) => a.as_int()?.checked_abs().map(Const::Int),
        (B::Int, [Const::Float(f)]) => float_to_int(f.trunc()).map(Const::Int),
        (B::Int, [a]) => a.as_int().map(Const::Int),
        (B::Round, [Const::Float(f)]) => float_to_int(f.round_ties_even()).map(Const::Int),
        (B::Round, [a]) => a.as_int().map(Const::Int),
        (B::Min | B::Max, [first, rest @ ..]) if !rest.is_empty() => {
            let mut best = first;
            for c in rest {
                let (x, y) = (c.as_f64()?, best.as_f64()?);
                // Python keeps the first of equal values; NaN compares false.
                let better = if b == B::Min { x < y } else { x > y };
                if better {
                    best = c;
                }
            }
            Some(best.clone())
        }
        _ => None,
    }
}

/// An entity provided by the compiler.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `@kernel`
    Kernel,
    /// `@func`
    Func,
    /// A fixed-format number type such as `float32`, callable as a conversion.
    Scalar(Scalar),
    /// Python's `int` (the dialect's default integer).
    Int,
    /// Python's `float` (the dialect's default float).
    Float,
    /// Python's `bool`.
    Bool,
    /// Python's `complex` (the dialect's default complex type).
    Complex,
    /// A function of the `cmath` module.
    Cmath(CmathFn),
    /// `thread_idx`
    ThreadIdx,
    /// `block_idx`
    BlockIdx,
    /// `block_dim`
    BlockDim,
    /// `grid_dim`
    GridDim,
    /// `lane_id`
    LaneId,
    /// cupyx's `jit.laneid()`: the lane id, as a function
    CupyxLaneId,
    /// `warp_size`
    WarpSize,
    /// `cluster_idx` (sm_90)
    ClusterIdx,
    /// `cluster_dim` (sm_90)
    ClusterDim,
    /// `block_idx_in_cluster` (sm_90)
    BlockIdxInCluster,
    /// `block_rank_in_cluster` (sm_90)
    BlockRankInCluster,
    /// `cluster_size` (sm_90)
    ClusterSize,
    /// `cluster_arrive(memory='release')` (sm_90)
    ClusterArrive,
    /// `cluster_wait()` (sm_90)
    ClusterWait,
    /// `cluster_sync()` (sm_90)
    ClusterSync,
    /// `map_shared_rank(array, rank)` (sm_90)
    MapSharedRank,
    /// `asm(template, result, args, constraints, volatile, memory)`: inline PTX
    Asm,
    /// `launch(kernel, *args, grid, block, shared=0)` in device code
    Launch,
    /// `tid(ndims)`
    Tid,
    /// `grid_size(ndims)`
    GridSize,
    /// `syncthreads()`
    SyncThreads,
    /// `range(...)`, only as the iterable of a `for` loop.
    Range,
    /// `len(x)`
    Len,
    /// `print(*args, sep=' ', end='\\n')`, only as a statement.
    Print,
    /// `abs(x)`
    Abs,
    /// `min(a, b, ...)`
    Min,
    /// `max(a, b, ...)`
    Max,
    /// `shared_array(shape, dtype, order='C', align=0)`
    SharedArray,
    /// `local_array(shape, dtype, order='C', align=0)`
    LocalArray,
    /// `dynamic_shared_array()`
    DynamicSharedArray,
    /// `syncthreads_count(pred)`
    SyncThreadsCount,
    /// `syncthreads_and(pred)`
    SyncThreadsAnd,
    /// `syncthreads_or(pred)`
    SyncThreadsOr,
    /// `threadfence(memory='seq_cst', scope='system')`
    ThreadFence,
    /// `atomic_ref(array, index)`
    AtomicRef,
    /// `activemask()`
    ActiveMask,
    /// `lanemask_lt()`
    LaneMaskLt,
    /// `syncwarp(mask)`
    SyncWarp,
    /// `all_sync(mask, pred)`
    AllSync,
    /// `any_sync(mask, pred)`
    AnySync,
    /// `eq_sync(mask, pred)`
    EqSync,
    /// `ballot_sync(mask, pred)`
    BallotSync,
    /// `shfl_sync(mask, value, src_lane)`
    ShflSync,
    /// `shfl_up_sync(mask, value, delta)`
    ShflUpSync,
    /// `shfl_down_sync(mask, value, delta)`
    ShflDownSync,
    /// `shfl_xor_sync(mask, value, flag)`
    ShflXorSync,
    /// `match_any_sync(mask, value)`
    MatchAnySync,
    /// `match_all_sync(mask, value)`
    MatchAllSync,
    /// `popc(x)`
    Popc,
    /// `brev(x)`
    Brev,
    /// `clz(x)`
    Clz,
    /// `ffs(x)`
    Ffs,
    /// `cbrt(a)`
    Cbrt,
    /// `rsqrt(x)`: `1 / sqrt(x)` (CUDA's `rsqrtf`)
    Rsqrt,
    /// `fma(a, b, c)`
    Fma,
    /// `math.frexp(x)`, `math.ldexp(x, n)`, `math.modf(x)` (one of the three intrinsics)
    MathPair(crate::ir::Intrinsic),
    /// An intrinsic typed by its declaration alone ([`crate::ir::Intrinsic::signature`]):
    /// `funnelshift_l(lo, hi, shift)`.
    Declared(crate::ir::Intrinsic),
    /// `WarpMask(x)`
    WarpMask,
    /// A function of the `math` module.
    Math(crate::ir::MathFn),
    /// A vector type such as `float32x4`, callable as a constructor.
    Vector(crate::types::Scalar, u8),
    /// `@struct`
    Struct,
    /// `Atomic(dtype, align=0)`, as the type of a struct field
    AtomicClass,
    /// `align(t, n)`: `t` aligned to at least `n` bytes, as a struct field type or an array
    /// dtype
    Align,
    /// Python's `tuple`: a type hint (`tuple[float32, int32]`) and `tuple(x)` of a tuple or
    /// vector
    TupleType,
    /// `Dim3Like`: exposition only in the spec, so naming it is a diagnostic (E0219)
    Dim3Like,
    /// `machine_representation()`: a string, compared with string literals at compile time
    MachineRepresentation,
    /// `ConstExpr` / `ConstExpr[T]`: a parameter hint asking for a constant expression
    /// (docs/semantics.md §5.6)
    ConstExpr,
    /// `target(desc)`
    Target,
    /// `is_host`
    IsHost,
    /// `is_device`
    IsDevice,
    /// `any_target`
    AnyTarget,
    /// `no_target`
    NoTarget,
    /// `is_exactly(sm)`
    IsExactly,
    /// `provides(sm)`
    Provides,
    /// `smXX`: an architecture selector (the number, e.g. 90).
    Sm(u32),
    /// `TargetDescription`: the class of target descriptions, a hint for a local bound to
    /// one (`d: TargetDescription = provides(sm80)`)
    TargetDescription,
    /// `SMSelector`: the class of `smXX`, a hint for a local bound to one
    SmSelector,
    /// numba's `@cuda.jit`
    Jit,
    /// numba's `void` (the return type of kernel signatures)
    Void,
    /// numba's `cuda.grid(n)` (int64 positions)
    NumbaGrid,
    /// numba's `cuda.gridsize(n)`
    NumbaGridsize,
    /// numba's `cuda.syncthreads_count(pred)` / `_and` / `_or`, with a value predicate
    NumbaSyncthreads(u8),
    /// numba's warp votes with a value predicate: all, any, eq, ballot
    NumbaVote(u8),
    /// numba's `cuda.atomic.<op>(ary, idx, val)` (relaxed, device scope, like CUDA's)
    NumbaAtomic(crate::ir::AtomicOp),
    /// numba's `cuda.atomic.compare_and_swap(ary, old, val)` on `ary[0]`
    NumbaCompareAndSwap,
    /// numba's `cuda.threadfence` (0), `threadfence_block` (1), `threadfence_system` (2)
    NumbaFence(u8),
    /// numba's `cuda.selp(cond, a, b)`
    Selp,
    /// numba's `cuda.fp16.<op>` on float16 values
    NumbaFp16(Fp16Op),
    /// numba's `cuda.bf16.<op>` on bfloat16 values (the same operations as `cuda.fp16`)
    NumbaBf16(Fp16Op),
    /// numba's `cuda.bf16` conversions (`float32_to_bfloat16_rz`, `bfloat16_to_int32_rd`,
    /// `bfloat16_as_int16`, ...)
    NumbaBf16Cvt(Bf16Cvt),
    /// numba's cache-hinted loads `cuda.ldca/ldcg/ldcs/ldlu/ldcv(array, i)` (false) and
    /// stores `cuda.stcg/stcs/stwb/stwt(array, i, value)` (true): plain loads and stores
    NumbaCacheHint(bool),
    /// Python's `round(x)`: the nearest integer, ties to even; `round(x, ndigits)`
    Round,
    /// Python's `pow(x, y)`: the `**` operator (`pow(x, y, mod)` is E0603)
    Pow,
    /// A binary function of Python's `operator` module (`operator.add` is `+`).
    OperatorBinary(crate::ir::BinaryOp),
    /// A unary function of Python's `operator` module: `neg`, `pos`, `invert`, `not_`.
    OperatorUnary(OperatorUnary),
    /// numba's `cuda.const.array_like(ary)`: not available (E0602)
    NumbaConstArrayLike,
    /// cupyx's `@jit.rawkernel()`
    RawKernel,
    /// A NumPy whole-array reduction (`np.sum(a)`, `np.nanmax(a)`, …; §5.18)
    NpReduce(super::check::reduce::Reduce),
    /// numba's `literal_unroll(t)`: a `for` loop over it is unrolled at compile time (§4.6.1)
    LiteralUnroll,
    /// numba's `to_fixed_tuple(array, n)` (`numba.np.unsafe.ndarray`): the first `n`
    /// elements of a 1-D array as a tuple, `n` a compile-time integer
    ToFixedTuple,
    /// `device.static_range(start, stop, step)`: a `for` loop over it is unrolled at compile
    /// time, its variable a constant in each copy (§4.6.2)
    StaticRange,
    /// cupyx's `jit.shared_memory(dtype, size, alignment=None)`
    CupyxSharedMemory,
    /// `random.rand(dtype=float)`: a uniform number in [0, 1) (pydevice's extension, §6.4)
    Rand,
    /// `random.randn(dtype=float)`: a standard normal number (§6.4)
    Randn,
    /// A function of `cuda.device.cg` (docs/semantics.md §17).
    Cg(CgFn),
    /// `wmma.fragment(use, shape, dtype, layout=None)`: a fragment of zeros (§19.1)
    WmmaFragment,
    /// `wmma.fill_fragment(frag, value)` (§19.1)
    WmmaFillFragment,
    /// `wmma.load_matrix_sync(frag, array, index, ldm, layout=None)` (§19.1)
    WmmaLoadMatrix,
    /// `wmma.store_matrix_sync(array, index, frag, ldm, layout)` (§19.1)
    WmmaStoreMatrix,
    /// `wmma.mma_sync(d, a, b, c, satfinite=False)` (§19.1)
    WmmaMmaSync,
    /// `wmma.tf32`: the TF32 element type of fragments (§19.1)
    WmmaTf32,
    /// `mma.mma_sync_m16n8k16(a, b, c)` (§19.2)
    MmaM16n8k16,
    /// `mma.ldmatrix(array, index, count, trans=False)` (§19.2)
    Ldmatrix,
    /// A function of `cuda.device.hopper` (§18.4)
    Hopper(HopperFn),
}

/// The functions of `cuda.device.hopper` (docs/semantics.md §18.4).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum HopperFn {
    /// `hopper.mbarrier_init(bar, count)`
    MbarrierInit,
    /// `hopper.mbarrier_arrive(bar)`
    MbarrierArrive,
    /// `hopper.mbarrier_arrive_expect_tx(bar, bytes)`
    MbarrierArriveExpectTx,
    /// `hopper.mbarrier_expect_tx(bar, bytes)`
    MbarrierExpectTx,
    /// `hopper.mbarrier_try_wait_parity(bar, phase)`
    MbarrierTryWaitParity,
    /// `hopper.mbarrier_wait_parity(bar, phase)`
    MbarrierWaitParity,
    /// `hopper.fence_mbarrier_init()`
    FenceMbarrierInit,
    /// `hopper.fence_proxy_async()`
    FenceProxyAsync,
    /// `hopper.elect_one()`
    ElectOne,
    /// `hopper.setmaxnreg(count, inc)`
    SetMaxNReg,
    /// `hopper.bulk_copy_to_shared(dst, src, bytes, bar)`
    BulkCopyToShared,
    /// `hopper.bulk_copy_to_global(dst, src, bytes)`
    BulkCopyToGlobal,
    /// `hopper.bulk_commit_group()`
    BulkCommit,
    /// `hopper.bulk_wait_group(n, read)`
    BulkWait,
    /// `hopper.tma_load(dst, tmap, coords, bar, multicast=None)`
    TmaLoad,
    /// `hopper.tma_store(tmap, coords, src)`
    TmaStore,
    /// `hopper.tma_reduce_add(tmap, coords, src)`
    TmaReduceAdd,
    /// `hopper.tma_prefetch(tmap)`
    TmaPrefetch,
    /// `hopper.wgmma_desc(array, index, leading, stride, swizzle)`
    WgmmaDesc,
    /// `hopper.shared_address(a[i])`
    SharedAddress,
    /// `hopper.TensorMap`: the type of a tensor map passed by value, as a grid constant
    TensorMap,
    /// `hopper.wgmma_fence()`
    WgmmaFence,
    /// `hopper.wgmma_commit_group()`
    WgmmaCommit,
    /// `hopper.wgmma_wait_group(n)`
    WgmmaWait,
    /// `hopper.wgmma(acc, a_desc, b_desc, n, a_type, b_type, scale_d, trans_a, trans_b)`
    Wgmma,
}

/// The functions of `cuda.device.cg` (docs/semantics.md §17).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CgFn {
    /// `cg.this_thread_block()`
    ThisThreadBlock,
    /// `cg.this_grid()`
    ThisGrid,
    /// `cg.coalesced_threads()`
    CoalescedThreads,
    /// `cg.tiled_partition(g, n)`
    TiledPartition,
    /// `cg.reduce(g, value, op)`
    Reduce,
    /// `cg.sync(g)`: `g.sync()`
    Sync,
    /// `cg.barrier_arrive(block)`
    BarrierArrive,
    /// `cg.barrier_wait(block, token)`
    BarrierWait,
    /// `cg.memcpy_async(dst, dst_index, src, src_index, count=1)`
    MemcpyAsync,
    /// `cg.memcpy_async_commit()`
    AsyncCommit,
    /// `cg.memcpy_async_wait(n=0)`
    AsyncWait,
    /// `cg.memcpy_async_wait_all()`
    AsyncWaitAll,
    /// cupyx's `jit.cg.memcpy_async(group, dst, dst_idx, src, src_idx, size, aligned_size=None)`:
    /// a copy of `size` bytes shared by the group's threads (a statement, §15.4).
    GroupMemcpy,
    /// cupyx's `jit.cg.wait(group)`: the group's copies are complete and visible.
    GroupWait,
    /// cupyx's `jit.cg.wait_prior(group, step)`: as `wait` (the copies are synchronous).
    GroupWaitPrior,
}

/// The functions of Python's `cmath` module that device code can call (the modulus is the
/// builtin `abs`, as in Python).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CmathFn {
    /// One of the operations the IR has (`exp`, `log`, `sqrt`, `sin`, `cos`, `phase`,
    /// `rect`).
    Op(crate::ir::ComplexOp),
    /// `polar(z)`: `(abs(z), phase(z))`.
    Polar,
}

/// A rounding direction of numba's `cuda.bf16` conversions (CUDA's `_rn`, `_rz`, `_rd`,
/// `_ru` suffixes).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// To nearest, ties to even.
    Nearest,
    /// Toward zero.
    Zero,
    /// Toward negative infinity.
    Down,
    /// Toward positive infinity.
    Up,
}

impl Rounding {
    fn suffix(self) -> &'static str {
        match self {
            Rounding::Nearest => "rn",
            Rounding::Zero => "rz",
            Rounding::Down => "rd",
            Rounding::Up => "ru",
        }
    }
}

/// A conversion of numba's `cuda.bf16` namespace.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Bf16Cvt {
    /// `<type>_to_bfloat16[_<rounding>]`: a number of that type rounded to bfloat16.
    To(crate::types::Scalar, Rounding),
    /// `bfloat16_to_<type>[_<rounding>]`: a bfloat16 value as that type (integers rounded
    /// that way, saturating, NaN to 0).
    From(crate::types::Scalar, Rounding),
    /// `bfloat16_as_int16` / `bfloat16_as_uint16` (the bits), `int16_as_bfloat16` /
    /// `uint16_as_bfloat16` (from the bits): `(the other type, toward bfloat16)`.
    Bits(crate::types::Scalar, bool),
}

impl Bf16Cvt {
    /// Its name in `cuda.bf16`.
    pub fn name(self) -> String {
        match self {
            Bf16Cvt::To(s, r) => format!("{s}_to_bfloat16_{}", r.suffix()),
            Bf16Cvt::From(s, r) => format!("bfloat16_to_{s}_{}", r.suffix()),
            Bf16Cvt::Bits(s, true) => format!("{s}_as_bfloat16"),
            Bf16Cvt::Bits(s, false) => format!("bfloat16_as_{s}"),
        }
    }
}

/// The conversions of numba's `cuda.bf16` (see [`Bf16Cvt`]).
fn numba_bf16_conversion(name: &str) -> Option<Bf16Cvt> {
    use crate::types::Scalar as S;
    let round = |r: &str| match r {
        "rn" => Some(Rounding::Nearest),
        "rz" => Some(Rounding::Zero),
        "rd" => Some(Rounding::Down),
        "ru" => Some(Rounding::Up),
        _ => None,
    };
    let int = |t: &str| match t {
        "int8" => Some(S::Int8),
        "uint8" => Some(S::UInt8),
        "int16" => Some(S::Int16),
        "uint16" => Some(S::UInt16),
        "int32" => Some(S::Int32),
        "uint32" => Some(S::UInt32),
        "int64" => Some(S::Int64),
        "uint64" => Some(S::UInt64),
        _ => None,
    };
    Some(match name {
        "float32_to_bfloat16" => Bf16Cvt::To(S::Float32, Rounding::Nearest),
        "float64_to_bfloat16" => Bf16Cvt::To(S::Float64, Rounding::Nearest),
        "bfloat16_to_float32" => Bf16Cvt::From(S::Float32, Rounding::Nearest),
        "bfloat16_as_int16" => Bf16Cvt::Bits(S::Int16, false),
        "bfloat16_as_uint16" => Bf16Cvt::Bits(S::UInt16, false),
        "int16_as_bfloat16" => Bf16Cvt::Bits(S::Int16, true),
        "uint16_as_bfloat16" => Bf16Cvt::Bits(S::UInt16, true),
        _ => {
            let (head, r) = name.rsplit_once('_')?;
            let r = round(r)?;
            if let Some(t) = head.strip_suffix("_to_bfloat16") {
                let s = match t {
                    "float32" => S::Float32,
                    // numba has `int8`/`uint8` only from bfloat16, and `_rz` only.
                    "int8" | "uint8" => return None,
                    t => int(t)?,
                };
                Bf16Cvt::To(s, r)
            } else {
                let s = int(head.strip_prefix("bfloat16_to_")?)?;
                if matches!(s, S::Int8 | S::UInt8) && r != Rounding::Zero {
                    return None;
                }
                Bf16Cvt::From(s, r)
            }
        }
    })
}

/// The arithmetic of numba's `cuda.fp16` namespace (each takes and gives `float16`; the
/// comparisons give `bool`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Fp16Op {
    /// `hadd`, `hsub`, `hmul`, `hdiv`, `heq`, `hne`, `hlt`, `hle`, `hgt`, `hge`, `hmax`, `hmin`
    Binary(crate::ir::BinaryOp),
    /// `hneg(a)`
    Neg,
    /// `habs(a)`
    Abs,
    /// `hfma(a, b, c)`: `a * b + c` rounded once
    Fma,
    /// `hsin`, `hcos`, `hexp`, `hexp2`, `hexp10`, `hlog`, `hlog2`, `hlog10`, `hsqrt`, `hfloor`,
    /// `hceil`, `htrunc`, `hrint`: the function in `float32`, rounded to `float16` once
    Math(crate::ir::MathFn),
    /// `hrcp(a)`: `1 / a`
    Rcp,
    /// `hrsqrt(a)`: `1 / sqrt(a)`
    Rsqrt,
    /// `cuda.bf16`'s `hadd_sat`, `hsub_sat`, `hmul_sat`: the operation, clamped to [0, 1]
    /// (NaN gives 0)
    SatBinary(crate::ir::BinaryOp),
    /// `cuda.bf16.hfma_sat(a, b, c)`: `hfma`, clamped to [0, 1] (NaN gives 0)
    FmaSat,
    /// `cuda.bf16.hfma_relu(a, b, c)`: `hfma`, negative results 0 (NaN stays NaN)
    FmaRelu,
    /// `cuda.bf16.hmax_nan(a, b)`, `hmin_nan(a, b)`: `hmax`/`hmin`, but NaN when either is
    NanBinary(crate::ir::BinaryOp),
    /// `cuda.bf16.hisnan(a)`: `bool`
    IsNan,
    /// `cuda.bf16.hisinf(a)`: an `int32`, 1 for +inf, -1 for -inf, else 0 (CUDA's `__hisinf`)
    IsInf,
}

/// The names of `cuda.fp16`'s members, in the order of [`numba_fp16_member`].
const FP16_NAMES: &[&str] = &[
    "hadd",
    "hsub",
    "hmul",
    "hdiv",
    "heq",
    "hne",
    "hlt",
    "hle",
    "hgt",
    "hge",
    "hmax",
    "hmin",
    "hneg",
    "habs",
    "hfma",
    "hsin",
    "hcos",
    "hexp",
    "hexp2",
    "hlog",
    "hlog2",
    "hlog10",
    "hsqrt",
    "hfloor",
    "hceil",
    "htrunc",
    "hrint",
    "hexp10",
    "hrcp",
    "hrsqrt",
    "hadd_sat",
    "hsub_sat",
    "hmul_sat",
    "hfma_sat",
    "hfma_relu",
    "hmax_nan",
    "hmin_nan",
    "hisnan",
    "hisinf",
];

impl Fp16Op {
    /// Its name in `cuda.fp16` (or `cuda.bf16`, for the saturating forms).
    pub fn name(self) -> &'static str {
        FP16_NAMES
            .iter()
            .find(|n| {
                numba_fp16_member(n) == Some(Builtin::NumbaFp16(self))
                    || numba_bf16_member(n) == Some(Builtin::NumbaBf16(self))
            })
            .copied()
            .unwrap_or("?")
    }

    /// How many operands it takes.
    pub fn arity(self) -> usize {
        match self {
            Fp16Op::Binary(_) | Fp16Op::SatBinary(_) | Fp16Op::NanBinary(_) => 2,
            Fp16Op::Neg
            | Fp16Op::Abs
            | Fp16Op::Math(_)
            | Fp16Op::Rcp
            | Fp16Op::Rsqrt
            | Fp16Op::IsNan
            | Fp16Op::IsInf => 1,
            Fp16Op::Fma | Fp16Op::FmaSat | Fp16Op::FmaRelu => 3,
        }
    }
}

/// Members of `numba.cuda.fp16`.
pub fn numba_fp16_member(name: &str) -> Option<Builtin> {
    use crate::ir::BinaryOp as B;
    let op = match name {
        "hadd" => Fp16Op::Binary(B::Add),
        "hsub" => Fp16Op::Binary(B::Sub),
        "hmul" => Fp16Op::Binary(B::Mul),
        "hdiv" => Fp16Op::Binary(B::Div),
        "heq" => Fp16Op::Binary(B::Eq),
        "hne" => Fp16Op::Binary(B::Ne),
        "hlt" => Fp16Op::Binary(B::Lt),
        "hle" => Fp16Op::Binary(B::Le),
        "hgt" => Fp16Op::Binary(B::Gt),
        "hge" => Fp16Op::Binary(B::Ge),
        "hmax" => Fp16Op::Binary(B::Max),
        "hmin" => Fp16Op::Binary(B::Min),
        "hneg" => Fp16Op::Neg,
        "habs" => Fp16Op::Abs,
        "hfma" => Fp16Op::Fma,
        "hsin" => Fp16Op::Math(crate::ir::MathFn::Sin),
        "hcos" => Fp16Op::Math(crate::ir::MathFn::Cos),
        "hexp" => Fp16Op::Math(crate::ir::MathFn::Exp),
        "hexp2" => Fp16Op::Math(crate::ir::MathFn::Exp2),
        "hlog" => Fp16Op::Math(crate::ir::MathFn::Log),
        "hlog2" => Fp16Op::Math(crate::ir::MathFn::Log2),
        "hlog10" => Fp16Op::Math(crate::ir::MathFn::Log10),
        "hsqrt" => Fp16Op::Math(crate::ir::MathFn::Sqrt),
        "hfloor" => Fp16Op::Math(crate::ir::MathFn::Floor),
        "hceil" => Fp16Op::Math(crate::ir::MathFn::Ceil),
        "htrunc" => Fp16Op::Math(crate::ir::MathFn::Trunc),
        "hrint" => Fp16Op::Math(crate::ir::MathFn::Rint),
        "hexp10" => Fp16Op::Math(crate::ir::MathFn::Exp10),
        "hrcp" => Fp16Op::Rcp,
        "hrsqrt" => Fp16Op::Rsqrt,
        _ => return None,
    };
    Some(Builtin::NumbaFp16(op))
}

/// Members of `numba.cuda.bf16`: `cuda.fp16`'s arithmetic, comparisons and math functions on
/// bfloat16, and `hadd_rn`/`hsub_rn`/`hmul_rn`, which round to nearest like `hadd`/`hsub`/`hmul`
/// (the `_rn` forms only forbid contracting them into an fma; pydevice never contracts 16-bit
/// float arithmetic, semantics §3.13).
pub fn numba_bf16_member(name: &str) -> Option<Builtin> {
    use crate::ir::BinaryOp as B;
    if let Some(c) = numba_bf16_conversion(name) {
        return Some(Builtin::NumbaBf16Cvt(c));
    }
    let special = match name {
        "hadd_sat" => Some(Fp16Op::SatBinary(B::Add)),
        "hsub_sat" => Some(Fp16Op::SatBinary(B::Sub)),
        "hmul_sat" => Some(Fp16Op::SatBinary(B::Mul)),
        "hfma_sat" => Some(Fp16Op::FmaSat),
        "hfma_relu" => Some(Fp16Op::FmaRelu),
        "hmax_nan" => Some(Fp16Op::NanBinary(B::Max)),
        "hmin_nan" => Some(Fp16Op::NanBinary(B::Min)),
        "hisnan" => Some(Fp16Op::IsNan),
        "hisinf" => Some(Fp16Op::IsInf),
        _ => None,
    };
    if let Some(op) = special {
        return Some(Builtin::NumbaBf16(op));
    }
    let plain = match name {
        "hadd_rn" => "hadd",
        "hsub_rn" => "hsub",
        "hmul_rn" => "hmul",
        n => n,
    };
    match numba_fp16_member(plain)? {
        Builtin::NumbaFp16(op) => Some(Builtin::NumbaBf16(op)),
        _ => None,
    }
}

pub use crate::types::vector_name;

/// CUDA's vector type names that numba-cuda also provides (`cuda.float4`, `cuda.short2`,
/// `cuda.ulonglong3`): `<ctype><N>` with N from 1 to 4.
pub fn cuda_vector_alias(name: &str) -> Option<(crate::types::Scalar, u8)> {
    use crate::types::Scalar::*;
    let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let base = &name[..name.len() - digits.len()];
    let n: u8 = digits.parse().ok().filter(|n| (1..=4).contains(n))?;
    let s = match base {
        "char" => Int8,
        "uchar" => UInt8,
        "short" => Int16,
        "ushort" => UInt16,
        "int" => Int32,
        "uint" => UInt32,
        "long" | "longlong" => Int64,
        "ulong" | "ulonglong" => UInt64,
        "float" => Float32,
        "double" => Float64,
        _ => return None,
    };
    Some((s, n))
}

/// Names of `cuda.device` from the specification that this compiler does not provide yet;
/// using one is a diagnostic that says so rather than "unknown name".
pub fn is_planned_device_member(name: &str) -> bool {
    const PLANNED: &[&str] = &["align"];
    PLANNED.contains(&name)
}

/// The unary functions of Python's `operator` module.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum OperatorUnary {
    /// `operator.neg(x)`: `-x`
    Neg,
    /// `operator.pos(x)`: `+x`
    Pos,
    /// `operator.invert(x)` / `operator.inv(x)`: `~x`
    Invert,
    /// `operator.not_(x)`: `not x`
    Not,
}

impl OperatorUnary {
    /// Its name in `operator`.
    pub fn name(self) -> &'static str {
        match self {
            OperatorUnary::Neg => "neg",
            OperatorUnary::Pos => "pos",
            OperatorUnary::Invert => "invert",
            OperatorUnary::Not => "not_",
        }
    }
}

/// The `operator` module's name of a binary operator.
pub fn operator_name(op: crate::ir::BinaryOp) -> &'static str {
    use crate::ir::BinaryOp;
    match op {
        BinaryOp::Add | BinaryOp::AddNoWrap => "add",
        BinaryOp::Sub => "sub",
        BinaryOp::Mul => "mul",
        BinaryOp::Div => "truediv",
        BinaryOp::FloorDiv => "floordiv",
        BinaryOp::Mod => "mod",
        BinaryOp::Pow => "pow",
        BinaryOp::Shl => "lshift",
        BinaryOp::Shr => "rshift",
        BinaryOp::BitAnd => "and_",
        BinaryOp::BitOr => "or_",
        BinaryOp::BitXor => "xor",
        BinaryOp::Eq => "eq",
        BinaryOp::Ne => "ne",
        BinaryOp::Lt => "lt",
        BinaryOp::Le => "le",
        BinaryOp::Gt => "gt",
        BinaryOp::Ge => "ge",
        BinaryOp::Min => "min",
        BinaryOp::Max => "max",
    }
}

/// The names of `cmath`'s functions that are IR operations.
const CMATH_NAMES: &[&str] = &[
    "exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "phase", "rect", "isfinite", "isnan", "isinf",
];

/// The `cmath` name of a complex operation (`Exp` → `exp`).
pub fn cmath_name(op: crate::ir::ComplexOp) -> &'static str {
    CMATH_NAMES
        .iter()
        .find(|n| crate::ir::ComplexOp::cmath(n) == Some(op))
        .copied()
        .unwrap_or("?")
}

/// Members of Python's `operator` module known in device code: the operators as functions
/// (`add`, `sub`, `mul`, `truediv`, `floordiv`, `mod`, `pow`, `lshift`, `rshift`, `and_`,
/// `or_`, `xor`, the comparisons, `neg`, `pos`, `invert`/`inv`, `not_`).
pub fn operator_member(name: &str) -> Option<Builtin> {
    use crate::ir::BinaryOp as B;
    Some(Builtin::OperatorBinary(match name {
        "add" => B::Add,
        "sub" => B::Sub,
        "mul" => B::Mul,
        "truediv" => B::Div,
        "floordiv" => B::FloorDiv,
        "mod" => B::Mod,
        "pow" => B::Pow,
        "lshift" => B::Shl,
        "rshift" => B::Shr,
        "and_" => B::BitAnd,
        "or_" => B::BitOr,
        "xor" => B::BitXor,
        "eq" => B::Eq,
        "ne" => B::Ne,
        "lt" => B::Lt,
        "le" => B::Le,
        "gt" => B::Gt,
        "ge" => B::Ge,
        "neg" => return Some(Builtin::OperatorUnary(OperatorUnary::Neg)),
        "pos" => return Some(Builtin::OperatorUnary(OperatorUnary::Pos)),
        "invert" | "inv" => return Some(Builtin::OperatorUnary(OperatorUnary::Invert)),
        "not_" => return Some(Builtin::OperatorUnary(OperatorUnary::Not)),
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_calls_fold_as_python_computes_them() {
        use super::Builtin as B;
        let (i, fl) = (Const::Int, Const::Float);
        assert_eq!(fold_builtin(B::Abs, &[i(-3)]), Some(i(3)));
        assert_eq!(fold_builtin(B::Max, &[i(3), fl(3.0)]), Some(i(3)));
        assert_eq!(fold_builtin(B::Min, &[fl(2.0), i(1)]), Some(i(1)));
        assert_eq!(fold_builtin(B::Int, &[fl(-2.9)]), Some(i(-2)));
        assert_eq!(fold_builtin(B::Round, &[fl(2.5)]), Some(i(2)));
        assert_eq!(fold_builtin(B::Round, &[fl(3.5)]), Some(i(4)));
        assert_eq!(fold_builtin(B::Int, &[fl(f64::NAN)]), None);
        assert_eq!(fold_builtin(B::Max, &[i(3)]), None);
    }
}
