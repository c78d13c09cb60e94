//! Fuzzes the whole compiler, source → PTX: any input must give PTX or diagnostics, never a
//! panic or an abort. Run with `cargo fuzz run compile` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pydevice_fuzz::compile(data));
