//! `jit.thrust.*` in cupyx.jit kernels (src/front/check/thrust.rs, src/cccl.rs): the kernel's
//! PTX declares one `extern` shim per algorithm and argument types, the kernel carries their
//! CUDA C++, NVRTC compiles it with CCCL's headers, and `ptxas -c` + `nvlink` link the two for
//! sm_90 (an undefined symbol or a signature mismatch fails). Without NVRTC, CCCL, ptxas or
//! nvlink the link half says so and passes, except under `CI`. The CuPy suite
//! (`scripts/cupy_suite_gpu.sh`) runs such kernels on the GPU.

use pydevice::types::signature::parse_signature;
use pydevice::{Arch, CompileOptions, Module};
use std::process::Command;

const SRC: &str = r#"
from cupyx import jit
import numpy

@jit.rawkernel()
def algos(x, y, keys, vals, out, fout, z):
    i = jit.threadIdx.x
    row = x[i]
    res = y[i]
    jit.thrust.sort(jit.thrust.device, row.begin(), row.end())
    jit.thrust.stable_sort_by_key(jit.thrust.device, keys.begin(), keys.end(), vals.begin())
    out[0] = jit.thrust.count(jit.thrust.device, row.begin(), row.end(), i)
    it = jit.thrust.find(jit.thrust.seq, row.begin(), row.end(), 3)
    out[1] = it - row.begin()
    jit.thrust.inclusive_scan(jit.thrust.seq, row.begin(), row.end(), res.begin())
    jit.thrust.exclusive_scan(jit.thrust.seq, row.begin(), row.end(), res.begin(), 10)
    out[2] = jit.thrust.reduce(jit.thrust.device, row.begin(), row.end())
    fout[0] = jit.thrust.inner_product(jit.thrust.device, z.begin(), z.end(), z.begin(), 0.)
    start, end = jit.thrust.equal_range(jit.thrust.seq, row.begin(), row.end(), 5)
    out[3] = end - start
    pair = jit.thrust.mismatch(jit.thrust.device, row.begin(), row.end(), res.begin())
    out[4] = pair[1] - res.begin()
    out[5] = jit.thrust.is_sorted(jit.thrust.device, row.begin(), row.end())
    k0, v0 = jit.thrust.reduce_by_key(jit.thrust.device, keys.begin(), keys.end(), vals.begin(), keys.begin(), vals.begin())
    out[6] = k0 - keys.begin()
    jit.thrust.fill(jit.thrust.device, res.begin(), res.end(), 7)
    smem = jit.shared_memory(numpy.int32, 32)
    out[7] = jit.thrust.count(jit.thrust.device, smem, smem + 32, i)
    c = jit.thrust.make_counting_iterator(i * i)
    out[8] = c[i]
    k = jit.thrust.make_constant_iterator(i)
    out[9] = k[3]
"#;

const SIG: &str = "int32[:, :], int32[:, :], int64[:], int64[:], int32[:], float32[:], float32[:]";

fn skip(what: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{what}; CI must run this test (scripts/deps.sh installs what it needs)");
    }
    eprintln!("skipped: {what}");
}

fn compile() -> pydevice::CompiledKernel {
    let module = Module::parse("thrust.py", SRC).unwrap_or_else(|d| panic!("{d}"));
    let args = parse_signature(SIG).unwrap().0;
    let opts = CompileOptions {
        arch: Arch::SM_90,
        ..CompileOptions::default()
    };
    module
        .compile("algos", &args, &opts)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn thrust_calls_declare_one_shim_per_algorithm_and_types() {
    let k = compile();
    assert_eq!(k.cuda.len(), 1);
    let cpp = &k.cuda[0].source;
    for sym in [
        "__pyd_thrust_sort__it_int32__it_int32",
        "__pyd_thrust_stable_sort_by_key__it_int64__it_int64__it_int64",
        "__pyd_thrust_count__it_int32__it_int32__v_int32",
        "__pyd_thrust_exclusive_scan__it_int32__it_int32__it_int32__v_int32",
        "__pyd_thrust_inner_product__it_float32__it_float32__it_float32__v_float32",
    ] {
        assert!(
            cpp.contains(&format!("{sym}(")),
            "{sym} not defined in\n{cpp}"
        );
        assert!(
            k.ptx.contains(&format!(".extern .func {sym}")) || k.ptx.contains(&format!(") {sym}")),
            "{sym} not declared in the PTX"
        );
    }
    // The counting iterator needs no shim: `c[i]` is `i * i + i`.
    assert!(!cpp.contains("counting"));
    // Each call's shim once, however many calls share it (the two `count`s).
    assert_eq!(
        cpp.matches("__pyd_thrust_count__it_int32__it_int32__v_int32(")
            .count(),
        1
    );
}

#[test]
fn thrust_shims_compile_with_nvrtc_and_link_with_the_kernel() {
    let k = compile();
    if !pydevice::runtime::link::nvrtc_available() {
        return skip("NVRTC not found");
    }
    let opts = match pydevice::cccl::nvrtc_options() {
        Ok(o) => o,
        Err(e) => return skip(&e),
    };
    let (Some(nvlink), Some(_)) = (pydevice::toolkit::nvlink(), pydevice::toolkit::ptxas()) else {
        return skip("nvlink or ptxas not found");
    };
    let c = &k.cuda[0];
    let shim = pydevice::runtime::link::compile_cuda(&c.name, &c.source, Arch::SM_90, &opts)
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("thrust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cubins = Vec::new();
    for (name, text) in [("kernel", &k.ptx), ("shims", &shim)] {
        let cubin = pydevice::toolkit::ptxas_compile(text, Arch::SM_90, true)
            .unwrap_or_else(|e| panic!("ptxas -c {name}: {e}"));
        let p = dir.join(format!("{name}.cubin"));
        std::fs::write(&p, cubin).unwrap();
        cubins.push(p);
    }
    let out = Command::new(nvlink)
        .arg("-arch=sm_90")
        .args(&cubins)
        .arg("-o")
        .arg("linked.cubin")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nvlink failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn diagnostic(body: &str, sig: &str) -> String {
    let src = format!("from cupyx import jit\n\n@jit.rawkernel()\ndef k(x, y):\n{body}\n");
    let module = Module::parse("bad.py", &src).unwrap_or_else(|d| panic!("{d}"));
    let args = parse_signature(sig).unwrap().0;
    let opts = CompileOptions {
        arch: Arch::SM_90,
        ..CompileOptions::default()
    };
    match module.compile("k", &args, &opts) {
        Ok(_) => panic!("compiled:\n{src}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn thrust_misuse_is_a_diagnostic_with_its_span() {
    let e = diagnostic(
        "    jit.thrust.sort(jit.thrust.device, x.begin(), x.end())",
        "float16[:], int32[:]",
    );
    assert!(
        e.contains("iterators are over bool, integer, float32 and float64 elements")
            && e.contains("bad.py:5"),
        "{e}"
    );
    let e = diagnostic(
        "    jit.thrust.sort(0, x.begin(), x.end())",
        "int32[:], int32[:]",
    );
    assert!(e.contains("must be an execution policy"), "{e}");
    let e = diagnostic(
        "    jit.thrust.sort(jit.thrust.device, x.begin())",
        "int32[:], int32[:]",
    );
    assert!(e.contains("takes 3 arguments, but 2 were given"), "{e}");
    let e = diagnostic(
        "    jit.thrust.frobnicate(jit.thrust.device, x.begin())",
        "int32[:], int32[:]",
    );
    assert!(
        e.contains("`cupyx.jit.thrust.frobnicate` is not available"),
        "{e}"
    );
    let e = diagnostic("    y[0] = x.begin() - y.begin()", "int32[:], int64[:]");
    assert!(e.contains("unsupported operand types for `-`"), "{e}");
    let e = diagnostic(
        "    jit.thrust.sort(jit.thrust.device, x.begin(), x.end())",
        "int32[:, :], int32[:]",
    );
    assert!(e.contains("index it down to one dimension"), "{e}");
}
