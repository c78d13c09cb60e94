//! The bodies of the cargo-fuzz targets, one function each, so that the fuzzers
//! (`fuzz_targets/*.rs`) and the test suite share them: `tests/it/fuzz_replay.rs` runs every
//! body over the kept seeds (`fuzz/seeds/<target>`) and the language fixtures in every
//! `cargo test`, without cargo-fuzz or its instrumented build. Any input must give a result
//! or an error value, never a panic, an abort or a stack overflow.
//!
//! This file uses only pydevice's public API. The test suite compiles it as a module
//! (`#[path]`), so it must not depend on anything but `pydevice` and `std`.

/// The `signature` target: the signature parser (`parse_signature`, `parse_type`: numba
/// notation, tuples, records) and what is done with its result. Parsed types are valid
/// (`Type::validate`), and their layouts and packers are total.
pub fn signature(data: &[u8]) {
    use pydevice::abi::{ArgValue, layout_of, pack};
    use pydevice::types::signature::{parse_signature, parse_type};

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((args, ret)) = parse_signature(text) {
        for t in args.iter().chain(ret.as_ref()) {
            assert!(t.validate().is_ok(), "parsed an invalid type {t:?}");
            let _ = layout_of(t);
            let _ = pack(t, &ArgValue::Int(1));
            let _ = t.to_string();
        }
    }
    if let Ok(t) = parse_type(text) {
        assert!(t.validate().is_ok(), "parsed an invalid type {t:?}");
        let _ = pack(&t, &ArgValue::Tuple(vec![ArgValue::Float(1.0); 3]));
    }
}

/// The `arrays` target: the readers of untrusted array descriptions: `.npy` files (numbers
/// and structured dtypes), CUDA Array Interface dictionaries (JSON) and DLPack tensors (the
/// fields of a `DLTensor` taken from the input; data pointers are never dereferenced). The
/// first byte picks the reader. An accepted array's sizes never overflow: a `.npy` array's
/// data is as long as its shape says, and a device array passes its own checks.
pub fn arrays(data: &[u8]) {
    use pydevice::runtime::dlpack::{DLDataType, DLDevice, DLTensor};
    use pydevice::runtime::npy::{NpyArray, checked_size};
    use pydevice::runtime::records::NpyRecords;
    use pydevice::runtime::{CudaArrayInterface, DeviceArray};

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
}

fn u64_at(d: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    for (k, x) in b.iter_mut().enumerate() {
        *x = d.get(i + k).copied().unwrap_or(0);
    }
    u64::from_le_bytes(b)
}

/// The `compile` target: the whole compiler, source → check → specialize → PTX, for each
/// entry with three argument-type sets.
pub fn compile(data: &[u8]) {
    use pydevice::types::{Layout, Scalar, Type};
    use pydevice::{CompileOptions, Module};

    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(module) = Module::parse("fuzz.py", src) else {
        return;
    };
    let _ = module.check();
    for entry in module.entries() {
        let n = entry.params.len();
        for ty in [
            Type::array(Scalar::Float32, 1, Layout::Any),
            Type::Scalar(Scalar::Int32),
            Type::array(Scalar::Int64, 2, Layout::C),
        ] {
            if let Ok(spec) = module.specialize(&entry.name, &vec![ty.clone(); n]) {
                let _ = spec.to_ptx(&CompileOptions::default());
            }
        }
    }
}
