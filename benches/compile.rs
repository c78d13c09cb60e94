//! Compile latency, source → PTX in process: the first compile in the process (cold: LLVM
//! target set-up included) and the median of repeated compiles (warm), for the example
//! kernels. Run with `cargo bench --bench compile`.

use pydevice::types::signature::parse_signature;
use pydevice::{CompileOptions, Module};
use std::time::Instant;

const CASES: &[(&str, &str, &str)] = &[
    (
        "examples/vector_add.py",
        "vector_add",
        "float32[::1], float32[::1], float32[::1]",
    ),
    (
        "tests/fixtures/lang/saxpy_scalar.py",
        "saxpy",
        "float32, float32[:], float32[:], float32[:]",
    ),
    (
        "tests/fixtures/lang/transpose_2d.py",
        "transpose",
        "float32[:, :], float32[:, :]",
    ),
    (
        "tests/fixtures/lang/integer_semantics.py",
        "intops",
        "int32[:], int32[:], int32[:, :]",
    ),
    (
        "tests/fixtures/lang/func_chain.py",
        "apply",
        "float32[:], float32[:]",
    ),
    (
        "tests/fixtures/lang/float_division.py",
        "fdiv",
        "float32[:], float32[:], float32[:, :]",
    ),
];

fn compile_once(src: &str, entry: &str, sig: &str) -> usize {
    let module = Module::parse(entry, src).expect("parse");
    let (args, _) = parse_signature(sig).expect("sig");
    let k = module
        .compile(entry, &args, &CompileOptions::default())
        .expect("compile");
    k.ptx.len()
}

fn main() {
    let root = env!("CARGO_MANIFEST_DIR");
    println!(
        "{:<44} {:>10} {:>10} {:>10}",
        "kernel", "cold ms", "warm ms", "min ms"
    );
    for (i, (file, entry, sig)) in CASES.iter().enumerate() {
        let src = std::fs::read_to_string(format!("{root}/{file}")).expect("source");
        let t = Instant::now();
        compile_once(&src, entry, sig);
        let cold = t.elapsed().as_secs_f64() * 1e3;
        let mut times: Vec<f64> = (0..50)
            .map(|_| {
                let t = Instant::now();
                compile_once(&src, entry, sig);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let label = format!("{entry} ({file})");
        let cold_txt = if i == 0 {
            format!("{cold:.3}")
        } else {
            format!("({cold:.3})")
        };
        println!(
            "{label:<44} {cold_txt:>10} {:>10.3} {:>10.3}",
            times[times.len() / 2],
            times[0]
        );
    }
    println!(
        "cold = first compile in the process (only the first row pays LLVM's target set-up); warm = median of 50"
    );
}
