"""The Hopper kernels of bench/hopper (issue 32: bf16 GEMMs, the FP8 GEMM, flash attention)
compile, for the signatures bench/hopper/bench_all.py launches them with, to PTX that ptxas
accepts for sm_90a without a stack frame or spills, and that holds the instructions each
kernel is about. No GPU needed (their GPU check is scripts/hopper_bench_gpu.sh); without
ptxas the PTX is only compiled, unless CI or PYDEVICE_REQUIRE_PTXAS is set."""

import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hopper")
sys.path.insert(0, os.path.abspath(BENCH))

MAP = "int64[::1]"
C2 = "int32[:, ::1]"
GEMM = f"void({MAP}, {MAP}, {C2}, int32, int32, int32)"
ATTN = f"void({MAP}, {MAP}, {MAP}, {C2}, int32, float32, bool"

GEMM_FP8 = f"void({MAP}, {MAP}, {C2}, int32, int32, int32, float32)"
TMASTORE = f"void({MAP}, {MAP}, {MAP}, int32, int32, int32"

# (module, kernel, signature, instructions its PTX must hold). gemm.py writes each GEMM variant
# once (a @func with `fp8: ConstExpr[bool]`) for two kernels, bf16 and e4m3.
KERNELS = [
    ("gemm", "gemm_bf16", f"void({MAP}, {MAP}, bfloat16[:, ::1], int32)",
     ["wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "setmaxnreg.inc.sync.aligned.u32 232"]),
    ("gemm", "gemm_bf16_persistent", GEMM,
     ["wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "cvt.rn.bf16x2.f32"]),
    ("gemm", "gemm_fp8_persistent", GEMM_FP8,
     ["wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3"]),
    ("gemm", "gemm_bf16_cluster", GEMM,
     [".reqnctapercluster 2, 1, 1", ".multicast::cluster", "mapa.shared::cluster.u32",
      "mbarrier.arrive.shared::cluster.b64", "barrier.cluster.arrive"]),
    ("gemm", "gemm_fp8_cluster", GEMM_FP8,
     ["wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", ".multicast::cluster"]),
    ("gemm", "gemm_bf16_pingpong", GEMM,
     ["wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "bar.sync", "bar.arrive"]),
    ("gemm", "gemm_fp8_pingpong", GEMM_FP8,
     ["wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", "bar.arrive"]),
    ("gemm", "gemm_bf16_tmastore", TMASTORE + ")",
     ["cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "cp.async.bulk.wait_group.read 0",
      "m64n256k16.f32.bf16.bf16"]),
    ("gemm", "gemm_fp8_tmastore", TMASTORE + ", float32)",
     ["cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "m64n256k32.f32.e4m3.e4m3"]),
    ("attention", "attn_fwd", ATTN + ")",
     ["wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "ex2.approx.ftz.f32",
      "fence.proxy.async.shared::cta", "shfl.sync.bfly.b32"]),
    ("attention", "attn_fwd_pp", ATTN + ")",
     ["wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "bar.arrive", "bar.sync"]),
    ("attention", "attn_fwd_ov", ATTN + ")",
     ["wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "setmaxnreg.inc.sync.aligned.u32 240"]),
    ("attention", "attn_fwd_ov_vn", ATTN + ", int32, int32)",
     ["wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "setmaxnreg.inc.sync.aligned.u32 240"]),
    ("attention", "attn_fwd_vn", ATTN + ", int32, int32)",
     ["wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"]),
]


def _ptxas():
    p = os.environ.get("PYDEVICE_PTXAS") or shutil.which("ptxas")
    if p:
        return p
    site = sysconfig.get_paths()["purelib"]
    found = glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "ptxas"))
    return found[0] if found else None


@pytest.mark.parametrize("module,kernel,sig,needles", KERNELS, ids=[k[1] for k in KERNELS])
def test_bench_kernel_assembles_for_sm90a(module, kernel, sig, needles, tmp_path):
    import importlib

    f = getattr(importlib.import_module(module), kernel)
    ptx = f.ptx(types=sig, arch="sm_90a")
    assert ".target sm_90a" in ptx
    for n in needles:
        assert n in ptx, f"{kernel}: no `{n}` in its PTX"
    # The bf16 and FP8 instances of one gemm.py variant: each holds its own `wgmma` types only
    # (the `if fp8:` of the shared body is decided at compile time).
    if kernel.startswith("gemm_"):
        other = "e4m3.e4m3" if kernel.startswith("gemm_bf16") else "bf16.bf16"
        assert f".f32.{other}" not in ptx, f"{kernel}: the other instance's wgmma in its PTX"
    # The bf16x2 packings (epilogue: 64 per thread; attention: 32 of P and 32 of O) convert at
    # least 64 different register pairs: a static_range index frozen at its first value (a
    # compiler bug met here) packs one pair 64 times.
    pairs = set(re.findall(r"cvt\.rn\.bf16x2\.f32 %r\d+, (%f\d+, %f\d+);", ptx))
    if kernel != "gemm_bf16":
        assert len(pairs) >= 64, f"{kernel}: only {len(pairs)} different bf16x2 operand pairs"
    ptxas = _ptxas()
    if ptxas is None:
        if os.environ.get("CI") or os.environ.get("PYDEVICE_REQUIRE_PTXAS"):
            pytest.fail("ptxas is required in CI but was not found")
        pytest.skip("ptxas not found: the PTX was compiled, not assembled")
    src = tmp_path / f"{kernel}.ptx"
    src.write_text(ptx)
    r = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    report = r.stdout + r.stderr
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", report)
    assert m, report
    assert m.groups() == ("0", "0", "0"), f"{kernel} spills:\n{report}"
    # ptxas says so when it has to serialize wgmma (an accumulator touched while in flight).
    assert "serialized" not in report, report
