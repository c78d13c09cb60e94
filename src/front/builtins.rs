//! The names device code can use that the program does not define: the `cuda.device`
//! namespace, Python builtins, and the scalar types. This is the single table that maps a
//! name to an entity; `check` types each entity, and the back ends lower the IR it produces.

use crate::types::Scalar;

/// A namespace that can be imported.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// The package `cuda` (only `cuda.device` is used from it).
    Cuda,
    /// `cuda.device`.
    Device,
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
    /// `numba.types`
    NumbaTypes,
    /// The package `cupyx` (only `cupyx.jit` is used from it).
    Cupyx,
    /// `cupyx.jit`.
    CupyxJit,
    /// `numpy` or `cupy`: only their dtype objects (`np.float32`) are usable in device code.
    Numpy,
    /// Python's `operator` module: its arithmetic, bitwise and comparison functions.
    Operator,
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
    /// `fma(a, b, c)`
    Fma,
    /// `math.frexp(x)`, `math.ldexp(x, n)`, `math.modf(x)` (one of the three intrinsics)
    MathPair(crate::ir::Intrinsic),
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
    /// cupyx's `jit.shared_memory(dtype, size, alignment=None)`
    CupyxSharedMemory,
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

/// Members of Python's `cmath` module known in device code: functions, and the constants
/// `pi`, `e`, `tau`, `inf`, `nan` (Python floats), `infj` and `nanj` (Python complexes).
pub(crate) fn cmath_member(name: &str) -> Option<super::Item> {
    use super::Item;
    use super::consts::Const;
    match name {
        "infj" => Some(Item::Const(Const::Complex(0.0, f64::INFINITY))),
        "nanj" => Some(Item::Const(Const::Complex(0.0, f64::NAN))),
        "pi" | "e" | "tau" | "inf" | "nan" => math_member(name),
        "polar" => Some(Item::Builtin(Builtin::Cmath(CmathFn::Polar))),
        n => {
            crate::ir::ComplexOp::cmath(n).map(|op| Item::Builtin(Builtin::Cmath(CmathFn::Op(op))))
        }
    }
}

/// Members of `cupyx.jit`.
pub(crate) fn cupyx_jit_member(name: &str) -> Option<Builtin> {
    use crate::ir::AtomicOp;
    use Builtin::*;
    Some(match name {
        "rawkernel" => RawKernel,
        "threadIdx" => ThreadIdx,
        "blockIdx" => BlockIdx,
        "blockDim" => BlockDim,
        "gridDim" => GridDim,
        "laneid" => CupyxLaneId,
        "warpsize" => WarpSize,
        "grid" => NumbaGrid,
        "gridsize" => NumbaGridsize,
        "range" => Range,
        "syncthreads" => SyncThreads,
        "syncwarp" => SyncWarp,
        "shared_memory" => CupyxSharedMemory,
        "shfl_sync" => ShflSync,
        "shfl_up_sync" => ShflUpSync,
        "shfl_down_sync" => ShflDownSync,
        "shfl_xor_sync" => ShflXorSync,
        "atomic_add" => NumbaAtomic(AtomicOp::Add),
        "atomic_sub" => NumbaAtomic(AtomicOp::Sub),
        "atomic_exch" => NumbaAtomic(AtomicOp::Exch),
        "atomic_min" => NumbaAtomic(AtomicOp::Min),
        "atomic_max" => NumbaAtomic(AtomicOp::Max),
        "atomic_cas" => NumbaAtomic(AtomicOp::Cas),
        "atomic_and" => NumbaAtomic(AtomicOp::And),
        "atomic_or" => NumbaAtomic(AtomicOp::Or),
        "atomic_xor" => NumbaAtomic(AtomicOp::Xor),
        _ => return None,
    })
}

/// Members of `numba.cuda` (the numba-cuda dialect maps onto the same entities).
pub(crate) fn numba_cuda_member(name: &str) -> Option<super::Item> {
    use super::Item;
    use Builtin::*;
    let b = match name {
        "jit" => Jit,
        "threadIdx" => ThreadIdx,
        "blockIdx" => BlockIdx,
        "blockDim" => BlockDim,
        "gridDim" => GridDim,
        "laneid" => LaneId,
        "warpsize" => WarpSize,
        "grid" => NumbaGrid,
        "gridsize" => NumbaGridsize,
        "syncthreads" => SyncThreads,
        "syncthreads_count" => NumbaSyncthreads(0),
        "syncthreads_and" => NumbaSyncthreads(1),
        "syncthreads_or" => NumbaSyncthreads(2),
        "all_sync" => NumbaVote(0),
        "any_sync" => NumbaVote(1),
        "eq_sync" => NumbaVote(2),
        "ballot_sync" => NumbaVote(3),
        "shfl_sync" => ShflSync,
        "shfl_up_sync" => ShflUpSync,
        "shfl_down_sync" => ShflDownSync,
        "shfl_xor_sync" => ShflXorSync,
        "match_any_sync" => MatchAnySync,
        "match_all_sync" => MatchAllSync,
        "activemask" => ActiveMask,
        "lanemask_lt" => LaneMaskLt,
        "syncwarp" => SyncWarp,
        "threadfence" => NumbaFence(0),
        "threadfence_block" => NumbaFence(1),
        "threadfence_system" => NumbaFence(2),
        "popc" => Popc,
        "brev" => Brev,
        "clz" => Clz,
        "ffs" => Ffs,
        "fma" => Fma,
        "cbrt" => Cbrt,
        "selp" => Selp,
        "shared" => return Some(Item::Namespace(Namespace::NumbaShared)),
        "local" => return Some(Item::Namespace(Namespace::NumbaLocal)),
        "atomic" => return Some(Item::Namespace(Namespace::NumbaAtomic)),
        "fp16" => return Some(Item::Namespace(Namespace::NumbaFp16)),
        "bf16" => return Some(Item::Namespace(Namespace::NumbaBf16)),
        "libdevice" => return Some(Item::Namespace(Namespace::NumbaLibdevice)),
        "const" => return Some(Item::Namespace(Namespace::NumbaConst)),
        "ldca" | "ldcg" | "ldcs" | "ldlu" | "ldcv" => NumbaCacheHint(false),
        "stcg" | "stcs" | "stwb" | "stwt" => NumbaCacheHint(true),
        n if vector_name(n).is_some() || cuda_vector_alias(n).is_some() => {
            let (s, len) = vector_name(n).or_else(|| cuda_vector_alias(n))?;
            Vector(s, len)
        }
        // numba.cuda re-exports numba's type objects (`from numba.cuda import float32`).
        n => return numba_type(n).map(Item::Builtin),
    };
    Some(Item::Builtin(b))
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
}

impl Fp16Op {
    /// How many operands it takes.
    pub fn arity(self) -> usize {
        match self {
            Fp16Op::Binary(_) | Fp16Op::SatBinary(_) => 2,
            Fp16Op::Neg | Fp16Op::Abs | Fp16Op::Math(_) | Fp16Op::Rcp | Fp16Op::Rsqrt => 1,
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
/// (the `_rn` forms only forbid contracting them into an fma; pydevice does not contract).
pub fn numba_bf16_member(name: &str) -> Option<Builtin> {
    use crate::ir::BinaryOp as B;
    let special = match name {
        "hadd_sat" => Some(Fp16Op::SatBinary(B::Add)),
        "hsub_sat" => Some(Fp16Op::SatBinary(B::Sub)),
        "hmul_sat" => Some(Fp16Op::SatBinary(B::Mul)),
        "hfma_sat" => Some(Fp16Op::FmaSat),
        "hfma_relu" => Some(Fp16Op::FmaRelu),
        _ => None,
    };
    if let Some(op) = special {
        return Some(Builtin::NumbaBf16(op));
    }
    // The exact widening and the round-to-nearest narrowing are the type conversions.
    match name {
        "bfloat16_to_float32" => return numba_type("float32"),
        "float32_to_bfloat16" | "float32_to_bfloat16_rn" => return numba_type("bfloat16"),
        _ => {}
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

/// Members of `numba.cuda.libdevice` that `math` has: `frexp`, `ldexp`, `modf` and the
/// math function names (`sin`, `exp2`, …), each also with libdevice's float32 `f`
/// suffix (`sinf`); the arguments are converted as `math`'s are.
pub fn numba_libdevice_member(name: &str) -> Option<Builtin> {
    use crate::ir::{Intrinsic, MathFn};
    let pair = |n: &str| match n {
        "frexp" => Some(Builtin::MathPair(Intrinsic::Frexp)),
        "ldexp" => Some(Builtin::MathPair(Intrinsic::Ldexp)),
        "modf" => Some(Builtin::MathPair(Intrinsic::Modf)),
        "sincos" => Some(Builtin::MathPair(Intrinsic::Sincos)),
        "sad" => Some(Builtin::MathPair(Intrinsic::Sad)),
        n => MathFn::from_name(n).map(Builtin::Math),
    };
    pair(name).or_else(|| name.strip_suffix('f').and_then(pair))
}

/// Members of `numba.cuda.atomic`.
pub fn numba_atomic_member(name: &str) -> Option<Builtin> {
    use crate::ir::AtomicOp;
    Some(match name {
        "compare_and_swap" => Builtin::NumbaCompareAndSwap,
        "cas" => Builtin::NumbaAtomic(AtomicOp::Cas),
        n => Builtin::NumbaAtomic(match n {
            "add" => AtomicOp::Add,
            "sub" => AtomicOp::Sub,
            "and_" => AtomicOp::And,
            "or_" => AtomicOp::Or,
            "xor" => AtomicOp::Xor,
            "exch" => AtomicOp::Exch,
            "max" => AtomicOp::Max,
            "min" => AtomicOp::Min,
            "nanmax" => AtomicOp::NanMax,
            "nanmin" => AtomicOp::NanMin,
            "inc" => AtomicOp::Inc,
            "dec" => AtomicOp::Dec,
            _ => return None,
        }),
    })
}

/// numba's type objects (`numba.float32`, `numba.types.int64`, `numba.void`) and their
/// short aliases (`f4`, `i8`, `intp`, `boolean`).
pub fn numba_type(name: &str) -> Option<Builtin> {
    match name {
        "void" | "none" => Some(Builtin::Void),
        "int_" | "intp" | "intc" => Some(Builtin::Scalar(if name == "intc" {
            crate::types::Scalar::Int32
        } else {
            crate::types::Scalar::Int64
        })),
        "float_" => Some(Builtin::Scalar(crate::types::Scalar::Float64)),
        n => crate::types::Scalar::from_name(n).map(Builtin::Scalar),
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

/// Members of `cuda.device` known to this compiler.
pub fn device_member(name: &str) -> Option<Builtin> {
    use Builtin::*;
    Some(match name {
        "kernel" => Kernel,
        "func" => Func,
        "thread_idx" => ThreadIdx,
        "block_idx" => BlockIdx,
        "block_dim" => BlockDim,
        "grid_dim" => GridDim,
        "lane_id" => LaneId,
        "warp_size" => WarpSize,
        "tid" => Tid,
        "grid_size" => GridSize,
        "syncthreads" => SyncThreads,
        "shared_array" => SharedArray,
        "local_array" => LocalArray,
        "dynamic_shared_array" => DynamicSharedArray,
        "syncthreads_count" => SyncThreadsCount,
        "syncthreads_and" => SyncThreadsAnd,
        "syncthreads_or" => SyncThreadsOr,
        "threadfence" => ThreadFence,
        "atomic_ref" => AtomicRef,
        "activemask" => ActiveMask,
        "lanemask_lt" => LaneMaskLt,
        "syncwarp" => SyncWarp,
        "all_sync" => AllSync,
        "any_sync" => AnySync,
        "eq_sync" => EqSync,
        "ballot_sync" => BallotSync,
        "shfl_sync" => ShflSync,
        "shfl_up_sync" => ShflUpSync,
        "shfl_down_sync" => ShflDownSync,
        "shfl_xor_sync" => ShflXorSync,
        "match_any_sync" => MatchAnySync,
        "match_all_sync" => MatchAllSync,
        "popc" => Popc,
        "brev" => Brev,
        "clz" => Clz,
        "ffs" => Ffs,
        "cbrt" => Cbrt,
        "fma" => Fma,
        "WarpMask" => WarpMask,
        "struct" => Struct,
        "Atomic" => AtomicClass,
        "align" => Align,
        "target" => Target,
        "is_host" => IsHost,
        "is_device" => IsDevice,
        "any_target" => AnyTarget,
        "no_target" => NoTarget,
        "is_exactly" => IsExactly,
        "provides" => Provides,
        n if n.starts_with("sm")
            && n.len() > 2
            && n[2..].trim_start_matches('_').parse::<u32>().is_ok() =>
        {
            Sm(n[2..].trim_start_matches('_').parse().ok()?)
        }
        n if vector_name(n).is_some() => {
            let (s, len) = vector_name(n)?;
            Vector(s, len)
        }
        n => {
            return crate::types::Scalar::from_name(n)
                .filter(|s| s.name() == n)
                .map(Builtin::Scalar);
        }
    })
}

/// Names of `cuda.device` from the specification that this compiler does not provide yet;
/// using one is a diagnostic that says so rather than "unknown name".
pub fn is_planned_device_member(name: &str) -> bool {
    const PLANNED: &[&str] = &["align", "launch", "machine_representation", "ConstExpr"];
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

/// Python builtins available in device code.
pub fn python_builtin(name: &str) -> Option<Builtin> {
    use Builtin::*;
    Some(match name {
        "int" => Int,
        "float" => Float,
        "bool" => Bool,
        "complex" => Complex,
        "range" => Range,
        "len" => Len,
        "abs" => Abs,
        "min" => Min,
        "max" => Max,
        "round" => Round,
        "pow" => Pow,
        _ => return None,
    })
}

/// Members of Python's `math` module known in device code: functions, and the constants
/// `pi`, `e`, `tau`, `inf` and `nan` (as Python floats).
pub(crate) fn math_member(name: &str) -> Option<super::Item> {
    use super::Item;
    use super::consts::Const;
    let c = |v: f64| Some(Item::Const(Const::Float(v)));
    match name {
        "pi" => c(std::f64::consts::PI),
        "e" => c(std::f64::consts::E),
        "tau" => c(std::f64::consts::TAU),
        "inf" => c(f64::INFINITY),
        "nan" => c(f64::NAN),
        "frexp" => Some(Item::Builtin(Builtin::MathPair(
            crate::ir::Intrinsic::Frexp,
        ))),
        "ldexp" => Some(Item::Builtin(Builtin::MathPair(
            crate::ir::Intrinsic::Ldexp,
        ))),
        "modf" => Some(Item::Builtin(Builtin::MathPair(crate::ir::Intrinsic::Modf))),
        n => crate::ir::MathFn::from_name(n).map(|f| Item::Builtin(Builtin::Math(f))),
    }
}
