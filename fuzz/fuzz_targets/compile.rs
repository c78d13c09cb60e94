//! Fuzzes the whole compiler, source → PTX: any input must give PTX or diagnostics, never a
//! panic or an abort. Run with `cargo fuzz run compile` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pydevice::types::{Layout, Scalar, Type};
use pydevice::{CompileOptions, Module};

fuzz_target!(|data: &[u8]| {
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
});
