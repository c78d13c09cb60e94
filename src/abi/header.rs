//! CUDA C++ headers for modules of device code: the types a module's interoperable functions
//! take and return, spelled as CUDA C++ types with the layouts of [`layout_of`], and
//! `extern "C"` declarations of those functions, so that C++ code can call into (and launch)
//! device code written in Python.
//!
//! Every type the header names gets a `static_assert` of its size and alignment (and of each
//! field's offset), so whichever compiler includes the header checks our layout against its
//! own. Types that more than one header may declare (tuples, the half-precision and fp8
//! vectors that CUDA lacks, the array descriptor) are guarded by a macro, so headers of
//! several modules can be included together. This module only prints; it does not decide
//! layouts. The functions it declares have ASCII names: the front end refuses (E0113) a
//! kernel or interoperable function whose Python name is not, as that name is the symbol.

use super::{KernelAbi, cxx_ident, layout_of, vector_is_generated};
use crate::types::{Scalar, Type};
use std::fmt::Write;

/// A function that a header declares: an interoperable `@kernel` (`__global__`) or `@func`
/// (`__device__`), whose symbol is its Python name.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDecl {
    /// The symbol, also the C++ name (`extern "C"`).
    pub symbol: String,
    /// `true` for a kernel (`__global__ void`), `false` for a device function.
    pub kernel: bool,
    /// Parameters in order: Python names and types, each passed by value.
    pub params: Vec<(String, Type)>,
    /// The return type (`Type::None` for `void`).
    pub ret: Type,
}

impl FunctionDecl {
    /// The declaration of a specialized entry, from its ABI and return type. A kernel that
    /// draws random numbers (`KernelAbi::seed`) declares its trailing seed parameter,
    /// `cuda::std::uint64_t __pyd_seed`.
    pub fn new(abi: &KernelAbi, kernel: bool, ret: Type) -> FunctionDecl {
        let mut params: Vec<(String, Type)> = abi
            .params
            .iter()
            .map(|p| (p.name.clone(), p.ty.clone()))
            .collect();
        if abi.seed {
            params.push(("__pyd_seed".into(), Type::Scalar(Scalar::UInt64)));
        }
        FunctionDecl {
            symbol: abi.symbol.clone(),
            kernel,
            params,
            ret,
        }
    }
}

/// Every type that `roots` are made of, each once, a type's parts before the type: structs,
/// tuples, vectors, arrays and atomic references. Numbers appear only where they are roots.
///
/// ```
/// use pydevice::abi::header::types_in;
/// use pydevice::types::{Scalar, Type};
/// let v = Type::Vector { elem: Scalar::Float32, len: 3 };
/// let t = Type::Tuple(vec![Scalar::Int8.into(), v.clone()]);
/// assert_eq!(types_in(&[t.clone(), v.clone()]), vec![v, t]);
/// ```
pub fn types_in(roots: &[Type]) -> Vec<Type> {
    fn visit(t: &Type, root: bool, out: &mut Vec<Type>) {
        match t {
            // A record's sub-array fields are C arrays of their elements.
            Type::Struct(st) => st.fields.iter().enumerate().for_each(|(i, (_, f))| {
                let n = st.subarray_shape(i).len();
                let f = crate::types::record::subarray_elem(f, n).unwrap_or(f);
                visit(f, false, out)
            }),
            Type::Tuple(ts) => ts.iter().for_each(|e| visit(e, false, out)),
            Type::Scalar(_) | Type::None | Type::WarpMask if !root => return,
            _ => {}
        }
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    let mut out = Vec::new();
    for t in roots {
        visit(t, true, &mut out);
    }
    out
}

/// Calls `f` with every number a type contains (array dtypes and references included).
fn each_scalar(t: &Type, f: &mut impl FnMut(Scalar)) {
    match t {
        Type::Scalar(s) | Type::Vector { elem: s, .. } | Type::Ref { dtype: s, .. } => f(*s),
        Type::Atomic { dtype: s, .. } => f(*s),
        Type::Array(a) => each_scalar(&a.dtype.ty(), f),
        Type::Tuple(ts) => ts.iter().for_each(|e| each_scalar(e, f)),
        Type::Struct(st) | Type::StructRef { st, .. } => {
            st.fields.iter().for_each(|(_, e)| each_scalar(e, f))
        }
        Type::Fragment(fr) => f(fr.elem.scalar()),
        Type::None | Type::WarpMask | Type::Group(_) => {}
    }
}

/// How a parameter or result of type `t` is spelled in C++.
fn spelling(t: &Type) -> String {
    match t {
        Type::None => "void*".into(),
        t => layout_of(t).cxx,
    }
}

/// How a struct field of type `t` is declared: an `Atomic(T, align=N)` field carries its
/// `alignas(N)` on the member.
fn member_spelling(t: &Type) -> String {
    match t {
        Type::Atomic { dtype, .. } => {
            let l = layout_of(t);
            if l.align > layout_of(&Type::Scalar(*dtype)).align {
                format!("alignas({}) {}", l.align, l.cxx)
            } else {
                l.cxx
            }
        }
        t => spelling(t),
    }
}

/// The `static_assert`s of a type's layout: size and alignment, and each field's offset
/// (`fields` gives the C++ names of the fields, in order, where they are checked). NVRTC does
/// not know `__builtin_offsetof`, so the offsets are checked by nvcc and host compilers only.
fn assert_layout(out: &mut String, t: &Type, fields: &[String]) {
    let l = layout_of(t);
    let _ = writeln!(
        out,
        "static_assert(sizeof({c}) == {} && alignof({c}) == {}, \"pydevice layout of {}\");",
        l.size,
        l.align,
        l.name,
        c = l.cxx
    );
    if fields.is_empty() || l.fields.is_empty() {
        return;
    }
    out.push_str("#ifndef __CUDACC_RTC__\n");
    for (f, fl) in fields.iter().zip(&l.fields) {
        let _ = writeln!(
            out,
            "static_assert(__builtin_offsetof({}, {f}) == {}, \"pydevice offset of {}.{}\");",
            l.cxx, fl.offset, l.name, fl.name
        );
    }
    out.push_str("#endif\n");
}

/// Starts a paragraph: a blank line unless there is one.
fn paragraph(out: &mut String) {
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
}

/// Writes a guarded definition: types that several headers may declare.
fn guarded(out: &mut String, name: &str, body: &str) {
    paragraph(out);
    let guard = format!("{}_DEFINED", name.to_ascii_uppercase());
    let _ = write!(out, "#ifndef {guard}\n#define {guard}\n{body}#endif\n\n");
}

/// The definition of a record (a NumPy structured dtype, `types::record`) at NumPy's
/// offsets: explicit `__pad` members fill the gaps, a sub-array field is a C array (`float
/// j[3][2]`), and a complex field that NumPy aligns to its parts only (a `complex64` at 12)
/// is spelled as its two parts (`float c[2]`), since `cuda::std::complex<float>` is aligned
/// to 8. Every member then sits at a multiple of its C++ alignment, so plain C++ rules give
/// NumPy's offsets and item size; the `static_assert`s check them.
fn record_definition(t: &Type, st: &crate::types::StructType) -> String {
    let l = layout_of(t);
    let mut s = String::new();
    let _ = writeln!(s, "// {}", l.name);
    let _ = writeln!(s, "struct {} {{", l.cxx);
    let mut at = 0u64;
    let mut pads = 0;
    let mut names = Vec::new();
    for (i, ((name, ft), fl)) in st.fields.iter().zip(&l.fields).enumerate() {
        if fl.offset > at {
            let _ = writeln!(s, "  unsigned char __pad{pads}[{}];", fl.offset - at);
            pads += 1;
        }
        let shape = st.subarray_shape(i);
        let elem = crate::types::record::subarray_elem(ft, shape.len()).unwrap_or(ft);
        let dims: String = shape.iter().map(|n| format!("[{n}]")).collect();
        let member = cxx_ident(name);
        let decl = match elem {
            Type::Scalar(c) if c.is_complex() && fl.offset % c.size() != 0 => {
                format!("{} {member}{dims}[2]", c.component().cxx_name())
            }
            e => format!("{} {member}{dims}", spelling(e)),
        };
        let _ = writeln!(s, "  {decl};");
        names.push(member);
        at = fl.offset + fl.size;
    }
    if l.size > at {
        let _ = writeln!(s, "  unsigned char __pad{pads}[{}];", l.size - at);
    }
    s.push_str("};\n");
    assert_layout(&mut s, t, &names);
    s
}

/// A `struct` definition with its layout's `static_assert`s.
fn definition(t: &Type, members: &[(String, String)], align: Option<u64>) -> String {
    let l = layout_of(t);
    let mut s = String::new();
    let _ = writeln!(s, "// {}", l.name);
    let _ = match align {
        Some(a) => writeln!(s, "struct alignas({a}) {} {{", l.cxx),
        None => writeln!(s, "struct {} {{", l.cxx),
    };
    for (ty, name) in members {
        let _ = writeln!(s, "  {ty} {name};");
    }
    s.push_str("};\n");
    let names: Vec<String> = members.iter().map(|(_, n)| n.clone()).collect();
    assert_layout(&mut s, t, &names);
    s
}

const ARRAY_DESCRIPTOR: &str = "\
// The spec's cuda::interoperable_array_descriptor (the machine representation of an array):
// strides are counted in elements.
namespace cuda {
template <typename T, cuda::std::uint64_t N>
struct interoperable_array_descriptor {
  T* data;
  cuda::std::uint64_t shape[N];
  cuda::std::uint64_t strides[N];
};
}  // namespace cuda
";

/// A CUDA C++ header declaring `types` (and everything they are made of) and `functions`.
///
/// ```
/// use pydevice::abi::header::{header, FunctionDecl};
/// use pydevice::types::{Layout, Scalar, StructType, Type};
/// let point = Type::Struct(Box::new(StructType {
///     name: "point".into(),
///     fields: vec![("x".into(), Scalar::Float32.into()), ("y".into(), Scalar::Float32.into())],
///     align: Some(16),
///     field_align: vec![],
///     record: None,
/// }));
/// let f = FunctionDecl {
///     symbol: "shift".into(),
///     kernel: true,
///     params: vec![("p".into(), point.clone()), ("out".into(), Type::array(Scalar::Float32, 1, Layout::C))],
///     ret: Type::None,
/// };
/// let h = header("points", &[point], &[f]);
/// assert!(h.contains("struct alignas(16) point {\n  float x;\n  float y;\n};"));
/// assert!(h.contains("static_assert(sizeof(point) == 16 && alignof(point) == 16"));
/// assert!(h.contains(
///     "extern \"C\" __global__ void shift(point p, cuda::interoperable_array_descriptor<float, 1> out);"
/// ));
/// ```
pub fn header(module_name: &str, types: &[Type], functions: &[FunctionDecl]) -> String {
    let mut roots: Vec<Type> = types.to_vec();
    for f in functions {
        roots.extend(f.params.iter().map(|(_, t)| t.clone()));
        roots.push(f.ret.clone());
    }
    let all = types_in(&roots);
    let (mut half, mut bf16, mut atomic, mut arrays) = (false, false, false, false);
    let (mut complex, mut fp8) = (false, false);
    for t in &all {
        each_scalar(t, &mut |s| {
            half |= s == Scalar::Float16;
            bf16 |= s == Scalar::BFloat16;
            complex |= s.is_complex();
            fp8 |= s.is_fp8();
        });
        atomic |= matches!(t, Type::Ref { .. } | Type::Atomic { .. });
        arrays |= matches!(t, Type::Array(_));
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "// {module_name}: CUDA C++ declarations of the types and interoperable functions of a\n\
         // pydevice module. Generated by `pydevice abi --header`; do not edit.\n\
         // Each static_assert checks that this compiler lays a type out as pydevice does."
    );
    out.push_str("#pragma once\n\n#include <cuda/std/cstdint>\n");
    if atomic {
        out.push_str("#include <cuda/atomic>\n");
    }
    if half {
        out.push_str("#include <cuda_fp16.h>\n");
    }
    if bf16 {
        out.push_str("#include <cuda_bf16.h>\n");
    }
    if complex {
        out.push_str("#include <cuda/std/complex>\n");
    }
    if fp8 {
        out.push_str("#include <cuda_fp8.h>\n");
    }
    out.push('\n');
    if arrays {
        guarded(
            &mut out,
            "__PYD_INTEROPERABLE_ARRAY_DESCRIPTOR",
            ARRAY_DESCRIPTOR,
        );
    }

    for t in &all {
        let l = layout_of(t);
        match t {
            Type::Struct(st) if st.record.is_some() => {
                paragraph(&mut out);
                out.push_str(&record_definition(t, st));
                out.push('\n');
            }
            Type::Struct(st) => {
                let members: Vec<(String, String)> = st
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, (n, ft))| {
                        // `device.align(t, n)` stronger than the type's own: `alignas(n)`.
                        let a = st.field_align(i);
                        let spelled = member_spelling(ft);
                        let spelled = if a > layout_of(ft).align {
                            format!("alignas({a}) {spelled}")
                        } else {
                            spelled
                        };
                        (spelled, cxx_ident(n))
                    })
                    .collect();
                // `alignas` as written, so that the static_assert checks our rule; C++ forbids
                // one weaker than the members' alignment (and it would change nothing).
                let natural = st
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, (_, f))| layout_of(f).align.max(st.field_align(i)))
                    .max();
                let align = st.align.filter(|a| Some(*a) >= natural);
                paragraph(&mut out);
                out.push_str(&definition(t, &members, align));
                out.push('\n');
            }
            Type::Tuple(ts) => {
                let members: Vec<(String, String)> = ts
                    .iter()
                    .enumerate()
                    .map(|(i, et)| (spelling(et), format!("__{i}")))
                    .collect();
                guarded(&mut out, &l.cxx, &definition(t, &members, None));
            }
            Type::Vector { elem, len } if vector_is_generated(*elem, *len) => {
                let members: Vec<(String, String)> = l
                    .fields
                    .iter()
                    .map(|f| (elem.cxx_name().to_string(), f.name.clone()))
                    .collect();
                guarded(&mut out, &l.cxx, &definition(t, &members, Some(l.align)));
            }
            Type::None => {}
            // Numbers only where asked for, not for every parameter.
            Type::Scalar(_) | Type::WarpMask if !types.contains(t) => {}
            // `cuda::std::atomic<T>` has T's layout; the field's `alignas` is checked by its
            // struct's offsets.
            Type::Atomic { dtype, .. } => {
                let plain = Type::Atomic {
                    dtype: *dtype,
                    align: 0,
                };
                let l = layout_of(&plain);
                let _ = writeln!(
                    out,
                    "static_assert(sizeof({c}) == {} && alignof({c}) == {}, \"pydevice layout of {}\");",
                    l.size,
                    l.align,
                    l.name,
                    c = l.cxx
                );
            }
            _ => assert_layout(&mut out, t, &[]),
        }
    }

    if !functions.is_empty() {
        paragraph(&mut out);
        out.push_str("// Interoperable functions (pass each parameter by value).\n");
    }
    for f in functions {
        if cxx_ident(&f.symbol) != f.symbol {
            let _ = writeln!(
                out,
                "// `{}` is a C++ keyword, so C++ cannot declare it under its own name.",
                f.symbol
            );
            continue;
        }
        let params: Vec<String> = f
            .params
            .iter()
            .map(|(n, t)| format!("{} {}", spelling(t), cxx_ident(n)))
            .collect();
        let ret = match &f.ret {
            Type::None => "void".to_string(),
            t => spelling(t),
        };
        let _ = writeln!(
            out,
            "extern \"C\" {} {ret} {}({});",
            if f.kernel { "__global__" } else { "__device__" },
            f.symbol,
            params.join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StructType;

    #[test]
    fn tuples_and_half_vectors_are_declared_once_and_guarded() {
        let h3 = Type::Vector {
            elem: Scalar::Float16,
            len: 3,
        };
        let t = Type::Tuple(vec![h3.clone(), Scalar::BFloat16.into()]);
        let h = header("m", &[t.clone(), t.clone()], &[]);
        assert_eq!(h.matches("struct __pyd_float16x3 ").count(), 0);
        assert_eq!(h.matches("struct alignas(2) __pyd_float16x3 {").count(), 1);
        let name = layout_of(&t).cxx;
        assert_eq!(h.matches(&format!("struct {name} {{")).count(), 1);
        assert!(h.contains(&format!("#ifndef {}_DEFINED", name.to_ascii_uppercase())));
        assert!(h.contains("  __pyd_float16x3 __0;\n  __nv_bfloat16 __1;\n"));
        assert!(h.contains("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"));
        // The vector comes before the tuple that holds it.
        assert!(h.find("__pyd_float16x3 {").unwrap() < h.find(&name).unwrap());
    }

    #[test]
    fn fp8_vectors_cuda_lacks_are_declared() {
        let v = |len| Type::Vector {
            elem: Scalar::Float8E4M3,
            len,
        };
        let h = header("m", &[v(1), v(2), v(3), v(4)], &[]);
        assert!(h.contains("#include <cuda_fp8.h>\n"));
        assert!(h.contains(
            "struct alignas(1) __pyd_float8e4m3x3 {\n  __nv_fp8_e4m3 x;\n  __nv_fp8_e4m3 y;\n  __nv_fp8_e4m3 z;\n};"
        ));
        assert!(h.contains("struct alignas(1) __pyd_float8e4m3x1 {\n  __nv_fp8_e4m3 x;\n};"));
        // CUDA's own are only checked.
        assert!(!h.contains("struct __nv_fp8x2_e4m3"));
        assert!(h.contains(
            "static_assert(sizeof(__nv_fp8x4_e4m3) == 4 && alignof(__nv_fp8x4_e4m3) == 4"
        ));
    }

    #[test]
    fn keywords_are_renamed_and_device_functions_declared() {
        let s = Type::Struct(Box::new(StructType {
            name: "new".into(),
            fields: vec![("class".into(), Scalar::Int8.into())],
            align: None,
            field_align: Vec::new(),
            record: None,
        }));
        let f = FunctionDecl {
            symbol: "make".into(),
            kernel: false,
            params: vec![("int".into(), Scalar::Int8.into())],
            ret: s.clone(),
        };
        let h = header("m", &[], &[f]);
        assert!(h.contains("struct new_ {\n  cuda::std::int8_t class_;\n};"));
        assert!(h.contains("extern \"C\" __device__ new_ make(cuda::std::int8_t int_);"));
    }

    #[test]
    fn atomic_fields_carry_their_alignment_on_the_member() {
        let s = Type::Struct(Box::new(StructType {
            name: "mutex".into(),
            fields: vec![
                (
                    "line".into(),
                    Type::Atomic {
                        dtype: Scalar::Int32,
                        align: 16,
                    },
                ),
                ("flag".into(), Scalar::Int8.into()),
                (
                    "current".into(),
                    Type::Atomic {
                        dtype: Scalar::Int32,
                        align: 0,
                    },
                ),
            ],
            align: None,
            field_align: Vec::new(),
            record: None,
        }));
        let h = header("m", std::slice::from_ref(&s), &[]);
        assert!(h.contains("#include <cuda/atomic>\n"));
        assert!(h.contains(
            "  alignas(16) cuda::std::atomic<cuda::std::int32_t> line;\n  cuda::std::int8_t flag;\n  cuda::std::atomic<cuda::std::int32_t> current;\n"
        ));
        // C++ member-alignas rules: `flag` right after `line`, the whole rounded to 16.
        let l = layout_of(&s);
        let offsets: Vec<u64> = l.fields.iter().map(|f| f.offset).collect();
        assert_eq!((offsets, l.size, l.align), (vec![0, 4, 8], 16, 16));
    }
}
