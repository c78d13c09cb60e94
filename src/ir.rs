//! The typed intermediate representation: what the front end produces and every back end
//! consumes.
//!
//! A [`Program`] is one specialization: an entry function and every function it calls, each
//! instantiated for concrete argument types. Functions keep their control flow structured
//! (blocks, `if`, loops), as Python has it; expressions live in a per-function [`Arena`] and
//! refer to each other by [`Handle`], each with its [`Type`] and source [`Span`] beside it.
//! The IR is plain data: it prints (see the `Display` impls) and compares, and nothing in
//! it refers to the AST or to LLVM.

use crate::diag::Span;
use crate::types::tensor::MatrixLayout;
use crate::types::{DType, GroupKind, MemSpace, Scalar, Type};
use std::fmt;
use std::marker::PhantomData;

mod stores;
pub use stores::holds_memory;
mod ops;
mod validate;
pub use ops::{BarrierScope, IntrinsicFlags};
pub use validate::{ValidationError, validate};

/// A typed index into an [`Arena`].
pub struct Handle<T> {
    index: u32,
    _marker: PhantomData<fn() -> T>,
}

impl<T> Handle<T> {
    fn new(index: usize) -> Handle<T> {
        Handle {
            index: index as u32,
            _marker: PhantomData,
        }
    }

    /// The position in the arena.
    pub fn index(self) -> usize {
        self.index as usize
    }
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Handle<T> {}
impl<T> PartialEq for Handle<T> {
    fn eq(&self, o: &Self) -> bool {
        self.index == o.index
    }
}
impl<T> Eq for Handle<T> {}
impl<T> std::hash::Hash for Handle<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.index.hash(h)
    }
}
impl<T> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.index)
    }
}

/// A growable store of `T`, each with a span, addressed by [`Handle`].
#[derive(Clone, Debug)]
pub struct Arena<T> {
    items: Vec<T>,
    spans: Vec<Span>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            items: Vec::new(),
            spans: Vec::new(),
        }
    }
}

impl<T> Arena<T> {
    /// Adds an item and returns its handle.
    pub fn append(&mut self, item: T, span: Span) -> Handle<T> {
        self.items.push(item);
        self.spans.push(span);
        Handle::new(self.items.len() - 1)
    }

    /// The span an item came from.
    pub fn span(&self, h: Handle<T>) -> Span {
        self.spans[h.index()]
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Items with their handles.
    pub fn iter(&self) -> impl Iterator<Item = (Handle<T>, &T)> {
        self.items
            .iter()
            .enumerate()
            .map(|(i, t)| (Handle::new(i), t))
    }
}

impl<T> std::ops::Index<Handle<T>> for Arena<T> {
    type Output = T;
    fn index(&self, h: Handle<T>) -> &T {
        &self.items[h.index()]
    }
}

impl<T> std::ops::IndexMut<Handle<T>> for Arena<T> {
    fn index_mut(&mut self, h: Handle<T>) -> &mut T {
        &mut self.items[h.index()]
    }
}

/// One specialization: an entry and everything it calls.
#[derive(Clone, Debug)]
pub struct Program {
    /// Every instantiated function; callees come before their callers.
    pub functions: Arena<Function>,
    /// The function that was asked for.
    pub entry: Handle<Function>,
    /// Options of the entry that apply to the whole program.
    pub options: ProgramOptions,
    /// The source, for line information and run-time error reports.
    pub file: crate::diag::SourceFile,
    /// `Some(sm)` when `target(...)` conditions were decided for architecture `sm` (90 for
    /// sm_90): the program is then valid for that architecture only.
    pub target_sm: Option<u32>,
    /// Whether the program synchronizes the whole grid (`cg.this_grid().sync()`): the
    /// kernel must then be launched cooperatively (docs/semantics.md §17.4).
    pub cooperative: bool,
    /// Whether the program uses the block's split barrier (`cg.barrier_arrive`): the kernel
    /// then initializes it on entry (docs/semantics.md §17.5).
    pub split_barrier: bool,
}

/// The value of [`Program::target_sm`] (and of the architecture a program is specialized
/// for) that stands for the host: `target(is_host)` holds there, `is_device` and every
/// `provides(smXX)` / `is_exactly(smXX)` do not.
pub const HOST_TARGET: u32 = 0;

/// Options given on the entry kernel (`@kernel(fastmath=True, ...)`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProgramOptions {
    /// `max_threads=`: emitted as `.maxntid`.
    pub max_threads: Option<u32>,
    /// `min_blocks=`: emitted as `.minnctapersm`.
    pub min_blocks: Option<u32>,
    /// numba's `max_registers=`: emitted as `.maxnreg`.
    pub max_registers: Option<u32>,
    /// Fast, less accurate floating point (approximate division and square root, flushing
    /// denormals to zero, reassociation).
    pub fastmath: bool,
    /// `contract=False`: no float multiplication is fused with the addition or subtraction
    /// that uses it. By default (false here) the program's own float32/float64 `+ - *` may be
    /// contracted into one `fma` (one rounding), as nvcc's default `-fmad=true` (§3.13).
    pub no_contract: bool,
    /// Source line information in the PTX (`.loc`).
    pub lineinfo: bool,
    /// `debug=True`: full DWARF (subprograms, line tables, local variables) for cuda-gdb,
    /// compiled at -O0; the runtime JIT-compiles it with debug information.
    pub debug: bool,
    /// Check every array index; an out-of-range access is skipped and reported.
    pub bounds_check: bool,
    /// `restrict=True`: the kernel's array parameters do not overlap when one is written
    /// (CUDA C++'s `__restrict__` on every pointer parameter); read-only ones are read
    /// through the non-coherent cache (`ld.global.nc`), docs/semantics.md §12.
    pub restrict: bool,
    /// `assertions=False`: `assert` statements are compiled out (not evaluated).
    pub skip_assertions: bool,
    /// `cluster=(x, y, z)` (sm_90): the thread block cluster shape the kernel must be
    /// launched with, emitted as `.explicitcluster` and `.reqnctapercluster x, y, z`.
    pub cluster: Option<[u32; 3]>,
}

/// The device global where a bounds-checked kernel records its first out-of-range access:
/// a `uint64` that is 0 while none happened, else `line << 32 | column` of the access; a
/// failed `assert` or a `raise` records `1 << 63 | line << 32 | column` there (the first
/// error of the launch wins), and the thread that recorded it fills [`ERROR_INFO_SYMBOL`].
pub const BOUNDS_ERROR_SYMBOL: &str = "__pyd_bounds_error";

/// The device global, present in modules with `assert` or `raise`, that the thread whose
/// error won [`BOUNDS_ERROR_SYMBOL`] fills: [`ERROR_INFO_WORDS`] `uint64`s, the first three
/// `thread_idx.x | thread_idx.y << 32`, `thread_idx.z | block_idx.x << 32`,
/// `block_idx.y | block_idx.z << 32`, then the NUL-terminated file name followed by the
/// NUL-terminated message (truncated to fit).
pub const ERROR_INFO_SYMBOL: &str = "__pyd_error_info";

/// The size of [`ERROR_INFO_SYMBOL`] in `uint64`s.
pub const ERROR_INFO_WORDS: usize = 32;

/// The bit of an error word that marks an `assert`/`raise` (not an out-of-range index).
pub const RAISE_BIT: u64 = 1 << 63;

/// What a function is to the outside.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FunctionKind {
    /// `@kernel`: launched from the host.
    Kernel,
    /// `@func`: called from device code.
    Device,
}

/// A local variable (parameters are locals too).
#[derive(Clone, Debug)]
pub struct Local {
    /// The Python name (hidden compiler temporaries start with `$`).
    pub name: String,
    /// Its one type.
    pub ty: Type,
}

/// A function instantiated for concrete parameter types.
#[derive(Clone, Debug)]
pub struct Function {
    /// The Python name.
    pub name: String,
    /// The symbol in PTX: the Python name for kernels and interoperable functions,
    /// a mangled name otherwise.
    pub symbol: String,
    /// Kernel or device function.
    pub kind: FunctionKind,
    /// Whether the symbol is visible to other languages (`interop=True`).
    pub interop: bool,
    /// Declared `extern`: defined in another language (CUDA C++) and linked in later; it has
    /// no locals but its parameters and no body, and is always `interop`.
    pub external: bool,
    /// Locals; the first `params` of them are the parameters in order.
    pub locals: Arena<Local>,
    /// Number of parameters.
    pub params: usize,
    /// The return type (`None` for kernels).
    pub ret: Type,
    /// Expressions.
    pub exprs: Arena<Expr>,
    /// Type of each expression, parallel to `exprs`.
    pub types: Vec<Type>,
    /// The body.
    pub body: Block,
    /// Where the `def` is.
    pub span: Span,
}

impl Program {
    /// For each function (indexed like `functions`): whether it draws random numbers
    /// (`rand`/`randn`), itself or through a callee. Such functions take the thread's
    /// generator state, and a kernel that does takes the launch's seed.
    pub fn uses_random(&self) -> Vec<bool> {
        let mut out = vec![false; self.functions.len()];
        // Callees come before their callers, so one pass suffices but for recursion: repeat
        // until nothing changes.
        loop {
            let mut changed = false;
            for (h, f) in self.functions.iter() {
                if out[h.index()] {
                    continue;
                }
                let uses = f.exprs.iter().any(|(_, e)| match e {
                    Expr::Intrinsic(Intrinsic::Rand | Intrinsic::Randn, _) => true,
                    Expr::Call(callee, _) => out.get(callee.index()).copied().unwrap_or(false),
                    _ => false,
                });
                out[h.index()] = uses;
                changed |= uses;
            }
            if !changed {
                return out;
            }
        }
    }
}

impl Function {
    /// The type of an expression.
    pub fn ty(&self, e: Handle<Expr>) -> &Type {
        &self.types[e.index()]
    }

    /// The parameters' handles.
    pub fn param_locals(&self) -> impl Iterator<Item = Handle<Local>> + '_ {
        (0..self.params).map(Handle::new)
    }
}

/// A constant.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Literal {
    /// A boolean.
    Bool(bool),
    /// An integer of the expression's type (two's complement bits for unsigned ones).
    Int(i128),
    /// A float of the expression's type.
    Float(f64),
    /// A complex number (real, imaginary) of the expression's (complex) type.
    Complex(f64, f64),
}

/// Unary operators.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `~x` on integers (on `bool`, logical not).
    Invert,
    /// `not x` on `bool`.
    Not,
    /// `abs(x)`
    Abs,
}

/// Binary operators; both operands have the result type, except shifts whose right operand
/// may be any integer, and comparisons whose result is `bool`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `+` that cannot overflow: the increment of a `range` loop's counter (Python's
    /// integers do not wrap), which lets the optimizer compute trip counts and unroll.
    AddNoWrap,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (operands are floats)
    Div,
    /// `//` (rounds toward negative infinity)
    FloorDiv,
    /// `%` (sign of the divisor)
    Mod,
    /// `**`
    Pow,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    Shl,
    /// `>>` (arithmetic for signed types)
    Shr,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl BinaryOp {
    /// True for the six comparisons.
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge)
    }

    /// The Python spelling.
    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "+",
            AddNoWrap => "+nw",
            Sub => "-",
            Mul => "*",
            Div => "/",
            FloorDiv => "//",
            Mod => "%",
            Pow => "**",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            Shl => "<<",
            Shr => ">>",
            Min => "min",
            Max => "max",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
        }
    }
}

/// A dimension of the thread hierarchy.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// `.x`
    X,
    /// `.y`
    Y,
    /// `.z`
    Z,
}

impl Axis {
    /// The axis of an index 0..3.
    pub fn from_index(i: usize) -> Option<Axis> {
        [Axis::X, Axis::Y, Axis::Z].get(i).copied()
    }

    /// The letter.
    pub fn letter(self) -> char {
        match self {
            Axis::X => 'x',
            Axis::Y => 'y',
            Axis::Z => 'z',
        }
    }
}

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
    /// `clz(x)` → int32
    Clz,
    /// `ffs(x)` → int32, 1-based, 0 when x == 0
    Ffs,
    /// `fma(a, b, c)`, one rounding
    Fma,
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
    /// A cooperative-groups operation (`cuda.device.cg`, docs/semantics.md §17); its first
    /// argument, where it has one, is the group value.
    Cg(CgOp),
    /// A tensor-core operation of `device.wmma` or `device.mma` (§19).
    Tensor(TensorOp),
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

/// The functions of Python's `math` module that device code can call.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum MathFn {
    Sqrt,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Pow,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Erf,
    Erfc,
    Gamma,
    Lgamma,
    Floor,
    Ceil,
    Trunc,
    Fabs,
    Copysign,
    Fmod,
    Hypot,
    Isnan,
    Isinf,
    Isfinite,
    Cbrt,
    /// `math.remainder(x, y)`: IEEE remainder
    Remainder,
    /// `math.nextafter(x, y)`
    Nextafter,
    /// `math.degrees(x)`: `x * (180 / pi)`, one multiplication, as numba does
    Degrees,
    /// `math.radians(x)`: `x * (pi / 180)`
    Radians,
    /// Round to the nearest integer, ties to even (`round(x)`, `cuda.fp16.hrint`; not a
    /// `math` function)
    Rint,
    /// `10 ** x` (`cuda.fp16.hexp10`; not a `math` function)
    Exp10,
    /// `1 / sqrt(x)` (`device.rsqrt`, numba's `cuda.libdevice.rsqrt`; not a `math`
    /// function): CUDA's `rsqrtf`/`rsqrt` on the device (docs/semantics.md §11.2)
    Rsqrt,
}

impl MathFn {
    /// Every function, for tables and tests.
    pub const ALL: [MathFn; 44] = {
        use MathFn::*;
        [
            Sqrt, Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Pow, Sin, Cos, Tan, Asin, Acos, Atan,
            Atan2, Sinh, Cosh, Tanh, Asinh, Acosh, Atanh, Erf, Erfc, Gamma, Lgamma, Floor, Ceil,
            Trunc, Fabs, Copysign, Fmod, Hypot, Isnan, Isinf, Isfinite, Cbrt, Remainder, Nextafter,
            Degrees, Radians, Rint, Exp10, Rsqrt,
        ]
    };

    /// The Python name (`math.<name>`).
    pub fn name(self) -> &'static str {
        use MathFn::*;
        match self {
            Sqrt => "sqrt",
            Exp => "exp",
            Exp2 => "exp2",
            Expm1 => "expm1",
            Log => "log",
            Log2 => "log2",
            Log10 => "log10",
            Log1p => "log1p",
            Pow => "pow",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Asin => "asin",
            Acos => "acos",
            Atan => "atan",
            Atan2 => "atan2",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            Asinh => "asinh",
            Acosh => "acosh",
            Atanh => "atanh",
            Erf => "erf",
            Erfc => "erfc",
            Gamma => "gamma",
            Lgamma => "lgamma",
            Floor => "floor",
            Ceil => "ceil",
            Trunc => "trunc",
            Fabs => "fabs",
            Copysign => "copysign",
            Fmod => "fmod",
            Hypot => "hypot",
            Isnan => "isnan",
            Isinf => "isinf",
            Isfinite => "isfinite",
            Cbrt => "cbrt",
            Remainder => "remainder",
            Nextafter => "nextafter",
            Degrees => "degrees",
            Radians => "radians",
            Rint => "rint",
            Exp10 => "exp10",
            Rsqrt => "rsqrt",
        }
    }

    /// Looks a `math` function up by name (`rint`, `exp10` and `rsqrt` are internal: `math`
    /// has no such functions).
    pub fn from_name(s: &str) -> Option<MathFn> {
        MathFn::ALL
            .into_iter()
            .find(|f| f.name() == s && !matches!(f, MathFn::Rint | MathFn::Exp10 | MathFn::Rsqrt))
    }

    /// Number of arguments.
    pub fn arity(self) -> usize {
        use MathFn::*;
        match self {
            Pow | Atan2 | Copysign | Fmod | Hypot | Remainder | Nextafter => 2,
            _ => 1,
        }
    }
}

/// Operations on complex numbers other than the arithmetic operators: construction, parts,
/// and the functions of Python's `cmath` module. The result type is the expression's.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ComplexOp {
    /// `complex64(re, im)`: two floats of the complex type's part type.
    New,
    /// `z.real`
    Real,
    /// `z.imag`
    Imag,
    /// `z.conjugate()`
    Conj,
    /// `abs(z)`, `cmath.abs`: the modulus, `hypot(re, im)`
    Abs,
    /// `cmath.phase(z)`: `atan2(im, re)`
    Phase,
    /// `cmath.exp`
    Exp,
    /// `cmath.log` (principal branch)
    Log,
    /// `cmath.sqrt` (principal branch)
    Sqrt,
    /// `cmath.sin`
    Sin,
    /// `cmath.cos`
    Cos,
    /// `cmath.tan`
    Tan,
    /// `cmath.asin`
    Asin,
    /// `cmath.acos`
    Acos,
    /// `cmath.atan`
    Atan,
    /// `cmath.sinh`
    Sinh,
    /// `cmath.cosh`
    Cosh,
    /// `cmath.tanh`
    Tanh,
    /// `cmath.asinh`
    Asinh,
    /// `cmath.acosh`
    Acosh,
    /// `cmath.atanh`
    Atanh,
    /// `cmath.rect(r, phi)`: two floats
    Rect,
    /// `z ** w` with two complex operands, where `w` is not a small integer constant
    /// (CPython's `c_pow`)
    Pow,
    /// `cmath.isfinite(z)`: both parts finite (bool)
    IsFinite,
    /// `cmath.isnan(z)`: either part NaN (bool)
    IsNan,
    /// `cmath.isinf(z)`: either part infinite (bool)
    IsInf,
}

impl ComplexOp {
    /// The `cmath` function of a name (`polar` is built from `Abs` and `Phase`).
    pub fn cmath(name: &str) -> Option<ComplexOp> {
        Some(match name {
            "exp" => ComplexOp::Exp,
            "log" => ComplexOp::Log,
            "sqrt" => ComplexOp::Sqrt,
            "sin" => ComplexOp::Sin,
            "cos" => ComplexOp::Cos,
            "tan" => ComplexOp::Tan,
            "asin" => ComplexOp::Asin,
            "acos" => ComplexOp::Acos,
            "atan" => ComplexOp::Atan,
            "sinh" => ComplexOp::Sinh,
            "cosh" => ComplexOp::Cosh,
            "tanh" => ComplexOp::Tanh,
            "asinh" => ComplexOp::Asinh,
            "acosh" => ComplexOp::Acosh,
            "atanh" => ComplexOp::Atanh,
            "phase" => ComplexOp::Phase,
            "rect" => ComplexOp::Rect,
            "isfinite" => ComplexOp::IsFinite,
            "isnan" => ComplexOp::IsNan,
            "isinf" => ComplexOp::IsInf,
            _ => return None,
        })
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
            other => format!("{other:?}").to_lowercase(),
        }
    }
}

/// A property of an array.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArrayProp {
    /// `a.shape[d]` (int64)
    Shape(u8),
    /// `a.strides[d]`, in bytes as NumPy reports them (int64)
    Stride(u8),
    /// `a.size` (int64)
    Size,
}

/// What a view keeps of one dimension of an array.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Subscript {
    /// One position: the dimension is dropped.
    Index(Index),
    /// `start:stop:step`: the dimension is kept.
    Slice {
        /// `start`, `int64` (None: the first element in the step's direction).
        start: Option<Handle<Expr>>,
        /// `stop`, `int64` (None: past the last element in the step's direction).
        stop: Option<Handle<Expr>>,
        /// The step, a non-zero constant.
        step: i64,
    },
}

/// An index into one dimension of an array.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Index {
    /// The index value (any integer type).
    pub value: Handle<Expr>,
    /// Whether a negative value must wrap around (`a[-1]`); false when the index is known to
    /// be non-negative, so the common case costs nothing.
    pub wrap: bool,
}

/// A NumPy array written out in the source, known at compile time.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstArray {
    /// The global it was assigned to (`cases[1]` for an element of a tuple), for the symbol
    /// and for notes; empty until the assignment names it.
    pub name: String,
    /// Where the global is assigned.
    pub span: Span,
    /// Element type: a number, or a record (a structured dtype in C layout).
    pub dtype: DType,
    /// Extents; empty for a zero-dimensional array.
    pub shape: Vec<u64>,
    /// Fortran order (`order='F'`, `np.asfortranarray`).
    pub fortran: bool,
    /// The elements in memory order, each `dtype.size()` little-endian bytes.
    pub bytes: Vec<u8>,
    /// Constant memory (`.const`) or, for arrays past the 64 KiB bank, global memory.
    pub space: MemSpace,
}

impl ConstArray {
    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The symbol of its data in PTX.
    pub fn symbol(&self) -> String {
        let clean: String = self
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("__pyd_const_{clean}")
    }
}

/// Inline PTX (§18.2), checked by the front end: every `$N` of the template names an
/// operand, outputs first, and each operand's constraint fits its type.
#[derive(Clone, Debug, PartialEq)]
pub struct InlineAsm {
    /// The PTX, with `$N` for operand N and `$$` for a `$`.
    pub template: String,
    /// LLVM's constraint string: `=r,=l` for the outputs, then `r,f,n` for the inputs, then
    /// `~{memory}` when the PTX reads or writes memory the compiler does not see.
    pub constraints: String,
    /// Whether the PTX has effects beyond its outputs (it is then never removed, merged or
    /// moved across other side effects).
    pub volatile: bool,
    /// The inputs, in operand order.
    pub args: Vec<Handle<Expr>>,
}

/// A launch from device code (§18.3): the parameter buffer comes from the device runtime's
/// `__cudaCDP2GetParameterBufferV2`, is filled with the arguments laid out as the child
/// kernel's parameters, and is launched by `__cudaCDP2LaunchDeviceV2` on the default stream.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceLaunch {
    /// The child, a kernel of the same program.
    pub kernel: Handle<Function>,
    /// Blocks in the grid (`uint32x3`).
    pub grid: Handle<Expr>,
    /// Threads per block (`uint32x3`).
    pub block: Handle<Expr>,
    /// Bytes of dynamic shared memory (`uint32`).
    pub shared: Handle<Expr>,
    /// The arguments, of the child's parameter types.
    pub args: Vec<Handle<Expr>>,
}

/// An expression. Operands are evaluated left to right; `And`, `Or` and `Select` evaluate
/// only what Python would.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A constant of the expression's type.
    Literal(Literal),
    /// Inline PTX (`asm(...)`, §18.2): its result is `None`, a number, or a tuple of numbers,
    /// one per output operand.
    Asm(Box<InlineAsm>),
    /// A kernel launched from device code (`launch(kernel, grid, block, *args)`, CUDA's
    /// dynamic parallelism, §18.3): the launch's `cudaError_t` (int32).
    Launch(Box<DeviceLaunch>),
    /// The current value of a local.
    Local(Handle<Local>),
    /// A unary operation.
    Unary(UnaryOp, Handle<Expr>),
    /// A binary operation.
    Binary(BinaryOp, Handle<Expr>, Handle<Expr>),
    /// `a and b` (both of the result type; truth is `!= 0`).
    And(Handle<Expr>, Handle<Expr>),
    /// `a or b`.
    Or(Handle<Expr>, Handle<Expr>),
    /// `then if cond else otherwise`.
    Select {
        /// A `bool`.
        cond: Handle<Expr>,
        /// Value when true.
        then: Handle<Expr>,
        /// Value when false.
        otherwise: Handle<Expr>,
    },
    /// Conversion to the expression's type (truncation toward zero from float to int,
    /// saturating; `!= 0` to bool).
    Cast(Handle<Expr>),
    /// A call of a device function.
    Call(Handle<Function>, Vec<Handle<Expr>>),
    /// A hardware value or operation.
    Intrinsic(Intrinsic, Vec<Handle<Expr>>),
    /// An element of an array.
    Load {
        /// The array.
        array: Handle<Expr>,
        /// One index per dimension.
        indices: Vec<Index>,
    },
    /// A property of an array.
    ArrayProp(Handle<Expr>, ArrayProp),
    /// A tuple (or vector) built from its elements.
    Tuple(Vec<Handle<Expr>>),
    /// A constant-index element of a tuple or vector.
    Extract(Handle<Expr>, u32),
    /// An array in statically allocated shared or thread-local memory (one allocation per
    /// call site; in shared memory every thread of the block sees the same one). The
    /// expression's type (an array) gives the dtype, layout and memory space.
    StaticArray {
        /// Extent of each dimension.
        shape: Vec<u64>,
        /// Minimum alignment in bytes.
        align: u64,
    },
    /// The block's dynamic shared memory as a 1-D `uint8` array.
    DynamicShared,
    /// A module-level constant array (§1.3): its data is a read-only global of the program
    /// (in the constant bank or, past 64 KiB, global memory), named by its symbol. The
    /// expression's type gives the dtype, layout and memory space.
    ConstArray(std::sync::Arc<ConstArray>),
    /// A view of an array, `array[i, start:stop:step, ...]`: one subscript per dimension of
    /// the array (missing trailing dimensions are whole slices). An integer subscript drops
    /// its dimension; a slice keeps it with Python's rules for missing and negative bounds
    /// (clamped to the array). The result shares the array's memory.
    View {
        /// The array viewed.
        array: Handle<Expr>,
        /// One subscript per dimension of `array`.
        subs: Vec<Subscript>,
    },
    /// `array.reshape(shape)`: the same elements with another shape, in C order (or F order),
    /// without copying. The array must be contiguous in that order at run time (a kernel
    /// traps otherwise) and the shape must have the same number of elements.
    Reshape {
        /// The array reshaped.
        array: Handle<Expr>,
        /// The new extents (`int64`); `None` is the one `-1` extent, computed from the others.
        shape: Vec<Option<Handle<Expr>>>,
        /// Fortran order (`order='F'`) instead of C order.
        fortran: bool,
    },
    /// `array.view(dtype)` on a contiguous 1-D array: the same bytes as another dtype.
    Reinterpret(Handle<Expr>),
    /// A reference to an array element, for atomics (`atomic_ref(a, i)`).
    ElementRef {
        /// The array.
        array: Handle<Expr>,
        /// One index per dimension.
        indices: Vec<Index>,
    },
    /// The address of field `1` of the struct a `StructRef` (operand 0) refers to: a `Ref`
    /// for number and `Atomic` fields, a `StructRef` for struct fields.
    FieldRef(Handle<Expr>, u32),
    /// The sub-array field `1` of the record a `StructRef` (operand 0) refers to, as a
    /// C-contiguous array view of the record's bytes (numba's nested arrays, §5.16).
    FieldArray(Handle<Expr>, u32),
    /// The value a reference refers to (a plain, non-atomic load).
    Deref(Handle<Expr>),
    /// An atomic operation on the element a reference refers to.
    Atomic {
        /// What it does.
        op: AtomicOp,
        /// Memory order.
        order: MemoryOrder,
        /// Thread scope.
        scope: Scope,
        /// The reference (type `Ref`).
        target: Handle<Expr>,
        /// Operands (none for load, one value, or `old, new` for cas), of the element type.
        args: Vec<Handle<Expr>>,
    },
}

impl Expr {
    /// The operands of an expression, in evaluation order.
    pub fn operands(&self) -> Vec<Handle<Expr>> {
        let e = self;
        let ix = |v: &[Index]| v.iter().map(|i| i.value).collect::<Vec<_>>();
        match e {
            Expr::Literal(_)
            | Expr::Local(_)
            | Expr::StaticArray { .. }
            | Expr::DynamicShared
            | Expr::ConstArray(_) => Vec::new(),
            Expr::Unary(_, a)
            | Expr::Cast(a)
            | Expr::ArrayProp(a, _)
            | Expr::Extract(a, _)
            | Expr::Reinterpret(a)
            | Expr::FieldRef(a, _)
            | Expr::FieldArray(a, _)
            | Expr::Deref(a) => vec![*a],
            Expr::Binary(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => vec![*a, *b],
            Expr::Select {
                cond,
                then,
                otherwise,
            } => vec![*cond, *then, *otherwise],
            Expr::Call(_, args) | Expr::Intrinsic(_, args) | Expr::Tuple(args) => args.clone(),
            Expr::Asm(a) => a.args.clone(),
            Expr::Launch(l) => [l.grid, l.block, l.shared]
                .into_iter()
                .chain(l.args.iter().copied())
                .collect(),
            Expr::Load { array, indices } | Expr::ElementRef { array, indices } => {
                let mut v = vec![*array];
                v.extend(ix(indices));
                v
            }
            Expr::View { array, subs } => {
                let mut v = vec![*array];
                for s in subs {
                    match s {
                        Subscript::Index(i) => v.push(i.value),
                        Subscript::Slice { start, stop, .. } => v.extend(start.iter().chain(stop)),
                    }
                }
                v
            }
            Expr::Reshape { array, shape, .. } => {
                let mut v = vec![*array];
                v.extend(shape.iter().flatten());
                v
            }
            Expr::Atomic { target, args, .. } => {
                let mut v = vec![*target];
                v.extend(args);
                v
            }
        }
    }
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// What it does.
    pub kind: StmtKind,
    /// Where it came from.
    pub span: Span,
}

/// What kind of loop a [`StmtKind::Loop`] is, as far as its unrolling is concerned: the
/// PTX lowering unrolls a small run-time-stride loop four times, and tells ptxas not to
/// unroll it again (docs/semantics.md §4.3; `RuntimeStrideUnrollPass` in
/// lower/ptx/pipeline.cpp).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LoopForm {
    /// A `while` loop, a `range` loop with a constant step, a loop over an array.
    #[default]
    Plain,
    /// A `range` loop whose step is known only at run time (a grid- or block-stride loop,
    /// `range(tid, n, grid_size)`), counted: its trip count is computed before it starts.
    RuntimeStride,
    /// A loop the program asks to unroll (cupyx's `jit.range(..., unroll=u)`, §15.4): `0`
    /// unrolls it fully (`unroll=True`), `1` not at all (`unroll=False`), `n` `n` times
    /// (LLVM's `llvm.loop.unroll.full` / `.disable` / `.count`).
    Unroll(u32),
}

/// The kinds of statement.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// Evaluate for effect.
    Eval(Handle<Expr>),
    /// `local = value`
    Assign(Handle<Local>, Handle<Expr>),
    /// `array[indices] = value`
    Store {
        /// The array.
        array: Handle<Expr>,
        /// One index per dimension.
        indices: Vec<Index>,
        /// The value, of the array's dtype.
        value: Handle<Expr>,
    },
    /// `*target = value`: a plain store through a reference (`array[i].x = v`).
    StoreRef {
        /// The reference (`Ref`).
        target: Handle<Expr>,
        /// The value, of the referenced type.
        value: Handle<Expr>,
    },
    /// `if cond: then else: otherwise`
    If {
        /// A `bool`.
        cond: Handle<Expr>,
        /// Taken when true.
        then: Block,
        /// Taken when false.
        otherwise: Block,
    },
    /// A loop: test `cond` (a `bool`, evaluated each time round), run `body`, then
    /// `continuing` (where `continue` goes, e.g. a `for` loop's increment).
    Loop {
        /// Evaluated before each iteration.
        cond: Handle<Expr>,
        /// The body.
        body: Block,
        /// Run after the body and after `continue`.
        continuing: Block,
        /// What kind of loop it is, for the PTX lowering's unrolling.
        form: LoopForm,
    },
    /// Leave the innermost loop.
    Break,
    /// Go to the innermost loop's `continuing`.
    Continue,
    /// Leave the function.
    Return(Option<Handle<Expr>>),
    /// `assert cond, "message"`: when `cond` (a `bool`) is false, fail as [`StmtKind::Raise`]
    /// does with `AssertionError: message`. Compiled out with `assertions=False`
    /// ([`ProgramOptions::skip_assertions`]); `cond` is then not evaluated.
    Assert {
        /// The condition.
        cond: Handle<Expr>,
        /// What the error says: `AssertionError` or `AssertionError: message`.
        message: String,
    },
    /// `raise SomeError("message")`: record the error (the first one of the launch or call
    /// wins) and stop the thread; the host reports it as an error value naming the line.
    Raise {
        /// What the error says: `ValueError: message`.
        message: String,
    },
    /// `print(...)`: write the pieces, in order, to standard output (`vprintf` on the
    /// device, C `printf` on the host).
    Print(Vec<PrintPiece>),
}

/// One piece of a `print`: literal text or one value with its printf conversion.
#[derive(Clone, Debug, PartialEq)]
pub enum PrintPiece {
    /// Text written as is.
    Text(String),
    /// A value, formatted by `conv`.
    Value {
        /// The value: an `int64` for [`PrintConv::Signed`], a `uint64` for
        /// [`PrintConv::Unsigned`], a `float64` for [`PrintConv::Float`], a `bool` for
        /// [`PrintConv::Bool`] (the checker promotes as C varargs do, to 64 bits).
        value: Handle<Expr>,
        /// How it is written.
        conv: PrintConv,
        /// The printf flags, width and precision between `%` and the conversion letter
        /// (only the characters `-+ #0123456789.`).
        spec: String,
        /// The conversion letter: `d`/`x`/`X`/`o` for integers (after `ll`), `f`/`F`/`e`/`E`/
        /// `g`/`G` for floats, `s` for bools.
        letter: char,
    },
}

/// The C type a printed value is passed as.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PrintConv {
    /// `long long` (`int64`).
    Signed,
    /// `unsigned long long` (`uint64`).
    Unsigned,
    /// `double` (`float64`).
    Float,
    /// A `bool`, written `True` or `False` (passed as a `const char *`).
    Bool,
}

impl PrintPiece {
    /// The printf directive of a value piece (`%lld`, `%.3f`, `%s`), or the text of a text
    /// piece with `%` doubled.
    pub fn printf(&self) -> String {
        match self {
            PrintPiece::Text(t) => t.replace('%', "%%"),
            PrintPiece::Value {
                conv, spec, letter, ..
            } => {
                let ll = match conv {
                    PrintConv::Signed | PrintConv::Unsigned => "ll",
                    PrintConv::Float | PrintConv::Bool => "",
                };
                format!("%{spec}{ll}{letter}")
            }
        }
    }
}

/// A sequence of statements.
pub type Block = Vec<Stmt>;

// ---- printing -------------------------------------------------------------------------

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (_, func)) in self.functions.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{func}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FunctionKind::Kernel => "kernel",
            FunctionKind::Device => "func",
        };
        if self.external {
            write!(f, "extern ")?;
        }
        write!(f, "{kind} {}(", self.symbol)?;
        for (i, l) in self.param_locals().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{}: {}", self.locals[l].name, self.locals[l].ty)?;
        }
        if self.external {
            return writeln!(f, ") -> {}", self.ret);
        }
        writeln!(f, ") -> {} {{", self.ret)?;
        for (h, l) in self.locals.iter().skip(self.params) {
            writeln!(f, "    local %{} {}: {}", h.index(), l.name, l.ty)?;
        }
        print_block(self, &self.body, 1, f)?;
        writeln!(f, "}}")
    }
}

fn print_block(
    func: &Function,
    block: &Block,
    depth: usize,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let ind = "    ".repeat(depth);
    for s in block {
        match &s.kind {
            StmtKind::Eval(e) => writeln!(f, "{ind}{}", ExprFmt(func, *e))?,
            StmtKind::Assign(l, e) => {
                writeln!(f, "{ind}{} = {}", func.locals[*l].name, ExprFmt(func, *e))?
            }
            StmtKind::Store {
                array,
                indices,
                value,
            } => writeln!(
                f,
                "{ind}{}[{}] = {}",
                ExprFmt(func, *array),
                IndexFmt(func, indices),
                ExprFmt(func, *value)
            )?,
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                writeln!(f, "{ind}if {}:", ExprFmt(func, *cond))?;
                print_block(func, then, depth + 1, f)?;
                if !otherwise.is_empty() {
                    writeln!(f, "{ind}else:")?;
                    print_block(func, otherwise, depth + 1, f)?;
                }
            }
            StmtKind::Loop {
                cond,
                body,
                continuing,
                form,
            } => {
                let form = match form {
                    LoopForm::Plain => String::new(),
                    LoopForm::RuntimeStride => " [runtime stride]".to_string(),
                    LoopForm::Unroll(0) => " [unroll full]".to_string(),
                    LoopForm::Unroll(1) => " [unroll disabled]".to_string(),
                    LoopForm::Unroll(n) => format!(" [unroll {n}]"),
                };
                writeln!(f, "{ind}loop while {}{form}:", ExprFmt(func, *cond))?;
                print_block(func, body, depth + 1, f)?;
                if !continuing.is_empty() {
                    writeln!(f, "{ind}continuing:")?;
                    print_block(func, continuing, depth + 1, f)?;
                }
            }
            StmtKind::StoreRef { target, value } => writeln!(
                f,
                "{ind}*{} = {}",
                ExprFmt(func, *target),
                ExprFmt(func, *value)
            )?,
            StmtKind::Break => writeln!(f, "{ind}break")?,
            StmtKind::Continue => writeln!(f, "{ind}continue")?,
            StmtKind::Assert { cond, message } => {
                writeln!(f, "{ind}assert {}, {message:?}", ExprFmt(func, *cond))?
            }
            StmtKind::Raise { message } => writeln!(f, "{ind}raise {message:?}")?,
            StmtKind::Print(pieces) => {
                write!(f, "{ind}print")?;
                for p in pieces {
                    match p {
                        PrintPiece::Text(t) => write!(f, " {t:?}")?,
                        PrintPiece::Value { value, .. } => {
                            write!(f, " {}:{:?}", ExprFmt(func, *value), p.printf())?
                        }
                    }
                }
                writeln!(f)?;
            }
            StmtKind::Return(None) => writeln!(f, "{ind}return")?,
            StmtKind::Return(Some(e)) => writeln!(f, "{ind}return {}", ExprFmt(func, *e))?,
        }
    }
    Ok(())
}

struct IndexFmt<'a>(&'a Function, &'a [Index]);

impl fmt::Display for IndexFmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, ix) in self.1.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            if ix.wrap {
                write!(f, "wrap ")?;
            }
            write!(f, "{}", ExprFmt(self.0, ix.value))?;
        }
        Ok(())
    }
}

struct ExprFmt<'a>(&'a Function, Handle<Expr>);

impl fmt::Display for ExprFmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::stack::deep(|| self.fmt_expr(f))
    }
}

impl ExprFmt<'_> {
    fn fmt_expr(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let func = self.0;
        let e = |h: Handle<Expr>| ExprFmt(func, h);
        let ty = func.ty(self.1);
        match &func.exprs[self.1] {
            Expr::Asm(a) => {
                write!(f, "asm[{}]({:?}, {:?}", ty, a.template, a.constraints)?;
                if a.volatile {
                    write!(f, ", volatile")?;
                }
                for x in &a.args {
                    write!(f, ", {}", e(*x))?;
                }
                write!(f, ")")
            }
            Expr::Launch(l) => {
                write!(
                    f,
                    "launch #{}[{}, {}, {}](",
                    l.kernel.index(),
                    e(l.grid),
                    e(l.block),
                    e(l.shared)
                )?;
                for (i, x) in l.args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", e(*x))?;
                }
                write!(f, ")")
            }
            Expr::Literal(Literal::Bool(b)) => write!(f, "{}", if *b { "True" } else { "False" }),
            Expr::Literal(Literal::Int(i)) => write!(f, "{ty}({i})"),
            Expr::Literal(Literal::Float(x)) => write!(f, "{ty}({x:?})"),
            Expr::Literal(Literal::Complex(re, im)) => write!(f, "{ty}({re:?}, {im:?})"),
            Expr::Local(l) => write!(f, "{}", func.locals[*l].name),
            Expr::Unary(op, a) => {
                let s = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Invert => "~",
                    UnaryOp::Not => "not ",
                    UnaryOp::Abs => return write!(f, "abs({})", e(*a)),
                };
                write!(f, "({s}{})", e(*a))
            }
            Expr::Binary(op @ (BinaryOp::Min | BinaryOp::Max), a, b) => {
                write!(f, "{}({}, {})", op.symbol(), e(*a), e(*b))
            }
            Expr::Binary(op, a, b) => write!(f, "({} {} {})", e(*a), op.symbol(), e(*b)),
            Expr::And(a, b) => write!(f, "({} and {})", e(*a), e(*b)),
            Expr::Or(a, b) => write!(f, "({} or {})", e(*a), e(*b)),
            Expr::Select {
                cond,
                then,
                otherwise,
            } => write!(f, "({} if {} else {})", e(*then), e(*cond), e(*otherwise)),
            Expr::Cast(a) => write!(f, "{ty}({})", e(*a)),
            Expr::Call(callee, args) => {
                write!(f, "call #{}(", callee.index())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", e(*a))?;
                }
                write!(f, ")")
            }
            Expr::Intrinsic(op, args) => {
                write!(f, "{}", op.name())?;
                if !args.is_empty()
                    || matches!(
                        op,
                        Intrinsic::SyncThreads
                            | Intrinsic::ClusterArrive(_)
                            | Intrinsic::ClusterWait
                            | Intrinsic::ClusterSync
                    )
                {
                    write!(f, "(")?;
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            write!(f, ", ")?;
                        }
                        write!(f, "{}", e(*a))?;
                    }
                    write!(f, ")")?;
                }
                Ok(())
            }
            Expr::Load { array, indices } => {
                write!(f, "{}[{}]", e(*array), IndexFmt(func, indices))
            }
            Expr::ArrayProp(a, p) => match p {
                ArrayProp::Shape(d) => write!(f, "{}.shape[{d}]", e(*a)),
                ArrayProp::Stride(d) => write!(f, "{}.strides[{d}]", e(*a)),
                ArrayProp::Size => write!(f, "{}.size", e(*a)),
            },
            Expr::Tuple(items) => {
                write!(f, "{ty}(")?;
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", e(*a))?;
                }
                write!(f, ")")
            }
            Expr::Extract(a, i) => write!(f, "{}[{i}]", e(*a)),
            Expr::StaticArray { shape, align } => write!(f, "alloc {ty} {shape:?} align {align}"),
            Expr::DynamicShared => write!(f, "dynamic_shared_array()"),
            Expr::ConstArray(a) => write!(
                f,
                "const_array {} {:?} ({} bytes)",
                a.name,
                a.shape,
                a.bytes.len()
            ),
            Expr::View { array, subs } => {
                write!(f, "{}[", e(*array))?;
                for (i, sub) in subs.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    match sub {
                        Subscript::Index(ix) => write!(f, "{}", IndexFmt(func, &[*ix]))?,
                        Subscript::Slice { start, stop, step } => {
                            if let Some(s) = start {
                                write!(f, "{}", e(*s))?;
                            }
                            write!(f, ":")?;
                            if let Some(s) = stop {
                                write!(f, "{}", e(*s))?;
                            }
                            // As Python writes it: a step of 1 is left out.
                            if *step != 1 {
                                write!(f, ":{step}")?;
                            }
                        }
                    }
                }
                write!(f, "]")
            }
            Expr::Reshape {
                array,
                shape,
                fortran,
            } => {
                write!(f, "{}.reshape((", e(*array))?;
                for (i, n) in shape.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    match n {
                        Some(n) => write!(f, "{}", e(*n))?,
                        None => write!(f, "-1")?,
                    }
                }
                write!(f, "){}) -> {ty}", if *fortran { ", order='F'" } else { "" })
            }
            Expr::Reinterpret(a) => write!(f, "{}.view({ty})", e(*a)),
            Expr::FieldRef(a, i) => write!(f, "&{}->{i}", e(*a)),
            Expr::FieldArray(a, i) => write!(f, "{}->{i}[...]", e(*a)),
            Expr::Deref(a) => write!(f, "*{}", e(*a)),
            Expr::ElementRef { array, indices } => {
                write!(f, "atomic_ref({}, {})", e(*array), IndexFmt(func, indices))
            }
            Expr::Atomic {
                op,
                order,
                scope,
                target,
                args,
            } => {
                write!(f, "{}.{op:?}[{order:?}, {scope:?}](", e(*target))?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", e(*a))?;
                }
                write!(f, ")")
            }
        }
    }
}

/// Whether a literal's value is representable in scalar type `s` (integers against the
/// type's range; floats and bools always are).
pub fn literal_fits(lit: Literal, s: Scalar) -> bool {
    match lit {
        Literal::Int(v) => {
            if s.is_float() || s.is_complex() || s == Scalar::Bool {
                return true;
            }
            let bits = s.bits();
            if s.is_signed() {
                let min = -(1i128 << (bits - 1));
                let max = (1i128 << (bits - 1)) - 1;
                (min..=max).contains(&v)
            } else {
                (0..(1i128 << bits)).contains(&v)
            }
        }
        _ => true,
    }
}
