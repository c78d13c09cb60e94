//! Arrays from anywhere: a typed description of device memory ([`DeviceArray`]) that every
//! argument source converts to (the library's own buffers, raw pointers, DLPack tensors,
//! CUDA Array Interface dictionaries), and from which a kernel argument
//! ([`ArgValue::Array`]) is made after checking it against the parameter.
//!
//! [`ArraySource`] is the spec's choice between sources: an object offering both DLPack and
//! `__cuda_array_interface__` is read through DLPack.
//!
//! Nothing here touches the driver or dereferences device pointers; conversions only read the
//! descriptions, so they work (and are tested) without a GPU.

use super::RuntimeError;
use super::cai::CudaArrayInterface;
use super::dlpack::DLTensor;
use crate::abi::{ArgValue, ArrayArg, ParamAbi, pack};
use crate::types::{Layout, Scalar, Type};

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
        if let Some(records) = super::records::bytes_as_records(self, param) {
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

/// Where an array argument comes from.
#[derive(Clone, Debug)]
pub enum ArraySource {
    /// A DLPack tensor (for a `DLManagedTensor`, a pointer to its `dl_tensor` field). The
    /// caller keeps ownership and calls the deleter once the kernel is done.
    Dlpack(*const DLTensor),
    /// A `__cuda_array_interface__` description.
    Cai(CudaArrayInterface),
    /// A pointer with dtype, shape and strides given directly (the library's own buffers, or
    /// any raw device pointer).
    Raw(DeviceArray),
}

impl ArraySource {
    /// The source to read an object through when it offers `dlpack` and/or `cai`: DLPack when
    /// it offers both, as the spec says; `None` when it offers neither (the object is not a
    /// heterogeneous array).
    pub fn choose(
        dlpack: Option<*const DLTensor>,
        cai: Option<CudaArrayInterface>,
    ) -> Option<ArraySource> {
        match (dlpack, cai) {
            (Some(t), _) => Some(ArraySource::Dlpack(t)),
            (None, Some(c)) => Some(ArraySource::Cai(c)),
            (None, None) => None,
        }
    }

    /// Reads the description.
    ///
    /// # Safety
    /// For [`ArraySource::Dlpack`], as for [`DeviceArray::from_dlpack`]: the pointer must be
    /// null or point to a valid `DLTensor` whose `shape` (and `strides`, when not null) point to
    /// `ndim` integers.
    pub unsafe fn array(&self) -> Result<DeviceArray, RuntimeError> {
        match self {
            // SAFETY: the caller's promise.
            ArraySource::Dlpack(t) => unsafe { DeviceArray::from_dlpack(*t) },
            ArraySource::Cai(c) => c.to_array(),
            ArraySource::Raw(a) => Ok(a.clone()),
        }
    }

    /// Reads the description and makes the argument for `param`.
    ///
    /// # Safety
    /// As for [`ArraySource::array`].
    pub unsafe fn to_arg(&self, param: &ParamAbi) -> Result<ArgValue, RuntimeError> {
        // SAFETY: the caller's promise.
        unsafe { self.array() }?.to_arg(param)
    }
}
