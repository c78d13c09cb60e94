//! [`HostValue`]: the values a typed host call takes and returns, their packing into the
//! C++ layouts the JIT-compiled wrapper reads, and their Python `repr`.

use super::HostError;
use super::leaf::{elements, f16_bits, f16_value, round_bf16, round_f16};
use crate::types::{Scalar, Type};
use std::fmt;

/// A value passed to or returned from a [`super::HostFunction`].
#[derive(Clone, Debug, PartialEq)]
pub enum HostValue {
    /// `None`: the result of a function without a value.
    None,
    /// A `bool`.
    Bool(bool),
    /// A signed integer (results of signed types).
    Int(i64),
    /// An unsigned integer (results of unsigned types).
    UInt(u64),
    /// A `float32` (also the exact value of a `float16` or `bfloat16` result).
    Float32(f32),
    /// A `float64`.
    Float64(f64),
    /// A `complex64`: its real and imaginary parts.
    Complex64(f32, f32),
    /// A `complex128` (also Python's `complex`): its real and imaginary parts.
    Complex128(f64, f64),
    /// A tuple or a vector, element by element.
    Tuple(Vec<HostValue>),
    /// A `@struct` value.
    Struct {
        /// The class name.
        name: String,
        /// Fields in declaration order.
        fields: Vec<(String, HostValue)>,
    },
    /// An array of numbers: its elements' bytes in C order (little-endian, `bool` as one
    /// byte, half precision as its bits). A typed call passes a copy, with C-order strides;
    /// [`super::HostFunction::call_mut`] copies the elements back afterwards.
    Array {
        /// The element type.
        dtype: Scalar,
        /// The extent of each dimension.
        shape: Vec<u64>,
        /// `shape.iter().product() * dtype.size()` bytes.
        data: Vec<u8>,
    },
}

impl HostValue {
    /// An array of `f32` values (1-D).
    pub fn from_f32s(values: &[f32]) -> HostValue {
        HostValue::Array {
            dtype: Scalar::Float32,
            shape: vec![values.len() as u64],
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// An array of `i32` values (1-D).
    pub fn from_i32s(values: &[i32]) -> HostValue {
        HostValue::Array {
            dtype: Scalar::Int32,
            shape: vec![values.len() as u64],
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }
}

fn arg_err(m: String) -> HostError {
    HostError::Argument(m)
}

/// The bytes of a buffer of words.
pub(crate) fn as_bytes_mut(words: &mut [u64]) -> &mut [u8] {
    let n = words.len() * 8;
    // SAFETY: u8 has no alignment or validity requirements; the length is in bytes of the
    // same allocation, and the borrow of `words` is carried over.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), n) }
}

/// The bytes of a buffer of words, read-only.
pub(crate) fn as_bytes_words(words: &[u64]) -> &[u8] {
    // SAFETY: as in `as_bytes_mut`, shared.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) }
}

/// Lays out the arguments of `name` (parameters `params`) as a C++ struct of the
/// parameters: the frame, and per argument the aligned copy of an array's elements that the
/// frame's descriptor points to (its length in bytes and storage).
#[allow(clippy::type_complexity)]
pub(crate) fn frame(
    name: &str,
    params: &[Type],
    args: &[HostValue],
) -> Result<(Vec<u64>, Vec<Option<(usize, Vec<u64>)>>), HostError> {
    if args.len() != params.len() {
        return Err(arg_err(format!(
            "`{name}` takes {} arguments, {} given",
            params.len(),
            args.len()
        )));
    }
    let layout = crate::abi::layout_of(&Type::Tuple(params.to_vec()));
    // u64 words keep the buffers 8-byte aligned.
    let mut buf = vec![0u64; layout.size.div_ceil(8) as usize + 1];
    let mut arrays = Vec::new();
    {
        let bytes = as_bytes_mut(&mut buf);
        for ((t, f), v) in params.iter().zip(&layout.fields).zip(args) {
            if let Type::Array(at) = t {
                let copy = array_copy(at, v)?;
                pack_descriptor(at, v, &copy, bytes, f.offset as usize)?;
                arrays.push(Some(copy));
            } else {
                pack(t, v, bytes, f.offset as usize)?;
                arrays.push(None);
            }
        }
    }
    Ok((buf, arrays))
}

/// Writes the array copies of [`frame`] back into the arguments they came from.
pub(crate) fn copy_back(args: &mut [HostValue], arrays: Vec<Option<(usize, Vec<u64>)>>) {
    for (arg, (k, words)) in args
        .iter_mut()
        .zip(arrays)
        .filter_map(|(a, w)| Some((a, w?)))
    {
        if let HostValue::Array { data, .. } = arg {
            data.copy_from_slice(&as_bytes_words(&words)[..k]);
        }
    }
}

/// Lays out arguments given as kernel arguments ([`crate::abi::pack`]) as the frame of
/// [`frame`].
pub(crate) fn raw_frame(
    name: &str,
    params: &[Type],
    args: &[crate::abi::ArgValue],
) -> Result<Vec<u64>, HostError> {
    if args.len() != params.len() {
        return Err(arg_err(format!(
            "`{name}` takes {} arguments, {} given",
            params.len(),
            args.len()
        )));
    }
    let layout = crate::abi::layout_of(&Type::Tuple(params.to_vec()));
    let mut buf = vec![0u64; layout.size.div_ceil(8) as usize + 1];
    {
        let bytes = as_bytes_mut(&mut buf);
        for (k, ((t, f), v)) in params.iter().zip(&layout.fields).zip(args).enumerate() {
            let packed =
                crate::abi::pack(t, v).map_err(|e| arg_err(format!("argument {k}: {e}")))?;
            let at = f.offset as usize;
            bytes
                .get_mut(at..at + packed.len())
                .ok_or_else(|| arg_err("argument buffer too small".into()))?
                .copy_from_slice(&packed);
        }
    }
    Ok(buf)
}

/// A word-aligned copy of an array argument's elements, with its length in bytes.
pub(crate) fn array_copy(
    at: &crate::types::ArrayType,
    v: &HostValue,
) -> Result<(usize, Vec<u64>), HostError> {
    let HostValue::Array { dtype, shape, data } = v else {
        return Err(arg_err(format!("expected an array {at}, got {v}")));
    };
    if at.dtype.scalar() != Some(*dtype) || shape.len() != usize::from(at.ndim) {
        return Err(arg_err(format!(
            "expected an array {at}, got a {}-dimensional {dtype} array",
            shape.len()
        )));
    }
    let n = shape
        .iter()
        .try_fold(dtype.size(), |acc, d| acc.checked_mul(*d))
        .ok_or_else(|| arg_err("array too large".into()))?;
    if n != data.len() as u64 {
        return Err(arg_err(format!(
            "array of shape {shape:?} needs {n} bytes of {dtype}, got {}",
            data.len()
        )));
    }
    let mut words = vec![0u64; data.len().div_ceil(8).max(1)];
    as_bytes_mut(&mut words)[..data.len()].copy_from_slice(data);
    Ok((data.len(), words))
}

/// Writes the descriptor of an array argument (§5.4): the copy's address, the shape and
/// C-order strides in elements.
pub(crate) fn pack_descriptor(
    at: &crate::types::ArrayType,
    v: &HostValue,
    copy: &(usize, Vec<u64>),
    bytes: &mut [u8],
    off: usize,
) -> Result<(), HostError> {
    let HostValue::Array { shape, .. } = v else {
        return Err(arg_err(format!("expected an array {at}")));
    };
    let n = shape.len();
    put(bytes, off, &(copy.1.as_ptr() as u64).to_le_bytes())?;
    let mut stride = 1u64;
    for k in (0..n).rev() {
        put(bytes, off + 8 + 8 * k, &shape[k].to_le_bytes())?;
        put(bytes, off + 8 + 8 * (n + k), &stride.to_le_bytes())?;
        stride = stride.saturating_mul(shape[k]);
    }
    Ok(())
}

fn put(bytes: &mut [u8], off: usize, data: &[u8]) -> Result<(), HostError> {
    bytes
        .get_mut(off..off + data.len())
        .ok_or_else(|| arg_err("argument buffer too small".into()))?
        .copy_from_slice(data);
    Ok(())
}

fn get<const N: usize>(bytes: &[u8], off: usize) -> Result<[u8; N], HostError> {
    bytes
        .get(off..off + N)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| arg_err("result buffer too small".into()))
}

fn as_f64(v: &HostValue) -> Option<f64> {
    match v {
        HostValue::Float32(x) => Some(f64::from(*x)),
        HostValue::Float64(x) => Some(*x),
        HostValue::Int(i) => Some(*i as f64),
        HostValue::UInt(u) => Some(*u as f64),
        _ => None,
    }
}

/// A number as a complex one: a complex value's parts, a real number with a zero imaginary
/// part (as Python converts `complex(x)`).
fn as_complex(v: &HostValue) -> Option<(f64, f64)> {
    match v {
        HostValue::Complex64(re, im) => Some((f64::from(*re), f64::from(*im))),
        HostValue::Complex128(re, im) => Some((*re, *im)),
        v => as_f64(v).map(|x| (x, 0.0)),
    }
}

fn as_i128(v: &HostValue) -> Option<i128> {
    match v {
        HostValue::Int(i) => Some(i128::from(*i)),
        HostValue::UInt(u) => Some(i128::from(*u)),
        HostValue::Bool(b) => Some(i128::from(*b)),
        _ => None,
    }
}

/// Writes `v` as a `t` at `bytes[off..]` in the C++ layout.
pub(crate) fn pack(t: &Type, v: &HostValue, bytes: &mut [u8], off: usize) -> Result<(), HostError> {
    let mismatch = || arg_err(format!("expected a value of type {t}, got {v}"));
    match t {
        Type::None => Ok(()),
        Type::Scalar(s) => pack_scalar(*s, v, bytes, off).ok_or_else(mismatch)?,
        Type::WarpMask => pack_scalar(Scalar::Int32, v, bytes, off).ok_or_else(mismatch)?,
        Type::Tuple(_) | Type::Vector { .. } | Type::Struct(_) => {
            let elems = elements(t).ok_or_else(mismatch)?;
            // A struct goes in as it comes out, a `HostValue::Struct` of the same class with
            // its fields named in order; a tuple or vector as a `HostValue::Tuple`.
            let items: Vec<&HostValue> = match (t, v) {
                (Type::Struct(st), HostValue::Struct { name, fields }) => {
                    let names_match = *name == st.name
                        && fields.len() == st.fields.len()
                        && fields.iter().zip(&st.fields).all(|((a, _), (b, _))| a == b);
                    if !names_match {
                        return Err(arg_err(format!(
                            "expected a `{}` with fields ({}), got {v}",
                            st.name,
                            st.fields
                                .iter()
                                .map(|(n, _)| n.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                    fields.iter().map(|(_, v)| v).collect()
                }
                (Type::Tuple(_) | Type::Vector { .. }, HostValue::Tuple(items)) => {
                    items.iter().collect()
                }
                _ => return Err(mismatch()),
            };
            if items.len() != elems.len() {
                return Err(mismatch());
            }
            let offsets = crate::abi::field_offsets(t);
            for ((et, f), item) in elems.iter().zip(&offsets).zip(items) {
                pack(et, item, bytes, off + *f as usize)?;
            }
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

fn pack_scalar(
    s: Scalar,
    v: &HostValue,
    bytes: &mut [u8],
    off: usize,
) -> Option<Result<(), HostError>> {
    let data: Vec<u8> = match s {
        Scalar::Complex64 => {
            let (re, im) = as_complex(v)?;
            let mut b = (re as f32).to_le_bytes().to_vec();
            b.extend((im as f32).to_le_bytes());
            b
        }
        Scalar::Complex128 => {
            let (re, im) = as_complex(v)?;
            let mut b = re.to_le_bytes().to_vec();
            b.extend(im.to_le_bytes());
            b
        }
        Scalar::Float8E4M3 => vec![crate::types::fp8::E4M3.encode(as_f64(v)?)],
        Scalar::Float8E5M2 => vec![crate::types::fp8::E5M2.encode(as_f64(v)?)],
        Scalar::Bool => match v {
            HostValue::Bool(b) => vec![u8::from(*b)],
            _ => return None,
        },
        Scalar::Float32 => (as_f64(v)? as f32).to_le_bytes().to_vec(),
        Scalar::Float64 => as_f64(v)?.to_le_bytes().to_vec(),
        Scalar::Float16 => f16_bits(round_f16(as_f64(v)?)).to_le_bytes().to_vec(),
        Scalar::BFloat16 => ((round_bf16(as_f64(v)?).to_bits() >> 16) as u16)
            .to_le_bytes()
            .to_vec(),
        s => {
            let i = as_i128(v)?;
            if !crate::ir::literal_fits(crate::ir::Literal::Int(i), s) {
                return Some(Err(arg_err(format!("{i} does not fit in {s}"))));
            }
            let all = (i as u64).to_le_bytes();
            all[..s.size() as usize].to_vec()
        }
    };
    Some(put(bytes, off, &data))
}

/// Reads a `t` from `bytes[off..]`.
pub(crate) fn unpack(t: &Type, bytes: &[u8], off: usize) -> Result<HostValue, HostError> {
    Ok(match t {
        Type::None => HostValue::None,
        Type::Scalar(s) => unpack_scalar(*s, bytes, off)?,
        Type::WarpMask => unpack_scalar(Scalar::Int32, bytes, off)?,
        Type::Tuple(_) | Type::Vector { .. } | Type::Struct(_) => {
            let elems = elements(t).ok_or_else(|| arg_err(format!("cannot read {t}")))?;
            let offsets = crate::abi::field_offsets(t);
            let mut items = Vec::new();
            for (et, f) in elems.iter().zip(&offsets) {
                items.push(unpack(et, bytes, off + *f as usize)?);
            }
            match t {
                Type::Struct(st) => HostValue::Struct {
                    name: st.name.clone(),
                    fields: st
                        .fields
                        .iter()
                        .map(|(n, _)| n.clone())
                        .zip(items)
                        .collect(),
                },
                _ => HostValue::Tuple(items),
            }
        }
        _ => return Err(arg_err(format!("cannot read a {t} on the host"))),
    })
}

fn unpack_scalar(s: Scalar, bytes: &[u8], off: usize) -> Result<HostValue, HostError> {
    Ok(match s {
        Scalar::Bool => HostValue::Bool(get::<1>(bytes, off)?[0] != 0),
        Scalar::Int8 => HostValue::Int(i64::from(i8::from_le_bytes(get(bytes, off)?))),
        Scalar::Int16 => HostValue::Int(i64::from(i16::from_le_bytes(get(bytes, off)?))),
        Scalar::Int32 => HostValue::Int(i64::from(i32::from_le_bytes(get(bytes, off)?))),
        Scalar::Int64 => HostValue::Int(i64::from_le_bytes(get(bytes, off)?)),
        Scalar::UInt8 => HostValue::UInt(u64::from(get::<1>(bytes, off)?[0])),
        Scalar::UInt16 => HostValue::UInt(u64::from(u16::from_le_bytes(get(bytes, off)?))),
        Scalar::UInt32 => HostValue::UInt(u64::from(u32::from_le_bytes(get(bytes, off)?))),
        Scalar::UInt64 => HostValue::UInt(u64::from_le_bytes(get(bytes, off)?)),
        Scalar::Float16 => HostValue::Float32(f16_value(u16::from_le_bytes(get(bytes, off)?))),
        Scalar::BFloat16 => HostValue::Float32(f32::from_bits(
            u32::from(u16::from_le_bytes(get(bytes, off)?)) << 16,
        )),
        Scalar::Float32 => HostValue::Float32(f32::from_le_bytes(get(bytes, off)?)),
        Scalar::Float64 => HostValue::Float64(f64::from_le_bytes(get(bytes, off)?)),
        Scalar::Complex64 => HostValue::Complex64(
            f32::from_le_bytes(get(bytes, off)?),
            f32::from_le_bytes(get(bytes, off + 4)?),
        ),
        Scalar::Complex128 => HostValue::Complex128(
            f64::from_le_bytes(get(bytes, off)?),
            f64::from_le_bytes(get(bytes, off + 8)?),
        ),
        Scalar::Float8E4M3 => {
            HostValue::Float32(crate::types::fp8::E4M3.decode(get::<1>(bytes, off)?[0]) as f32)
        }
        Scalar::Float8E5M2 => {
            HostValue::Float32(crate::types::fp8::E5M2.decode(get::<1>(bytes, off)?[0]) as f32)
        }
    })
}

/// Python's `repr` of a complex number from its parts' float reprs: `(1+2j)`, `2j` (a
/// positive zero real part is left out), `(-0-1j)`, `(nan+infj)`; integral parts lose
/// their `.0`, as Python writes them.
fn complex_repr(re: String, im: String, re_pos_zero: bool) -> String {
    let trim = |s: String| match s.strip_suffix(".0") {
        Some(t) => t.to_string(),
        None => s,
    };
    let (re, im) = (trim(re), trim(im));
    if re_pos_zero {
        return format!("{im}j");
    }
    let sign = if im.starts_with('-') { "" } else { "+" };
    format!("({re}{sign}{im}j)")
}

/// Python's `repr` of a float from Rust's shortest round-trip form (`1e+16`, `nan`).
fn float_repr(s: String) -> String {
    match s.as_str() {
        "NaN" => return "nan".into(),
        "inf" | "-inf" => return s,
        _ => {}
    }
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

impl fmt::Display for HostValue {
    /// Python's `repr`: `True`, `3`, `2.5`, `(1, 2.0)`, `point(x=1.0, y=2.0)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostValue::None => f.write_str("None"),
            HostValue::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            HostValue::Int(i) => write!(f, "{i}"),
            HostValue::UInt(u) => write!(f, "{u}"),
            HostValue::Float32(x) => f.write_str(&float_repr(format!("{x:?}"))),
            HostValue::Float64(x) => f.write_str(&float_repr(format!("{x:?}"))),
            HostValue::Complex64(re, im) => f.write_str(&complex_repr(
                float_repr(format!("{re:?}")),
                float_repr(format!("{im:?}")),
                *re == 0.0 && re.is_sign_positive(),
            )),
            HostValue::Complex128(re, im) => f.write_str(&complex_repr(
                float_repr(format!("{re:?}")),
                float_repr(format!("{im:?}")),
                *re == 0.0 && re.is_sign_positive(),
            )),
            HostValue::Tuple(items) => {
                f.write_str("(")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                if items.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            HostValue::Array { dtype, shape, data } => {
                // Display never fails (`to_string` would panic): an array whose data does
                // not match its shape, or too deep to print, is described instead.
                let fits = crate::abi::array_bytes(shape, dtype.size())
                    .is_some_and(|n| n == data.len() as u64);
                if !fits {
                    return write!(
                        f,
                        "array(<{} bytes, not the size of shape {shape:?}>, dtype={dtype})",
                        data.len()
                    );
                }
                // Too deep to print, or elements the host does not hold (complex, fp8):
                // the shape and dtype only.
                let held = !matches!(
                    dtype,
                    Scalar::Complex64
                        | Scalar::Complex128
                        | Scalar::Float8E4M3
                        | Scalar::Float8E5M2
                );
                if shape.len() > 32 || !held {
                    return write!(f, "array(<shape {shape:?}>, dtype={dtype})");
                }
                // No elements: NumPy's `array([], shape=(2, 0), dtype=...)`. Nested lists
                // would print one `[]` per outer index, unbounded for a shape such as
                // `[2**63, 0]`.
                if data.is_empty() && shape.len() > 1 {
                    return write!(f, "array([], shape={shape:?}, dtype={dtype})");
                }
                f.write_str("array(")?;
                let mut at = 0;
                write_nested(f, *dtype, shape, data, &mut at)?;
                write!(f, ", dtype={dtype})")
            }
            HostValue::Struct { name, fields } => {
                write!(f, "{name}(")?;
                for (i, (n, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{n}={v}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// NumPy-like nested lists of an array's elements.
fn write_nested(
    f: &mut fmt::Formatter<'_>,
    dtype: Scalar,
    shape: &[u64],
    data: &[u8],
    at: &mut usize,
) -> fmt::Result {
    let Some((n, rest)) = shape.split_first() else {
        let v = unpack_scalar(dtype, data, *at).map_err(|_| fmt::Error)?;
        *at += dtype.size() as usize;
        return write!(f, "{v}");
    };
    f.write_str("[")?;
    for i in 0..*n {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_nested(f, dtype, rest, data, at)?;
    }
    f.write_str("]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_arrays_with_huge_dimensions_print_in_bounded_text() {
        let v = HostValue::Array {
            dtype: Scalar::Float32,
            // 2**60 rows of none: a valid size (0 bytes) whose nested lists would be
            // 2**60 `[]`s.
            shape: vec![1 << 60, 0],
            data: vec![],
        };
        assert_eq!(
            v.to_string(),
            format!("array([], shape=[{}, 0], dtype=float32)", 1u64 << 60)
        );
    }

    #[test]
    fn floats_print_as_python_repr() {
        let r = |x: f64| HostValue::Float64(x).to_string();
        assert_eq!(r(2.5), "2.5");
        assert_eq!(r(1.0), "1.0");
        assert_eq!(r(1e16), "1e+16");
        assert_eq!(r(1.5e-7), "1.5e-07");
        assert_eq!(r(f64::NAN), "nan");
        assert_eq!(r(f64::NEG_INFINITY), "-inf");
        assert_eq!(HostValue::Float32(0.1).to_string(), "0.1");
        assert_eq!(
            HostValue::Tuple(vec![HostValue::Int(1), HostValue::Float64(2.0)]).to_string(),
            "(1, 2.0)"
        );
        assert_eq!(
            HostValue::Tuple(vec![HostValue::Bool(true)]).to_string(),
            "(True,)"
        );
    }

    #[test]
    fn arrays_of_elements_the_host_does_not_hold_display_their_shape() {
        // Found by tests/proptest_api.rs: `to_string` panicked on a 0-d complex64 array.
        let v = HostValue::Array {
            dtype: Scalar::Complex64,
            shape: vec![],
            data: vec![0; 8],
        };
        assert_eq!(v.to_string(), "array(<shape []>, dtype=complex64)");
    }
}
