//! The type lattice of device code: scalars, vectors, tuples and arrays, with their names
//! in the Python dialect and in Numba's signature notation.
//!
//! This module only describes types; how values of a type are laid out in memory lives in
//! `abi`, how they are promoted in [`promote`], and how they are inferred in `front`.

pub mod fp8;
pub mod half;
pub mod promote;
pub mod record;
pub mod signature;
pub mod tensor;

use serde::{Deserialize, Serialize};
use std::fmt;

/// The kind of a scalar, which decides how it takes part in promotion.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `bool`.
    Bool,
    /// Signed two's-complement integers.
    Int,
    /// Unsigned integers.
    UInt,
    /// IEEE binary floating point.
    Float,
    /// Complex numbers: a pair of IEEE floats (real, imaginary).
    Complex,
}

/// A fixed-format number (or `bool`): the dtypes of arrays and the types of scalars.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scalar {
    /// `bool`, one byte in memory.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`, also Python's `int` in device code.
    Int32,
    /// `int64`.
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `float16` (IEEE half precision).
    Float16,
    /// `bfloat16` (8 exponent bits, 7 mantissa bits).
    BFloat16,
    /// `float32`, also Python's `float` in device code.
    Float32,
    /// `float64`.
    Float64,
    /// `complex64`: two `float32`s (real, imaginary), also Python's `complex` in device code.
    Complex64,
    /// `complex128`: two `float64`s.
    Complex128,
    /// `float8e4m3` (1 sign, 4 exponent, 3 mantissa bits; no infinities): a storage format,
    /// read as `float32` by arithmetic.
    Float8E4M3,
    /// `float8e5m2` (1 sign, 5 exponent, 2 mantissa bits): a storage format, read as
    /// `float32` by arithmetic.
    Float8E5M2,
}

impl Scalar {
    /// Every scalar, in a fixed order (used by table-driven tests).
    pub const ALL: [Scalar; 17] = [
        Scalar::Bool,
        Scalar::Int8,
        Scalar::Int16,
        Scalar::Int32,
        Scalar::Int64,
        Scalar::UInt8,
        Scalar::UInt16,
        Scalar::UInt32,
        Scalar::UInt64,
        Scalar::Float16,
        Scalar::BFloat16,
        Scalar::Float32,
        Scalar::Float64,
        Scalar::Complex64,
        Scalar::Complex128,
        Scalar::Float8E4M3,
        Scalar::Float8E5M2,
    ];

    /// The promotion kind.
    pub fn kind(self) -> Kind {
        use Scalar::*;
        match self {
            Bool => Kind::Bool,
            Int8 | Int16 | Int32 | Int64 => Kind::Int,
            UInt8 | UInt16 | UInt32 | UInt64 => Kind::UInt,
            Float16 | BFloat16 | Float32 | Float64 | Float8E4M3 | Float8E5M2 => Kind::Float,
            Complex64 | Complex128 => Kind::Complex,
        }
    }

    /// Width in bits of the value (8 for `bool`, its storage).
    pub fn bits(self) -> u32 {
        use Scalar::*;
        match self {
            Bool | Int8 | UInt8 | Float8E4M3 | Float8E5M2 => 8,
            Int16 | UInt16 | Float16 | BFloat16 => 16,
            Int32 | UInt32 | Float32 => 32,
            Int64 | UInt64 | Float64 | Complex64 => 64,
            Complex128 => 128,
        }
    }

    /// Size in bytes.
    pub fn size(self) -> u64 {
        u64::from(self.bits() / 8)
    }

    /// True for signed and unsigned integers (not `bool`).
    pub fn is_integer(self) -> bool {
        matches!(self.kind(), Kind::Int | Kind::UInt)
    }

    /// True for floating-point types.
    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }

    /// True for `complex64` and `complex128`.
    pub fn is_complex(self) -> bool {
        self.kind() == Kind::Complex
    }

    /// True for the 8-bit float storage formats (`float8e4m3`, `float8e5m2`).
    pub fn is_fp8(self) -> bool {
        matches!(self, Scalar::Float8E4M3 | Scalar::Float8E5M2)
    }

    /// The float type of a complex type's parts (`float32` for `complex64`); the type itself
    /// for other scalars.
    pub fn component(self) -> Scalar {
        match self {
            Scalar::Complex64 => Scalar::Float32,
            Scalar::Complex128 => Scalar::Float64,
            s => s,
        }
    }

    /// The complex type whose parts hold every value of float type `f` (`complex64` for
    /// `float16`, `bfloat16`, `float32` and the fp8 formats, `complex128` for `float64`).
    pub fn complex_of(f: Scalar) -> Scalar {
        match f {
            Scalar::Float64 | Scalar::Complex128 => Scalar::Complex128,
            _ => Scalar::Complex64,
        }
    }

    /// True for signed integers.
    pub fn is_signed(self) -> bool {
        self.kind() == Kind::Int
    }

    /// The signed or unsigned integer of a width.
    pub fn int(signed: bool, bits: u32) -> Option<Scalar> {
        use Scalar::*;
        Some(match (signed, bits) {
            (true, 8) => Int8,
            (true, 16) => Int16,
            (true, 32) => Int32,
            (true, 64) => Int64,
            (false, 8) => UInt8,
            (false, 16) => UInt16,
            (false, 32) => UInt32,
            (false, 64) => UInt64,
            _ => return None,
        })
    }

    /// The float of a width.
    pub fn float(bits: u32) -> Option<Scalar> {
        match bits {
            16 => Some(Scalar::Float16),
            32 => Some(Scalar::Float32),
            64 => Some(Scalar::Float64),
            _ => None,
        }
    }

    /// The name in the Python dialect (`float32`).
    pub fn name(self) -> &'static str {
        use Scalar::*;
        match self {
            Bool => "bool",
            Int8 => "int8",
            Int16 => "int16",
            Int32 => "int32",
            Int64 => "int64",
            UInt8 => "uint8",
            UInt16 => "uint16",
            UInt32 => "uint32",
            UInt64 => "uint64",
            Float16 => "float16",
            BFloat16 => "bfloat16",
            Float32 => "float32",
            Float64 => "float64",
            Complex64 => "complex64",
            Complex128 => "complex128",
            Float8E4M3 => "float8e4m3",
            Float8E5M2 => "float8e5m2",
        }
    }

    /// Looks a dtype up by its dialect name or a NumPy / Numba alias (`f4`, `i8`, `boolean`).
    pub fn from_name(name: &str) -> Option<Scalar> {
        use Scalar::*;
        Some(match name {
            "bool" | "bool_" | "boolean" | "b1" => Bool,
            "int8" | "i1" | "byte" => Int8,
            "int16" | "i2" => Int16,
            "int32" | "i4" | "intc" => Int32,
            "int64" | "i8" | "intp" => Int64,
            "uint8" | "u1" | "uchar" => UInt8,
            "uint16" | "u2" => UInt16,
            "uint32" | "u4" | "uintc" => UInt32,
            "uint64" | "u8" | "uintp" => UInt64,
            "float16" | "f2" | "half" => Float16,
            "bfloat16" => BFloat16,
            "float32" | "f4" | "single" => Float32,
            "float64" | "f8" | "double" => Float64,
            "complex64" | "c8" | "csingle" => Complex64,
            "complex128" | "c16" | "cdouble" => Complex128,
            "float8e4m3" | "float8_e4m3fn" => Float8E4M3,
            "float8e5m2" | "float8_e5m2" => Float8E5M2,
            _ => return None,
        })
    }

    /// The CUDA C++ spelling, as the spec's tables give it.
    pub fn cxx_name(self) -> &'static str {
        use Scalar::*;
        match self {
            Bool => "bool",
            Int8 => "cuda::std::int8_t",
            Int16 => "cuda::std::int16_t",
            Int32 => "cuda::std::int32_t",
            Int64 => "cuda::std::int64_t",
            UInt8 => "cuda::std::uint8_t",
            UInt16 => "cuda::std::uint16_t",
            UInt32 => "cuda::std::uint32_t",
            UInt64 => "cuda::std::uint64_t",
            Float16 => "__half",
            BFloat16 => "__nv_bfloat16",
            Float32 => "float",
            Float64 => "double",
            Complex64 => "cuda::std::complex<float>",
            Complex128 => "cuda::std::complex<double>",
            Float8E4M3 => "__nv_fp8_e4m3",
            Float8E5M2 => "__nv_fp8_e5m2",
        }
    }

    /// The NumPy array-interface type string (`<f4`).
    pub fn numpy_descr(self) -> &'static str {
        use Scalar::*;
        match self {
            Bool => "|b1",
            Int8 => "|i1",
            Int16 => "<i2",
            Int32 => "<i4",
            Int64 => "<i8",
            UInt8 => "|u1",
            UInt16 => "<u2",
            UInt32 => "<u4",
            UInt64 => "<u8",
            Float16 => "<f2",
            // NumPy has no bfloat16; ml_dtypes stores it as two raw bytes.
            BFloat16 => "<V2",
            Float32 => "<f4",
            Float64 => "<f8",
            Complex64 => "<c8",
            Complex128 => "<c16",
            // NumPy has no fp8 either; ml_dtypes stores them as one raw byte.
            Float8E4M3 | Float8E5M2 => "|V1",
        }
    }
}

/// Parses a vector type name: `<dtype>x<N>` with N from 1 to 4 (`float32x3`, `uint8x4`,
/// `float8e4m3x2`).
pub fn vector_name(name: &str) -> Option<(Scalar, u8)> {
    let (base, n) = name.rsplit_once('x')?;
    let n: u8 = n.parse().ok().filter(|n| (1..=4).contains(n))?;
    let s = Scalar::from_name(base)
        .filter(|s| s.name() == base && *s != Scalar::Bool && !s.is_complex())?;
    Some((s, n))
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How an array's elements are laid out, as far as the compiler may assume.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Layout {
    /// Any strides (`float32[:, :]`).
    Any,
    /// C order: the last dimension is contiguous (`float32[:, ::1]`).
    C,
    /// Fortran order: the first dimension is contiguous (`float32[::1, :]`).
    F,
}

/// Which memory an array's data lives in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MemSpace {
    /// Device global memory: arrays passed to kernels.
    Global,
    /// Shared memory of the thread block.
    Shared,
    /// Thread-private local memory.
    Local,
    /// Read-only constant memory (`.const`): module-level constant arrays (§1.3).
    Const,
    /// Distributed shared memory: the shared memory of a block of the same thread block
    /// cluster (sm_90), reached through generic addresses (`map_shared_rank`, §18.1).
    Cluster,
}

/// The element type of an array: a number, or a `@struct` class (an array of records).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DType {
    /// A number.
    Scalar(Scalar),
    /// A `@struct` class.
    Struct(Box<StructType>),
    /// A vector type (`float8e4m3x4[:]`): elements laid out as the vector's C++ type.
    Vector {
        /// Element type of the vector.
        elem: Scalar,
        /// Number of elements, 1 to 4.
        len: u8,
    },
    /// `device.Atomic(dtype)` (`shared_array(n, device.Atomic(int32))`): elements laid out
    /// as `cuda::std::atomic<dtype>` (the number's own layout), reached only through
    /// atomic operations (docs/semantics.md §9.7).
    Atomic(Scalar),
}

impl DType {
    /// The number type, for arrays of numbers.
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            DType::Scalar(s) => Some(*s),
            DType::Struct(_) | DType::Vector { .. } | DType::Atomic(_) => None,
        }
    }

    /// The number type of an array of numbers or of `Atomic` numbers.
    pub fn atomic_scalar(&self) -> Option<Scalar> {
        match self {
            DType::Scalar(s) | DType::Atomic(s) => Some(*s),
            DType::Struct(_) | DType::Vector { .. } => None,
        }
    }

    /// The element type as a value type.
    pub fn ty(&self) -> Type {
        match self {
            DType::Scalar(s) => Type::Scalar(*s),
            DType::Struct(st) => Type::Struct(st.clone()),
            DType::Vector { elem, len } => Type::Vector {
                elem: *elem,
                len: *len,
            },
            DType::Atomic(s) => Type::Atomic {
                dtype: *s,
                align: 0,
            },
        }
    }
}

impl From<Scalar> for DType {
    fn from(s: Scalar) -> DType {
        DType::Scalar(s)
    }
}

impl PartialEq<Scalar> for DType {
    fn eq(&self, s: &Scalar) -> bool {
        self.scalar() == Some(*s)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DType::Scalar(s) => write!(f, "{s}"),
            DType::Struct(st) => f.write_str(&st.name),
            DType::Vector { elem, len } => write!(f, "{elem}x{len}"),
            DType::Atomic(s) => write!(f, "Atomic[{s}]"),
        }
    }
}

/// The type of an array: element type, number of dimensions, layout and memory space.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ArrayType {
    /// Element type.
    pub dtype: DType,
    /// Number of dimensions (1 or more).
    pub ndim: u8,
    /// What the compiler may assume about strides.
    pub layout: Layout,
    /// Where the data lives.
    pub space: MemSpace,
}

fn validate_struct(st: &StructType, align_ok: fn(u64, bool) -> bool) -> Result<(), String> {
    let name = &st.name;
    if let Some(a) = st.align
        && !align_ok(a, false)
    {
        return Err(format!(
            "struct {name} asks for alignment {a}; alignments are powers of two up to \
             {MAX_TYPE_ALIGN}"
        ));
    }
    if let Some(a) = st.field_align.iter().find(|a| !align_ok(**a, true)) {
        return Err(format!(
            "a field of struct {name} asks for alignment {a}; alignments are powers of two up \
             to {MAX_TYPE_ALIGN}"
        ));
    }
    if let Some(r) = &st.record {
        if r.size > MAX_TYPE_SIZE || !align_ok(r.align, true) {
            return Err(format!(
                "record {name} has size {} and alignment {}",
                r.size, r.align
            ));
        }
        if r.offsets.len() != st.fields.len() {
            return Err(format!(
                "record {name} has {} offsets for {} fields",
                r.offsets.len(),
                st.fields.len()
            ));
        }
        if r.offsets.iter().any(|o| *o > r.size) {
            return Err(format!("record {name} has a field past its end"));
        }
    }
    Ok(())
}

/// A type of device code.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Type {
    /// `None`: the type of functions without a value.
    None,
    /// A number.
    Scalar(Scalar),
    /// A vector of 1 to 4 numbers, such as `uint32x3` (`thread_idx` is one).
    Vector {
        /// Element type.
        elem: Scalar,
        /// Number of elements, 1 to 4.
        len: u8,
    },
    /// A heterogeneous tuple.
    Tuple(Vec<Type>),
    /// An array.
    Array(ArrayType),
    /// `WarpMask`: an `int32` whose bits name the lanes of a warp (`m[i]` reads and sets bit i).
    WarpMask,
    /// A `@device.struct` class: named fields in declaration order.
    Struct(Box<StructType>),
    /// `device.Atomic(dtype, align=N)`: a struct field accessed only atomically.
    Atomic {
        /// The value type.
        dtype: Scalar,
        /// Minimum alignment in bytes (0: the type's own).
        align: u64,
    },
    /// A reference to an array element of struct type, or to a struct field of one: what
    /// `array[i]` denotes when its fields are used in place (`array[i].x = 1.0`) and what
    /// methods receive as `self` for structs with `Atomic` fields.
    StructRef {
        /// The struct.
        st: Box<StructType>,
        /// Where it lives.
        space: MemSpace,
    },
    /// A reference to one element of an array, as `atomic_ref(array, index)` returns.
    Ref {
        /// The element type; for a struct element, the number type of the same size whose
        /// bits the atomic moves (`uint32`, `uint64`, or `complex128` for 16 bytes).
        dtype: Scalar,
        /// Where the element lives.
        space: MemSpace,
        /// The struct, when the element is one (`atomic_ref` on an array of a 4-, 8- or
        /// 16-byte `@struct`, §9.2): its `load`, `store`, `exch` and `cas` take and return it.
        /// Left out of the serialized form when `None`, which keeps that form as it was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<Box<StructType>>,
    },
    /// A cooperative group (`cg.this_thread_block()`, `cg.tiled_partition(g, 8)`, …,
    /// docs/semantics.md §17). Its kind is known at compile time; at run time it is an
    /// `int32`: the member mask of a coalesced group, 0 for the others.
    Group(GroupKind),
    /// A warp-wide tensor-core matrix fragment (`device.wmma.fragment`, §19.1): a fixed set
    /// of registers in each thread.
    Fragment(Box<tensor::Fragment>),
}

/// The kind of a cooperative group (docs/semantics.md §17).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum GroupKind {
    /// `this_thread_block()`: the threads of the block.
    Block,
    /// `this_grid()`: every thread of the launch (its `sync()` needs a cooperative launch).
    Grid,
    /// `coalesced_threads()`: the threads of a warp active where it was created.
    Coalesced,
    /// `tiled_partition(g, n)`: `n` consecutive threads (by rank in the block), `n` a power
    /// of two from 1 to 32.
    Tile(u8),
}

impl GroupKind {
    /// The name the language gives the group's type.
    pub fn name(self) -> String {
        match self {
            GroupKind::Block => "thread_block".into(),
            GroupKind::Grid => "grid_group".into(),
            GroupKind::Coalesced => "coalesced_group".into(),
            GroupKind::Tile(n) => format!("thread_block_tile[{n}]"),
        }
    }
}

/// The deepest nesting of tuples, structs and arrays that [`Type::validate`] accepts.
pub const MAX_TYPE_DEPTH: usize = 64;

/// The most elements a tuple or struct value may have, counted through nesting (each
/// number, vector, array or other non-tuple part is one; docs/semantics.md §2.9). Beyond
/// it, a value is refused (E0002 in device code, E0115 for an argument type built through
/// the API) instead of building a type that doubles at each call (`f(x)` calling
/// `f((x, x))` twenty-four times made 2**24 elements and 11 GB) or a host call whose
/// lowering grows faster than its width. CUDA's 32,764 bytes of kernel parameters hold at
/// most 8,191 four-byte numbers, so no tuple a kernel can take is refused.
pub const MAX_AGGREGATE_ELEMENTS: usize = 8192;

/// The largest alignment a type may ask for (`@struct(align=N)`, `device.align`,
/// `device.Atomic(align=N)`): what the front end accepts.
pub const MAX_TYPE_ALIGN: u64 = 4096;

/// The largest size in bytes of a type ([`crate::abi::layout_of`]).
pub const MAX_TYPE_SIZE: u64 = 1 << 31;

impl Type {
    /// `hopper.TensorMap` (§18.4): a TMA tensor map (`CUtensorMap`) passed by value, as
    /// CUDA C++'s `const __grid_constant__ CUtensorMap`: 128 bytes aligned to 64, a struct of
    /// sixteen `uint64` words named `hopper.TensorMap` (no `@struct` class can be so named).
    pub fn tensor_map() -> Type {
        Type::Struct(Box::new(StructType {
            name: TENSOR_MAP.into(),
            fields: (0..16)
                .map(|i| (format!("w{i}"), Type::Scalar(Scalar::UInt64)))
                .collect(),
            align: Some(64),
            field_align: Vec::new(),
            record: None,
        }))
    }

    /// Whether this is [`Type::tensor_map`].
    pub fn is_tensor_map(&self) -> bool {
        matches!(self, Type::Struct(st) if st.name == TENSOR_MAP && st.record.is_none())
    }

    /// Checks a type built through the API (the front end only builds valid ones): vectors
    /// of 1 to 4 elements, arrays of 1 to 255 dimensions, alignments that are powers of two
    /// up to [`MAX_TYPE_ALIGN`] and nesting up to [`MAX_TYPE_DEPTH`]. `crate::abi::check_type`
    /// adds the bound on the layout's size ([`MAX_TYPE_SIZE`]); the compiler's entry points
    /// (`Module::specialize`, `abi::pack`) reject an invalid type with an error instead of
    /// misbehaving.
    pub fn validate(&self) -> Result<(), String> {
        fn align_ok(a: u64, zero_ok: bool) -> bool {
            (zero_ok && a == 0) || (a.is_power_of_two() && a <= MAX_TYPE_ALIGN)
        }
        // Iterative, so that a deep type cannot overflow the stack.
        let mut work: Vec<(&Type, usize)> = vec![(self, 0)];
        let mut elements = 0usize;
        while let Some((t, depth)) = work.pop() {
            if depth > MAX_TYPE_DEPTH {
                return Err(format!(
                    "the type nests deeper than {MAX_TYPE_DEPTH} levels"
                ));
            }
            if !matches!(t, Type::Tuple(_)) {
                elements += 1;
                if elements > MAX_AGGREGATE_ELEMENTS {
                    return Err(format!(
                        "the type has more than {MAX_AGGREGATE_ELEMENTS} elements (tuple \
                         elements and struct fields, counted through nesting)"
                    ));
                }
            }
            let scalar_vector = |elem: Scalar, len: u8| {
                if (1..=4).contains(&len) {
                    Ok(())
                } else {
                    Err(format!(
                        "a vector of {elem} has {len} elements; vectors have 1 to 4"
                    ))
                }
            };
            match t {
                Type::None
                | Type::Scalar(_)
                | Type::WarpMask
                | Type::Ref { .. }
                | Type::Group(_)
                | Type::Fragment(_) => {}
                Type::Vector { elem, len } => scalar_vector(*elem, *len)?,
                Type::Tuple(ts) => work.extend(ts.iter().map(|t| (t, depth + 1))),
                Type::Array(a) => match &a.dtype {
                    DType::Scalar(_) | DType::Atomic(_) => {}
                    DType::Vector { elem, len } => scalar_vector(*elem, *len)?,
                    DType::Struct(st) => {
                        validate_struct(st, align_ok)?;
                        work.extend(st.fields.iter().map(|(_, t)| (t, depth + 1)));
                    }
                },
                Type::Struct(st) | Type::StructRef { st, .. } => {
                    validate_struct(st, align_ok)?;
                    work.extend(st.fields.iter().map(|(_, t)| (t, depth + 1)));
                }
                Type::Atomic { dtype, align } => {
                    if !align_ok(*align, true) {
                        return Err(format!(
                            "Atomic({dtype}) asks for alignment {align}; alignments are powers \
                             of two up to {MAX_TYPE_ALIGN}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// How many elements the type has, counted through tuples and struct fields (a tuple
    /// itself is not one; everything else is), stopping once past `limit`: the result is at
    /// most `limit + 1`, in time bounded by `limit` and the tuples' widths.
    pub fn element_count(&self, limit: usize) -> usize {
        let mut n = 0usize;
        let mut work = vec![self];
        while let Some(t) = work.pop() {
            match t {
                Type::Tuple(ts) => work.extend(ts.iter()),
                Type::Struct(st) | Type::StructRef { st, .. } => {
                    n += 1;
                    work.extend(st.fields.iter().map(|(_, t)| t));
                }
                _ => n += 1,
            }
            if n > limit {
                return n;
            }
        }
        n
    }

    /// The scalar, if this is one (`WarpMask` is an `int32`).
    pub fn as_scalar(&self) -> Option<Scalar> {
        match self {
            Type::Scalar(s) => Some(*s),
            Type::WarpMask => Some(Scalar::Int32),
            _ => None,
        }
    }

    /// The array type, if this is one.
    pub fn as_array(&self) -> Option<&ArrayType> {
        match self {
            Type::Array(a) => Some(a),
            _ => None,
        }
    }

    /// A global-memory array type.
    pub fn array(dtype: Scalar, ndim: u8, layout: Layout) -> Type {
        Type::Array(ArrayType {
            dtype: DType::Scalar(dtype),
            ndim,
            layout,
            space: MemSpace::Global,
        })
    }

    /// A global-memory array whose elements are `element`: a number, a vector or a `@struct`
    /// type (from `Module::named_type`). `None` for any other element type.
    ///
    /// ```
    /// use pydevice::{Module, Type, types::Layout};
    /// let m = Module::parse("m.py", "from cuda import device\n\
    ///     @device.struct\nclass p:\n    x: float\n    n: int\n").unwrap();
    /// let t = Type::array_of(&m.named_type("p").unwrap(), 1, Layout::C).unwrap();
    /// assert_eq!(t.to_string(), "p[::1]");
    /// ```
    pub fn array_of(element: &Type, ndim: u8, layout: Layout) -> Option<Type> {
        let dtype = match element {
            Type::Scalar(s) => DType::Scalar(*s),
            Type::Struct(st) => DType::Struct(st.clone()),
            Type::Vector { elem, len } => DType::Vector {
                elem: *elem,
                len: *len,
            },
            _ => return None,
        };
        Some(Type::Array(ArrayType {
            dtype,
            ndim,
            layout,
            space: MemSpace::Global,
        }))
    }
}

/// The struct name of [`Type::tensor_map`].
pub const TENSOR_MAP: &str = "hopper.TensorMap";

/// A heterogeneous struct type (`@device.struct class point: x: int ...`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StructType {
    /// The class name.
    pub name: String,
    /// Fields in the order they appear in the class.
    pub fields: Vec<(String, Type)>,
    /// `@struct(align=N)`: the minimum alignment in bytes.
    pub align: Option<u64>,
    /// Each field's minimum alignment from `device.align(t, n)` (C++ `alignas(n) T f;`), 0
    /// for the type's own; empty when no field has one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub field_align: Vec<u64>,
    /// For a record (a NumPy structured dtype, [`record::record`]): NumPy's layout of it,
    /// which the C++ rules above do not always give, and its sub-array fields. `None` for
    /// `@struct` classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<Box<RecordLayout>>,
}

/// NumPy's layout of a record: where each field sits and which fields are sub-arrays.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RecordLayout {
    /// Byte offset of each field, in field order.
    pub offsets: Vec<u64>,
    /// The item size in bytes.
    pub size: u64,
    /// The alignment in bytes: the largest of the fields' NumPy alignments.
    pub align: u64,
    /// Each field's sub-array shape (`('j', '<f4', (3, 2))` has `[3, 2]`); empty for a field
    /// that is not a sub-array. A sub-array field's type in [`StructType::fields`] is the C
    /// array it occupies, as nested tuples (`tuple[tuple[float32, float32], ...]`).
    pub shapes: Vec<Vec<u64>>,
    /// Each field's text kind: a fixed-width text field (NumPy `S<n>` or `U<n>`) is held as
    /// a sub-array of its `n` code units (`uint8` or `uint32`), and is marked here so that it
    /// is written back as text and takes string literals. Empty when no field is text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text: Vec<Option<record::Text>>,
    /// NumPy's text dtype itself (`np.zeros(n, "U12")`), as a record of its one text field
    /// ([`record::text_element`]): read and written as the plain `S<n>` / `U<n>` dtype.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
}

impl StructType {
    /// The index of a field.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }

    /// The `device.align` override of field `i` in bytes (0: none).
    pub fn field_align(&self, i: usize) -> u64 {
        self.field_align.get(i).copied().unwrap_or(0)
    }

    /// For NumPy's text dtype itself ([`record::text_element`]): its kind and width.
    pub fn bare_text(&self) -> Option<(record::Text, u64)> {
        let r = self.record.as_ref().filter(|r| r.bare)?;
        Some((
            r.text.first().copied().flatten()?,
            *r.shapes.first()?.first()?,
        ))
    }

    /// The text kind of field `i` of a record (`None` when it is not a text field).
    pub fn field_text(&self, i: usize) -> Option<record::Text> {
        self.record
            .as_ref()
            .and_then(|r| r.text.get(i).copied().flatten())
    }

    /// The sub-array shape of field `i` of a record (empty when it is not a sub-array).
    pub fn subarray_shape(&self, i: usize) -> &[u64] {
        self.record
            .as_ref()
            .and_then(|r| r.shapes.get(i))
            .map_or(&[], Vec::as_slice)
    }
}

impl From<Scalar> for Type {
    fn from(s: Scalar) -> Type {
        Type::Scalar(s)
    }
}

impl fmt::Display for ArrayType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        if self.ndim == 0 {
            f.write_str("()")?;
        }
        for d in 0..self.ndim {
            if d > 0 {
                f.write_str(", ")?;
            }
            let contiguous = match self.layout {
                Layout::C => d + 1 == self.ndim,
                Layout::F => d == 0,
                Layout::Any => false,
            };
            f.write_str(if contiguous { "::1" } else { ":" })?;
        }
        f.write_str("]")?;
        match self.space {
            MemSpace::Global => Ok(()),
            MemSpace::Shared => f.write_str(" (shared)"),
            MemSpace::Local => f.write_str(" (local)"),
            MemSpace::Const => f.write_str(" (const)"),
            MemSpace::Cluster => f.write_str(" (cluster shared)"),
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::None => f.write_str("None"),
            Type::Scalar(s) => write!(f, "{s}"),
            Type::Vector { elem, len } => write!(f, "{elem}x{len}"),
            Type::Tuple(ts) => {
                f.write_str("tuple[")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str("]")
            }
            Type::Array(a) => write!(f, "{a}"),
            Type::WarpMask => f.write_str("WarpMask"),
            Type::Struct(st) => f.write_str(&st.name),
            Type::Atomic { dtype, .. } => write!(f, "Atomic[{dtype}]"),
            Type::StructRef { st, .. } => write!(f, "ref[{}]", st.name),
            Type::Ref {
                record: Some(st), ..
            } => write!(f, "atomic_ref[{}]", st.name),
            Type::Ref { dtype, .. } => write!(f, "atomic_ref[{dtype}]"),
            Type::Group(k) => f.write_str(&k.name()),
            Type::Fragment(fr) => write!(f, "{fr}"),
        }
    }
}
