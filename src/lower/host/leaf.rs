//! How host code holds values: every value is a flat list of scalar *leaves* (a tuple,
//! vector or struct is its fields' leaves in order), each at the byte offset that CUDA C++
//! gives it (`abi::layout_of`), and how the System V x86-64 C ABI passes such a value
//! (eightbyte classification). Also the float16/bfloat16 rounding the host uses, since
//! Cranelift has no arithmetic on them: they are held as `float32` values that are exactly
//! representable in the narrow format.

use crate::types::{Scalar, Type};

/// One scalar of a flattened value, at a byte offset from the start of the value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Leaf {
    /// Its type.
    pub scalar: Scalar,
    /// Byte offset in the C++ layout of the whole value.
    pub offset: u64,
}

/// The direct element types of a tuple, vector or struct.
pub(crate) fn elements(t: &Type) -> Option<Vec<Type>> {
    match t {
        Type::Tuple(ts) => Some(ts.clone()),
        Type::Struct(st) => Some(st.fields.iter().map(|(_, t)| t.clone()).collect()),
        Type::Vector { elem, len } => Some(vec![Type::Scalar(*elem); usize::from(*len)]),
        _ => None,
    }
}

/// Whether the host computes on a scalar type: on every one. A complex number is two leaves,
/// its real and imaginary parts (`cuda::std::complex<T>`'s layout); an 8-bit float is held
/// as the `float32` of its value (§2.8: arithmetic on it is `float32` anyway).
pub(crate) fn host_scalar(s: Scalar) -> bool {
    let _ = s;
    true
}

/// The leaves of a value of type `t`, or `None` when the host cannot hold such values
/// (8-bit float numbers).
pub(crate) fn leaves(t: &Type) -> Option<Vec<Leaf>> {
    match t {
        Type::None => Some(Vec::new()),
        // A WMMA fragment: its `num_elements` elements (TF32 as `float32`), the lane's share
        // of the matrix (kernels on the CPU only; `lower::host::emit::tensor`).
        Type::Fragment(f) => {
            let s = match f.elem {
                crate::types::tensor::FragmentElem::TF32 => Scalar::Float32,
                e => e.scalar(),
            };
            Some(
                (0..u64::from(f.num_elements()))
                    .map(|k| Leaf {
                        scalar: s,
                        offset: k * s.size(),
                    })
                    .collect(),
            )
        }
        Type::Scalar(s) if !host_scalar(*s) => None,
        Type::Vector { elem, .. } if !host_scalar(*elem) => None,
        Type::Ref { dtype, .. } if !host_scalar(*dtype) => None,
        // A cooperative group is an `int32` (a coalesced group's member mask, 0 for the other
        // kinds); only kernels on the CPU hold them (the host check refuses them in `@func`s).
        Type::Group(_) => Some(vec![Leaf {
            scalar: Scalar::Int32,
            offset: 0,
        }]),
        Type::Scalar(s) if s.is_complex() => {
            let part = s.component();
            Some(vec![
                Leaf {
                    scalar: part,
                    offset: 0,
                },
                Leaf {
                    scalar: part,
                    offset: part.size(),
                },
            ])
        }
        Type::Scalar(s) => Some(vec![Leaf {
            scalar: *s,
            offset: 0,
        }]),
        Type::WarpMask => Some(vec![Leaf {
            scalar: Scalar::Int32,
            offset: 0,
        }]),
        Type::Tuple(_) | Type::Struct(_) | Type::Vector { .. } => {
            let offsets = crate::abi::field_offsets(t);
            let elems = elements(t)?;
            let mut out = Vec::new();
            for (offset, et) in offsets.iter().zip(&elems) {
                for l in leaves(et)? {
                    out.push(Leaf {
                        scalar: l.scalar,
                        offset: offset + l.offset,
                    });
                }
            }
            Some(out)
        }
        Type::Array(a) => {
            // A global array of numbers is its descriptor (§5.4): the data address, then
            // `shape[ndim]` and `strides[ndim]` (in elements).
            // An array of records (or vectors) needs elements the host can hold.
            let ok = match a.dtype.atomic_scalar() {
                Some(s) => host_scalar(s),
                None => leaves(&a.dtype.ty()).is_some(),
            };
            if !ok {
                return None;
            }
            // A shared array is a descriptor too (only kernels on the CPU hold one, where
            // shared memory is the block's buffer; the host check refuses them in `@func`s).
            let n = u64::from(a.ndim);
            let mut out = vec![Leaf {
                scalar: Scalar::UInt64,
                offset: 0,
            }];
            for k in 0..2 * n {
                out.push(Leaf {
                    scalar: Scalar::Int64,
                    offset: 8 + 8 * k,
                });
            }
            Some(out)
        }
        // A reference to an array element (`atomic_ref`) is its address.
        Type::Ref { .. } => Some(vec![Leaf {
            scalar: Scalar::UInt64,
            offset: 0,
        }]),
        // A reference to a record (an element of an array of records, numba's record
        // argument) is its address.
        Type::StructRef { st, .. } => leaves(&Type::Struct(st.clone())).map(|_| {
            vec![Leaf {
                scalar: Scalar::UInt64,
                offset: 0,
            }]
        }),
        // An `Atomic` struct field holds its number's bytes (the front end accesses it only
        // through atomic references to it, in records that stay in memory).
        Type::Atomic { dtype, .. } => leaves(&Type::Scalar(*dtype)),
    }
}

/// The size and alignment of an element of an array of `dtype` (its C++ layout: a
/// record's with its padding).
pub(crate) fn elem_layout(dtype: &crate::types::DType) -> (u64, u64) {
    match dtype.atomic_scalar() {
        Some(s) => (s.size(), s.size()),
        None => {
            let l = crate::abi::layout_of(&dtype.ty());
            (l.size, l.align)
        }
    }
}

/// The range of leaves that element `i` of a tuple, vector or struct occupies.
pub(crate) fn element_leaves(t: &Type, i: u32) -> Option<std::ops::Range<usize>> {
    let elems = elements(t)?;
    let mut start = 0;
    for (k, et) in elems.iter().enumerate() {
        let n = leaves(et)?.len();
        if k == i as usize {
            return Some(start..start + n);
        }
        start += n;
    }
    None
}

/// The System V class of one eightbyte of an aggregate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// A general-purpose register.
    Integer,
    /// An SSE register.
    Sse,
}

/// How the C ABI passes one parameter or result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Passing {
    /// Nothing (`None`, or an aggregate without leaves).
    Nothing,
    /// One scalar, in the register of its class.
    Scalar(Scalar),
    /// An aggregate of at most 16 bytes, one register per eightbyte.
    Registers(Vec<Class>),
    /// In memory: on the stack for a parameter, through a hidden pointer for a result.
    Memory {
        /// Size in bytes.
        size: u64,
    },
}

/// Classifies a type for the System V x86-64 ABI as gcc does for the equivalent C type.
/// `float16`/`bfloat16` stand for CUDA's `__half`/`__nv_bfloat16`, structs of one
/// `unsigned short`, so they are INTEGER.
pub(crate) fn classify(t: &Type) -> Option<Passing> {
    let ls = leaves(t)?;
    // A complex number is a struct of its two parts (`cuda::std::complex<T>`).
    if let Type::Scalar(s) = t
        && !s.is_complex()
    {
        return Some(Passing::Scalar(*s));
    }
    if let Type::WarpMask = t {
        return Some(Passing::Scalar(Scalar::Int32));
    }
    if ls.is_empty() {
        return Some(Passing::Nothing);
    }
    let (size, _) = crate::abi::size_align(t);
    if size > 16 {
        return Some(Passing::Memory { size });
    }
    let n = size.div_ceil(8) as usize;
    let mut classes = vec![Class::Sse; n];
    for l in &ls {
        let k = (l.offset / 8) as usize;
        if !matches!(l.scalar, Scalar::Float32 | Scalar::Float64)
            && let Some(c) = classes.get_mut(k)
        {
            *c = Class::Integer;
        }
    }
    Some(Passing::Registers(classes))
}

/// The unbiased binary exponent of a finite, non-zero f64.
fn exponent(a: f64) -> i32 {
    ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

/// Rounds `x` to nearest-even in a binary format with `mant` fraction bits and exponents
/// `emin..=emax` (subnormals below `emin`), overflowing to infinity.
fn round_to(x: f64, mant: i32, emin: i32, emax: i32) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let a = x.abs();
    let e = exponent(a).max(emin);
    let q = 2f64.powi(e - mant);
    let r = (a / q).round_ties_even() * q;
    let max = (2.0 - 2f64.powi(-mant)) * 2f64.powi(emax);
    let r = if r > max { f64::INFINITY } else { r };
    r.copysign(x)
}

/// `x` rounded to the nearest `float16` (one rounding), as an `f32`.
pub(crate) fn round_f16(x: f64) -> f32 {
    round_to(x, 10, -14, 15) as f32
}

/// `x` rounded to the nearest `bfloat16` (one rounding), as an `f32`.
pub(crate) fn round_bf16(x: f64) -> f32 {
    if x.is_nan() {
        return f32::NAN;
    }
    round_to(x, 7, -126, 127) as f32
}

/// The IEEE half-precision bits of a value already representable as one.
pub(crate) fn f16_bits(v: f32) -> u16 {
    let sign: u16 = if v.is_sign_negative() { 0x8000 } else { 0 };
    let a = f64::from(v.abs());
    if a.is_nan() {
        return sign | 0x7e00;
    }
    if a.is_infinite() {
        return sign | 0x7c00;
    }
    if a < 2f64.powi(-14) {
        return sign | (a * 2f64.powi(24)) as u16;
    }
    let e = exponent(a);
    let m = (a / 2f64.powi(e - 10)) as u32 - 1024;
    sign | (((e + 15) as u16) << 10) | m as u16
}

/// The value of IEEE half-precision bits.
pub(crate) fn f16_value(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0f64 } else { 1.0 };
    let e = i32::from((bits >> 10) & 0x1f);
    let m = f64::from(bits & 0x3ff);
    let a = match e {
        0 => m * 2f64.powi(-24),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + m) * 2f64.powi(e - 25),
    };
    (sign * a) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_rounds_once_to_nearest_even() {
        assert_eq!(round_f16(1.0 + 2f64.powi(-11)), 1.0); // tie → even
        assert_eq!(round_f16(1.0 + 3.0 * 2f64.powi(-11)), 1.0 + 2f32.powi(-9));
        assert_eq!(round_f16(65504.0), 65504.0);
        assert_eq!(round_f16(65519.9), 65504.0);
        assert_eq!(round_f16(65520.0), f32::INFINITY);
        assert_eq!(round_f16(2f64.powi(-25)), 0.0); // tie → even (zero)
        assert_eq!(round_f16(3.0 * 2f64.powi(-26)), 2f32.powi(-24));
        assert!(round_f16(-0.0).is_sign_negative());
        assert_eq!(round_bf16(1.0 + 2f64.powi(-8)), 1.0);
        assert_eq!(round_bf16(3.0e38).to_bits() & 0xffff, 0);
        assert!((f64::from(round_bf16(3.0e38)) - 3.0e38).abs() <= 2f64.powi(119));
        for bits in 0..=u16::MAX {
            let v = f16_value(bits);
            if v.is_nan() {
                continue;
            }
            assert_eq!(f16_bits(v), bits, "{bits:#x}");
            assert_eq!(round_f16(f64::from(v)).to_bits(), v.to_bits());
        }
    }

    #[test]
    fn classification_follows_the_eightbytes() {
        let f = Type::Scalar(Scalar::Float32);
        let i = Type::Scalar(Scalar::Int32);
        let t = |v: Vec<Type>| Type::Tuple(v);
        assert_eq!(
            classify(&t(vec![f.clone(), f.clone()])),
            Some(Passing::Registers(vec![Class::Sse]))
        );
        assert_eq!(
            classify(&t(vec![f.clone(), i.clone(), f.clone()])),
            Some(Passing::Registers(vec![Class::Integer, Class::Sse]))
        );
        assert_eq!(
            classify(&t(vec![i.clone(); 5])),
            Some(Passing::Memory { size: 20 })
        );
        assert_eq!(classify(&i), Some(Passing::Scalar(Scalar::Int32)));
    }
}
