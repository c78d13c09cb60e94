//! Diagnostics: one error type for every stage, rendered like rustc.
//!
//! A [`Diagnostic`] carries a primary [`Label`] (the span that is wrong), any number of
//! secondary labels (related places, e.g. the first assignment of a local), and notes.
//! Stages collect diagnostics instead of stopping at the first one; the caller receives them
//! together as [`Diagnostics`], which knows the source text and renders them with the source
//! line and carets. Nothing here depends on a later stage.
//!
//! Rendering is `annotate-snippets`'s (the renderer of rustc and ruff). It replaced a
//! hand-written one that gave the same information (code, message, file:line:col, source
//! lines, caret spans, secondary labels, notes) but repeated a source line for each label
//! on it, cut multi-line spans at the end of their first line and did not elide the lines
//! between distant labels; the `.stderr` goldens changed only in those ways and in rustc's
//! ` |` line before the notes.

use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// A byte range in one source file.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    /// Offset of the first byte.
    pub start: u32,
    /// Offset one past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from `start` to `end` (byte offsets).
    pub fn new(start: u32, end: u32) -> Span {
        Span { start, end }
    }

    /// The smallest span that covers both.
    pub fn cover(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

impl From<ruff_text_size::TextRange> for Span {
    fn from(r: ruff_text_size::TextRange) -> Span {
        Span {
            start: r.start().into(),
            end: r.end().into(),
        }
    }
}

/// How serious a diagnostic is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Severity {
    /// The program is ill-formed; nothing is produced.
    Error,
    /// Something is suspicious but code is still produced.
    Warning,
}

/// A span with a message explaining its part in a diagnostic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What about it (may be empty).
    pub message: String,
}

/// Declares [`Code`]: one variant per diagnostic code, its doc line the code's meaning.
macro_rules! codes {
    ($($(#[doc = $doc:literal])+ $name:ident,)*) => {
        /// A stable diagnostic code. Each variant's doc line is its meaning, word for word the
        /// "meaning" column of the table at the end of `docs/semantics.md` (a test checks it).
        /// Serialized as its spelling (`"E0201"`).
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Code {
            $($(#[doc = $doc])+ $name,)*
        }

        impl Code {
            /// Every code, in order.
            pub const ALL: &'static [Code] = &[$(Code::$name,)*];

            /// The code as written in diagnostics: `E0201`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$name => stringify!($name),)*
                }
            }

            /// What the code means: its doc line.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Code::$name => concat!($($doc),+).trim(),)*
                }
            }
        }
    };
}

codes! {
    /// syntax error (from ruff's parser)
    E0001,
    /// nesting beyond the compiler's limits: an expression or statement nested more than 10,000 levels (`-(-(…))`, a chain of 10,000 `+`), a statement indented more than 100 levels (about CPython's own limit), or a tuple value of more than 8,192 elements counted through nesting (§2.9)
    E0002,
    /// name is not defined
    E0101,
    /// not a member of `cuda.device`, a member pydevice does not support yet, or a `math` name that is not available
    E0102,
    /// bad decorator: unknown or positional argument, `**kwargs`, non-constant or out-of-range option value, a kernel-only option on `@func`, `min_blocks` without `max_threads`, both `@kernel` and `@func`, the same decorator twice, a `@struct` option other than a power-of-two `align`
    E0103,
    /// not a device function: the entry, or a called function, lacks `@kernel`/`@func`
    E0104,
    /// recursive call (direct or mutual) of a function without a return annotation, or with other argument types than the instance being checked (§1.4)
    E0105,
    /// name from another module (`numpy`, …), or a global that is not a compile-time constant
    E0106,
    /// wrong arguments: entry arity vs the signature, call arity (including `cuda.device` functions, atomic methods, vector constructors, struct constructors, methods without `self`, and the spec's extra `flag` of `match_*_sync`), unknown/duplicate/missing keyword, keywords to builtins, `range` with 0 or more than 3 arguments, a `@func` predicate that needs arguments
    E0107,
    /// a kernel returns a value
    E0108,
    /// a kernel is called from device code
    E0109,
    /// no function with the entry's name in the module
    E0110,
    /// local used before it is assigned
    E0111,
    /// a write to a module-level constant array (§1.3.1)
    E0112,
    /// a kernel, interoperable `@func` or `extern` function whose name is not ASCII: it is the PTX symbol and the C++ name (§1.2)
    E0113,
    /// a constant array that does not fit in the module's 64 KiB constant bank (§1.3.1)
    E0114,
    /// an argument type built through the Rust API that no program can take (`Type::validate`: a vector of other than 1 to 4 elements, an array of 0 dimensions, an alignment that is not a power of two up to 4096, nesting deeper than 64, a layout over 2 GiB, more than 8,192 tuple elements and struct fields), or `None` as a kernel parameter
    E0115,
    /// a local (or the return value) gets values of different types
    E0201,
    /// unsupported expression or operand types: bitwise on floats, `@`, `in`/`is`, strings, lists, dicts, sets, lambdas other than predicates, `None` as a value, calling a non-function, mismatched conditional branches, a type (`v.dtype` included) used as a value
    E0202,
    /// bad indexing: wrong number of indices (for an element; more subscripts than dimensions for a view), a zero slice step, a slice or view as an assignment target, non-integer index or slice bound, `view` of a non-contiguous or multi-dimensional array, non-constant or out-of-range tuple index, a constant vector index out of range, a constant `WarpMask` lane outside `0..31`, indexing a non-array, bit assignment on a `WarpMask` that is not a local, unpacking mismatch
    E0203,
    /// value out of range: a literal or constant does not fit its type (a returned Python int beyond the default int included, `return_literal_out_of_range`), constant overflow, an integer literal of 2\*\*64 or more (or of 2\*\*63 or more outside `uint64`, `int64_literal_out_of_range`), a float literal beyond `float32` where it becomes `float32`, a warp mask constant outside 32 bits
    E0204,
    /// no truth value (array, tuple or vector in a condition or `and`/`or`)
    E0205,
    /// a function that returns a value, or is annotated `-> T` (T not `None`), does not return on every path; a loop falls through unless it is `while True:` with no `break` of its own
    E0206,
    /// type mismatch: annotation vs argument, a float where an integer is required, non-integer `range` arguments, storing a non-number into an array (or anything but a vector of the array's type into an array of vectors), converting a non-number, passing `None`, a non-integer warp mask, a non-number to a `math` function or a vector constructor, a struct field given a value of another type, an Atomic field used as a number, a `cuda.fp16` function given a non-`float16` value
    E0207,
    /// division by zero in a constant expression, or a constant zero `range` step
    E0208,
    /// integer raised to a constant negative integer power
    E0209,
    /// `tid`/`grid_size` argument is not the constant 1, 2 or 3
    E0210,
    /// assignment to something immutable: an attribute (a struct value's field included; an attribute of a builtin or module such as `device.thread_idx.x` or `device.warp_size`), an Atomic field, a non-number field of an array element, or a tuple or vector element other than a local vector's
    E0211,
    /// unknown attribute or method (`.dtype` of an array of structs, `.ndims`, `.w` of a 3-vector, an atomic reference's unknown method, a struct method that does not exist, an array method other than `view`/`reshape`/`astype`, a record field that does not exist, …)
    E0212,
    /// bad `@struct` class: a field without a field type hint (a name not imported, an array type, another hint), a statement other than fields and methods, a `@kernel` method, an unsupported `Atomic(...)` field (§7.3)
    E0213,
    /// a sub-array field of a record value (a copy): only records in memory have sub-array views (§5.16.1)
    E0214,
    /// a whole sub-array field assigned from an array of another ndim, or a sub-array of more than 256 elements assigned whole (§5.16.1)
    E0215,
    /// a record indexed by something other than a field name or a constant field number (§5.16.1)
    E0216,
    /// a `ConstExpr` parameter given something other than a constant expression: a `@func` called with a run-time value, or a constant that does not fit `ConstExpr[T]` (§5.6)
    E0217,
    /// a kernel's (or entry's) `ConstExpr` parameter without a compile-time value, a compile-time value for a parameter that is not `ConstExpr`, or a `ConstExpr[T]` hint whose `T` is not a number type (§5.6)
    E0218,
    /// an exposition-only name of the spec (`Dim3Like`) used in a program, as an annotation or otherwise (§1.1)
    E0219,
    /// a warp shuffle that breaks a User Requirement decidable at compile time: a constant `src_lane`/`delta`/`flag` outside `0..31`, a constant mask with a lane whose source lane is not in the mask, or a constant zero mask to `syncwarp`, a vote, a shuffle or a match (§10.3)
    E0240,
    /// a block barrier (`syncthreads`, `syncthreads_count`/`_and`/`_or`, or a call of a function that reaches one) under an `if` or loop whose condition depends on the thread (§9.4)
    E0241,
    /// a `@func` returns a reference into its own `local_array`: the array, a view, reshape or reinterpretation of it, an `atomic_ref` or field reference into it (§9.2)
    E0242,
    /// a `@func` (which shall be heterogeneous) uses a device-only entity (thread positions, `lane_id`, `warp_size`, barriers, fences, warp functions, `shared_array`, `dynamic_shared_array`) outside a `target(...)` branch the host does not take (§1.6, §16.1)
    E0243,
    /// an operator Python does not define on complex numbers: ordering comparisons, `//`, `%`, `min`/`max`, bitwise operators, `~` (§2.7)
    E0250,
    /// a complex number where a real one is needed: stored into a real array or local, converted with `float32(z)`/`int(z)`, as a part of `complex64(re, im)` or `cmath.rect`, given to a `math` function (§2.7)
    E0251,
    /// (no longer issued: every complex power compiles, §2.7)
    E0252,
    /// complex or fp8 values where the hardware has no instruction: atomic operations on `complex128`/fp8 elements and arithmetic ones on `complex64`, warp shuffles of `complex128` and matches of complex values (§2.7, §2.8)
    E0253,
    /// an `Atomic` object or an element of an array of `Atomic` is assigned or updated with an operator (`c = 3`, `c += 1`, `h[i] = v`): it changes only through its methods (`.store(v)`, `.add(v)`, …) (§9.7)
    E0260,
    /// `device.Atomic(dtype)` in device code anywhere but the whole value of an assignment to one name (`c = device.Atomic(int32)`) or the dtype of `shared_array`/`local_array` (§9.7)
    E0261,
    /// an unsupported `Atomic` object or array element: a dtype that is not a number type, or `align=` (which only a `@struct` field takes) (§9.7)
    E0262,
    /// a `static_range` argument that is not an integer constant, or a zero step (§4.6.2)
    E0280,
    /// a `static_range` loop of more than 1024 iterations (§4.6.2)
    E0281,
    /// `break`, `continue` or `else` in a loop over `static_range` (§4.6.2)
    E0282,
    /// `static_range(...)` used anywhere but as a `for` loop's iterable (§4.6.2)
    E0283,
    /// a constant negative index (`a[-1]`) in a kernel compiled with `wraparound=False`, or in a `@func` it calls (§5.1)
    E0290,
    /// a comparison of a `uint32`/`uint64` value with a constant that makes it always `False` (`u < 0`), or `max`/`min` of one with a constant `<= 0`: the sign test of unsigned arithmetic ported from CUDA C++ (§3.1.1)
    E0291,
    /// unsupported statement or parameter form (`try`, `with`, a nested `def` that is not a predicate, `global`, defaults, `*args`, a `for` target that is not a name, …)
    E0301,
    /// an `assert` or `raise` device code cannot report: an `assert` message that is not a string literal, a bare `raise`, `raise ... from`, an exception that is not one of Python's built-in ones or whose argument is not one string literal
    E0302,
    /// `while … else` / `for … else` over a tuple
    E0303,
    /// loop over something other than `range` or a tuple/vector (numba dialect: or 1-D arrays, `enumerate`, `zip`, §15.1), a tuple whose elements have different types, `range` outside a `for`, `break`/`continue` outside a loop
    E0304,
    /// chained comparison with a call in the middle
    E0305,
    /// `literal_unroll` over a run-time tuple with elements of different types (§4.6.1); a NumPy reduction of a non-array or an unsupported dtype (§5.18)
    E0306,
    /// `break`/`continue` in a loop over `literal_unroll`, or `literal_unroll(...)` used outside a `for` (§4.6.1)
    E0307,
    /// `print` used as a value, given a keyword other than `sep`/`end` or a `sep`/`end` that is not a string literal, or asked to print what device printf cannot write: a value of a type it does not print (arrays, complex, fp8, references), an f-string conversion (`!r`) or a format spec printf has no equivalent of (fill characters, centring, `,`/`_` grouping, `b`/`c`/`n`/`%`, a spec on a string or bool)
    E0308,
    /// not a constant expression where one is required: `shape` or `align` of `local_array`/`shared_array`, a slice step (§5.6); a negative or over-64-bit array dimension
    E0400,
    /// bad argument value: `memory` not a memory order, `scope` not a thread scope (or either not a string literal), `order` not `'C'`/`'F'`, `align` not a power of two up to 4096, `dtype` not a dtype (§5.7, §9.1)
    E0401,
    /// atomic operation not available for the element's dtype (§9.2; numba's `inc`/`dec` need uint32 or uint64)
    E0402,
    /// memory order not allowed for the operation: a `load` or `wait` that is `release`/`acq_rel`, a `store` that is `acquire`/`consume`/`acq_rel` (§9.1), a `cluster_arrive` that is neither `release` nor `relaxed` (§18.1)
    E0404,
    /// a predicate that is not a function callable with no arguments: a plain value such as `x > 0` or `True`, a lambda with parameters (§9.5)
    E0405,
    /// wrong operand type for a numeric intrinsic: `popc`/`brev`/`clz`/`ffs` need an integer, `cbrt`/`fma` need floats (§11.1)
    E0406,
    /// a `shared_array` larger than the 48 KiB of static shared memory (§5.7)
    E0407,
    /// `atomic_ref` of something that is not an array of numbers or of 4-, 8- or 16-byte structs aligned to their size (§9.2)
    E0408,
    /// a shuffle or match value that is not a number of at most 8 bytes (§10.3, §10.4)
    E0409,
    /// misused target specialization: `target(…)` outside the whole condition of an `if`/`elif`, a description that is not a constant combination of `is_host`, `is_device`, `any_target`, `no_target`, `is_exactly(smXX)`, `provides(smXX)`, or a selector that is not `smXX` (§1.6)
    E0410,
    /// a `local_array` larger than the 512 KiB of local memory a thread may have (§5.7)
    E0411,
    /// a kernel whose parameters take more than CUDA's 32,764 bytes of parameter space (§8)
    E0412,
    /// bad `reshape`: a second `-1` extent, another negative constant extent, a non-integer extent, `order` other than `'C'`/`'F'`, a `copy=` argument (§5.13)
    E0420,
    /// `astype` that would copy (another dtype, or `copy` not `False`), or its `order`/`casting`/`subok` (§5.14)
    E0421,
    /// bad `@struct` field default: not a constant, a value the field's type does not accept (a `float` for an integer field, an out-of-range `int`), a default on a non-number field, a field without a default after one with a default (§7.3)
    E0422,
    /// bad `align(t, n)`: `n` not a constant power of two up to 4096, wrong arguments, or `align(...)` used as a value (§5.15)
    E0423,
    /// a `@kernel` asked to run on the host: only `@func` functions run there (§16.1)
    E0500,
    /// a device-only intrinsic reached on the host: thread positions, `lane_id`, `warp_size`, barriers, fences, votes, shuffles, matches, `activemask`, `lanemask_lt`, `syncwarp`, `dynamic_shared_array` sizes (§16.1)
    E0501,
    /// an atomic operation the host does not provide: `wait`, and atomics on `complex64` elements (§16.1)
    E0502,
    /// an array the host cannot hold yet: `shared_array`, `dynamic_shared_array`, a `local_array` of structs or of more than 512 KiB, a slice, `view(dtype)`, an array of `@struct` elements, an array result, or another value the host cannot hold (§16.1)
    E0503,
    /// a value the host does not hold yet: the 8-bit float formats (§16.1)
    E0504,
    /// a call of a CUDA C++ `extern` device function on the host (§16.1)
    E0505,
    /// `extern=` on a `@kernel`: only device functions can be called across languages (§1.2.1)
    E0520,
    /// an `extern` function has a body other than `...` (§1.2.1)
    E0521,
    /// an `extern` function's parameter lacks a type annotation, or its annotation is not a type that can be passed to CUDA C++ (§1.2.1)
    E0522,
    /// an `extern` function lacks a return annotation, or returns an array, a `__half2`-holding value or another type C++ cannot return (§1.2.1)
    E0523,
    /// `extern=` is neither `True`, `False` nor a string naming a C identifier (§1.2.1)
    E0524,
    /// an `extern` function with defaults, `*args`, `**kwargs` or keyword-only parameters, or an `extern` `@struct` method (§1.2.1)
    E0525,
    /// an argument of a call to an `extern` function does not have the declared type (§1.2.1)
    E0526,
    /// an `extern` function specialized as an entry: it has no body to compile (§1.2.1)
    E0527,
    /// a numba cache-hinted store (`cuda.stcg`, `stcs`, `stwb`, `stwt`) used as a value (§15.1)
    E0600,
    /// no longer emitted: `round(x, ndigits)` is supported (§15.3)
    E0601,
    /// `cuda.const.array_like` of something other than a module-level constant array: a host array's values are not available at compile time (§1.3.1, §15.1)
    E0602,
    /// `pow(x, y, mod)`: the three-argument (modular) `pow` (§15.3)
    E0603,
    /// a malformed parameter list or kernel name of an `ElementwiseKernel` or `ReductionKernel`: not `[raw] TYPE NAME`, an unknown type, a reserved or repeated name (§20)
    E0700,
    /// C++ in a kernel's Python body (`;`, `?:`, a declaration, `&&`, braces), or an empty body: the diagnostic shows the Python spelling (§20)
    E0701,
    /// a type placeholder that no argument of the call decides (§20)
    E0702,
    /// a type placeholder that two arguments of the call decide differently (§20)
    E0703,
    /// `break` or `continue` outside a loop of a kernel's Python body (§20.1)
    E0704,
    /// (no longer issued: complex numbers run on the host, §16.1; it refused a kernel builder's host call with complex numbers, §20.8)
    E0710,
    /// a malformed `guvectorize` layout (`(m,n),(n)->(m)`): its syntax, a dimension name that is not an identifier, an output dimension no input has (§20.9)
    E0711,
    /// a malformed `guvectorize` signature: not `void(TYPE, ...)`, a return type, an unknown type, a bad array type (§20.9)
    E0712,
    /// a `guvectorize` signature that does not fit its layout: the argument count, an array's rank against its core dimensions, a scalar output or a scalar with core dimensions (§20.9)
    E0713,
    /// `cg.tiled_partition(g, n)` with `n` not a power of two from 1 to 32 (a non-constant `n` is E0400), or of a group that is not a thread block or a tile (§17.1)
    E0720,
    /// a cooperative-groups operation on a group kind that does not have it (a shuffle, vote or `reduce` on a thread block or the grid, `shfl_xor` on a coalesced group, `meta_group_rank` of the grid), or a group argument that is not a group (§17.2)
    E0721,
    /// `cg.reduce` with an operation other than `'add'`, `'min'`, `'max'`, or of a value that is not an integer, `float32` or `float64` (§17.3)
    E0722,
    /// `cg.memcpy_async` of something other than a contiguous 1-D global array into a 1-D shared array of the same dtype, of other than 4, 8 or 16 bytes, at a constant index that is not aligned to the copy; `memcpy_async_wait(n)` with `n` outside 0 to 7 (§17.6)
    E0723,
    /// a thread block cluster entity (`cluster_idx`, `cluster_sync`, `map_shared_rank`, …) or the `@kernel(cluster=...)` option while compiling for an architecture older than sm_90 (§18.1)
    E0740,
    /// `map_shared_rank` of something that is not an array in the block's shared memory (§18.1)
    E0741,
    /// bad `asm` call: a template that is not a string literal, names an operand that does not exist (`$N`), has a `$` that starts no operand, or leaves an output unwritten; `constraints` not a string literal; `volatile`/`memory` not constant booleans (§18.2)
    E0742,
    /// an inline PTX operand or result of a type PTX operands cannot have: `bool`, 8-bit integers, complex and fp8 numbers, arrays, tuples (§18.2)
    E0743,
    /// an inline PTX constraint that does not fit: a count other than the operands', an output without `=`, an input with it, an unknown letter, a register class other than the operand type's, `n` on a value that is not an integer constant (§18.2)
    E0744,
    /// `launch` in device code of something that is not a `@kernel` of the module (§18.3)
    E0745,
    /// a kernel launched from device code given an array outside global memory (shared, local or cluster shared) (§18.3)
    E0746,
    /// a `hopper` operation while compiling for an architecture that lacks it: sm_90 or newer for mbarriers, fences, `elect_one` and bulk copies; sm_90 exactly (whose PTX then targets sm_90a) for `wgmma` and `setmaxnreg` (§18.4)
    E0747,
    /// a `hopper` mbarrier or bulk-copy operand of the wrong kind: an mbarrier that is not an element of a shared `uint64` array, a copy end that is not an element of a global (or shared) array, arrays of two dtypes, a constant byte count that is not a positive multiple of 16, an arrival or transaction count out of range, a tensor map that is not a 1-D global array, other than 1 to 5 TMA coordinates, a multicast mask that is not an integer (§18.4)
    E0748,
    /// a `hopper` constant out of range: `setmaxnreg` of other than 24 to 256 registers in steps of 8, a wait group count outside 0 to 7, a flag that is not a constant `True`/`False` (§18.4)
    E0749,
    /// a tensor-core fragment that CUDA does not have: its use, shape, element type and layout do not go together (§19.1)
    E0760,
    /// a tensor-core element type that the target architecture lacks: bfloat16, tf32 and float64 need sm_80 (§19)
    E0761,
    /// the operands of a tensor-core multiply-accumulate do not go together: shapes, element types or uses (§19)
    E0762,
    /// a `wmma` operation that writes its first argument (`fill_fragment`, `load_matrix_sync`, `mma_sync`) used as a value, or given something other than a local name as that argument (§19.1)
    E0763,
    /// the memory of a tensor-core load or store: not an array, an array of the wrong element type, or (`ldmatrix`) not in shared memory (§19)
    E0764,
    /// a tensor-core argument of the wrong kind: not a fragment, a fragment of the wrong use, registers of the wrong types, or a fragment element index that is not an integer in range (§19)
    E0765,
    /// a `hopper.wgmma` that PTX does not have: A and B types that do not go together, an accumulator dtype the inputs lack, an N outside the shapes of the types, a transposed tile of other than f16/bf16, an accumulator that is not a 1-D local array (§18.4)
    E0766,
    /// a `hopper` matrix descriptor field out of range: not a shared array, a constant leading or stride byte offset that is not a multiple of 16 below 2**18, a swizzle other than 0, 32, 64 or 128 bytes, a descriptor that is not a 64-bit integer (§18.4)
    E0767,
    /// `random.rand`/`random.randn` of a dtype other than `float32` and `float64` (§6.4)
    E0780,
    /// `random.rand`/`random.randn` in an `interop=True` function, directly or through a callee: its C++ signature has no place for the generator state (§6.4)
    E0781,
    /// internal error: the checker built IR that breaks a rule of `ir::validate` (run in debug builds and tests between checking and lowering; a compiler bug; please report it)
    E0998,
    /// internal error: a specialization failed without a diagnostic (a compiler bug; please report it)
    E0999,
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem found in a program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// A stable code such as [`Code::E0201`]; the list lives in `docs/semantics.md`.
    pub code: Code,
    /// One line saying what is wrong.
    pub message: String,
    /// The span that is wrong.
    pub primary: Label,
    /// Related places.
    pub secondary: Vec<Label>,
    /// Further explanation or a suggestion.
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error with a code, message and primary span.
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: Label {
                span,
                message: String::new(),
            },
            secondary: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Sets the message shown under the primary span.
    pub fn with_label(mut self, message: impl Into<String>) -> Diagnostic {
        self.primary.message = message.into();
        self
    }

    /// Adds a related span.
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Labels the primary span "did you mean `x`?" when one of `candidates` is close to the
    /// misspelled `name` (see [`closest`]); otherwise leaves the diagnostic as it is.
    pub(crate) fn suggesting<'a>(
        self,
        name: &str,
        candidates: impl IntoIterator<Item = &'a str>,
    ) -> Diagnostic {
        match closest(name, candidates) {
            Some(near) => self.with_label(format!("did you mean `{near}`?")),
            None => self,
        }
    }
}

/// The candidate closest to a misspelled `name` ("did you mean `tid`?"): the one with the
/// smallest Damerau-Levenshtein distance, if it is at most a third of the name's length (at
/// least 1), ties broken by name so that the suggestion is stable. Names starting with `_`
/// and `name` itself are never suggested.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let most = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name && !c.starts_with('_'))
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(d, _)| *d <= most)
        .min()
        .map(|(_, c)| c)
}

/// A source file: a name for messages and its text. Its `Debug` shows the name and size,
/// not the text.
#[derive(Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The name shown in diagnostics, usually the path.
    pub name: String,
    /// The whole text.
    pub text: Arc<str>,
    line_starts: Arc<[u32]>,
}

impl SourceFile {
    /// Wraps a source text.
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> SourceFile {
        let text: Arc<str> = text.into();
        let mut starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i as u32 + 1);
            }
        }
        SourceFile {
            name: name.into(),
            text,
            line_starts: starts.into(),
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = offset.min(self.text.len() as u32);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let col = self.text[start..offset as usize].chars().count();
        (line + 1, col + 1)
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_starts[line - 1] as usize;
        let end = self
            .line_starts
            .get(line)
            .map(|&e| e as usize)
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// Renders one diagnostic in rustc's style, through `annotate-snippets` (the renderer
    /// rustc's own and ruff use): `error[CODE]: message`, `--> file:line:col`, the source
    /// lines with the primary span marked `^` and secondary ones `-`, each with its label, a
    /// multi-line span drawn across its lines, and the notes as `= note:` lines.
    pub fn render(&self, d: &Diagnostic) -> String {
        let len = self.text.len();
        // Spans come from the parser, on character boundaries; clamp them to the text so that
        // a span past the end (a synthesized one) cannot make the renderer fail. A span that
        // ends with a line break (the parser's "found newline") is shown on the line where it
        // starts, not drawn as a span over two lines.
        let text = self.text.as_bytes();
        let clamp = |sp: Span| {
            let start = (sp.start as usize).min(len);
            let mut end = (sp.end as usize).clamp(start, len);
            while end > start && matches!(text[end - 1], b'\n' | b'\r') {
                end -= 1;
            }
            start..end
        };
        // Only the lines the spans cover go to the renderer, which scans all the source it
        // is given: with the whole file, N diagnostics took time quadratic in N.
        let spans = std::iter::once(d.primary.span).chain(d.secondary.iter().map(|l| l.span));
        let (lo, hi) = spans
            .map(clamp)
            .fold((len, 0), |(lo, hi), r| (lo.min(r.start), hi.max(r.end)));
        let lo = lo.min(hi);
        let (first_line, _) = self.line_col(lo as u32);
        let lo = self.line_starts[first_line - 1] as usize;
        let (last_line, _) = self.line_col(hi as u32);
        let hi = self
            .line_starts
            .get(last_line)
            .map_or(len, |&e| e as usize)
            .max(lo);
        let range = |sp: Span| {
            let r = clamp(sp);
            r.start - lo..r.end - lo
        };
        fn label(l: &Label) -> Option<&str> {
            (!l.message.is_empty()).then_some(l.message.as_str())
        }
        let mut snippet = Snippet::source(&self.text[lo..hi])
            .line_start(first_line)
            .path(self.name.as_str())
            .fold(true)
            .annotation(
                AnnotationKind::Primary
                    .span(range(d.primary.span))
                    .label(label(&d.primary)),
            );
        for l in &d.secondary {
            snippet =
                snippet.annotation(AnnotationKind::Context.span(range(l.span)).label(label(l)));
        }
        let level = match d.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
        };
        let mut group = level
            .primary_title(d.message.as_str())
            .id(d.code.as_str())
            .element(snippet);
        for note in &d.notes {
            group = group.element(Level::NOTE.message(note.as_str()));
        }
        let mut out = Renderer::plain().render(&[group]);
        out.push('\n');
        out
    }
}

impl fmt::Debug for SourceFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceFile")
            .field("name", &self.name)
            .field("bytes", &self.text.len())
            .finish_non_exhaustive()
    }
}

/// How many diagnostics [`Diagnostics::render`] shows; a note counts the rest.
pub const MAX_RENDERED: usize = 100;

/// Diagnostics for one source file: the error value of parsing and checking.
///
/// `Display` (and so `std::error::Error`) renders them as rustc does, with the source lines;
/// so does `Debug`, so that `?` in a `main` returning `Result<(), Box<dyn Error>>` prints
/// the rendered message and not a dump of the source and its offsets. `{:#?}` gives the
/// structure (the file's name and each diagnostic), still without the source text.
///
/// ```
/// use pydevice::Module;
/// let src = "from cuda import device\n@device.kernel\ndef k(a):\n    a[0] = undefined_name\n";
/// let err = Module::parse("k.py", src)
///     .and_then(|m| m.specialize("k", &[pydevice::types::signature::parse_type("int32[:]").unwrap()]).map(|_| ()))
///     .unwrap_err();
/// let debug = format!("{err:?}");
/// assert_eq!(debug, err.to_string());
/// assert!(debug.starts_with("error[E"), "{debug}");
/// assert!(debug.contains("a[0] = undefined_name"));
/// assert!(!format!("{err:#?}").contains("from cuda import device"));
/// ```
#[derive(Clone)]
pub struct Diagnostics {
    /// The file they are about.
    pub file: SourceFile,
    /// Every diagnostic, in the order found.
    pub list: Vec<Diagnostic>,
}

impl Diagnostics {
    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.list.iter().any(|d| d.severity == Severity::Error)
    }

    /// Renders the diagnostics, each followed by a blank line: the first
    /// [`MAX_RENDERED`] of them, then one line saying how many more there are (a file of
    /// stray tokens used to give megabytes of messages).
    pub fn render(&self) -> String {
        let mut s = String::new();
        for d in self.list.iter().take(MAX_RENDERED) {
            s.push_str(&self.file.render(d));
            s.push('\n');
        }
        if self.list.len() > MAX_RENDERED {
            let more = self.list.len() - MAX_RENDERED;
            s.push_str(&format!(
                "note: {more} more diagnostic{} not shown; fix the ones above first\n\n",
                if more == 1 { "" } else { "s" }
            ));
        }
        s
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render().trim_end())
    }
}

impl fmt::Debug for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            f.debug_struct("Diagnostics")
                .field("file", &self.file.name)
                .field("list", &self.list)
                .finish()
        } else {
            fmt::Display::fmt(self, f)
        }
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_primary_and_secondary_in_source_order() {
        let src = SourceFile::new("k.py", "x = 1\ny = 2.5\nx = y\n");
        let d = Diagnostic::error(Code::E0001, Span::new(18, 19), "bad")
            .with_label("here")
            .with_secondary(Span::new(0, 1), "first")
            .with_note("a note");
        let r = src.render(&d);
        assert_eq!(
            r,
            "error[E0001]: bad\n --> k.py:3:5\n  |\n1 | x = 1\n  | - first\n2 | y = 2.5\n3 | x = y\n  |     ^ here\n  |\n  = note: a note\n"
        );
    }

    #[test]
    fn labels_on_one_line_share_it_and_distant_lines_are_elided() {
        let src = SourceFile::new(
            "k.py",
            "x = a & 2.5
\n\n\n\ny = 1\n",
        );
        let d = Diagnostic::error(Code::E0202, Span::new(4, 11), "bad operands")
            .with_secondary(Span::new(8, 11), "float32")
            .with_secondary(Span::new(16, 17), "later");
        assert_eq!(
            src.render(&d),
            "error[E0202]: bad operands\n --> k.py:1:5\n  |\n1 | x = a & 2.5\n  |     ^^^^---\n  |         |\n  |         float32\n...\n6 | y = 1\n  | - later\n"
        );
    }

    #[test]
    fn a_span_ending_in_a_line_break_stays_on_its_line() {
        // The parser's "found newline" covers the line break.
        let src = SourceFile::new("k.py", "def k(a)\n    pass\n");
        let d = Diagnostic::error(Code::E0001, Span::new(8, 9), "expected `:`");
        assert_eq!(
            src.render(&d),
            "error[E0001]: expected `:`\n --> k.py:1:9\n  |\n1 | def k(a)\n  |         ^\n"
        );
    }

    #[test]
    fn spans_past_the_end_or_reversed_render_without_panicking() {
        let src = SourceFile::new("k.py", "x = 1\n");
        for span in [
            Span::new(3, 99),
            Span::new(99, 120),
            Span::new(4, 2),
            Span::default(),
        ] {
            let r = src.render(&Diagnostic::error(Code::E0999, span, "odd span"));
            assert!(r.starts_with("error[E0999]: odd span\n"), "{r}");
        }
    }

    #[test]
    fn line_col_counts_characters() {
        let src = SourceFile::new("k.py", "a\n\u{e9}b = 1\n");
        assert_eq!(src.line_col(0), (1, 1));
        assert_eq!(src.line_col(4), (2, 2));
    }

    /// Every code has a row in the table at the end of docs/semantics.md whose meaning is
    /// the variant's doc line, and every row of the table is a code.
    #[test]
    fn codes_match_the_table_in_the_semantics_document() {
        let doc = include_str!("../docs/semantics.md");
        let table = doc
            .split_once("\n## Diagnostic codes\n")
            .expect("docs/semantics.md has a `## Diagnostic codes` section")
            .1;
        let mut rows = Vec::new();
        for line in table.lines().filter(|l| l.starts_with("| E")) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 5, "a row of code, meaning, fixture: {line}");
            rows.push((cells[1].to_string(), cells[2].to_string()));
        }
        let codes: Vec<(String, String)> = Code::ALL
            .iter()
            .map(|c| (c.as_str().to_string(), c.meaning().to_string()))
            .collect();
        for (code, meaning) in &codes {
            match rows.iter().find(|(c, _)| c == code) {
                None => panic!("{code} is not in the table of docs/semantics.md"),
                Some((_, m)) => assert_eq!(
                    m, meaning,
                    "{code}: the table's meaning differs from the doc line of Code::{code}"
                ),
            }
        }
        for (code, _) in &rows {
            assert!(
                codes.iter().any(|(c, _)| c == code),
                "{code} is in the table of docs/semantics.md but not in diag::Code"
            );
        }
        assert_eq!(rows.len(), codes.len(), "a code appears twice in the table");
    }

    #[test]
    fn codes_serialize_as_their_spelling() {
        assert_eq!(serde_json::to_string(&Code::E0201).unwrap(), "\"E0201\"");
        let back: Code = serde_json::from_str("\"E0503\"").unwrap();
        assert_eq!(back, Code::E0503);
        assert_eq!(Code::E0112.to_string(), "E0112");
    }
}
