//! DLPack: the C structs of `dlpack.h` (v0.8 and v1.x, which share `DLTensor`) and reading a
//! tensor as a [`DeviceArray`].
//!
//! DLPack counts strides in elements, as the kernel ABI does, and a `NULL` `strides` means a
//! compact row-major tensor. The data address is `data + byte_offset`. Only CUDA memory
//! (`kDLCUDA`, `kDLCUDAManaged`) with one lane per element is accepted; every other case is an
//! error value saying why. Nothing here frees a tensor: whoever received the
//! `DLManagedTensor` calls its `deleter` once the kernels using it are done.

use super::RuntimeError;
use super::device_array::{DeviceArray, c_strides};
use crate::abi::{ArgValue, ParamAbi};
use crate::types::Scalar;
use std::ffi::c_void;

/// `kDLCPU`.
pub const DL_CPU: i32 = 1;
/// `kDLCUDA`: CUDA device memory.
pub const DL_CUDA: i32 = 2;
/// `kDLCUDAHost`: pinned host memory.
pub const DL_CUDA_HOST: i32 = 3;
/// `kDLROCM`.
pub const DL_ROCM: i32 = 10;
/// `kDLCUDAManaged`: CUDA managed (unified) memory.
pub const DL_CUDA_MANAGED: i32 = 13;

/// `kDLInt`.
pub const DL_INT: u8 = 0;
/// `kDLUInt`.
pub const DL_UINT: u8 = 1;
/// `kDLFloat`.
pub const DL_FLOAT: u8 = 2;
/// `kDLOpaqueHandle`.
pub const DL_OPAQUE_HANDLE: u8 = 3;
/// `kDLBfloat`.
pub const DL_BFLOAT: u8 = 4;
/// `kDLComplex`.
pub const DL_COMPLEX: u8 = 5;
/// `kDLBool`.
pub const DL_BOOL: u8 = 6;
/// `kDLFloat8_e4m3fn` (DLPack 1.1): `float8e4m3`, CUDA's `__nv_fp8_e4m3`.
pub const DL_FLOAT8_E4M3FN: u8 = 10;
/// `kDLFloat8_e5m2` (DLPack 1.1): `float8e5m2`, CUDA's `__nv_fp8_e5m2`.
pub const DL_FLOAT8_E5M2: u8 = 12;

/// `DLPACK_FLAG_BITMASK_READ_ONLY` of `DLManagedTensorVersioned::flags`.
pub const DLPACK_FLAG_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`.
pub const DLPACK_FLAG_IS_COPIED: u64 = 1 << 1;
/// The DLPack major version whose `DLManagedTensorVersioned` layout this module knows.
pub const DLPACK_MAJOR_VERSION: u32 = 1;

/// `DLDevice`: where the memory is.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DLDevice {
    /// `DLDeviceType` (`DL_CUDA`, ...), an `int32` enum in C.
    pub device_type: i32,
    /// The device ordinal.
    pub device_id: i32,
}

/// `DLDataType`: an element type.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DLDataType {
    /// `DLDataTypeCode` (`DL_FLOAT`, ...).
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes per element (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`: a borrowed description of an array.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct DLTensor {
    /// Base address (for CUDA, a device pointer).
    pub data: *mut c_void,
    /// Where the memory is.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or `NULL` for compact row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor` (DLPack before 1.0, still produced by `__dlpack__()` without
/// `max_version`).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's context for `deleter`.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called by the consumer when done.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLPackVersion`.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DLPackVersion {
    /// Major version (1).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// `DLManagedTensorVersioned` (DLPack 1.x).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The DLPack version of the producer.
    pub version: DLPackVersion,
    /// The producer's context for `deleter`.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called by the consumer when done.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_*` bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

// The layouts of dlpack.h on 64-bit targets.
const _: () = {
    assert!(std::mem::size_of::<DLDevice>() == 8);
    assert!(std::mem::size_of::<DLDataType>() == 4);
    assert!(std::mem::size_of::<DLTensor>() == 48);
    assert!(std::mem::offset_of!(DLTensor, shape) == 24);
    assert!(std::mem::offset_of!(DLTensor, byte_offset) == 40);
    assert!(std::mem::size_of::<DLManagedTensor>() == 64);
    assert!(std::mem::size_of::<DLManagedTensorVersioned>() == 80);
    assert!(std::mem::offset_of!(DLManagedTensorVersioned, dl_tensor) == 32);
};

fn device_name(t: i32) -> &'static str {
    match t {
        1 => "kDLCPU",
        2 => "kDLCUDA",
        3 => "kDLCUDAHost",
        4 => "kDLOpenCL",
        7 => "kDLVulkan",
        8 => "kDLMetal",
        9 => "kDLVPI",
        10 => "kDLROCM",
        11 => "kDLROCMHost",
        12 => "kDLExtDev",
        13 => "kDLCUDAManaged",
        14 => "kDLOneAPI",
        15 => "kDLWebGPU",
        16 => "kDLHexagon",
        _ => "an unknown device type",
    }
}

/// The scalar a DLPack data type stands for.
pub fn dtype_scalar(t: DLDataType) -> Result<Scalar, RuntimeError> {
    if t.lanes != 1 {
        return Err(RuntimeError::Argument(format!(
            "DLPack dtype has {} lanes; only scalar elements (lanes = 1) are supported",
            t.lanes
        )));
    }
    let bits = u32::from(t.bits);
    let s = match t.code {
        DL_INT => Scalar::int(true, bits),
        DL_UINT => Scalar::int(false, bits),
        DL_FLOAT => Scalar::float(bits),
        DL_BFLOAT if bits == 16 => Some(Scalar::BFloat16),
        DL_BOOL if bits == 8 => Some(Scalar::Bool),
        DL_COMPLEX if bits == 64 => Some(Scalar::Complex64),
        DL_COMPLEX if bits == 128 => Some(Scalar::Complex128),
        DL_FLOAT8_E4M3FN if bits == 8 => Some(Scalar::Float8E4M3),
        DL_FLOAT8_E5M2 if bits == 8 => Some(Scalar::Float8E5M2),
        _ => None,
    };
    s.ok_or_else(|| {
        let kind = match t.code {
            DL_INT => "int",
            DL_UINT => "uint",
            DL_FLOAT => "float",
            DL_BFLOAT => "bfloat",
            DL_COMPLEX => "complex",
            DL_BOOL => "bool",
            7..=13 => "float8 variant",
            DL_OPAQUE_HANDLE => "opaque handle",
            _ => "unknown type code",
        };
        RuntimeError::Argument(format!(
            "DLPack dtype {kind}{} (code {}, {} bits) is not supported by device code",
            t.bits, t.code, t.bits
        ))
    })
}

/// The DLPack data type of a scalar.
pub fn scalar_dtype(s: Scalar) -> DLDataType {
    let code = match s {
        Scalar::Bool => DL_BOOL,
        Scalar::Float8E4M3 => DL_FLOAT8_E4M3FN,
        Scalar::Float8E5M2 => DL_FLOAT8_E5M2,
        Scalar::BFloat16 => DL_BFLOAT,
        s if s.is_complex() => DL_COMPLEX,
        s if s.is_float() => DL_FLOAT,
        s if s.is_signed() => DL_INT,
        _ => DL_UINT,
    };
    DLDataType {
        code,
        bits: s.bits() as u8,
        lanes: 1,
    }
}

impl DeviceArray {
    /// Reads a DLPack tensor: CUDA or CUDA-managed memory, a supported dtype with one lane;
    /// strides computed when `NULL`; `byte_offset` added to the address.
    ///
    /// # Safety
    /// `t` must be null or point to a valid `DLTensor`, whose `shape`, and `strides` when not
    /// null, point to `ndim` readable `int64` values.
    pub unsafe fn from_dlpack(t: *const DLTensor) -> Result<DeviceArray, RuntimeError> {
        // SAFETY: the caller's promise.
        let Some(t) = (unsafe { t.as_ref() }) else {
            return Err(RuntimeError::Argument("the DLPack tensor is NULL".into()));
        };
        let device = match t.device.device_type {
            DL_CUDA => Some(t.device.device_id),
            DL_CUDA_MANAGED => None,
            other => {
                return Err(RuntimeError::Argument(format!(
                    "the DLPack tensor is in {} memory (device type {other}); kernels need CUDA \
                     memory (kDLCUDA = 2 or kDLCUDAManaged = 13)",
                    device_name(other)
                )));
            }
        };
        let dtype = dtype_scalar(t.dtype)?;
        if t.ndim < 0 {
            return Err(RuntimeError::Argument(format!(
                "the DLPack tensor has ndim = {}",
                t.ndim
            )));
        }
        let n = t.ndim as usize;
        if n > 0 && t.shape.is_null() {
            return Err(RuntimeError::Argument(format!(
                "the DLPack tensor has ndim = {n} but a NULL shape"
            )));
        }
        let raw_shape: &[i64] = if n == 0 {
            &[]
        } else {
            // SAFETY: non-null, and the caller promised `ndim` values.
            unsafe { std::slice::from_raw_parts(t.shape, n) }
        };
        let mut shape = Vec::with_capacity(n);
        for (d, &e) in raw_shape.iter().enumerate() {
            if e < 0 {
                return Err(RuntimeError::Argument(format!(
                    "dimension {d} of the DLPack tensor has extent {e}"
                )));
            }
            shape.push(e as u64);
        }
        let strides = if t.strides.is_null() || n == 0 {
            c_strides(&shape)
        } else {
            // SAFETY: non-null, and the caller promised `ndim` values.
            unsafe { std::slice::from_raw_parts(t.strides, n) }.to_vec()
        };
        let empty = shape.contains(&0);
        if t.data.is_null() && !empty {
            return Err(RuntimeError::Argument(
                "the DLPack tensor's data pointer is NULL".into(),
            ));
        }
        let data = (t.data as u64).checked_add(t.byte_offset).ok_or_else(|| {
            RuntimeError::Argument("the DLPack tensor's data + byte_offset overflows".into())
        })?;
        let a = DeviceArray {
            data,
            dtype,
            shape,
            strides,
            readonly: false,
            device,
        };
        a.check()?;
        Ok(a)
    }

    /// Reads a pre-1.0 `DLManagedTensor` (its `dl_tensor`). Ownership stays with the caller.
    ///
    /// # Safety
    /// `t` must be null or point to a valid `DLManagedTensor`, with a tensor as
    /// [`DeviceArray::from_dlpack`] requires.
    pub unsafe fn from_dlpack_managed(
        t: *const DLManagedTensor,
    ) -> Result<DeviceArray, RuntimeError> {
        if t.is_null() {
            return Err(RuntimeError::Argument(
                "the DLPack managed tensor is NULL".into(),
            ));
        }
        // SAFETY: non-null; the caller promised the rest. `addr_of!` avoids making a reference.
        unsafe { DeviceArray::from_dlpack(std::ptr::addr_of!((*t).dl_tensor)) }
    }

    /// Reads a DLPack 1.x `DLManagedTensorVersioned`: checks the major version and takes the
    /// read-only flag. Ownership stays with the caller.
    ///
    /// # Safety
    /// `t` must be null or point to a valid `DLManagedTensorVersioned`, with a tensor as
    /// [`DeviceArray::from_dlpack`] requires.
    pub unsafe fn from_dlpack_versioned(
        t: *const DLManagedTensorVersioned,
    ) -> Result<DeviceArray, RuntimeError> {
        // SAFETY: the caller's promise.
        let Some(m) = (unsafe { t.as_ref() }) else {
            return Err(RuntimeError::Argument(
                "the DLPack managed tensor is NULL".into(),
            ));
        };
        if m.version.major != DLPACK_MAJOR_VERSION {
            return Err(RuntimeError::Argument(format!(
                "DLPack version {}.{} is not supported (major version {DLPACK_MAJOR_VERSION} is)",
                m.version.major, m.version.minor
            )));
        }
        // SAFETY: the caller's promise.
        let mut a = unsafe { DeviceArray::from_dlpack(&m.dl_tensor) }?;
        a.readonly = m.flags & DLPACK_FLAG_READ_ONLY != 0;
        Ok(a)
    }
}

/// Reads a DLPack tensor and makes the argument for `param` (dtype, rank and layout checked).
///
/// # Safety
/// As for [`DeviceArray::from_dlpack`].
pub unsafe fn dlpack_arg(t: *const DLTensor, param: &ParamAbi) -> Result<ArgValue, RuntimeError> {
    // SAFETY: the caller's promise.
    unsafe { DeviceArray::from_dlpack(t) }?.to_arg(param)
}
