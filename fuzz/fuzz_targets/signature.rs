//! Fuzzes the signature parser (`parse_signature`, `parse_type`: numba notation, tuples,
//! records) and what is done with its result: any input must give types or an error, never a
//! panic, an abort or a stack overflow; parsed types are valid (`Type::validate`) and their
//! layouts and packers total. Run with `cargo fuzz run signature` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pydevice::abi::{ArgValue, layout_of, pack};
use pydevice::types::signature::{parse_signature, parse_type};

fuzz_target!(|data: &[u8]| {
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
});
