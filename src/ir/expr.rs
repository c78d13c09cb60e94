//! Expressions: array properties, subscripts, constant arrays, inline assembly, device-side launches and the `Expr` node itself.

use super::*;

/// A property of an array.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArrayProp {
    /// `a.shape[d]` (int64)
    Shape(u8),
    /// `a.strides[d]`, in bytes as NumPy reports them (int64)
    Stride(u8),
    /// `a.size` (int64)
    Size,
    /// The generic address of the array's first element (int64): where a `jit.thrust`
    /// iterator over it starts (`crate::cccl`).
    Address,
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
