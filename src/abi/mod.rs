//! The ABI of device code: how each type is laid out in memory (size, alignment, field
//! offsets, and the CUDA C++ type it stands for), how kernel parameters are passed, and how
//! argument values are packed into those layouts.
//!
//! Layouts follow what nvcc does: C++ struct rules for tuples and `@struct` classes (an empty
//! one still takes one byte), CUDA's vector types with their `__align__` (e.g. `uint3` is 12
//! bytes aligned to 4), and the spec's `interoperable_array_descriptor` for arrays:
//! `{ T* data; uint64 shape[N]; uint64 strides[N]; }` with strides counted in elements, as
//! `cuda::std::layout_stride` has them. Everything that crosses a process boundary derives
//! serde, so another language can marshal arguments from the JSON. [`header`] writes the same
//! layouts as a CUDA C++ header; `tests/abi_layouts.rs` checks them against gcc and nvcc.

pub mod header;

use crate::ir::Function;
use crate::types::{Scalar, Type};
use serde::{Deserialize, Serialize};

/// A field of a laid-out type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldLayout {
    /// Field name (`data`, `shape`, `x`, or `__0` for tuple elements).
    pub name: String,
    /// Byte offset from the start of the object.
    pub offset: u64,
    /// The field's type, in the Python dialect's notation.
    #[serde(rename = "type")]
    pub ty: String,
    /// Size in bytes.
    pub size: u64,
}

/// How a type is laid out in memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeLayout {
    /// The type in the Python dialect (`float32[::1]`, `uint32x3`).
    pub name: String,
    /// The CUDA C++ type with the same machine representation.
    pub cxx: String,
    /// Size in bytes (a multiple of `align`).
    pub size: u64,
    /// Alignment in bytes.
    pub align: u64,
    /// Fields, in order (empty for scalars).
    pub fields: Vec<FieldLayout>,
}

/// The size in bytes of a dense array of `shape` with `itemsize`-byte elements, or `None`
/// when it, the element count or any dense stride in bytes (every extent counted as at least
/// 1) does not fit in `i64`, the bound NumPy puts on shapes.
pub fn array_bytes(shape: &[u64], itemsize: u64) -> Option<u64> {
    let mut bound = itemsize.max(1);
    let mut exact = itemsize;
    for &d in shape {
        bound = bound.checked_mul(d.max(1))?;
        exact = exact.checked_mul(d)?;
    }
    (bound <= i64::MAX as u64).then_some(exact)
}

/// Checks an array descriptor before it is packed into a kernel's (or a host call's)
/// parameters: its size in bytes fits in `i64`, its data address is not null when it has
/// elements, and every element its shape and strides (in elements, possibly negative or
/// zero) reach lies inside the address space, at most 2**63 bytes from `data`, since the
/// code computes `data + (sum of index * stride) * itemsize` without checking for a wrap.
pub fn check_array(data: u64, shape: &[u64], strides: &[i64], itemsize: u64) -> Result<(), String> {
    if array_bytes(shape, itemsize).is_none() {
        return Err(format!(
            "the array's shape {shape:?} is too large: its size in bytes does not fit in 63 bits"
        ));
    }
    if shape.contains(&0) {
        return Ok(());
    }
    if data == 0 {
        return Err(format!(
            "the array's data pointer is null, but its shape {shape:?} has elements"
        ));
    }
    // Bytes reached past `data` (the last element included) and before it.
    let (mut ahead, mut behind) = (itemsize, 0u64);
    for (&d, &s) in shape.iter().zip(strides) {
        let slot = if s < 0 { &mut behind } else { &mut ahead };
        *slot = (d - 1)
            .checked_mul(s.unsigned_abs())
            .and_then(|e| e.checked_mul(itemsize))
            .and_then(|e| slot.checked_add(e))
            .filter(|v| *v <= i64::MAX as u64)
            .ok_or_else(|| {
                format!(
                    "the array's strides {strides:?} over shape {shape:?} reach past 2**63 bytes"
                )
            })?;
    }
    if data.checked_add(ahead).is_none() || data.checked_sub(behind).is_none() {
        return Err(format!(
            "the array at {data:#x} with shape {shape:?} and strides {strides:?} (in elements) \
             runs past the end of the address space"
        ));
    }
    Ok(())
}

/// Checks a type given through the API: [`Type::validate`], and a layout of at most
/// [`crate::types::MAX_TYPE_SIZE`] bytes.
pub fn check_type(t: &Type) -> Result<(), String> {
    t.validate()?;
    let size = layout_of(t).size;
    if size > crate::types::MAX_TYPE_SIZE {
        return Err(format!(
            "the type takes {size} bytes, more than the {} allowed",
            crate::types::MAX_TYPE_SIZE
        ));
    }
    Ok(())
}

/// `x` rounded up to a multiple of `a` (an alignment of 0 counts as 1), saturating: a
/// type too large to lay out is refused by [`Type::validate`], never a panic here.
fn round_up(x: u64, a: u64) -> u64 {
    let a = a.max(1);
    x.div_ceil(a).saturating_mul(a)
}

/// The CUDA C++ name of a vector type (`uint3`, `float4`).
///
/// The spec's table names `charN` ... `doubleN`, `__halfN` and `__nvbfloat16N`; CUDA 13 differs
/// in two ways. Its `double4`, `longlong4` and `ulonglong4` are deprecated in favour of the
/// `_16a` forms, which have the same layout (32 bytes aligned to 16), so those are the names
/// used. Its headers define only the 2-element half-precision vectors (`__half2`,
/// `__nv_bfloat162`); the other lengths are `__pyd_float16xN` / `__pyd_bfloat16xN` structs
/// that [`header`] declares, laid out like the other vectors (`short4`: 8 bytes aligned to 8).
/// Likewise its fp8 header defines `__nv_fp8x2_e4m3` and `__nv_fp8x4_e4m3` (and the `e5m2`
/// ones) but no 1- or 3-element forms, which are `__pyd_float8e4m3x1`, `__pyd_float8e4m3x3`
/// (1 and 3 bytes, aligned to 1, like `char1` and `char3`).
fn vector_cxx(elem: Scalar, len: u8) -> String {
    let base = match elem {
        Scalar::Int8 => "char",
        Scalar::UInt8 => "uchar",
        Scalar::Int16 => "short",
        Scalar::UInt16 => "ushort",
        Scalar::Int32 => "int",
        Scalar::UInt32 => "uint",
        Scalar::Int64 => "longlong",
        Scalar::UInt64 => "ulonglong",
        Scalar::Float32 => "float",
        Scalar::Float64 => "double",
        // CUDA's fp8 headers define only the 2- and 4-element vectors (one `__x` member
        // holding the bytes, element 0 in the lowest, aligned to their size), which is the
        // layout of `char2` and `char4`; the 1- and 3-element ones are ours.
        Scalar::Float8E4M3 | Scalar::Float8E5M2 if len == 2 || len == 4 => {
            let kind = if elem == Scalar::Float8E4M3 {
                "e4m3"
            } else {
                "e5m2"
            };
            return format!("__nv_fp8x{len}_{kind}");
        }
        // No vectors of bool or of complex numbers exist (`vector_name` refuses them); spell
        // one like the half-precision ones if ever asked.
        Scalar::Bool
        | Scalar::Float16
        | Scalar::BFloat16
        | Scalar::Complex64
        | Scalar::Complex128
        | Scalar::Float8E4M3
        | Scalar::Float8E5M2 => {
            return match (elem, len) {
                (Scalar::Float16, 2) => "__half2".into(),
                (Scalar::BFloat16, 2) => "__nv_bfloat162".into(),
                _ => format!("__pyd_{elem}x{len}"),
            };
        }
    };
    let suffix = match (elem.size(), len) {
        (8, 4) => "_16a",
        _ => "",
    };
    format!("{base}{len}{suffix}")
}

/// Whether the CUDA headers lack the vector type, so that [`header`] must declare it.
pub(crate) fn vector_is_generated(elem: Scalar, len: u8) -> bool {
    vector_cxx(elem, len).starts_with("__pyd_")
}

/// Size and alignment of `t` in bytes, as [`layout_of`] gives them, without the names and
/// fields it builds: linear in the number of elements of a nested tuple, where a
/// [`layout_of`] spells every sub-tuple's name (quadratic, and the lowering asks for
/// alignments of every aggregate value).
pub fn size_align(t: &Type) -> (u64, u64) {
    match t {
        // The two commonest, without building a layout (`layout_of` spells their names).
        Type::Scalar(s) => (s.size(), s.size()),
        Type::Array(a) => (8 + 16 * u64::from(a.ndim), 8),
        Type::Tuple(ts) => crate::stack::deep(|| {
            let (mut off, mut align) = (0u64, 1u64);
            for et in ts {
                let (size, a) = size_align(et);
                off = round_up(off, a).saturating_add(size);
                align = align.max(a);
            }
            (round_up(off.max(1), align), align)
        }),
        _ => {
            let l = layout_of(t);
            (l.size, l.align)
        }
    }
}

/// The byte offset of each field of an aggregate, as [`layout_of`] places them; for a tuple,
/// computed without spelling names (see [`size_align`]).
pub fn field_offsets(t: &Type) -> Vec<u64> {
    match t {
        Type::Tuple(ts) => {
            let mut off = 0u64;
            ts.iter()
                .map(|et| {
                    let (size, align) = size_align(et);
                    off = round_up(off, align);
                    let at = off;
                    off = off.saturating_add(size);
                    at
                })
                .collect()
        }
        _ => layout_of(t).fields.iter().map(|f| f.offset).collect(),
    }
}

/// The C++ name of a tuple type: `__pyd_tuple_` and a hash of the Python type, so the same
/// tuple has the same name in every header (each header guards its definition).
fn tuple_cxx(t: &Type) -> String {
    // FNV-1a, 64 bits: stable across Rust versions and platforms, unlike `DefaultHasher`.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in t.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("__pyd_tuple_{h:016x}")
}

/// A Python identifier as a C++ identifier: C++ keywords get a trailing underscore
/// (`new` → `new_`); every other Python identifier is already a valid C++ one. The dot of a
/// builtin struct's name becomes `_` (`hopper.TensorMap` → `hopper_TensorMap`).
pub fn cxx_ident(name: &str) -> String {
    if name.contains('.') {
        return cxx_ident(&name.replace('.', "_"));
    }
    const KEYWORDS: &str = "\
        alignas alignof and_eq asm auto bitand bitor bool case catch char char8_t char16_t \
        char32_t class compl concept const consteval constexpr constinit const_cast co_await \
        co_return co_yield decltype default delete do double dynamic_cast enum explicit \
        export extern float friend goto inline int long mutable namespace new noexcept \
        not_eq nullptr operator or_eq private protected public register reinterpret_cast \
        requires short signed sizeof static static_assert static_cast struct switch template \
        this thread_local throw typedef typeid typename union unsigned using virtual void \
        volatile wchar_t xor xor_eq and not or true false";
    if KEYWORDS.split_whitespace().any(|k| k == name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// The layout of a type.
///
/// ```
/// use pydevice::abi::layout_of;
/// use pydevice::types::{Type, Scalar, Layout};
/// let l = layout_of(&Type::array(Scalar::Float32, 2, Layout::C));
/// assert_eq!((l.size, l.align), (40, 8));
/// assert_eq!(l.fields[2].offset, 24); // strides follow data and shape[2]
/// ```
pub fn layout_of(t: &Type) -> TypeLayout {
    match t {
        Type::None => TypeLayout {
            name: "None".into(),
            cxx: "void*".into(),
            size: 8,
            align: 8,
            fields: vec![],
        },
        Type::Atomic { dtype, align } => {
            // A field `alignas(N) cuda::std::atomic<T> f;`: N moves the field (and aligns
            // the struct); the field still occupies T's size.
            let base = layout_of(&Type::Scalar(*dtype));
            let align = base.align.max(*align);
            TypeLayout {
                name: t.to_string(),
                cxx: format!("cuda::std::atomic<{}>", base.cxx),
                size: base.size,
                align,
                fields: vec![],
            }
        }
        Type::StructRef { st, .. } => TypeLayout {
            name: t.to_string(),
            cxx: format!("{}*", st.name),
            size: 8,
            align: 8,
            fields: vec![],
        },
        // A group's run-time part: the member mask of a coalesced group (§17).
        Type::Group(_) => TypeLayout {
            name: t.to_string(),
            cxx: "unsigned int".into(),
            size: 4,
            align: 4,
            fields: vec![],
        },
        Type::Fragment(fr) => {
            // Registers, never in memory or a parameter: the size of the registers.
            let (reg, n) = fr.regs();
            let size = if reg == crate::types::tensor::FragmentReg::F64 {
                8
            } else {
                4
            };
            TypeLayout {
                name: t.to_string(),
                cxx: "nvcuda::wmma::fragment".into(),
                size: size * u64::from(n),
                align: size,
                fields: vec![],
            }
        }
        Type::WarpMask => TypeLayout {
            name: "WarpMask".into(),
            cxx: "unsigned int".into(),
            size: 4,
            align: 4,
            fields: vec![],
        },
        Type::Ref { dtype, .. } => TypeLayout {
            name: t.to_string(),
            cxx: format!("cuda::atomic_ref<{}>", dtype.cxx_name()),
            size: 8,
            align: 8,
            fields: vec![],
        },
        Type::Scalar(s) => TypeLayout {
            name: s.name().into(),
            cxx: s.cxx_name().into(),
            size: s.size(),
            align: s.size(),
            fields: vec![],
        },
        Type::Vector { elem, len } => {
            let es = elem.size();
            let n = u64::from(*len);
            // Vectors have 1 to 4 elements (`Type::validate`); other lengths get an array's
            // layout rather than a panic.
            let align = if n == 3 || !(1..=4).contains(&n) {
                es
            } else {
                (es * n).min(16)
            };
            let names = ["x", "y", "z", "w"];
            TypeLayout {
                name: t.to_string(),
                cxx: vector_cxx(*elem, *len),
                size: round_up(es * n, align),
                align,
                fields: (0..n)
                    .map(|i| FieldLayout {
                        name: names
                            .get(i as usize)
                            .map_or_else(|| format!("_{i}"), |n| n.to_string()),
                        offset: i * es,
                        ty: elem.name().into(),
                        size: es,
                    })
                    .collect(),
            }
        }
        Type::Struct(st) if st.record.is_some() => record_layout(st),
        Type::Struct(st) => {
            let mut off = 0;
            let mut align = st.align.unwrap_or(1).max(1);
            let mut fields = Vec::new();
            for (i, (name, ft)) in st.fields.iter().enumerate() {
                let l = layout_of(ft);
                // `device.align(t, n)`: the member is `alignas(n) T f;`.
                let a = l.align.max(st.field_align(i));
                off = round_up(off, a);
                align = align.max(a);
                fields.push(FieldLayout {
                    name: name.clone(),
                    offset: off,
                    ty: l.name.clone(),
                    size: l.size,
                });
                off = off.saturating_add(l.size);
            }
            TypeLayout {
                name: st.name.clone(),
                cxx: cxx_ident(&st.name),
                // C++ gives an empty class one byte.
                size: round_up(off.max(1), align),
                align,
                fields,
            }
        }
        Type::Tuple(ts) => {
            let mut off = 0;
            let mut align = 1;
            let mut fields = Vec::new();
            for (i, et) in ts.iter().enumerate() {
                let l = layout_of(et);
                off = round_up(off, l.align);
                align = align.max(l.align);
                fields.push(FieldLayout {
                    name: format!("__{i}"),
                    offset: off,
                    ty: l.name.clone(),
                    size: l.size,
                });
                off = off.saturating_add(l.size);
            }
            TypeLayout {
                name: t.to_string(),
                cxx: tuple_cxx(t),
                size: round_up(off.max(1), align),
                align,
                fields,
            }
        }
        Type::Array(a) => {
            let n = u64::from(a.ndim);
            TypeLayout {
                name: t.to_string(),
                cxx: format!(
                    "cuda::interoperable_array_descriptor<{}, {n}>",
                    layout_of(&a.dtype.ty()).cxx
                ),
                size: 8 + 16 * n,
                align: 8,
                fields: vec![
                    FieldLayout {
                        name: "data".into(),
                        offset: 0,
                        ty: format!("{}*", a.dtype),
                        size: 8,
                    },
                    FieldLayout {
                        name: "shape".into(),
                        offset: 8,
                        ty: format!("uint64[{n}]"),
                        size: 8 * n,
                    },
                    FieldLayout {
                        name: "strides".into(),
                        offset: 8 + 8 * n,
                        ty: format!("uint64[{n}]"),
                        size: 8 * n,
                    },
                ],
            }
        }
    }
}

/// The layout of a record: NumPy's offsets, item size and alignment (`types::record`).
fn record_layout(st: &crate::types::StructType) -> TypeLayout {
    let (offsets, size, align) = st
        .record
        .as_ref()
        .map_or((&[][..], 1, 1), |r| (&r.offsets[..], r.size, r.align));
    let fields = st
        .fields
        .iter()
        .zip(offsets)
        .map(|((name, ft), off)| {
            let l = layout_of(ft);
            FieldLayout {
                name: name.clone(),
                offset: *off,
                ty: l.name,
                size: l.size,
            }
        })
        .collect();
    TypeLayout {
        name: st.name.clone(),
        cxx: cxx_ident(&st.name),
        size,
        align,
        fields,
    }
}

/// Whether CUDA C++ passes a value of this type to an `extern "C" __device__` function, and
/// returns one from it, by invisible reference (a pointer to a caller-owned copy, and for
/// results a hidden pointer in the first parameter) instead of in `.param` space.
///
/// The Itanium C++ ABI does this for classes that are not trivially copyable. Of the types we
/// map to, only CUDA 13's `__half2` and `__nv_bfloat162` are such (they have a user-provided
/// copy constructor), so every tuple or struct that holds one is passed indirectly too.
/// Kernels (`__global__`) take every parameter by value regardless. `tests/abi_layouts.rs`
/// checks this against the PTX nvcc writes.
///
/// ```
/// use pydevice::abi::passed_indirectly;
/// use pydevice::types::{Scalar, Type};
/// let h2 = Type::Vector { elem: Scalar::Float16, len: 2 };
/// assert!(passed_indirectly(&h2));
/// assert!(passed_indirectly(&Type::Tuple(vec![Scalar::Int32.into(), h2])));
/// assert!(!passed_indirectly(&Type::Vector { elem: Scalar::Float16, len: 4 }));
/// ```
pub fn passed_indirectly(t: &Type) -> bool {
    match t {
        Type::Vector {
            elem: Scalar::Float16 | Scalar::BFloat16,
            len: 2,
        } => true,
        Type::Tuple(ts) => ts.iter().any(passed_indirectly),
        Type::Struct(st) => st.fields.iter().any(|(_, f)| passed_indirectly(f)),
        _ => false,
    }
}

/// One kernel parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamAbi {
    /// The Python parameter name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: Type,
    /// Its layout; the parameter is passed by value with this layout.
    pub layout: TypeLayout,
}

/// How a compiled kernel is called: its symbol and parameters in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelAbi {
    /// The symbol in the PTX (`cuModuleGetFunction` name).
    pub symbol: String,
    /// Parameters in order.
    pub params: Vec<ParamAbi>,
    /// Whether the kernel draws random numbers (`random.rand`/`randn`): it then takes one
    /// more parameter after `params`, the launch's seed, a `uint64` (`unsigned long long`)
    /// that the runtime passes (docs/semantics.md §6.4). Absent from the JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seed: bool,
    /// Whether the kernel synchronizes the whole grid (`cg.this_grid().sync()`), so that it
    /// must be launched cooperatively, with every block resident at once
    /// (`runtime::Device::launch_cooperative`; docs/semantics.md §17.4). Absent from the
    /// JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cooperative: bool,
    /// The parameters (indices into `params`) that hold memory (arrays, references, or
    /// tuples and structs of them) which the kernel never stores to, itself or through the
    /// functions it calls ([`crate::ir::Program::param_stores`]): a caller may pass
    /// read-only memory there. A parameter not listed may be stored through, so read-only
    /// memory is refused there (docs/semantics.md §5.4.1). Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only: Vec<usize>,
}

impl KernelAbi {
    /// The ABI of an IR function (a kernel, or a device function's by-value parameters).
    pub fn of(f: &Function) -> KernelAbi {
        KernelAbi {
            symbol: f.symbol.clone(),
            params: f
                .param_locals()
                .map(|l| ParamAbi {
                    name: f.locals[l].name.clone(),
                    ty: f.locals[l].ty.clone(),
                    layout: layout_of(&f.locals[l].ty),
                })
                .collect(),
            seed: false,
            cooperative: false,
            read_only: Vec::new(),
        }
    }

    /// Whether the kernel may store to the memory parameter `index` holds (true for an
    /// index it does not list in [`KernelAbi::read_only`]).
    pub fn may_store(&self, index: usize) -> bool {
        !self.read_only.contains(&index)
    }

    /// Where each parameter starts in the kernel's parameter buffer, in bytes, in the order
    /// of [`KernelAbi::params`]: each at the next multiple of its alignment after the one
    /// before, as the `.param` space lays them out (CUDA's `cuLaunchKernel` with
    /// `CU_LAUNCH_PARAM_BUFFER_POINTER`, `cuFuncGetParamInfo`). The seed parameter, when the
    /// kernel takes one, follows ([`KernelAbi::seed_offset`]).
    ///
    /// ```
    /// use pydevice::abi::KernelAbi;
    /// use pydevice::Module;
    /// use pydevice::types::signature::parse_signature;
    /// let src = "from cuda import device\n@device.kernel\ndef k(flag, a, x):\n    a[0] = x\n";
    /// let m = Module::parse("k.py", src).unwrap();
    /// let (args, _) = parse_signature("bool, float32[::1], float64").unwrap();
    /// let abi = m.specialize("k", &args).unwrap().abi();
    /// // a bool at 0; the array (align 8, 24 bytes) at 8; the float64 at 32.
    /// assert_eq!(abi.param_offsets(), vec![0, 8, 32]);
    /// assert_eq!(abi.param_buffer_size(), 40);
    /// ```
    pub fn param_offsets(&self) -> Vec<u64> {
        self.layout().0
    }

    /// Where the launch's seed (a `uint64`) starts in the parameter buffer, when the kernel
    /// draws random numbers ([`KernelAbi::seed`]).
    pub fn seed_offset(&self) -> Option<u64> {
        self.layout().1
    }

    /// The size of the parameter buffer: the end of the last parameter (the seed included).
    pub fn param_buffer_size(&self) -> u64 {
        self.layout().2
    }

    /// The offsets, the seed's offset and the end.
    fn layout(&self) -> (Vec<u64>, Option<u64>, u64) {
        let mut end = 0u64;
        let mut place = |size: u64, align: u64| {
            let at = end.next_multiple_of(align.max(1));
            end = at + size;
            at
        };
        let offsets = self
            .params
            .iter()
            .map(|p| place(p.layout.size, p.layout.align))
            .collect();
        let seed = self.seed.then(|| place(8, 8));
        (offsets, seed, end)
    }
}

/// An argument array: a device pointer with shape and strides (in elements).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayArg {
    /// Device address of element `[0, 0, ...]`.
    pub data: u64,
    /// Extent of each dimension.
    pub shape: Vec<u64>,
    /// Distance between consecutive elements of each dimension, in elements (may be negative).
    pub strides: Vec<i64>,
}

/// A value for a kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A bool.
    Bool(bool),
    /// A signed integer (converted to the parameter's width).
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A float (converted to the parameter's precision).
    Float(f64),
    /// A complex number (real, imaginary), converted to the parameter's precision.
    Complex(f64, f64),
    /// An array.
    Array(ArrayArg),
    /// A tuple or vector, element by element.
    Tuple(Vec<ArgValue>),
    /// A record (struct) passed by value, as the bytes of its layout (padding included):
    /// what a zero-dimensional structured `.npy` file holds.
    Bytes(Vec<u8>),
}

/// Why an argument does not fit its parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackError(pub String);

impl std::fmt::Display for PackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PackError {}

fn pack_scalar(s: Scalar, v: &ArgValue, out: &mut [u8]) -> Result<(), PackError> {
    let bad = || PackError(format!("{v:?} is not a value of type {s}"));
    let as_i128 = match v {
        ArgValue::Bool(b) => Some(i128::from(*b)),
        ArgValue::Int(i) => Some(i128::from(*i)),
        ArgValue::UInt(u) => Some(i128::from(*u)),
        _ => None,
    };
    match s {
        Scalar::Complex64 | Scalar::Complex128 => {
            let (re, im) = match v {
                ArgValue::Complex(re, im) => (*re, *im),
                ArgValue::Float(f) => (*f, 0.0),
                _ => (as_i128.ok_or_else(bad)? as f64, 0.0),
            };
            let half = out.len() / 2;
            if s == Scalar::Complex64 {
                out[..half].copy_from_slice(&(re as f32).to_le_bytes());
                out[half..].copy_from_slice(&(im as f32).to_le_bytes());
            } else {
                out[..half].copy_from_slice(&re.to_le_bytes());
                out[half..].copy_from_slice(&im.to_le_bytes());
            }
        }
        Scalar::Float8E4M3 | Scalar::Float8E5M2 => {
            let f = match v {
                ArgValue::Float(f) => *f,
                _ => as_i128.ok_or_else(bad)? as f64,
            };
            let format = crate::types::fp8::Format::of(s).ok_or_else(bad)?;
            out[0] = format.encode(f);
        }
        Scalar::Float16 | Scalar::BFloat16 => {
            let f = match v {
                ArgValue::Float(f) => *f,
                _ => as_i128.ok_or_else(bad)? as f64,
            };
            let bits = if s == Scalar::Float16 {
                crate::types::half::f16_bits(f)
            } else {
                crate::types::half::bf16_bits(f)
            };
            out.copy_from_slice(&bits.to_le_bytes());
        }
        Scalar::Float32 | Scalar::Float64 => {
            let f = match v {
                ArgValue::Float(f) => *f,
                _ => as_i128.ok_or_else(bad)? as f64,
            };
            if s == Scalar::Float32 {
                out.copy_from_slice(&(f as f32).to_le_bytes());
            } else {
                out.copy_from_slice(&f.to_le_bytes());
            }
        }
        _ => {
            let i = as_i128.ok_or_else(bad)?;
            if !crate::ir::literal_fits(crate::ir::Literal::Int(i), s) {
                return Err(PackError(format!("{i} does not fit in {s}")));
            }
            let bytes = (i as u128).to_le_bytes();
            out.copy_from_slice(&bytes[..s.size() as usize]);
        }
    }
    Ok(())
}

/// The scalar leaves of a struct passed by value (nested structs flattened, depth first, in
/// field order): each leaf's byte offset in the struct's layout and its type. `None` for
/// other types and for structs with a leaf that is not a scalar (an array, a tuple, a
/// vector, a record). Computed once per parameter, it lets a launch write a struct's fields
/// straight into its parameter ([`pack_scalar_at`]) without laying the type out again.
pub fn scalar_leaves(t: &Type) -> Option<Vec<(u64, Scalar)>> {
    fn walk(t: &Type, base: u64, out: &mut Vec<(u64, Scalar)>) -> Option<()> {
        match t {
            Type::Scalar(s) => out.push((base, *s)),
            Type::Struct(st) if st.record.is_none() => {
                let l = layout_of(t);
                for (f, (_, ft)) in l.fields.iter().zip(&st.fields) {
                    walk(ft, base.checked_add(f.offset)?, out)?;
                }
            }
            _ => return None,
        }
        Some(())
    }
    let Type::Struct(_) = t else { return None };
    check_type(t).ok()?;
    let mut out = Vec::new();
    walk(t, 0, &mut out)?;
    Some(out)
}

/// Packs `v` as a value of scalar type `s` into `out`, which must be exactly the scalar's
/// size: what [`pack`] writes for a scalar, without allocating.
pub fn pack_scalar_at(s: Scalar, v: &ArgValue, out: &mut [u8]) -> Result<(), PackError> {
    if out.len() as u64 != s.size() {
        return Err(PackError(format!(
            "{s} takes {} bytes, not {}",
            s.size(),
            out.len()
        )));
    }
    pack_scalar(s, v, out)
}

/// Packs a value into the bytes of its parameter's layout.
pub fn pack(t: &Type, v: &ArgValue) -> Result<Vec<u8>, PackError> {
    check_type(t).map_err(PackError)?;
    let l = layout_of(t);
    let mut out = vec![0u8; l.size as usize];
    pack_into(t, v, &mut out)?;
    Ok(out)
}

fn pack_into(t: &Type, v: &ArgValue, out: &mut [u8]) -> Result<(), PackError> {
    match (t, v) {
        (Type::Scalar(s), v) => pack_scalar(*s, v, out),
        (Type::WarpMask, v) => pack_scalar(Scalar::UInt32, v, out),
        (Type::Array(a), ArgValue::Array(arr)) => {
            let n = a.ndim as usize;
            if arr.shape.len() != n || arr.strides.len() != n {
                return Err(PackError(format!(
                    "a {t} needs {n} dimensions, got shape {:?} and strides {:?}",
                    arr.shape, arr.strides
                )));
            }
            let itemsize = layout_of(&a.dtype.ty()).size;
            check_array(arr.data, &arr.shape, &arr.strides, itemsize).map_err(PackError)?;
            if out.len() < 8 + 16 * n {
                return Err(PackError(format!("{t} does not fit its layout")));
            }
            out[0..8].copy_from_slice(&arr.data.to_le_bytes());
            for d in 0..n {
                out[8 + 8 * d..16 + 8 * d].copy_from_slice(&arr.shape[d].to_le_bytes());
                let so = 8 + 8 * n + 8 * d;
                out[so..so + 8].copy_from_slice(&arr.strides[d].to_le_bytes());
            }
            let contiguous = match a.layout {
                crate::types::Layout::C => n.checked_sub(1),
                crate::types::Layout::F => (n > 0).then_some(0),
                crate::types::Layout::Any => None,
            };
            if let Some(d) = contiguous
                && arr.strides[d] != 1
                && arr.shape[d] > 1
            {
                return Err(PackError(format!(
                    "the parameter is {t}, but dimension {d} of the array has stride {} (elements), not 1",
                    arr.strides[d]
                )));
            }
            Ok(())
        }
        (Type::Tuple(_) | Type::Vector { .. } | Type::Struct(_), ArgValue::Tuple(items)) => {
            let l = layout_of(t);
            if items.len() != l.fields.len() {
                return Err(PackError(format!(
                    "{t} has {} elements, got {}",
                    l.fields.len(),
                    items.len()
                )));
            }
            for (i, (f, item)) in l.fields.iter().zip(items).enumerate() {
                let et = match t {
                    Type::Tuple(ts) => ts[i].clone(),
                    Type::Vector { elem, .. } => Type::Scalar(*elem),
                    Type::Struct(st) => st.fields[i].1.clone(),
                    _ => unreachable!("matched above"),
                };
                let (o, s) = (f.offset as usize, f.size as usize);
                let slot = o
                    .checked_add(s)
                    .and_then(|end| out.get_mut(o..end))
                    .ok_or_else(|| PackError(format!("{t}: field {i} lies outside the type")))?;
                pack_into(&et, item, slot)?;
            }
            Ok(())
        }
        // A reference to a record in device memory (numba passes record arguments so):
        // the record's device address.
        (Type::StructRef { .. }, ArgValue::UInt(address)) => {
            out.copy_from_slice(&address.to_le_bytes());
            Ok(())
        }
        (Type::Struct(_), ArgValue::Bytes(b)) => {
            if b.len() != out.len() {
                return Err(PackError(format!(
                    "{t} takes {} bytes, got {}",
                    out.len(),
                    b.len()
                )));
            }
            out.copy_from_slice(b);
            Ok(())
        }
        (t, v) => Err(PackError(format!("{v:?} cannot be passed as {t}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Layout;

    /// `hopper.TensorMap` (§18.4) is CUDA's `CUtensorMap` by value: 128 bytes aligned to 64,
    /// so in a kernel's parameter buffer it starts at a multiple of 64 whatever precedes it,
    /// and it packs from its 128 bytes (or its 16 words) and nothing else.
    #[test]
    fn tensor_maps_are_128_bytes_at_multiples_of_64_in_the_parameter_buffer() {
        let t = Type::tensor_map();
        let l = layout_of(&t);
        assert_eq!((l.size, l.align), (128, 64));
        assert_eq!(l.cxx, "hopper_TensorMap", "a C++ name for headers");
        assert_eq!(size_align(&t), (128, 64));
        assert!(t.is_tensor_map());
        assert_eq!(
            crate::types::signature::parse_type(&t.to_string()).unwrap(),
            t,
            "the type's name parses back"
        );
        let src = "from cuda import device\nfrom cuda.device import hopper\n@device.kernel\n\
                   def k(n, m: hopper.TensorMap, a, t: hopper.TensorMap):\n    \
                   hopper.tma_prefetch(m)\n    hopper.tma_prefetch(t)\n    a[0] = n\n";
        let m = crate::Module::parse("k.py", src).unwrap();
        let (args, _) = crate::types::signature::parse_signature(
            "int32, hopper.TensorMap, float32[::1], TensorMap",
        )
        .unwrap();
        let abi = m.specialize("k", &args).unwrap().abi();
        // int32 at 0; the map at 64; the array (24 bytes, align 8) at 192; the map at 256.
        assert_eq!(abi.param_offsets(), vec![0, 64, 192, 256]);
        assert_eq!(abi.param_buffer_size(), 384);
        let bytes: Vec<u8> = (0..128).collect();
        assert_eq!(pack(&t, &ArgValue::Bytes(bytes.clone())).unwrap(), bytes);
        assert!(pack(&t, &ArgValue::Bytes(vec![0; 127])).is_err());
        assert!(pack(&t, &ArgValue::UInt(0)).is_err());
        let words = ArgValue::Tuple((0..16).map(|i| ArgValue::UInt(i << 8 | i)).collect());
        let p = pack(&t, &words).unwrap();
        assert_eq!((p[8], p[9], p[127]), (1, 1, 0));
    }

    #[test]
    fn half_encoding_rounds_like_numpy() {
        // Expected bits from NumPy's float64 -> float16 cast (round half to even, once).
        let cases = [
            (0.0, 0x0000),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (0.1, 0x2e66),
            (65504.0, 0x7bff),
            (65520.0, 0x7c00),
            (65519.99, 0x7bff),
            (1e-08, 0x0000),
            (5.960464477539063e-08, 0x0001),
            (2.9802322387695312e-08, 0x0000),
            (2.980232238769532e-08, 0x0001),
            (6.097555160522461e-05, 0x03ff),
            (1.00146484375, 0x3c02),
            (1.00048828125, 0x3c00),
            (3.140625, 0x4248),
            (1000000.0, 0x7c00),
            (-1e-30, 0x8000),
        ];
        for (f, bits) in cases {
            assert_eq!(crate::types::half::f16_bits(f), bits, "float16({f})");
        }
        assert_eq!(crate::types::half::f16_bits(f64::NAN) & 0x7e00, 0x7e00);
        assert_eq!(crate::types::half::f16_bits(f64::NEG_INFINITY), 0xfc00);
        // bfloat16 is the top half of float32, rounded.
        assert_eq!(crate::types::half::bf16_bits(1.0), 0x3f80);
        assert_eq!(crate::types::half::bf16_bits(3.140625), 0x4049);
        assert_eq!(crate::types::half::bf16_bits(-1.5), 0xbfc0);
    }

    #[test]
    fn vector_layouts_follow_cuda() {
        let l = layout_of(&Type::Vector {
            elem: Scalar::UInt32,
            len: 3,
        });
        assert_eq!((l.size, l.align, l.cxx.as_str()), (12, 4, "uint3"));
        let l = layout_of(&Type::Vector {
            elem: Scalar::Float32,
            len: 4,
        });
        assert_eq!((l.size, l.align), (16, 16));
        let l = layout_of(&Type::Vector {
            elem: Scalar::Float64,
            len: 4,
        });
        assert_eq!((l.size, l.align), (32, 16));
    }

    #[test]
    fn fp8_vectors_are_cudas_where_it_has_them() {
        let cases = [
            (Scalar::Float8E4M3, 1, 1, 1, "__pyd_float8e4m3x1"),
            (Scalar::Float8E4M3, 2, 2, 2, "__nv_fp8x2_e4m3"),
            (Scalar::Float8E5M2, 3, 3, 1, "__pyd_float8e5m2x3"),
            (Scalar::Float8E5M2, 4, 4, 4, "__nv_fp8x4_e5m2"),
        ];
        for (elem, len, size, align, cxx) in cases {
            let l = layout_of(&Type::Vector { elem, len });
            assert_eq!((l.size, l.align, l.cxx.as_str()), (size, align, cxx));
            assert_eq!(vector_is_generated(elem, len), len % 2 == 1);
        }
        let h = Type::Vector {
            elem: Scalar::Float8E4M3,
            len: 2,
        };
        assert!(!passed_indirectly(&h));
    }

    #[test]
    fn tuples_follow_c_struct_rules() {
        let t = Type::Tuple(vec![
            Scalar::Int8.into(),
            Scalar::Float64.into(),
            Scalar::Int16.into(),
        ]);
        let l = layout_of(&t);
        assert_eq!((l.size, l.align), (24, 8));
        assert_eq!(
            l.fields.iter().map(|f| f.offset).collect::<Vec<_>>(),
            vec![0, 8, 16]
        );
    }

    #[test]
    fn packs_complex_and_fp8_scalars() {
        let c64 = pack(
            &Type::Scalar(Scalar::Complex64),
            &ArgValue::Complex(1.5, -2.0),
        )
        .unwrap();
        assert_eq!(c64[..4], 1.5f32.to_le_bytes());
        assert_eq!(c64[4..], (-2.0f32).to_le_bytes());
        let c128 = pack(&Type::Scalar(Scalar::Complex128), &ArgValue::Float(3.0)).unwrap();
        assert_eq!(c128.len(), 16);
        assert_eq!(c128[..8], 3.0f64.to_le_bytes());
        assert_eq!(c128[8..], 0.0f64.to_le_bytes());
        let f8 = pack(&Type::Scalar(Scalar::Float8E4M3), &ArgValue::Float(1.0)).unwrap();
        assert_eq!(f8, vec![0x38]);
    }

    #[test]
    fn packs_16_bit_floats_as_their_bits() {
        let h = pack(&Type::Scalar(Scalar::Float16), &ArgValue::Float(-2.0)).unwrap();
        assert_eq!(h, 0xc000u16.to_le_bytes());
        let h = pack(&Type::Scalar(Scalar::Float16), &ArgValue::Int(3)).unwrap();
        assert_eq!(h, 0x4200u16.to_le_bytes());
        let b = pack(&Type::Scalar(Scalar::BFloat16), &ArgValue::Float(1.0)).unwrap();
        assert_eq!(b, 0x3f80u16.to_le_bytes());
    }

    #[test]
    fn array_descriptors_that_wrap_or_are_null_are_refused() {
        assert!(check_array(0x1000, &[4], &[1], 4).is_ok());
        assert!(check_array(0, &[0], &[1], 4).is_ok());
        let cases: [(u64, &[u64], &[i64], &str); 5] = [
            (0, &[4], &[1], "null"),
            (0x1000, &[u64::MAX], &[1], "too large"),
            (u64::MAX - 15, &[8], &[1], "address space"),
            (0x10, &[8], &[-1], "address space"),
            (0x1000, &[1 << 40], &[1 << 40], "2**63"),
        ];
        for (data, shape, strides, text) in cases {
            let e = check_array(data, shape, strides, 4).unwrap_err();
            assert!(e.contains(text), "{data:#x} {shape:?} {strides:?}: {e}");
            let t = Type::array(Scalar::Float32, 1, Layout::Any);
            let v = ArgValue::Array(ArrayArg {
                data,
                shape: shape.to_vec(),
                strides: strides.to_vec(),
            });
            assert!(pack(&t, &v).is_err());
        }
    }

    #[test]
    fn packs_descriptors_and_checks_contiguity() {
        let t = Type::array(Scalar::Float32, 2, Layout::C);
        let v = ArgValue::Array(ArrayArg {
            data: 0x1000,
            shape: vec![3, 4],
            strides: vec![4, 1],
        });
        let b = pack(&t, &v).unwrap();
        assert_eq!(b.len(), 40);
        assert_eq!(u64::from_le_bytes(b[0..8].try_into().unwrap()), 0x1000);
        assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), 4);
        assert_eq!(i64::from_le_bytes(b[24..32].try_into().unwrap()), 4);
        let bad = ArgValue::Array(ArrayArg {
            data: 0,
            shape: vec![3, 4],
            strides: vec![1, 3],
        });
        assert!(pack(&t, &bad).is_err());
        assert!(pack(&Type::Scalar(Scalar::Int8), &ArgValue::Int(300)).is_err());
        assert_eq!(
            pack(&Type::Scalar(Scalar::Float32), &ArgValue::Float(1.5)).unwrap(),
            1.5f32.to_le_bytes()
        );
    }
}
