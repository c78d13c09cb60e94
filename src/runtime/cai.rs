//! The CUDA Array Interface (version 3, reading versions 0 to 3): the
//! `__cuda_array_interface__` dictionary as a Rust struct, read from its JSON form, and
//! converted to a [`DeviceArray`].
//!
//! Unlike DLPack, CAI counts strides in **bytes** (`None` for C-contiguous); they are divided
//! by the item size, and a stride that is not a multiple of it is an error. Masked arrays are
//! not supported (the spec's arrays have no mask), so a `mask` other than `None` is an error.

use super::RuntimeError;
use super::device_array::{DeviceArray, c_strides};
use crate::types::Scalar;
use serde::{Deserialize, Serialize};

/// A `__cuda_array_interface__` dictionary.
///
/// ```
/// use pydevice::runtime::CudaArrayInterface;
/// let cai = CudaArrayInterface::from_json(
///     r#"{"shape": [4, 3], "typestr": "<f4", "data": [4096, false],
///         "strides": [24, 8], "version": 3}"#,
/// ).unwrap();
/// let a = cai.to_array().unwrap();
/// assert_eq!(a.strides, vec![6, 2]); // bytes / 4
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CudaArrayInterface {
    /// Extent of each dimension.
    pub shape: Vec<u64>,
    /// NumPy type string: byte order (`<`, `|`, `=`), kind and item size (`<f4`, `|b1`).
    pub typestr: String,
    /// `(device pointer, read-only)`.
    pub data: (u64, bool),
    /// Strides in bytes, or `None` for C-contiguous.
    #[serde(default)]
    pub strides: Option<Vec<i64>>,
    /// The interface version (3 is current).
    pub version: u32,
    /// A mask array; must be `None`.
    #[serde(default)]
    pub mask: Option<serde_json::Value>,
    /// The stream the producer last used on the data (version 3): 1 is the legacy default
    /// stream, 2 the per-thread default stream, anything else a `CUstream`; `None` means the
    /// producer needs no synchronization. The consumer should order its work after it.
    #[serde(default)]
    pub stream: Option<u64>,
    /// The structured-type description: for a `|Vn` typestr, the fields as
    /// `[name, typestr]` pairs (arrays of records, `runtime::records`).
    #[serde(default)]
    pub descr: Option<serde_json::Value>,
}

/// The scalar a NumPy type string (`<f4`, `|u1`, `|b1`) stands for.
pub fn typestr_scalar(typestr: &str) -> Result<Scalar, RuntimeError> {
    let bad = |why: &str| {
        RuntimeError::Argument(format!(
            "CUDA Array Interface typestr `{typestr}` is not supported: {why}"
        ))
    };
    let mut chars = typestr.chars();
    let order = chars.next().ok_or_else(|| bad("it is empty"))?;
    match order {
        '<' | '|' | '=' => {}
        '>' => return Err(bad("big-endian data")),
        _ => return Err(bad("it must start with `<`, `|` or `=`")),
    }
    let kind = chars.next().ok_or_else(|| bad("no kind"))?;
    let size: u32 = chars
        .as_str()
        .parse()
        .map_err(|_| bad("no item size after the kind"))?;
    // A size whose bit count overflows is no size (`<i536870913` is not int8).
    let bits = size.checked_mul(8).unwrap_or(0);
    let s = match kind {
        'b' if size == 1 => Some(Scalar::Bool),
        'i' => Scalar::int(true, bits),
        'u' => Scalar::int(false, bits),
        'f' => Scalar::float(bits),
        'c' if size == 8 => Some(Scalar::Complex64),
        'c' if size == 16 => Some(Scalar::Complex128),
        _ => None,
    };
    s.ok_or_else(|| {
        let what = match kind {
            'c' => "this complex width (device code has complex64 and complex128)",
            'f' => "this float width (NumPy's float16, float32 and float64 are supported)",
            'V' => "structured or void types",
            'O' => "Python objects",
            'S' | 'U' => "strings",
            'm' | 'M' => "timedeltas and datetimes",
            _ => "this kind or size",
        };
        bad(&format!("{what} are not supported"))
    })
}

impl CudaArrayInterface {
    /// Reads the JSON form of the dictionary (as `json.dumps` writes it: tuples are lists,
    /// `None` is `null`). Unknown keys are ignored.
    pub fn from_json(text: &str) -> Result<CudaArrayInterface, RuntimeError> {
        serde_json::from_str(text)
            .map_err(|e| RuntimeError::Argument(format!("malformed __cuda_array_interface__: {e}")))
    }

    /// Reads the dictionary from a JSON value.
    pub fn from_value(value: serde_json::Value) -> Result<CudaArrayInterface, RuntimeError> {
        serde_json::from_value(value)
            .map_err(|e| RuntimeError::Argument(format!("malformed __cuda_array_interface__: {e}")))
    }

    /// The description of a [`DeviceArray`] (strides left out when C-contiguous), for
    /// handing the library's memory to another framework.
    pub fn from_array(a: &DeviceArray) -> CudaArrayInterface {
        let strides = if a.strides == c_strides(&a.shape) {
            None
        } else {
            let size = a.dtype.size() as i64;
            Some(a.strides.iter().map(|s| s.saturating_mul(size)).collect())
        };
        CudaArrayInterface {
            shape: a.shape.clone(),
            typestr: a.dtype.numpy_descr().to_string(),
            data: (a.data, a.readonly),
            strides,
            version: 3,
            mask: None,
            stream: None,
            descr: None,
        }
    }

    /// Checks the description and converts it: typestr to dtype, byte strides to element
    /// strides.
    pub fn to_array(&self) -> Result<DeviceArray, RuntimeError> {
        if self.version > 3 {
            return Err(RuntimeError::Argument(format!(
                "CUDA Array Interface version {} is not supported (0 to 3 are)",
                self.version
            )));
        }
        if self.mask.as_ref().is_some_and(|m| !m.is_null()) {
            return Err(RuntimeError::Argument(
                "masked arrays are not supported: the `mask` entry of __cuda_array_interface__ \
                 must be None"
                    .into(),
            ));
        }
        if self.stream == Some(0) {
            return Err(RuntimeError::Argument(
                "__cuda_array_interface__ has stream 0, which version 3 disallows (use 1 for the \
                 legacy default stream or 2 for the per-thread one)"
                    .into(),
            ));
        }
        let dtype = typestr_scalar(&self.typestr)?;
        let itemsize = dtype.size() as i64;
        let strides = match &self.strides {
            None => c_strides(&self.shape),
            Some(bytes) => {
                if bytes.len() != self.shape.len() {
                    return Err(RuntimeError::Argument(format!(
                        "__cuda_array_interface__ has {} strides for {} dimensions",
                        bytes.len(),
                        self.shape.len()
                    )));
                }
                let mut out = Vec::with_capacity(bytes.len());
                for (d, &b) in bytes.iter().enumerate() {
                    if b % itemsize != 0 {
                        return Err(RuntimeError::Argument(format!(
                            "stride {b} bytes of dimension {d} is not a multiple of the item \
                             size ({itemsize} bytes of {dtype}); kernels index whole elements"
                        )));
                    }
                    out.push(b / itemsize);
                }
                out
            }
        };
        let empty = self.shape.contains(&0);
        if self.data.0 == 0 && !empty {
            return Err(RuntimeError::Argument(
                "__cuda_array_interface__ has a NULL data pointer for a non-empty array".into(),
            ));
        }
        let a = DeviceArray {
            data: self.data.0,
            dtype,
            shape: self.shape.clone(),
            strides,
            readonly: self.data.1,
            device: None,
        };
        a.check()?;
        Ok(a)
    }
}
