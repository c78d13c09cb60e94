"""One run of every Hopper kernel of this folder beside its PyTorch baseline, each output
checked against the baseline's first, printing one Markdown table (issue 32):

- the bf16 GEMM variants (gemm.py) against `torch.matmul` (cuBLAS) at 4096³ and 8192³;
- the FP8 e4m3 GEMM variants (gemm.py) against `torch._scaled_mm` (bf16 output, per-tensor scales);
- flash-attention forward (attention.py; bf16, head dim 128) against
  `torch.nn.functional.scaled_dot_product_attention` on the flash backend, causal and not.

    python3 bench/hopper/bench_all.py [--gemm tmastore,persistent,cluster,pingpong,base,triton,triton_mm]
        [--sizes 4096,8192] [--fp8 tmastore,persistent,cluster,pingpong,triton]
        [--attn ov,pp,vt,vn,vn_swap,ov_vn,ov_vn_swap,triton] [--seqs 4096,16384] [--skip gemm,fp8,attn] [--iters 10]

The `triton*` variants are Triton's tutorial kernels (triton_ref.py), rows like ours against
the same PyTorch baseline.

Needs an sm_90 GPU, PyTorch and the pydevice package; without them it says why and exits 0.
Exits 1 when an output is wrong (the row says FAILED) or a kernel fails to run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROWS: list = []
FAILED = []


ROWS_FILE = [""]


def add(r):
    """Records a row (and appends it to --rows at once, so a later hang loses nothing)."""
    ROWS.append(r)
    if ROWS_FILE[0]:
        with open(ROWS_FILE[0], "a") as fh:
            fh.write(json.dumps(r) + "\n")


def row(kind, case, variant, ms, tflops, ref_ms, ref_tflops, err, ok, note=""):
    add((kind, case, variant, ms, tflops, ref_ms, ref_tflops, err, ok, note))
    if not ok:
        FAILED.append(f"{kind} {case} {variant}")
    ratio = f"{tflops / ref_tflops:.1%}" if ms and ref_ms else "-"
    print(f"  {kind} {case} {variant}: {ms:.3f} ms {tflops:.1f} TFLOP/s vs {ref_tflops:.1f} ({ratio}) err {err:.2e}"
          f"{'' if ok else ' FAILED'} {note}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemm", default="tmastore,persistent,cluster,pingpong,base")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--fp8", default="tmastore,persistent,cluster,pingpong")
    ap.add_argument("--attn", default="ov,pp,vt,vn,vn_swap,ov_vn,ov_vn_swap")
    ap.add_argument("--seqs", default="4096,16384")
    ap.add_argument("--skip", default="")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rows", default="", help="also append each row to this file (JSON lines)")
    ap.add_argument("--table", default="", help="only print the table of the rows in this file")
    args = ap.parse_args()
    if args.table:
        if not os.path.exists(args.table):
            print("no rows (every section skipped)")
            return 0
        with open(args.table) as fh:
            ROWS.extend(tuple(json.loads(line)) for line in fh if line.strip())
        return print_table()
    ROWS_FILE[0] = args.rows
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        print("skipped: these kernels need a compute capability 9.0 GPU (sm_90a)")
        return 0
    from cuda import device
    from cuda.device import hopper

    skip = set(filter(None, args.skip.split(",")))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"device: {torch.cuda.get_device_name()} ({sms} SMs)  torch {torch.__version__}", flush=True)

    def tmap(t, box):
        return torch.from_numpy(hopper.tensor_map(t, box, 128).view("int64")).cuda()

    host_ms = [0.0]

    def time_ms(f) -> float:
        """GPU time per call (CUDA events); host_ms[0] is the host's time to enqueue one call:
        when it comes near the GPU time, the figure measures the launch path, not the kernel."""
        f()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        for _ in range(args.iters):
            f()
        end.record()
        host_ms[0] = (time.perf_counter() - t0) * 1e3 / args.iters
        torch.cuda.synchronize()
        return start.elapsed_time(end) / args.iters

    def note(t):
        h = host_ms[0]
        return f"host {h * 1e3:.0f} µs/launch" + (" (launch-bound)" if h > 0.8 * t else "")

    def diagnose(label, d, tol, ct=256):
        """For a failed check: where the wrong elements are (d: the error, 2-D rows × columns),
        by 16-row band of a 128-row tile and (ct / 8)-column band of a ct-column tile."""
        try:
            _diagnose(label, d, tol, ct)
        except Exception as e:  # the diagnosis is a help; its failure must not lose the row
            print(f"    {label}: no diagnosis ({e})")

    def _diagnose(label, d, tol, ct):
        bad = (d.abs() > tol) | d.isnan()
        rows, cols = bad.shape
        frac = bad.float().mean().item()
        rb = bad.view(rows // 128, 8, 16, cols).any(dim=3).any(dim=2).float().mean(dim=0).tolist()
        cb = bad.view(rows, cols // ct, 8, ct // 8).any(dim=3).any(dim=0).float().mean(dim=0).tolist()
        print(f"    {label}: {frac:.1%} of elements off by more than {tol:.3g}; rows by 16-row band of 128: "
              + " ".join(f"{x:.2f}" for x in rb) + f"; columns by {ct // 8}-column band of {ct}: "
              + " ".join(f"{x:.2f}" for x in cb), flush=True)

    def attempt(label, fn):
        try:
            fn()
        except Exception:  # a kernel that fails to compile or run is a row, not the end
            traceback.print_exc()
            add((label, "-", "-", 0.0, 0.0, 0.0, 0.0, float("nan"), False, "raised"))
            FAILED.append(label)
            torch.cuda.synchronize()

    i32 = np.int32

    triton_mod = []

    def triton_ref():
        """triton_ref.py (Triton's tutorial kernels), or None after a row saying why not."""
        if not triton_mod:
            try:
                import triton_ref as T

                triton_mod.append(T)
            except Exception as e:  # no Triton, or one without tensor descriptors
                triton_mod.append(None)
                print(f"  Triton baselines skipped: {type(e).__name__}: {e}", flush=True)
                add(("triton", "-", "-", 0.0, 0.0, 0.0, 0.0, 0.0, True, f"skipped: {type(e).__name__}: {e}"))
        return triton_mod[0]
    sizes = [int(x) for x in args.sizes.split(",") if x]

    # ---- GEMMs: bf16 and FP8 ----------------------------------------------------------------
    FP8_SCALE = 0.5 * 0.25  # scale_a · scale_b of the FP8 case

    def gemm_variant(G, v, fp8, a, b, c, m, n, k):
        """A function that runs GEMM variant `v` (gemm.py, or Triton's for triton*) on a and
        b (bf16, or e4m3) into c (bf16); None for a name it does not know."""
        bk = G.BK_FP8 if fp8 else G.BK
        a_, b_ = (a.view(torch.uint8), b.view(torch.uint8)) if fp8 else (a, b)  # e4m3 maps over bytes
        pre = "gemm_fp8_" if fp8 else "gemm_bf16_"
        tail = (np.float32(FP8_SCALE),) if fp8 else ()
        tm, tn = m // G.BM, n // G.BN
        name = v
        out = c.view(torch.int32)  # bf16 pairs stored as 32-bit words
        bn, shared, grid = G.BN, G.SHARED_BYTES, min(sms, tm * tn)
        am = (G.BM, bk)
        if name == "base" and not fp8:
            kern, out, grid = G.gemm_bf16, c, (tn, tm)
        elif name == "persistent":
            kern = getattr(G, pre + name)
        elif name == "cluster":
            kern, bn, grid = getattr(G, pre + name), G.BN // 2, grid // 2 * 2
        elif name == "pingpong":
            tn = n // G.PP_BN
            kern, bn, shared, grid = getattr(G, pre + name), G.PP_BN, G.PP_SHARED_BYTES, min(sms, tm * tn)
        elif name == "tmastore":
            kern, out, shared = getattr(G, pre + name), tmap(c, (64, 64)), G.TS_SHARED_BYTES
        elif name in ("triton", "triton_mm") and not (fp8 and name == "triton_mm"):
            T = triton_ref()
            if T is None:
                return None
            if name == "triton_mm":
                return lambda: T.matmul(a, b, c)
            return lambda: T.matmul_tma_persistent(a, b, c, scale=FP8_SCALE if fp8 else None)
        else:
            print(f"unknown {'FP8' if fp8 else 'bf16'} GEMM variant {v}")
            return None
        amap, bmap = tmap(a_, am), tmap(b_, (bn, bk))
        args = (amap, bmap, out, i32(k // bk)) + ((i32(tm), i32(tn)) if name != "base" else ()) + tail

        def f():
            device.launch(kern, *args, grid=grid, block=384, shared=shared)

        return f

    def gemm_case(s, fp8):
        import gemm as G

        m = n = k = s
        kind = "fp8 GEMM" if fp8 else "bf16 GEMM"
        if fp8:
            torch.manual_seed(s + 1)
            a = (torch.randn(m, k, device="cuda") * 2).to(torch.float8_e4m3fn)
            b = (torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn)
            sa = torch.tensor(0.5, device="cuda")
            sb = torch.tensor(0.25, device="cuda")

            def ref_f(fast=False):
                r = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
                return r[0] if isinstance(r, tuple) else r

            ref = ref_f()
            # The baseline is the faster of cuBLAS's two accumulation modes.
            t_ref = min(time_ms(ref_f), time_ms(lambda: ref_f(fast=True)))
        else:
            torch.manual_seed(s)
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            ref = torch.matmul(a, b.T)
            t_ref = time_ms(lambda: torch.matmul(a, b.T))
        flop = 2.0 * m * n * k
        for v in (args.fp8 if fp8 else args.gemm).split(","):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)

            def run(v=v, c=c):
                f = gemm_variant(G, v, fp8, a, b, c, m, n, k)
                if f is None:
                    return
                f()
                torch.cuda.synchronize()
                err = ((c.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
                if not err < 2e-2:
                    diagnose(f"{kind} {s} {v}", c.float() - ref.float(), 2e-2 * ref.float().abs().max().item())
                t = time_ms(f)
                row(kind, f"{s}³", v, t, flop / t / 1e9, t_ref, flop / t_ref / 1e9, err, err < 2e-2, note(t))

            attempt(f"{kind} {s} {v}", run)

    for fp8 in (False, True):
        if ("fp8" if fp8 else "gemm") not in skip:
            for s in sizes:
                attempt(f"{'fp8' if fp8 else 'bf16'} GEMM {s}", lambda s=s, fp8=fp8: gemm_case(s, fp8))

    # ---- attention ------------------------------------------------------------------------
    if "attn" not in skip:
        import attention as A
        import torch.nn.functional as Fn
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def attn_case(seq):
            bsz, heads = (4, 16) if seq <= 4096 else (1, 16)
            torch.manual_seed(seq)
            q, k_, v_ = (torch.randn(bsz, heads, seq, A.D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            q2, k2, v2 = (x.view(-1, A.D) for x in (q, k_, v_))
            qm, km = tmap(q2, (A.BM, 64)), tmap(k2, (A.BN, 64))
            vnm = tmap(v2, (A.BN, 64))
            scale = 1.0 / math.sqrt(A.D)
            for causal in (False, True):
                def ref_f(q=q, k_=k_, v_=v_, causal=causal):
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        return Fn.scaled_dot_product_attention(q, k_, v_, is_causal=causal)

                try:
                    ref = ref_f()
                except RuntimeError as e:  # no flash backend in this build: say so, use the default
                    print(f"  the flash backend refused ({e}); the baseline is SDPA's default backend")

                    def ref_f(q=q, k_=k_, v_=v_, causal=causal):
                        return Fn.scaled_dot_product_attention(q, k_, v_, is_causal=causal)

                    ref = ref_f()
                t_ref = time_ms(ref_f)
                flop = 4.0 * bsz * heads * seq * seq * A.D * (0.5 if causal else 1.0)
                case = f"b{bsz} h{heads} s{seq} {'causal' if causal else 'full'}"
                for variant in args.attn.split(","):
                    o = torch.full_like(q, float("nan"))
                    o2 = o.view(-1, A.D).view(torch.int32)
                    grid = (seq // A.BM, bsz * heads)
                    sl2 = np.float32(scale * math.log2(math.e))
                    if variant in ("vt", "pp", "ov"):
                        vt = torch.empty(bsz, heads, A.D, seq, device="cuda", dtype=torch.bfloat16)
                        vtm = tmap(vt.view(-1, seq), (A.D, 64))
                        kern = {"vt": A.attn_fwd, "pp": A.attn_fwd_pp, "ov": A.attn_fwd_ov}[variant]

                        def f(o2=o2, v_=v_, vt=vt, vtm=vtm, causal=causal, grid=grid, sl2=sl2, seq=seq, kern=kern):
                            # The transpose of V is part of the timed work.
                            vt.copy_(v_.transpose(-1, -2))
                            device.launch(kern, qm, km, vtm, o2, i32(seq), sl2, causal,
                                          grid=grid, block=384, shared=A.SHARED_BYTES)
                    elif variant == "triton":
                        T = triton_ref()
                        if T is None:
                            continue

                        def f(o=o, q=q, k_=k_, v_=v_, causal=causal, scale=scale, T=T):
                            T.attention(q, k_, v_, o, causal, scale)
                    elif variant in ("vn", "vn_swap", "ov_vn", "ov_vn_swap"):
                        vl, vs = (1024, 16384) if variant.endswith("swap") else (16384, 1024)
                        kern = A.attn_fwd_ov_vn if variant.startswith("ov") else A.attn_fwd_vn

                        def f(o2=o2, causal=causal, grid=grid, sl2=sl2, seq=seq, vl=vl, vs=vs, kern=kern):
                            device.launch(kern, qm, km, vnm, o2, i32(seq), sl2, causal, i32(vl), i32(vs),
                                          grid=grid, block=384, shared=A.SHARED_BYTES)
                    else:
                        print(f"unknown attention variant {variant}")
                        continue

                    def run(f=f, o=o, ref=ref, flop=flop, t_ref=t_ref, case=case, variant=variant, v_=v_):
                        f()
                        torch.cuda.synchronize()
                        d = o.float() - ref.float()
                        err = (d.norm() / ref.float().norm()).item()
                        worst = d.abs().max().item()
                        if not (err < 2e-2 and worst < 6e-2):
                            diagnose(f"attention {case} {variant}", d.view(-1, A.D), 6e-2, ct=A.D)
                        t = time_ms(f)
                        extra = note(t)
                        if variant in ("vt", "pp", "ov"):
                            try:
                                vt2 = v_.transpose(-1, -2).contiguous()
                                tc = time_ms(lambda: vt2.copy_(v_.transpose(-1, -2)))
                                extra += f"; includes the Vᵀ copy, {tc:.3f} ms"
                            except Exception as e:  # a note only
                                extra += f"; Vᵀ copy not timed ({e})"
                        row("attention", case, variant, t, flop / t / 1e9, t_ref, flop / t_ref / 1e9, err,
                            err < 2e-2 and worst < 6e-2, f"max abs err {worst:.1e}; {extra}")

                    attempt(f"attention {case} {variant}", run)

        for seq in (int(x) for x in args.seqs.split(",") if x):
            attempt(f"attention s{seq}", lambda seq=seq: attn_case(seq))

    return print_table()


def print_table() -> int:
    print()
    print("| kernel | case | variant | ours ms | ours TFLOP/s | torch ms | torch TFLOP/s | ours/torch | err | notes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, case, v, ms, tf, rms, rtf, err, ok, note in ROWS:
        ratio = f"{tf / rtf:.1%}" if ms and rms else "-"
        mark = "" if ok else " FAILED"
        print(f"| {kind} | {case} | {v} | {ms:.3f} | {tf:.1f} | {rms:.3f} | {rtf:.1f} | {ratio} | {err:.2e}{mark} | {note} |")
    failed = [f"{r[0]} {r[1]} {r[2]}" for r in ROWS if not r[8]]
    if failed:
        print("failed: " + "; ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
