//! Fuzzes the readers of untrusted array descriptions: `.npy` files (numbers and structured
//! dtypes), CUDA Array Interface dictionaries (JSON) and DLPack tensors (the fields of a
//! `DLTensor` taken from the input; data pointers are never dereferenced). Any input must give
//! an array or an error, never a panic, and an accepted array's sizes never overflow: a
//! `.npy` array's data is as long as its shape says, and a device array passes its own checks.
//! Run with `cargo fuzz run arrays` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pydevice_fuzz::arrays(data));
