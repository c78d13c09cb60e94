//! Arrays from anywhere, as kernel arguments. Every source (the library's own buffers, raw
//! pointers, DLPack tensors, CUDA Array Interface dictionaries) converts to a typed
//! description of device memory, [`DeviceArray`] (defined in `device_array`, the bottom of
//! the array modules, and re-exported here), from which a kernel argument
//! ([`ArgValue::Array`]) is made after checking it against the parameter.
//!
//! [`ArraySource`] is the spec's choice between sources: an object offering both DLPack and
//! `__cuda_array_interface__` is read through DLPack. It and the CAI argument (which may be
//! an array of records) sit here, above `dlpack`, `cai` and `records`, so those import only
//! downward.
//!
//! Nothing here touches the driver or dereferences device pointers; conversions only read the
//! descriptions, so they work (and are tested) without a GPU.

pub use super::device_array::{DeviceArray, c_strides};

use super::RuntimeError;
use super::cai::CudaArrayInterface;
use super::dlpack::DLTensor;
use super::records;
use crate::abi::{ArgValue, ParamAbi};

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

impl CudaArrayInterface {
    /// Checks and converts the description and makes the argument for `param`. Arrays of
    /// records (a `|Vn` typestr with a `descr` of fields) go to a parameter whose dtype is
    /// the same record ([`records::cai_record_arg`]).
    pub fn to_arg(&self, param: &ParamAbi) -> Result<ArgValue, RuntimeError> {
        let record_param = param
            .ty
            .as_array()
            .is_some_and(|a| matches!(a.dtype, crate::types::DType::Struct(_)));
        if record_param || records::cai_record(self).is_some() {
            return records::cai_record_arg(self, param);
        }
        self.to_array()?.to_arg(param)
    }
}
