//! Fuzzes the signature parser (`parse_signature`, `parse_type`: numba notation, tuples,
//! records) and what is done with its result: any input must give types or an error, never a
//! panic, an abort or a stack overflow; parsed types are valid (`Type::validate`) and their
//! layouts and packers total. Run with `cargo fuzz run signature` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pydevice_fuzz::signature(data));
