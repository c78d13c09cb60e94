//! What the kernel options and intrinsics put into the PTX: checked textually, so a change
//! in lowering that drops one shows up here (ptxas acceptance is checked by the fixtures).

mod support;

use pydevice::types::signature::parse_signature;
use pydevice::{CompileOptions, Module};

fn ptx(src: &str, entry: &str, sig: &str) -> String {
    let m = Module::parse("t.py", src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(sig).expect("sig");
    m.compile(entry, &args, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .ptx
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(support::repo_path(&format!("tests/fixtures/lang/{name}")))
        .expect("fixture")
}

#[test]
fn launch_bounds_fastmath_lineinfo_and_bounds_checks_reach_the_ptx() {
    let p = ptx(
        &fixture("kernel_options.py"),
        "opts",
        "float32[::1], float32[:, :]",
    );
    assert!(p.contains(".maxntid 256, 1, 1"), "{p}");
    assert!(p.contains(".minnctapersm 2"), "{p}");
    assert!(p.contains(".loc"), "line info: {p}");
    assert!(p.contains(pydevice::ir::BOUNDS_ERROR_SYMBOL), "{p}");
    assert!(
        p.contains("atom.global.cas.b64") || p.contains("atom.cas.b64"),
        "{p}"
    );
    assert!(
        p.contains("sqrt.approx") && p.contains(".ftz"),
        "fastmath: {p}"
    );
}

#[test]
fn default_kernels_are_exact_and_unchecked() {
    let src = "import math\nfrom cuda import device\n@device.kernel\ndef k(a):\n    i = device.tid(1)\n    a[i] = math.sqrt(a[i]) / (a[i] + 1.0)\n";
    let p = ptx(src, "k", "float32[::1]");
    assert!(p.contains("sqrt.rn.f32"), "{p}");
    assert!(p.contains("div.rn.f32"), "{p}");
    assert!(
        !p.contains(".maxntid") && !p.contains(".loc") && !p.contains("__pyd_bounds_error"),
        "{p}"
    );
}

#[test]
fn atomics_lower_to_scoped_ptx() {
    let p = ptx(
        &fixture("atomics_all.py"),
        "atomics",
        "int32[::1], uint64[::1], float32[::1], float64[::1]",
    );
    for needle in [
        "fence.sc.sys",
        "atom.acq_rel.sys.add.s32",
        "atom.acq_rel.cta.add.s32",
        "atom.relaxed.sys.max.s32",
        "atom.release.sys.exch.b32",
        "ld.acquire.gpu.b64",
        "st.release.gpu.b64",
        "atom.acq_rel.sys.add.f32",
        "fence.acq_rel.cta",
    ] {
        assert!(p.contains(needle), "missing `{needle}`:\n{p}");
    }
}

#[test]
fn warp_collectives_lower_to_sync_instructions() {
    let p = ptx(
        &fixture("warp_collectives.py"),
        "warps",
        "int32[:, ::1], float64[::1]",
    );
    for needle in [
        "shfl.sync.idx.b32",
        "shfl.sync.up.b32",
        "shfl.sync.down.b32",
        "shfl.sync.bfly.b32",
        "vote.sync.all.pred",
        "vote.sync.ballot.b32",
        "match.any.sync.b32",
        "match.all.sync.b32",
        "bar.warp.sync",
        "activemask.b32",
        "bar.red.popc.u32",
        "bar.red.and.pred",
        "bar.red.or.pred",
    ] {
        assert!(p.contains(needle), "missing `{needle}`:\n{p}");
    }
}

#[test]
fn numba_max_registers_becomes_maxnreg() {
    let src = "from numba import cuda\n@cuda.jit(\"void(float32[:])\", max_registers=32)\ndef k(a):\n    a[cuda.grid(1)] = 1.0\n";
    let p = ptx(src, "k", "float32[:]");
    assert!(p.contains(".maxnreg 32"), "{p}");
}

#[test]
fn global_arrays_of_structs_use_the_c_layout() {
    let src = std::fs::read_to_string(support::repo_path("tests/fixtures/structs/particles.py"))
        .expect("fixture");
    let m = Module::parse("particles.py", &src).unwrap_or_else(|d| panic!("{d}"));
    let particle = m.named_type("particle").expect("struct");
    let layout = pydevice::abi::layout_of(&particle);
    assert_eq!((layout.size, layout.align), (16, 8));
    let ps = pydevice::Type::array_of(&particle, 1, pydevice::types::Layout::C).expect("array");
    let (args, _) = parse_signature("int32[::1], float64").expect("sig");
    let p = m
        .compile(
            "step",
            &[vec![ps], args].concat(),
            &CompileOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .ptx;
    // `v` is read at byte 8 of the element and `id` stored at byte 4, in place.
    assert!(p.contains("ld.global.f64") && p.contains("+8]"), "{p}");
    assert!(p.contains("st.global.u32") && p.contains("+4]"), "{p}");
    if pydevice::toolkit::ptxas().is_some() {
        pydevice::toolkit::ptxas_check(&p, CompileOptions::default().arch)
            .unwrap_or_else(|e| panic!("ptxas rejected the PTX: {e}"));
    }
    // `array_of` refuses element types that are neither numbers nor structs.
    assert!(
        pydevice::Type::array_of(&pydevice::Type::None, 1, pydevice::types::Layout::C).is_none()
    );
}

#[test]
fn numba_inc_dec_use_ptx_on_32_bits_and_a_cas_loop_on_64() {
    let src = std::fs::read_to_string(support::repo_path("tests/fixtures/numba/atomic_inc_dec.py"))
        .expect("fixture");
    let m = Module::parse("atomic_inc_dec.py", &src).unwrap_or_else(|d| panic!("{d}"));
    let args = m
        .entries()
        .into_iter()
        .find(|e| e.name == "wrap_counters")
        .and_then(|e| e.annotated)
        .expect("numba signature");
    let p = m
        .compile("wrap_counters", &args, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .ptx;
    assert!(p.contains("atom.relaxed.gpu.inc.u32"), "{p}");
    assert!(p.contains("atom.relaxed.gpu.dec.u32"), "{p}");
    assert_eq!(p.matches("atom.relaxed.gpu.cas.b64").count(), 2, "{p}");
}

/// Every pair of scalar types through a conversion, the four arithmetic operators and `==`:
/// each kernel either compiles to PTX that ptxas accepts or is rejected with a diagnostic —
/// never an internal error or a back-end abort (float16 → bfloat16 once aborted LLVM).
#[test]
fn every_scalar_pair_converts_and_combines_or_is_a_diagnostic() {
    use pydevice::types::Scalar;
    let have_ptxas = pydevice::toolkit::ptxas().is_some();
    let mut compiled = 0;
    let mut rejected = Vec::new();
    for s in Scalar::ALL {
        for t in Scalar::ALL {
            let src = format!(
                "from cuda import device\nfrom cuda.device import *\n\n\
                 @device.kernel\ndef conv(a, out):\n    i = device.tid(1)\n    if i < len(a):\n        out[i] = {t}(a[i])\n\n\
                 @device.kernel\ndef arith(a, b, out):\n    i = device.tid(1)\n    if i < len(a):\n        \
                 out[i] = (a[i] + b[i]) == (a[i] * b[i])\n        out[i] = (a[i] - b[i]) != (a[i] / b[i])\n",
                t = t.name()
            );
            let m = Module::parse("pairs.py", &src).unwrap_or_else(|d| panic!("{d}"));
            let cases = [
                (
                    "conv",
                    format!("{s}[::1], {t}[::1]", s = s.name(), t = t.name()),
                ),
                (
                    "arith",
                    format!("{s}[::1], {t}[::1], bool[::1]", s = s.name(), t = t.name()),
                ),
            ];
            for (entry, sig) in cases {
                let (args, _) = parse_signature(&sig).expect("sig");
                match m.compile(entry, &args, &CompileOptions::default()) {
                    Ok(k) => {
                        compiled += 1;
                        if have_ptxas {
                            pydevice::toolkit::ptxas_check(&k.ptx, pydevice::Arch::DEFAULT)
                                .unwrap_or_else(|e| panic!("{entry}({sig}): ptxas: {e}"));
                        }
                    }
                    Err(e) => {
                        let text = e.to_string();
                        assert!(
                            !text.contains("internal") && text.contains("error["),
                            "{entry}({sig}) failed without a diagnostic: {text}"
                        );
                        rejected.push(format!("{entry}({sig})"));
                    }
                }
            }
        }
    }
    // Conversions between real types always compile; the rejections are complex → real
    // (E0251) and operators on bools that NumPy refuses.
    assert!(
        compiled > 17 * 17,
        "only {compiled} of {} compiled",
        2 * 17 * 17
    );
    for r in &rejected {
        assert!(
            r.contains("complex") || r.contains("bool"),
            "unexpected rejection: {r}"
        );
    }
}
