"""Times the Hopper bf16 GEMM of this folder (gemm.py's `gemm_bf16_tmastore`: persistent,
warp-specialized, TMA-store epilogue) beside torch.matmul (cuBLAS) at 4096³ and 8192³ and
prints a table; every output is checked against torch's first. bench_all.py runs it with
the other variants, the FP8 GEMM, attention and Triton's kernels.

    python3 bench/hopper/bench_gemm.py [--sizes 4096,8192] [--iters 20]

Needs an sm_90 GPU, PyTorch and the pydevice package; without them it says why and exits 0.
C = A·Bᵀ, A (M×K), B (N×K), C (M×N), all bfloat16 (float32 accumulation in both).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        print("skipped: the bf16 GEMM needs a compute capability 9.0 GPU (sm_90a)")
        return 0
    import gemm as G
    from cuda import device
    from cuda.device import hopper

    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def tmap(t, box):
        return torch.from_numpy(hopper.tensor_map(t, box, 128).view("int64")).cuda()

    def maps(a, b, c):
        return tmap(a, (G.BM, G.BK)), tmap(b, (G.BN, G.BK)), tmap(c, (64, 64))

    def ours(am, bm, cm, m, n, k):
        tm, tn = m // G.BM, n // G.BN
        device.launch(
            G.gemm_bf16_tmastore, am, bm, cm, np.int32(k // G.BK), np.int32(tm), np.int32(tn),
            grid=min(sms, tm * tn), block=384, shared=G.TS_SHARED_BYTES,
        )

    def time_ms(f) -> float:
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            f()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / args.iters

    rows = []
    failed = False
    for s in (int(x) for x in args.sizes.split(",")):
        m = n = k = s
        torch.manual_seed(s)
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        am, bm, cm = maps(a, b, c)
        ours(am, bm, cm, m, n, k)
        torch.cuda.synchronize()
        ref = torch.matmul(a, b.T)
        err = ((c.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
        ok = err < 2e-2
        failed |= not ok
        t_ours = time_ms(lambda am=am, bm=bm, cm=cm, s=s: ours(am, bm, cm, s, s, s))
        t_ref = time_ms(lambda a=a, b=b: torch.matmul(a, b.T))
        flop = 2.0 * m * n * k
        rows.append((s, t_ours, flop / t_ours / 1e9, t_ref, flop / t_ref / 1e9, err, ok))
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    print("| M=N=K | ours ms | ours TFLOP/s | torch.matmul ms | torch TFLOP/s | ours/torch | max rel err |")
    print("|---|---|---|---|---|---|---|")
    for s, to, fo, tr, fr, err, ok in rows:
        mark = "" if ok else " FAILED"
        print(f"| {s} | {to:.3f} | {fo:.1f} | {tr:.3f} | {fr:.1f} | {fo / fr:.1%} | {err:.2e}{mark} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
