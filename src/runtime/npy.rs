//! Reading and writing NumPy `.npy` files (format versions 1 to 3) for the arrays the CLI
//! passes to kernels: any dtype the compiler knows, any number of dimensions, C or Fortran
//! order, little-endian.
//!
//! Every size computed from a header is checked ([`checked_size`]): a shape whose byte size,
//! element count or dense strides would not fit in `i64` is an error, never a wrapped size.
//!
//! Why not a crate: `npyz` (the maintained fork of `npy-rs`) parses structured `descr`s, but
//! its documented reading API yields elements of Rust types known at compile time (its
//! derive), while these records are defined at run time by a kernel's `@struct` and travel to
//! the device as their raw bytes with NumPy's offsets and padding (`runtime::records`);
//! `ndarray-npy` reads plain numbers only (judged from their documentation, not tried). Either would replace the header parsing (about 100 lines here) and leave the layout
//! code, so the reader stays ours, fuzzed (`fuzz/fuzz_targets/arrays.rs`).

use crate::types::Scalar;
use std::fmt;

/// An array read from (or to be written to) a `.npy` file.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// Element type.
    pub dtype: Scalar,
    /// Extent of each dimension.
    pub shape: Vec<u64>,
    /// True when stored in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The raw little-endian element bytes, in storage order.
    pub data: Vec<u8>,
}

/// A malformed or unsupported `.npy` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyError(pub String);

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NpyError {}

pub(super) fn descr_scalar(d: &str) -> Option<Scalar> {
    let d = d.trim_start_matches(['<', '|', '=']);
    Some(match d {
        "b1" => Scalar::Bool,
        "i1" => Scalar::Int8,
        "i2" => Scalar::Int16,
        "i4" => Scalar::Int32,
        "i8" => Scalar::Int64,
        "u1" => Scalar::UInt8,
        "u2" => Scalar::UInt16,
        "u4" => Scalar::UInt32,
        "u8" => Scalar::UInt64,
        "f2" => Scalar::Float16,
        "f4" => Scalar::Float32,
        "f8" => Scalar::Float64,
        "c8" => Scalar::Complex64,
        "c16" => Scalar::Complex128,
        _ => return None,
    })
}

/// The size in bytes of an array of `shape` with `itemsize`-byte elements, or `None` when
/// it, the element count or any stride (in bytes, with every extent counted as at least 1)
/// does not fit in `i64`: the bound NumPy itself puts on shapes (`npy_intp`), and what keeps
/// every size and offset computed from a shape read from a file free of overflow.
pub fn checked_size(shape: &[u64], itemsize: u64) -> Option<u64> {
    crate::abi::array_bytes(shape, itemsize)
}

/// Extracts the value text of `'key':` from the header dict.
pub(super) fn header_value<'a>(h: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("'{key}':");
    let start = h.find(&pat)? + pat.len();
    let rest = h[start..].trim_start();
    if let Some(r) = rest.strip_prefix('(') {
        return Some(&r[..r.find(')')?]);
    }
    if let Some(r) = rest.strip_prefix('\'') {
        return Some(&r[..r.find('\'')?]);
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

impl NpyArray {
    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.shape.iter().product()
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Strides in elements for the storage order (saturating for a shape too large to
    /// parse, which no parsed array has).
    pub fn element_strides(&self) -> Vec<i64> {
        element_strides(&self.shape, self.fortran_order)
    }

    /// Parses the bytes of a `.npy` file.
    pub fn parse(bytes: &[u8]) -> Result<NpyArray, NpyError> {
        let e = |m: &str| NpyError(m.to_string());
        let (header, hstart, hlen) = split_header(bytes)?;
        let descr = header_value(header, "descr").ok_or_else(|| e("header has no descr"))?;
        if descr.starts_with('>') && !descr.ends_with("1") {
            return Err(e("big-endian arrays are not supported"));
        }
        let dtype = descr_scalar(descr).ok_or_else(|| {
            let hint = if header.contains("'descr': [") {
                " (a structured dtype: read it with `runtime::records::NpyRecords`)"
            } else {
                ""
            };
            NpyError(format!("unsupported dtype `{descr}`{hint}"))
        })?;
        let (shape, fortran_order) = header_shape(header)?;
        let data = bytes[hstart + hlen..].to_vec();
        let a = NpyArray {
            dtype,
            shape,
            fortran_order,
            data,
        };
        let want = checked_size(&a.shape, dtype.size())
            .ok_or_else(|| NpyError(format!("shape {:?} is too large", a.shape)))?;
        if (a.data.len() as u64) < want {
            return Err(e("file is shorter than its shape says"));
        }
        Ok(NpyArray {
            data: a.data[..want as usize].to_vec(),
            ..a
        })
    }
}

/// Strides in elements of a dense array of `shape` in C or Fortran order, saturating.
pub(super) fn element_strides(shape: &[u64], fortran_order: bool) -> Vec<i64> {
    let n = shape.len();
    let mut s = vec![1i64; n];
    let ext = |d: u64| i64::try_from(d.max(1)).unwrap_or(i64::MAX);
    if fortran_order {
        for d in 1..n {
            s[d] = s[d - 1].saturating_mul(ext(shape[d - 1]));
        }
    } else {
        for d in (0..n.saturating_sub(1)).rev() {
            s[d] = s[d + 1].saturating_mul(ext(shape[d + 1]));
        }
    }
    s
}

/// The header text of a `.npy` file, where it starts and its length.
pub(super) fn split_header(bytes: &[u8]) -> Result<(&str, usize, usize), NpyError> {
    let e = |m: &str| NpyError(m.to_string());
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(e("not a .npy file (bad magic)"));
    }
    let (hlen, hstart) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(e("truncated header"));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(NpyError(format!("unsupported .npy version {v}"))),
    };
    let header = std::str::from_utf8(
        bytes
            .get(hstart..hstart + hlen)
            .ok_or_else(|| e("truncated header"))?,
    )
    .map_err(|_| e("header is not text"))?;
    Ok((header, hstart, hlen))
}

/// The `shape` and `fortran_order` entries of a header.
pub(super) fn header_shape(header: &str) -> Result<(Vec<u64>, bool), NpyError> {
    let e = |m: &str| NpyError(m.to_string());
    let fortran_order = header_value(header, "fortran_order")
        .ok_or_else(|| e("header has no fortran_order"))?
        == "True";
    let shape_text = header_value(header, "shape").ok_or_else(|| e("header has no shape"))?;
    let shape = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u64>()
                .map_err(|_| NpyError(format!("bad shape `{shape_text}`")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if checked_size(&shape, 1).is_none() {
        return Err(NpyError(format!("shape `{shape_text}` is too large")));
    }
    Ok((shape, fortran_order))
}

impl NpyArray {
    /// The bytes of a version-1 `.npy` file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let descr = format!("'{}'", self.dtype.numpy_descr());
        npy_bytes(&descr, &self.shape, self.fortran_order, &self.data)
    }
}

/// A version-1 `.npy` file: the header (`descr` written as Python would, e.g. `'<f4'` or a
/// list of fields), padded with spaces so that the data starts on a 64-byte boundary, then
/// the data.
pub(crate) fn npy_bytes(descr: &str, shape: &[u64], fortran_order: bool, data: &[u8]) -> Vec<u8> {
    let shape = match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': {descr}, 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran_order { "True" } else { "False" }
    );
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat(total.div_ceil(64) * 64 - total));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let a = NpyArray {
            dtype: Scalar::Float32,
            shape: vec![2, 3],
            fortran_order: true,
            data: (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect(),
        };
        let b = NpyArray::parse(&a.to_bytes()).unwrap();
        assert_eq!(a, b);
        assert_eq!(b.element_strides(), vec![1, 2]);
        assert_eq!(
            NpyArray {
                fortran_order: false,
                ..b
            }
            .element_strides(),
            vec![3, 1]
        );
        assert_eq!(a.to_bytes().len() % 64, 24);
    }

    #[test]
    fn reads_numpy_float16() {
        let a = NpyArray {
            dtype: Scalar::Float16,
            shape: vec![3],
            fortran_order: false,
            data: vec![0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c],
        };
        let bytes = a.to_bytes();
        assert!(String::from_utf8_lossy(&bytes).contains("'descr': '<f2'"));
        assert_eq!(NpyArray::parse(&bytes).unwrap(), a);
    }

    #[test]
    fn reads_numpy_complex() {
        for (dtype, descr, size) in [
            (Scalar::Complex64, "'<c8'", 8),
            (Scalar::Complex128, "'<c16'", 16),
        ] {
            let a = NpyArray {
                dtype,
                shape: vec![2],
                fortran_order: false,
                data: (0..2 * size).map(|i| i as u8).collect(),
            };
            let bytes = a.to_bytes();
            assert!(String::from_utf8_lossy(&bytes).contains(descr));
            assert_eq!(NpyArray::parse(&bytes).unwrap(), a);
        }
    }

    #[test]
    fn shapes_whose_size_overflows_are_rejected() {
        // 2**62 float32 elements: 2**64 bytes, which wrapped to 0 and was accepted.
        for shape in [
            vec![1u64 << 62],
            vec![1 << 61, 1 << 3],
            vec![0, 1 << 62, 1 << 62],
            vec![u64::MAX],
        ] {
            // A 128-byte body, as in the report.
            let bytes = npy_bytes("'<f4'", &shape, false, &[0u8; 128]);
            let e = NpyArray::parse(&bytes).unwrap_err().to_string();
            assert!(e.contains("too large"), "{shape:?}: {e}");
        }
        assert_eq!(checked_size(&[1 << 61], 4), None);
        assert_eq!(checked_size(&[0, 1 << 40, 1 << 40], 8), None);
        assert_eq!(checked_size(&[3, 0], 8), Some(0));
        assert_eq!(checked_size(&[], 8), Some(8));
    }

    #[test]
    fn rejects_garbage() {
        assert!(NpyArray::parse(b"hello").is_err());
        let mut bytes = NpyArray {
            dtype: Scalar::Int32,
            shape: vec![4],
            fortran_order: false,
            data: vec![0; 16],
        }
        .to_bytes();
        bytes.truncate(bytes.len() - 4);
        assert!(NpyArray::parse(&bytes).is_err());
    }
}
