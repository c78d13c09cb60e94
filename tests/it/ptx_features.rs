//! What the kernel options and intrinsics put into the PTX: checked textually, so a change
//! in lowering that drops one shows up here (ptxas acceptance is checked by the fixtures).

use crate::support;

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
    // Kernel array parameters are global memory: every atomic states `.global`.
    for needle in [
        "fence.sc.sys",
        "atom.acq_rel.sys.global.add.s32",
        "atom.acq_rel.cta.global.add.s32",
        "atom.relaxed.sys.global.max.s32",
        "atom.release.sys.global.exch.b32",
        "ld.acquire.gpu.global.b64",
        "st.release.gpu.global.b64",
        "atom.acq_rel.sys.global.add.f32",
        "fence.acq_rel.cta",
    ] {
        assert!(p.contains(needle), "missing `{needle}`:\n{p}");
    }
    assert!(!p.contains("cvta"), "{p}");
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
    assert!(p.contains("atom.relaxed.gpu.global.inc.u32"), "{p}");
    assert!(p.contains("atom.relaxed.gpu.global.dec.u32"), "{p}");
    assert_eq!(
        p.matches("atom.relaxed.gpu.global.cas.b64").count(),
        2,
        "{p}"
    );
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

/// A kernel taking a tuple of `n` float32 by value.
fn big_parameter_kernel(n: usize, arch: pydevice::Arch) -> Result<String, String> {
    let src =
        "from cuda import device\n\n@device.kernel\ndef k(out, t):\n    out[0] = t[0] + t[1]\n";
    let m = Module::parse("big.py", src).map_err(|d| d.render())?;
    let sig = format!("float32[:], ({})", vec!["float32"; n].join(", "));
    let (args, _) = parse_signature(&sig).expect("sig");
    let options = CompileOptions {
        arch,
        ..CompileOptions::default()
    };
    m.compile("k", &args, &options)
        .map(|k| k.ptx)
        .map_err(|e| e.to_string())
}

#[test]
fn kernel_parameters_over_4_kib_declare_ptx_8_1() {
    for arch in ["sm_80", "sm_90"] {
        let arch: pydevice::Arch = arch.parse().expect("arch");
        // 24 + 4,400 bytes: more than the 4 KiB (0x1100 with the driver's share) PTX 8.0
        // allows; ptxas refuses it under `.version 8.0`/`7.8`.
        let ptx = big_parameter_kernel(1100, arch).expect("compiles");
        assert!(ptx.contains(".version 8.1\n"), "{arch}: {}", &ptx[..200]);
        if pydevice::toolkit::ptxas().is_some() {
            pydevice::toolkit::ptxas_check(&ptx, arch).expect("ptxas accepts it");
        }
        // Small parameter spaces keep the architecture's own version.
        let small = big_parameter_kernel(2, arch).expect("compiles");
        let (maj, min) = arch.ptx_version();
        assert!(small.contains(&format!(".version {maj}.{min}\n")), "{arch}");
    }
}

#[test]
fn kernel_parameters_over_cuda_s_limit_are_a_diagnostic() {
    // 24 + 32,744 bytes > 32,764.
    let err = big_parameter_kernel(8186, pydevice::Arch::DEFAULT).expect_err("too large");
    assert!(err.contains("E0412") && err.contains("32764"), "{err}");
    assert!(
        err.contains("def k(out, t):"),
        "points at the parameter: {err}"
    );
    big_parameter_kernel(8185, pydevice::Arch::DEFAULT).expect("32,764 bytes fit");
}

#[test]
fn grid_sync_marks_the_kernel_cooperative_and_others_not() {
    let compile = |src: &str, entry: &str, sig: &str, arch: &str| {
        let m = Module::parse("t.py", src).unwrap_or_else(|d| panic!("{d}"));
        let (args, _) = parse_signature(sig).expect("sig");
        let opts = CompileOptions {
            arch: arch.parse().expect("arch"),
            ..CompileOptions::default()
        };
        m.compile(entry, &args, &opts)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let sync = compile(
        &fixture("cg_grid_sync.py"),
        "grid_sum",
        "float32[::1], float32[::1]",
        "sm_80",
    );
    assert!(sync.abi.cooperative);
    assert!(
        sync.ptx.contains("atom.add.release.gpu.global.u32"),
        "{}",
        sync.ptx
    );
    let json = serde_json::to_string(&sync.abi).expect("json");
    assert!(json.contains("\"cooperative\":true"), "{json}");
    // A grid sync inside a @func called by the kernel counts too.
    let via_func = "from cuda import device\nfrom cuda.device import cg\n\
        @device.func\ndef wait_all():\n    if device.target(device.is_device):\n        cg.sync(cg.this_grid())\n\
        @device.kernel\ndef k(a):\n    a[0] = 1\n    wait_all()\n";
    assert!(
        compile(via_func, "k", "int32[::1]", "sm_90")
            .abi
            .cooperative
    );
    // Other groups' barriers do not, and the ABI's JSON is unchanged for them.
    let tiles = compile(
        &fixture("cg_groups.py"),
        "groups",
        "int32[::1], float32[::1], int32[:, ::1]",
        "sm_90",
    );
    assert!(!tiles.abi.cooperative);
    assert!(tiles.ptx.contains("redux.sync.add.s32"), "{}", tiles.ptx);
    let json = serde_json::to_string(&tiles.abi).expect("json");
    assert!(!json.contains("cooperative"), "{json}");
    // Below sm_80 the same reductions are shuffle trees.
    let old = compile(
        &fixture("cg_groups.py"),
        "groups",
        "int32[::1], float32[::1], int32[:, ::1]",
        "sm_75",
    );
    assert!(!old.ptx.contains("redux.sync"), "{}", old.ptx);
    assert!(old.ptx.contains("shfl.sync.bfly.b32"), "{}", old.ptx);
}

/// The tensor-core fixtures (§19), compiled for both sm_80 and sm_90: each lowers to the
/// instructions its types name, and CUDA's ptxas accepts each for both architectures (the
/// fixture harness checks only the architecture a fixture names).
#[test]
fn tensor_core_fixtures_assemble_for_sm80_and_sm90() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "wmma_f16",
            "gemm",
            "float16[:, ::1], float16[:, ::1], float32[:, ::1]",
            &["wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32"],
        ),
        (
            "wmma_bf16_sm80",
            "gemm",
            "bfloat16[:, ::1], bfloat16[:, ::1], float32[:, ::1]",
            &["m16n16k16.f32.bf16.bf16.f32"],
        ),
        (
            "wmma_bf16_m8n32k16",
            "gemm",
            "bfloat16[:, ::1], bfloat16[:, ::1], float32[:, ::1]",
            &["m8n32k16.f32.bf16.bf16.f32"],
        ),
        (
            "wmma_tf32_sm80",
            "gemm",
            "float32[:, ::1], float32[:, ::1], float32[:, ::1]",
            &["m16n16k8.f32.tf32.tf32.f32", "cvt.rna.tf32.f32"],
        ),
        (
            "wmma_f64_sm80",
            "gemm",
            "float64[:, ::1], float64[:, ::1], float64[:, ::1]",
            &["m8n8k4.f64.f64.f64.f64"],
        ),
        (
            "wmma_s8_sm80",
            "gemm",
            "int8[:, ::1], int8[:, ::1], int32[:, ::1]",
            &["m32n8k16.s32.s8.s8.s32.satfinite"],
        ),
        (
            "wmma_u8_m8n32k16",
            "gemm",
            "uint8[:, ::1], uint8[:, ::1], int32[:, ::1]",
            &["m8n32k16.s32.u8.u8.s32"],
        ),
        (
            "wmma_f16_shared",
            "gemm_shared",
            "float16[:, ::1], float16[:, ::1], float16[:, ::1]",
            &[
                "wmma.load.a.sync.aligned.col.m32n8k16.shared.f16",
                "m32n8k16.f16.f16",
            ],
        ),
        (
            "wmma_elements",
            "gemm_epilogue",
            "float16[:, ::1], float16[:, ::1], float32[:, ::1], float32, float32",
            &["wmma.load.c.sync.aligned.row.m16n16k16.global.f32"],
        ),
        (
            "mma_m16n8k16",
            "mma_tile",
            "float16[:, ::1], float16[:, ::1], float32[:, ::1]",
            &[
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
            ],
        ),
        (
            "mma_m16n8k16_bf16",
            "mma_tile_bf16",
            "bfloat16[:, ::1], bfloat16[:, ::1], float32[:, ::1]",
            &[
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
            ],
        ),
    ];
    let have_ptxas = pydevice::toolkit::ptxas().is_some();
    for &(name, entry, sig, wants) in cases {
        let m = Module::parse("t.py", &fixture(&format!("{name}.py")))
            .unwrap_or_else(|d| panic!("{d}"));
        let (args, _) = parse_signature(sig).expect("sig");
        for arch in [pydevice::Arch::SM_80, pydevice::Arch::SM_90] {
            let opts = CompileOptions {
                arch,
                ..CompileOptions::default()
            };
            let p = m
                .compile(entry, &args, &opts)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .ptx;
            for w in wants {
                assert!(p.contains(w), "{name} for {arch}: no `{w}` in\n{p}");
            }
            if have_ptxas {
                pydevice::toolkit::ptxas_check(&p, arch)
                    .unwrap_or_else(|e| panic!("{name} for {arch}: {e}"));
            }
        }
    }
}

/// With `bounds_check=True` a WMMA load or store checks the tile's first element (§19.1):
/// the check and the error report reach the PTX, and ptxas accepts it.
#[test]
fn bounds_checked_wmma_checks_the_first_element() {
    let src = fixture("wmma_f16.py").replace("@device.kernel", "@device.kernel(bounds_check=True)");
    let p = ptx(
        &src,
        "gemm",
        "float16[:, ::1], float16[:, ::1], float32[:, ::1]",
    );
    assert!(p.contains(pydevice::ir::BOUNDS_ERROR_SYMBOL), "{p}");
    assert!(
        p.contains("wmma.load.a.sync.aligned.row.m16n16k16.global.f16"),
        "{p}"
    );
    assert!(
        p.contains("wmma.store.d.sync.aligned.row.m16n16k16.global.f32"),
        "{p}"
    );
    if pydevice::toolkit::ptxas().is_some() {
        pydevice::toolkit::ptxas_check(&p, pydevice::Arch::SM_90).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The loops of `ptx` (a label `$L__BB..:` followed by its block up to the first branch back
/// to it), each as (whether it carries `.pragma "nounroll"`, how many `ld.global` it has).
fn loops(ptx: &str) -> Vec<(bool, usize)> {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(label) = l.strip_suffix(':').filter(|l| l.starts_with("$L__BB")) else {
            continue;
        };
        let target = format!("{label};");
        let back = lines[i + 1..].iter().position(|x| {
            let words: Vec<&str> = x.split_whitespace().collect();
            words.last() == Some(&target.as_str()) && words.iter().any(|w| w.starts_with("bra"))
        });
        if let Some(n) = back {
            let body = &lines[i + 1..=i + 1 + n];
            let nounroll = body.contains(&".pragma \"nounroll\";");
            let loads = body.iter().filter(|x| x.starts_with("ld.global")).count();
            out.push((nounroll, loads));
        }
    }
    out
}

#[test]
fn small_grid_stride_loops_are_unrolled_four_times_and_not_again_by_ptxas() {
    // A run-time step: unrolled 4 times (4 loads together), its remainder once a time, and
    // both marked so that ptxas keeps them (docs/semantics.md §4.3).
    let src = "from cuda import device\n\n@device.kernel\ndef total(x, out):\n    acc = 0.0\n    for i in range(device.tid(1), len(x), device.grid_size(1)):\n        acc += x[i]\n    out[device.tid(1)] = acc\n";
    let found = loops(&ptx(src, "total", "float32[::1], float32[::1]"));
    assert_eq!(found, vec![(true, 4), (true, 1)], "{found:?}");
    // A constant step is left to LLVM and ptxas: LLVM's 8 copies, unmarked (ptxas may unroll
    // them again), and LLVM's own remainder loop, which LLVM marks.
    let src = src.replace("device.grid_size(1)", "4096");
    let mut found = loops(&ptx(&src, "total", "float32[::1], float32[::1]"));
    found.sort();
    assert_eq!(found, vec![(false, 8), (true, 1)], "{found:?}");
}

#[test]
fn large_grid_stride_loops_are_unrolled_as_llvm_decides() {
    // 40 loads and their arithmetic: over the 75-instruction limit, so no count of 4 is
    // forced; LLVM leaves a body this size rolled (the loop comes out twice, specialized by
    // the optimizer), unmarked, and ptxas may unroll it.
    let terms: Vec<String> = (0..40).map(|k| format!("x[(i + {k}) % n]")).collect();
    let src = format!(
        "from cuda import device\n\n@device.kernel\ndef big(x, out):\n    n = len(x)\n    acc = 0.0\n    for i in range(device.tid(1), n, device.grid_size(1)):\n        acc += {}\n    out[device.tid(1)] = acc\n",
        terms.join(" * ")
    );
    let found = loops(&ptx(&src, "big", "float32[::1], float32[::1]"));
    assert!(!found.is_empty(), "no loop found");
    assert!(found.iter().all(|&l| l == (false, 40)), "{found:?}");
}

/// ptxas's report (`-v`) on `ptx` for sm_90: (stack frame bytes, registers); `None` without
/// ptxas.
fn ptxas_usage(ptx: &str) -> Option<(u32, u32)> {
    let ptxas = pydevice::toolkit::ptxas()?;
    let dir = std::env::temp_dir().join(format!(
        "pydevice-usage-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join("k.ptx");
    std::fs::write(&src, ptx).expect("write ptx");
    let out = std::process::Command::new(ptxas)
        .args(["-arch=sm_90", "-v"])
        .arg(&src)
        .arg("-o")
        .arg(dir.join("k.cubin"))
        .output()
        .expect("run ptxas");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    let number_before = |what: &str| -> u32 {
        let at = text
            .find(what)
            .unwrap_or_else(|| panic!("no `{what}` in {text}"));
        let head = text[..at].trim_end();
        let digits = head
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap_or("");
        digits
            .parse()
            .unwrap_or_else(|_| panic!("`{what}` in {text}"))
    };
    Some((
        number_before(" bytes stack frame"),
        number_before(" registers"),
    ))
}

/// Causal attention as llm.c-style kernels write it: a thread per query row, the query and
/// the output accumulator in per-thread arrays over the head dimension (64), indexed by
/// constant-trip loops, K and V tiles in shared memory, an online softmax (issue 31).
const ATTENTION: &str = r#"
from cuda import device

HD = 64
TILE = 32


@device.kernel
def attn(q, k, v, out):
    sk = device.shared_array((TILE, HD), device.float32)
    sv = device.shared_array((TILE, HD), device.float32)
    qr = device.local_array(HD, device.float32)
    acc = device.local_array(HD, device.float32)
    row = device.block_idx.x * TILE + device.thread_idx.x
    tid = device.thread_idx.x
    for d in range(HD):
        qr[d] = q[row, d] * 0.125
        acc[d] = 0.0
    m = -1e30
    l = 0.0
    for t in range(device.block_idx.x + 1):
        for d in range(HD):
            sk[tid, d] = k[t * TILE + tid, d]
            sv[tid, d] = v[t * TILE + tid, d]
        device.syncthreads()
        for j in range(TILE):
            if t * TILE + j <= row:
                s = 0.0
                for d in range(HD):
                    s += qr[d] * sk[j, d]
                mn = max(m, s)
                corr = 2.0 ** (m - mn)
                p = 2.0 ** (s - mn)
                l = l * corr + p
                for d in range(HD):
                    acc[d] = acc[d] * corr + p * sv[j, d]
                m = mn
        device.syncthreads()
    for d in range(HD):
        out[row, d] = acc[d] / l
"#;

/// A register-blocked GEMM tile: a 4 x 4 accumulator in one flat per-thread array indexed
/// `m * TN + q` in nested constant-trip loops, inside a loop of run-time trip count.
const GEMM_TILE: &str = r#"
from cuda import device

TM = 4
TN = 4


@device.kernel
def gemm_tile(a, b, c, n):
    acc = device.local_array(TM * TN, device.float32)
    ra = device.local_array(TM, device.float32)
    rb = device.local_array(TN, device.float32)
    row0 = (device.block_idx.y * device.block_dim.y + device.thread_idx.y) * TM
    col0 = (device.block_idx.x * device.block_dim.x + device.thread_idx.x) * TN
    for i in range(TM * TN):
        acc[i] = 0.0
    for k in range(n):
        for m in range(TM):
            ra[m] = a[row0 + m, k]
        for q in range(TN):
            rb[q] = b[k, col0 + q]
        for m in range(TM):
            for q in range(TN):
                acc[m * TN + q] += ra[m] * rb[q]
    for m in range(TM):
        for q in range(TN):
            c[row0 + m, col0 + q] = acc[m * TN + q]
"#;

#[test]
fn per_thread_arrays_indexed_in_constant_trip_loops_live_in_registers() {
    // The loops that index the arrays are unrolled completely and the arrays scalar-replaced
    // (pipeline.cpp's LocalArrayUnrollPass), as NVVM does: no local memory at all. Before,
    // the 64-step loops stayed loops (over LLVM's full-unroll threshold) and the two arrays
    // took a 512-byte stack frame.
    for (src, entry, sig) in [
        (
            ATTENTION,
            "attn",
            "float32[:, ::1], float32[:, ::1], float32[:, ::1], float32[:, ::1]",
        ),
        (
            GEMM_TILE,
            "gemm_tile",
            "float32[:, ::1], float32[:, ::1], float32[:, ::1], int32",
        ),
    ] {
        let p = ptx(src, entry, sig);
        assert!(
            !p.contains("__local_depot") && !p.contains("ld.local") && !p.contains("st.local"),
            "{entry}: local memory in\n{p}"
        );
        if let Some((stack, registers)) = ptxas_usage(&p) {
            assert_eq!(stack, 0, "{entry}: stack frame");
            // nvcc -O3 -arch=sm_90 on the same kernels in CUDA C++: 167 and 64 registers.
            assert!(registers <= 168, "{entry}: {registers} registers");
        }
    }
}

#[test]
fn per_thread_arrays_indexed_at_run_time_stay_in_local_memory() {
    // A run-time trip count cannot be unrolled away: the array stays addressable, and the
    // kernel is still compiled (and right).
    let src = "from cuda import device\n\n@device.kernel\ndef k(x, out, n):\n    t = device.local_array(32, device.float32)\n    for i in range(n):\n        t[i] = x[i]\n    s = 0.0\n    for i in range(n):\n        s += t[n - 1 - i] * i\n    out[0] = s\n";
    let p = ptx(src, "k", "float32[::1], float32[::1], int32");
    assert!(p.contains("__local_depot"), "{p}");
}

#[test]
fn restrict_marks_read_only_parameters_for_the_non_coherent_cache() {
    // `restrict=True` (docs/semantics.md §12): `x` and `y` are only read, so they are read
    // through `ld.global.nc`; `out` is written, so it is not; and since `out` overlaps
    // neither, `x[i]` and `y[i]` are loaded once and `out[i]` stored once.
    let src = "from cuda import device\n\n@device.kernel(restrict=True)\ndef k(x, y, out, alpha):\n    i = device.tid(1)\n    if i < len(out):\n        out[i] = alpha * x[i] + y[i]\n        out[i] += x[i] * y[i]\n";
    let sig = "float32[::1], float32[::1], float32[::1], float32";
    let p = ptx(src, "k", sig);
    let count = |s: &str| p.matches(s).count();
    assert_eq!(count("ld.global.nc.f32"), 2, "{p}");
    assert_eq!(count("ld.global.f32"), 0, "{p}");
    assert_eq!(count("st.global.f32"), 1, "{p}");
    // Without the option: no promise, so plain loads, and `out[i]` re-read after the store
    // may have changed `x[i]` or `y[i]`.
    let plain = ptx(&src.replace("(restrict=True)", ""), "k", sig);
    assert!(!plain.contains(".nc"), "{plain}");
    assert_eq!(plain.matches("st.global.f32").count(), 2, "{plain}");
    // A parameter that is written, viewed or passed on is not read-only: no `.nc` for it.
    let src = "from cuda import device\n\n@device.kernel(restrict=True)\ndef k(x, y, out):\n    i = device.tid(1)\n    if i < len(out):\n        v = x[1:]\n        out[i] = x[i] + v[i] + y[i]\n        y[i] = 0.0\n";
    let p = ptx(src, "k", "float32[::1], float32[::1], float32[::1]");
    assert_eq!(p.matches("ld.global.nc").count(), 0, "{p}");
    if pydevice::toolkit::ptxas().is_some() {
        pydevice::toolkit::ptxas_check(&p, pydevice::Arch::SM_90).unwrap_or_else(|e| panic!("{e}"));
    }
}
