//! A typed description of device memory ([`DeviceArray`]) that every argument source
//! converts to (the library's own buffers, raw pointers, DLPack tensors, CUDA Array Interface
//! dictionaries), and the kernel argument ([`ArgValue::Array`]) made from it after checking
//! it against the parameter, a `uint8` array standing for an array of records included
//! ([`bytes_as_records`]). The sources build on this module (`dlpack`, `cai`, `records`,
//! and `array`'s `ArraySource`), never the other way round.
//!
//! Nothing here touches the driver or dereferences device pointers.

use super::RuntimeError;
use crate::abi::{ArgValue, ArrayArg, ParamAbi, layout_of, pack};
use crate::types::{DType, Layout, Scalar, Type};

/// A typed view of device memory: what any argument source describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceArray {
    /// Device address of element `[0, 0, ...]` (any byte offset already applied).
    pub data: u64,
    /// Element type.
    pub dtype: Scalar,
    /// Extent of each dimension.
    pub shape: Vec<u64>,
    /// Distance between consecutive elements of each dimension, in elements (may be
    /// negative).
    pub strides: Vec<i64>,
    /// True when the producer marked the memory read-only (CAI `data[1]`, DLPack's
    /// `DLPACK_FLAG_BITMASK_READ_ONLY`). Kept for the caller: the launch does not check it.
    pub readonly: bool,
    /// The CUDA device ordinal the memory belongs to, when the source says (DLPack `kDLCUDA`);
    /// `None` for managed memory and CAI, which does not say.
    pub device: Option<i32>,
}

/// Row-major (C order) strides, in elements, for a shape.
pub fn c_strides(shape: &[u64]) -> Vec<i64> {
    super::npy::element_strides(shape, false)
}

impl DeviceArray {
    /// A C-contiguous array at `data`.
    pub fn contiguous(data: u64, dtype: Scalar, shape: &[u64]) -> DeviceArray {
        DeviceArray {
            data,
            dtype,
            shape: shape.to_vec(),
            strides: c_strides(shape),
            readonly: false,
            device: None,
        }
    }

    /// Checks that the description is consistent and that every size and offset computed
    /// from it fits in `i64`: as many strides as extents, each extent and the element count,
    /// and the distance in bytes between the first and last elements; and that the data
    /// address is not null and the elements do not wrap the address space
    /// ([`crate::abi::check_array`]). Every source
    /// (DLPack, CAI) checks this before handing out an array, and [`DeviceArray::to_arg`]
    /// checks it again, since the fields are public.
    pub fn check(&self) -> Result<(), RuntimeError> {
        let bad = |why: String| RuntimeError::Argument(why);
        if self.strides.len() != self.shape.len() {
            return Err(bad(format!(
                "the array has {} strides for {} dimensions",
                self.strides.len(),
                self.shape.len()
            )));
        }
        crate::abi::check_array(self.data, &self.shape, &self.strides, self.dtype.size())
            .map_err(RuntimeError::Argument)
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (saturating: [`DeviceArray::check`] rejects a shape whose count
    /// overflows).
    pub fn len(&self) -> u64 {
        self.shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .unwrap_or(u64::MAX)
    }

    /// True when some extent is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The array type a kernel would be specialized for: the dtype and rank, C layout when the
    /// last dimension is unit-stride, F when only the first is, `Any` otherwise (the same rule
    /// the argument packer checks). For dispatching on argument types.
    pub fn array_type(&self) -> Type {
        let n = self.ndim();
        let unit = |d: usize| self.strides.get(d) == Some(&1) || self.shape[d] <= 1;
        let layout = if n > 0 && unit(n - 1) {
            Layout::C
        } else if n > 1 && unit(0) {
            Layout::F
        } else {
            Layout::Any
        };
        Type::array(self.dtype, n.clamp(1, 255) as u8, layout)
    }

    /// The kernel argument for parameter `param`, after checking the dtype, the rank and, for
    /// contiguous parameters (`float32[::1]`), the unit stride.
    pub fn to_arg(&self, param: &ParamAbi) -> Result<ArgValue, RuntimeError> {
        let Some(at) = param.ty.as_array() else {
            return Err(RuntimeError::Argument(format!(
                "`{}` is a {}, not an array, but an array was given",
                param.name, param.ty
            )));
        };
        self.check()?;
        if let Some(records) = bytes_as_records(self, param) {
            return records;
        }
        if at.dtype != self.dtype {
            return Err(RuntimeError::Argument(format!(
                "`{}` is {}, but the array's dtype is {}",
                param.name, param.ty, self.dtype
            )));
        }
        if usize::from(at.ndim) != self.ndim() {
            return Err(RuntimeError::Argument(format!(
                "`{}` is {} ({} dimensions), but the array has {} dimensions (shape {:?})",
                param.name,
                param.ty,
                at.ndim,
                self.ndim(),
                self.shape
            )));
        }
        let value = ArgValue::Array(ArrayArg {
            data: self.data,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
        });
        pack(&param.ty, &value)
            .map_err(|e| RuntimeError::Argument(format!("`{}`: {e}", param.name)))?;
        Ok(value)
    }

    /// Checks that the memory belongs to GPU `ordinal` (when the source said which GPU).
    pub fn check_device(&self, ordinal: usize) -> Result<(), RuntimeError> {
        match self.device {
            Some(d) if d as i64 != ordinal as i64 => Err(RuntimeError::Argument(format!(
                "the array is on GPU {d}, but the kernel runs on GPU {ordinal}"
            ))),
            _ => Ok(()),
        }
    }
}

/// A `uint8` array whose last dimension is one record's bytes (`shape[-1]` = the record
/// size, unit stride), given to a parameter that is an array of records: DLPack has no record
/// dtype, so a record array travels through DLPack as its bytes and takes its layout from the
/// parameter's struct (our ABI). The other dimensions' strides must be whole records.
/// `None` when the parameter is not a record array or the array is not `uint8`.
pub fn bytes_as_records(
    a: &DeviceArray,
    param: &ParamAbi,
) -> Option<Result<ArgValue, RuntimeError>> {
    let at = param.ty.as_array()?;
    let DType::Struct(st) = &at.dtype else {
        return None;
    };
    if a.dtype != Scalar::UInt8 {
        return None;
    }
    let size = layout_of(&Type::Struct(st.clone())).size;
    let n = usize::from(at.ndim);
    let bad = |why: String| {
        Some(Err(RuntimeError::Argument(format!(
            "`{}` is {}: a uint8 array standing for its records needs shape (..., {size}) with              {n} leading dimensions and unit stride in the last; {why}",
            param.name, param.ty
        ))))
    };
    if a.shape.len() != n + 1 || a.shape[n] != size || (a.strides[n] != 1 && size > 1) {
        return bad(format!(
            "got shape {:?} and strides {:?}",
            a.shape, a.strides
        ));
    }
    let mut strides = Vec::new();
    for (d, &s) in a.strides[..n].iter().enumerate() {
        if s % size as i64 != 0 {
            return bad(format!("dimension {d} has stride {s} bytes"));
        }
        strides.push(s / size as i64);
    }
    let arg = ArgValue::Array(ArrayArg {
        data: a.data,
        shape: a.shape[..n].to_vec(),
        strides,
    });
    Some(
        pack(&param.ty, &arg)
            .map(|_| arg)
            .map_err(|e| RuntimeError::Argument(format!("`{}`: {e}", param.name))),
    )
}
