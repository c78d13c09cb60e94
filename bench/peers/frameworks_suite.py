"""What users would pick instead of writing the kernel: framework built-ins and Triton.

For the cases of bench/cases.py where a library call or a Triton kernel does the same job,
the same seeded inputs go through it, the result is checked against the same numpy
reference, and it is timed as every suite times its kernels (cases.time_launches: 5
untimed calls, then 50 queued back to back between device events). One JSON line each:
{"impl": "torch" | "triton" | "cupy" | "cusparse", "kernel": <case>, "call": <what ran>, ...}.

  softmax_rows,  torch.softmax(x, dim=1); Triton (a row a program, as Triton's fused-softmax
  softmax_1pass  tutorial)
  layernorm,     torch.nn.functional.layer_norm (its output only; mean and rstd are not
  layernorm_1pass  returned); Triton (Triton's layer-norm tutorial's forward kernel: a row a
                 program, also writing mean and rstd)
  sgemm_reg,     torch.matmul (cuBLAS SGEMM; TF32 off, so full float32 as the kernels)
  matmul_tiled
  hgemm_mma      torch.matmul of the float16 matrices (cuBLAS HGEMM on the tensor cores,
                 float32 accumulation: reduced-precision reductions off); its result is
                 float16 (cuBLAS rounds the float32 sums once), the kernels' float32
  spmv_csr       cupyx.scipy.sparse.csr_matrix @ x (cuSPARSE SpMV)
  scan_lookback  torch.cumsum, cupy.cumsum (both CUB's decoupled look-back scan)
  conv2d         torch.nn.functional.conv2d with padding 2 (cuDNN; TF32 off)
  bitonic_sort   cupy.sort(axis=1) of the 2048-key runs (a segmented radix sort, not bitonic)

Torch and Triton run on PyTorch's current stream, CuPy on its current stream; both are the
legacy default stream here. Output buffers are allocated by the calls themselves (PyTorch's
and CuPy's caching allocators make that cheap; it is part of what a user gets).

usage: frameworks_suite.py [kernel ...]
"""

import dataclasses
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cases  # noqa: E402

warnings.filterwarnings("ignore")

try:
    import torch
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
except ImportError:  # reported per case below
    torch = None
try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None
try:
    import cupy
    import cupyx.scipy.sparse
except ImportError:
    cupy = None


def emit(rec):
    print(json.dumps(rec), flush=True)


def log(msg):
    print(f"frameworks_suite: {msg}", file=sys.stderr, flush=True)


# ---- Triton kernels (written after Triton's tutorials 02 and 05) ---------------------------

if triton is not None:

    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        den = tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_stride + offs, num / den, mask=mask)

    @triton.jit
    def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n, eps,
                         BLOCK: tl.constexpr):
        row = tl.program_id(0)
        x_ptr += row * stride
        y_ptr += row * stride
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, n, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + cols, mask=cols < n, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / n
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, n, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + cols, mask=cols < n, other=0.0).to(tl.float32)
            x = tl.where(cols < n, x - mean, 0.0)
            acc += x * x
        var = tl.sum(acc, axis=0) / n
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(mean_ptr + row, mean)
        tl.store(rstd_ptr + row, rstd)
        for off in range(0, n, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            mask = cols < n
            w = tl.load(w_ptr + cols, mask=mask)
            b = tl.load(b_ptr + cols, mask=mask)
            x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_ptr + cols, (x - mean) * rstd * w + b, mask=mask)


# ---- the calls --------------------------------------------------------------------------
# Each entry: (impl, call, needs, setup) where setup(args) returns (launch, outputs) and
# outputs() gives {output name: numpy array} after a launch.


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def torch_softmax(a):
    x = _t(a["x"])
    res = {}

    def launch():
        res["out"] = torch.softmax(x, dim=1)

    return launch, lambda: {"out": res["out"].cpu().numpy()}


def triton_softmax(a):
    x = _t(a["x"])
    y = torch.empty_like(x)
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)

    def launch():
        softmax_kernel[(rows,)](y, x, x.stride(0), y.stride(0), cols, BLOCK=block, num_warps=8)

    return launch, lambda: {"out": y.cpu().numpy()}


def torch_layernorm(a):
    x, w, b = _t(a["x"]), _t(a["w"]), _t(a["b"])
    res = {}

    def launch():
        res["out"] = F.layer_norm(x, (x.shape[1],), w, b, eps=cases.LN_EPS)

    return launch, lambda: {"out": res["out"].cpu().numpy()}


def triton_layernorm(a):
    x, w, b = _t(a["x"]), _t(a["w"]), _t(a["b"])
    rows, cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float32, device="cuda")
    rstd = torch.empty(rows, dtype=torch.float32, device="cuda")
    block = min(65536 // x.element_size(), triton.next_power_of_2(cols))
    warps = min(max(block // 256, 1), 8)

    def launch():
        layernorm_kernel[(rows,)](x, y, w, b, mean, rstd, x.stride(0), cols, cases.LN_EPS,
                                  BLOCK=block, num_warps=warps)

    return launch, lambda: {"out": y.cpu().numpy(), "mean": mean.cpu().numpy(),
                            "rstd": rstd.cpu().numpy()}


def torch_matmul(a):
    x, y = _t(a["a"]), _t(a["b"])
    c = torch.empty_like(x)

    def launch():
        torch.matmul(x, y, out=c)

    return launch, lambda: {"c": c.cpu().numpy()}


def torch_hgemm(a):
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    x, y = _t(a["a"]), _t(a["b"])
    c = torch.empty_like(x)

    def launch():
        torch.matmul(x, y, out=c)

    return launch, lambda: {"c": c.float().cpu().numpy()}


def cusparse_spmv(a):
    n = len(a["y"])
    m = cupyx.scipy.sparse.csr_matrix(
        (cupy.asarray(a["data"]), cupy.asarray(a["indices"]), cupy.asarray(a["indptr"])),
        shape=(n, len(a["x"])))
    x = cupy.asarray(a["x"])
    res = {}

    def launch():
        res["y"] = m @ x

    return launch, lambda: {"y": cupy.asnumpy(res["y"])}


def torch_cumsum(a):
    x = _t(a["x"])
    out = torch.empty_like(x)

    def launch():
        torch.cumsum(x, 0, dtype=torch.int32, out=out)

    return launch, lambda: {"out": out.cpu().numpy()}


def cupy_cumsum(a):
    x = cupy.asarray(a["x"])
    out = cupy.empty_like(x)

    def launch():
        cupy.cumsum(x, dtype=cupy.int32, out=out)

    return launch, lambda: {"out": cupy.asnumpy(out)}


def torch_conv2d(a):
    img = _t(a["img"])[None, None]
    w = _t(a["w"])[None, None]
    res = {}

    def launch():
        res["out"] = F.conv2d(img, w, padding=cases.CONV_K // 2)

    return launch, lambda: {"out": res["out"][0, 0].cpu().numpy()}


def cupy_sort(a):
    keys = cupy.asarray(a["keys"]).reshape(-1, cases.SORT_SEG)
    res = {}

    def launch():
        res["out"] = cupy.sort(keys, axis=1)

    return launch, lambda: {"out": cupy.asnumpy(res["out"]).ravel()}


CALLS = {
    "softmax_rows": [("torch", "torch.softmax", "torch", torch_softmax),
                     ("triton", "Triton fused softmax", "triton", triton_softmax)],
    "layernorm": [("torch", "torch.nn.functional.layer_norm", "torch", torch_layernorm),
                  ("triton", "Triton layer-norm forward", "triton", triton_layernorm)],
    # the same calls against the one-pass kernels (same inputs: cases.Case.same_data_as)
    "softmax_1pass": [("torch", "torch.softmax", "torch", torch_softmax),
                      ("triton", "Triton fused softmax", "triton", triton_softmax)],
    "layernorm_1pass": [("torch", "torch.nn.functional.layer_norm", "torch", torch_layernorm),
                        ("triton", "Triton layer-norm forward", "triton", triton_layernorm)],
    "matmul_tiled": [("torch", "torch.matmul (cuBLAS, no TF32)", "torch", torch_matmul)],
    "sgemm_reg": [("torch", "torch.matmul (cuBLAS, no TF32)", "torch", torch_matmul)],
    "hgemm_mma": [("torch", "torch.matmul float16 (cuBLAS HGEMM, float32 accumulation)", "torch",
                   torch_hgemm)],
    "spmv_csr": [("cusparse", "cupyx.scipy.sparse csr_matrix @ x", "cupy", cusparse_spmv)],
    "conv2d": [("torch", "torch.nn.functional.conv2d (cuDNN, no TF32)", "torch", torch_conv2d)],
    "bitonic_sort": [("cupy", "cupy.sort(axis=1)", "cupy", cupy_sort)],
    "scan_lookback": [("torch", "torch.cumsum", "torch", torch_cumsum),
                      ("cupy", "cupy.cumsum", "cupy", cupy_cumsum)],
}
AVAILABLE = {"torch": torch is not None, "triton": triton is not None and torch is not None,
             "cupy": cupy is not None}


def torch_events():
    return (lambda: torch.cuda.Event(enable_timing=True)), (lambda a, b: a.elapsed_time(b))


def bench(case, impl, call, needs, setup):
    base = {"impl": impl, "kernel": case.name, "call": call}
    if not AVAILABLE[needs]:
        emit({**base, "ok": False, "note": f"{needs} is not installed"})
        return
    args = case.inputs()
    launch, outputs = setup(args)
    launch()
    if needs == "cupy":
        cupy.cuda.Device().synchronize()
        new_event, elapsed = cupy.cuda.Event, cupy.cuda.get_elapsed_time
    else:
        torch.cuda.synchronize()
        new_event, elapsed = torch_events()
    got = outputs()
    # torch's layer_norm returns no mean and rstd: check what the call gives
    ok, note = dataclasses.replace(case, outputs=tuple(got)).check(args, got)
    median, low = cases.time_launches(launch, new_event, elapsed)
    emit({**cases.result(impl, case, median, low, ok, note), "call": call})


def main(argv):
    for case in cases.select([n for n in argv if n in cases.BY_NAME] or list(CALLS)):
        for impl, call, needs, setup in CALLS.get(case.name, []):
            log(f"{case.name}: {call}")
            try:
                bench(case, impl, call, needs, setup)
            except Exception as e:  # report and go on
                emit({"impl": impl, "kernel": case.name, "call": call, "ok": False,
                      "note": f"{type(e).__name__}: {e}"[:300]})
            if torch is not None:
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
