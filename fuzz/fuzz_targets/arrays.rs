//! Fuzzes the readers of untrusted array descriptions: `.npy` files (numbers and structured
//! dtypes), CUDA Array Interface dictionaries (JSON) and DLPack tensors (the fields of a
//! `DLTensor` taken from the input; data pointers are never dereferenced). Any input must give
//! an array or an error, never a panic, and an accepted array's sizes never overflow: a
//! `.npy` array's data is as long as its shape says, and a device array passes its own checks.
//! Run with `cargo fuzz run arrays` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pydevice::runtime::dlpack::{DLDataType, DLDevice, DLTensor};
use pydevice::runtime::npy::{NpyArray, checked_size};
use pydevice::runtime::records::NpyRecords;
use pydevice::runtime::{CudaArrayInterface, DeviceArray};

fn u64_at(d: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    for (k, x) in b.iter_mut().enumerate() {
        *x = d.get(i + k).copied().unwrap_or(0);
    }
    u64::from_le_bytes(b)
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 3 {
        0 => {
            if let Ok(a) = NpyArray::parse(rest) {
                let want = checked_size(&a.shape, a.dtype.size()).expect("accepted shape");
                assert_eq!(a.data.len() as u64, want);
                let _ = a.element_strides();
                let _ = NpyArray::parse(&a.to_bytes()).expect("round trip");
            }
            if let Ok(r) = NpyRecords::parse(rest) {
                let _ = r.element_strides();
                let _ = r.to_bytes();
            }
        }
        1 => {
            let Ok(text) = std::str::from_utf8(rest) else {
                return;
            };
            if let Ok(c) = CudaArrayInterface::from_json(text)
                && let Ok(a) = c.to_array()
            {
                a.check().expect("an accepted CAI array passes its checks");
                let _ = a.array_type();
                let _ = CudaArrayInterface::from_array(&a);
            }
        }
        _ => {
            // A DLPack tensor: ndim up to 8, shape and strides from the input.
            let ndim = (u64_at(rest, 0) % 9) as usize;
            let mut shape: Vec<i64> = (0..ndim).map(|d| u64_at(rest, 8 + 8 * d) as i64).collect();
            let mut strides: Vec<i64> =
                (0..ndim).map(|d| u64_at(rest, 72 + 8 * d) as i64).collect();
            let flags = u64_at(rest, 136);
            let t = DLTensor {
                data: u64_at(rest, 144) as usize as *mut std::ffi::c_void,
                device: DLDevice {
                    device_type: (flags & 0xf) as i32,
                    device_id: ((flags >> 4) & 3) as i32,
                },
                ndim: if flags & 0x40 != 0 {
                    -(ndim as i32)
                } else {
                    ndim as i32
                },
                dtype: DLDataType {
                    code: ((flags >> 8) & 0xf) as u8,
                    bits: (flags >> 16) as u8,
                    lanes: (flags >> 24) as u16,
                },
                shape: shape.as_mut_ptr(),
                strides: if flags & 0x80 != 0 {
                    std::ptr::null_mut()
                } else {
                    strides.as_mut_ptr()
                },
                byte_offset: u64_at(rest, 152),
            };
            // SAFETY: shape and strides hold `ndim` values and outlive the call; the data
            // pointer is never dereferenced.
            if let Ok(a) = unsafe { DeviceArray::from_dlpack(&t) } {
                a.check()
                    .expect("an accepted DLPack array passes its checks");
                let _ = a.array_type();
            }
        }
    }
});
