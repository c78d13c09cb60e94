//! TMA tensor maps (`CUtensorMap`, sm_90, docs/semantics.md §18.4): the 128-byte
//! description of a global array's tiles that `hopper.tma_load`/`tma_store` read, encoded on
//! the host by the driver (`cuTensorMapEncodeTiled`) from any [`DeviceArray`] (so from a
//! Rust buffer, a DLPack tensor or a CUDA Array Interface array alike).
//!
//! Device code reads the map either from global memory (upload [`TensorMap::bytes`] and pass
//! that array to a `uint64[::1]` parameter) or, by value, from a `hopper.TensorMap` kernel
//! parameter, a `__grid_constant__` (pass [`TensorMap::arg`]: its 128 bytes are packed into
//! the kernel's parameter buffer at a multiple of 64). Dimensions follow the array's order here (`shape`, `box_shape`,
//! outermost first); the driver's and PTX's order is the reverse, so a kernel's coordinates
//! are innermost first (`(col, row)` for a matrix).

use super::error::drv;
use super::{Device, DeviceArray, RuntimeError};
use crate::abi::ArgValue;
use crate::types::Scalar;
use cudarc::driver::sys;

/// An encoded tensor map: 128 bytes, 64-byte aligned on the device.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TensorMap {
    /// The driver's opaque words.
    pub words: [u64; 16],
}

impl TensorMap {
    /// The map as the argument of a `hopper.TensorMap` kernel parameter (§18.4): its 128
    /// bytes, passed by value in the kernel's parameter space (`.param .align 64 .b8 [128]`,
    /// a grid constant), so no device buffer holds it.
    pub fn arg(&self) -> ArgValue {
        ArgValue::Bytes(self.bytes().to_vec())
    }

    /// The map's 128 bytes, to upload (little-endian, as the device reads them).
    pub fn bytes(&self) -> [u8; 128] {
        let mut out = [0u8; 128];
        for (i, w) in self.words.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// The TMA element type of a dtype.
fn data_type(s: Scalar) -> Option<sys::CUtensorMapDataType> {
    use sys::CUtensorMapDataType as T;
    Some(match s {
        Scalar::UInt8 | Scalar::Int8 | Scalar::Bool | Scalar::Float8E4M3 | Scalar::Float8E5M2 => {
            T::CU_TENSOR_MAP_DATA_TYPE_UINT8
        }
        Scalar::UInt16 | Scalar::Int16 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        Scalar::UInt32 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        Scalar::Int32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        Scalar::UInt64 => T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        Scalar::Int64 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
        Scalar::Float16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        Scalar::BFloat16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        Scalar::Float32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        Scalar::Float64 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        Scalar::Complex64 | Scalar::Complex128 => return None,
    })
}

/// Checks a tiled map's description against the driver's documented limits, so a mistake
/// is an error that names it rather than `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn check(a: &DeviceArray, box_shape: &[u32], swizzle: u32) -> Result<(), RuntimeError> {
    let bad = |m: String| Err(RuntimeError::Argument(format!("tensor map: {m}")));
    let rank = a.shape.len();
    if !(1..=5).contains(&rank) {
        return bad(format!(
            "the array has {rank} dimensions; a tensor map has 1 to 5"
        ));
    }
    if box_shape.len() != rank {
        return bad(format!(
            "the box has {} extents for a {rank}-D array",
            box_shape.len()
        ));
    }
    let size = a.dtype.size();
    if a.strides[rank - 1] != 1 {
        return bad("the innermost dimension must be contiguous (stride 1)".into());
    }
    if !a.data.is_multiple_of(16) {
        return bad(format!(
            "the data address {:#x} is not 16-byte aligned",
            a.data
        ));
    }
    for d in 0..rank - 1 {
        let s = a.strides[d];
        if s <= 0 || !(s as u64 * size).is_multiple_of(16) {
            return bad(format!(
                "dimension {d} has a stride of {s} elements; strides are positive multiples of 16 bytes"
            ));
        }
    }
    for (d, &b) in box_shape.iter().enumerate() {
        if !(1..=256).contains(&b) {
            return bad(format!("box extent {b} of dimension {d} is not 1 to 256"));
        }
    }
    let inner = u64::from(box_shape[rank - 1]) * size;
    if !inner.is_multiple_of(16) {
        return bad(format!(
            "the box's innermost extent is {inner} bytes; it must be a multiple of 16"
        ));
    }
    if swizzle != 0 && inner > u64::from(swizzle) {
        return bad(format!(
            "with a {swizzle}-byte swizzle the box's innermost extent ({inner} bytes) may not exceed {swizzle} bytes"
        ));
    }
    Ok(())
}

impl Device {
    /// Encodes a tiled tensor map of array `a` (on this device) whose boxes (the tiles one
    /// `tma_load` moves) have `box_shape` (in the array's order, outermost first) and whose
    /// shared-memory image is swizzled by `swizzle` bytes (0, 32, 64 or 128). Elements
    /// outside the array read as zero.
    pub fn tensor_map_tiled(
        &self,
        a: &DeviceArray,
        box_shape: &[u32],
        swizzle: u32,
    ) -> Result<TensorMap, RuntimeError> {
        a.check()?;
        let dtype = data_type(a.dtype).ok_or_else(|| {
            RuntimeError::Argument(format!("tensor map: no TMA element type for {}", a.dtype))
        })?;
        let sw = match swizzle {
            0 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            n => {
                return Err(RuntimeError::Argument(format!(
                    "tensor map: the swizzle is 0, 32, 64 or 128 bytes, not {n}"
                )));
            }
        };
        check(a, box_shape, swizzle)?;
        let rank = a.shape.len();
        let size = a.dtype.size();
        // The driver's order: innermost first; strides of the outer dimensions in bytes.
        let dims: Vec<u64> = a.shape.iter().rev().copied().collect();
        let strides: Vec<u64> = a.strides[..rank - 1]
            .iter()
            .rev()
            .map(|&s| s as u64 * size)
            .collect();
        let boxes: Vec<u32> = box_shape.iter().rev().copied().collect();
        let ones = vec![1u32; rank];
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        self.s.ctx.bind_to_thread().map_err(drv)?;
        // SAFETY: every pointer names a live vector of `rank` (strides: `rank - 1`) elements
        // and `map` is a writable CUtensorMap; the driver only reads the array's address.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                dtype,
                rank as u32,
                a.data as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                ones.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                sw,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
            .result()
            .map_err(drv)?;
        }
        Ok(TensorMap { words: map.opaque })
    }
}

impl From<TensorMap> for ArgValue {
    /// [`TensorMap::arg`].
    fn from(m: TensorMap) -> ArgValue {
        m.arg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_outside_the_driver_limits_are_refused_with_their_reason() {
        let a = DeviceArray::contiguous(0x1000, Scalar::BFloat16, &[256, 64]);
        assert!(check(&a, &[64, 64], 128).is_ok());
        let e = |r: Result<(), RuntimeError>| r.unwrap_err().to_string();
        assert!(e(check(&a, &[64], 0)).contains("box has 1 extents"));
        assert!(e(check(&a, &[64, 4], 0)).contains("multiple of 16"));
        assert!(e(check(&a, &[512, 64], 0)).contains("not 1 to 256"));
        assert!(e(check(&a, &[64, 128], 128)).contains("may not exceed 128"));
        let odd = DeviceArray::contiguous(0x1000, Scalar::BFloat16, &[256, 3]);
        assert!(e(check(&odd, &[8, 8], 0)).contains("stride of 3"));
        let unaligned = DeviceArray::contiguous(0x1008, Scalar::Float32, &[64]);
        assert!(e(check(&unaligned, &[16], 0)).contains("16-byte aligned"));
        assert_eq!(data_type(Scalar::Complex64), None);
        let m = TensorMap {
            words: [0x0102; 16],
        };
        assert_eq!(m.bytes()[0..2], [2, 1]);
        let ArgValue::Bytes(b) = m.arg() else {
            panic!("a tensor map argument is its bytes");
        };
        assert_eq!(b, m.bytes());
    }
}
