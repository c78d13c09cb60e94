"""pydevice's ElementwiseKernel / ReductionKernel / fuse against CuPy's own (and torch.sum),
side by side in one run, on one GPU. Prints one table.

    python3 bench/python/elementwise_bench.py            # about 2-3 minutes on an H100
    python3 bench/python/elementwise_bench.py --quick    # 2**10, 2**18, 2**26 only

Cases (float32 and float64, 2**10 .. 2**26 elements):
  ew-contig   z = (x - y) * (x - y) on contiguous vectors (the same body text for both)
  ew-bcast    the same on x of shape (n/1024, 1024) and y of shape (1024,)
  ew-strided  the same on x[::2], y[::2] (every other element of 2n)
  fuse        @fuse of (x - y) * (x - y) (pydevice.fuse vs cupy.fuse), when pydevice has fuse
  red-full    sum of all elements (ReductionKernel 'x', 'a + b'; and torch.sum)
  red-rows    sum along axis 1 of (n/1024, 1024)
  red-cols    sum along axis 0 of (n/1024, 1024) (the Columns strategy, split over the rows)
  red-wide    sum along axis 0 of (1024, n/1024) (many outputs, 1024 rows)
  red-mid     sum along axis 1 of (8, n/1024, 128) (a 3-D array's middle axis)
The reductions also run torch.sum on the same data (dim=... alike) when PyTorch has CUDA.
Times are per call, GPU time from CUDA events over a loop of calls: pydevice, CuPy and torch
take turns, a loop each, in 7 rounds; the median of each one's 7 loops.
`GB/s` is the bytes each call must move (inputs read once, outputs written once) over our
time; `copy%` compares it with a device-to-device copy of the same byte count. The last
lines time the host overhead per call: 2**10 elements, 2000 calls back to back, wall clock,
median of 5 loops; beside CuPy's, PyTorch's eager ops ((x - y) * (x - y): three kernels;
torch.sum) and numba-cuda's @vectorize of the body on CuPy arrays, for scale.
"""

import argparse
import statistics
import sys
import time

import numpy as np

try:
    import cupy as cp
except ImportError:  # pragma: no cover
    sys.exit("this benchmark needs CuPy")

import pydevice

try:
    import torch

    if not torch.cuda.is_available():
        torch = None
except ImportError:  # pragma: no cover
    torch = None

BODY = "z = (x - y) * (x - y)"
ours_ew = pydevice.ElementwiseKernel("T x, T y", "T z", BODY, "sqd")
cupy_ew = cp.ElementwiseKernel("T x, T y", "T z", BODY, "sqd")
ours_sum = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum")
cupy_sum = cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum")


@cp.fuse(kernel_name="sqd_fused")
def cupy_fused(x, y):
    return (x - y) * (x - y)


if hasattr(pydevice, "fuse"):

    @pydevice.fuse(kernel_name="sqd_fused")
    def ours_fused(x, y):
        return (x - y) * (x - y)

else:
    ours_fused = None


def numba_vectorize():
    """numba-cuda's @vectorize of the same body (called on CuPy arrays), or None."""
    try:
        np.row_stack = np.vstack  # numba-cuda 0.30.4 still refers to it (removed in NumPy 2.5)
        from numba import vectorize

        @vectorize(["float32(float32, float32)"], target="cuda")
        def sqd(x, y):
            return (x - y) * (x - y)

        return sqd
    except Exception as e:  # noqa: BLE001 (numba-cuda missing: its column is empty)
        print(f"# numba @vectorize skipped: {type(e).__name__}: {e}", file=sys.stderr)
        return None


def gpu_time(fn, nbytes):
    """Median per-call GPU time in microseconds over 3 loops of calls."""
    return gpu_times([fn], nbytes, rounds=3)[0]


def gpu_times(fns, nbytes, rounds=7):
    """Median per-call GPU time in microseconds of each of `fns` (None: nan), timed in turn
    in each of `rounds` rounds (one loop of calls per function per round), so that every
    function sees the same phases of the machine's noise: below 2**22 a call is bound by
    host time, which drifts by tens of percent over seconds."""
    live = [f for f in fns if f is not None]
    for f in live:
        for _ in range(3):
            f()
    cp.cuda.Device().synchronize()
    reps = int(max(5, min(2000, 3e9 / max(nbytes, 1) / 100)))
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    loops = {id(f): [] for f in live}
    for _ in range(rounds):
        for f in live:
            start.record()
            for _ in range(reps):
                f()
            stop.record()
            stop.synchronize()
            loops[id(f)].append(cp.cuda.get_elapsed_time(start, stop) * 1e3 / reps)
    return [statistics.median(loops[id(f)]) if f is not None else float("nan") for f in fns]


def check(a, b, what):
    a = cp.asnumpy(a) if not hasattr(a, "cpu") else a.cpu().numpy()
    b = cp.asnumpy(b) if not hasattr(b, "cpu") else b.cpu().numpy()
    if not np.allclose(a, b, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(b).max(initial=0)))):
        print(f"MISMATCH in {what}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    exps = [10, 18, 26] if args.quick else [10, 14, 18, 22, 26]
    rows = []
    copy_bw = {}
    t0 = time.time()
    for dt in ("float32", "float64"):
        isz = np.dtype(dt).itemsize
        for e in exps:
            n = 1 << e
            x = cp.random.standard_normal(n).astype(dt)
            y = cp.random.standard_normal(n).astype(dt)
            dst = cp.empty_like(x)
            copy_us = gpu_time(lambda: cp.copyto(dst, x), 2 * n * isz)
            copy_bw[(dt, e)] = 2 * n * isz / copy_us / 1e3
            x2 = x.reshape(-1, 1024) if n >= 1024 else x.reshape(1, -1)
            yb = y[: x2.shape[1]]
            xs = cp.random.standard_normal(2 * n).astype(dt)
            ys = cp.random.standard_normal(2 * n).astype(dt)
            x_wide = x.reshape(1024, -1) if n >= 1024 else x.reshape(-1, 1)
            x3 = x.reshape(8, -1, 128) if n >= 1024 else x.reshape(1, -1, 1)
            t_x = torch.as_tensor(x2, device="cuda") if torch is not None else None
            t_wide = torch.as_tensor(x_wide, device="cuda") if torch is not None else None
            t_3 = torch.as_tensor(x3, device="cuda") if torch is not None else None
            cases = [
                ("ew-contig", 3 * n * isz, lambda: ours_ew(x, y), lambda: cupy_ew(x, y), None, None),
                ("ew-bcast", (2 * n + yb.size) * isz, lambda: ours_ew(x2, yb), lambda: cupy_ew(x2, yb), None, None),
                ("ew-strided", 3 * n * isz, lambda: ours_ew(xs[::2], ys[::2]), lambda: cupy_ew(xs[::2], ys[::2]), None, None),
                (
                    "fuse",
                    3 * n * isz,
                    (lambda: ours_fused(x, y)) if ours_fused else None,
                    lambda: cupy_fused(x, y),
                    None,
                    None,
                ),
                (
                    "red-full",
                    n * isz,
                    lambda: ours_sum(x),
                    lambda: cupy_sum(x),
                    (lambda: torch.sum(t_x)) if t_x is not None else None,
                    "torch.sum",
                ),
                (
                    "red-rows",
                    n * isz,
                    lambda: ours_sum(x2, axis=1),
                    lambda: cupy_sum(x2, axis=1),
                    (lambda: torch.sum(t_x, dim=1)) if t_x is not None else None,
                    "torch.sum",
                ),
                (
                    "red-cols",
                    n * isz,
                    lambda: ours_sum(x2, axis=0),
                    lambda: cupy_sum(x2, axis=0),
                    (lambda: torch.sum(t_x, dim=0)) if t_x is not None else None,
                    "torch.sum",
                ),
                (
                    "red-wide",
                    n * isz,
                    lambda: ours_sum(x_wide, axis=0),
                    lambda: cupy_sum(x_wide, axis=0),
                    (lambda: torch.sum(t_wide, dim=0)) if t_wide is not None else None,
                    "torch.sum",
                ),
                (
                    "red-mid",
                    n * isz,
                    lambda: ours_sum(x3, axis=1),
                    lambda: cupy_sum(x3, axis=1),
                    (lambda: torch.sum(t_3, dim=1)) if t_3 is not None else None,
                    "torch.sum",
                ),
            ]
            for name, nbytes, ours, theirs, other, other_name in cases:
                if ours is not None:
                    check(ours(), theirs(), f"{name} {dt} 2**{e}")
                    if other is not None:
                        check(ours(), other(), f"{name} {dt} 2**{e} (torch)")
                t_ours, t_cupy, t_other = gpu_times([ours, theirs, other], nbytes)
                gbs = nbytes / t_ours / 1e3
                rows.append((name, dt, e, t_ours, t_cupy, t_other, gbs, 100 * gbs / copy_bw[(dt, e)]))
            del x, y, dst, x2, xs, ys, t_x, x_wide, x3, t_wide, t_3
            cp.get_default_memory_pool().free_all_blocks()
    # Host overhead: small calls back to back, wall clock (median of 5 loops of 2000), with
    # PyTorch's eager ops and numba-cuda's @vectorize (on CuPy arrays) for scale.
    overhead = []
    xs_ = cp.ones(1024, dtype=np.float32)
    ys_ = cp.ones(1024, dtype=np.float32)
    t_xs = torch.ones(1024, device="cuda", dtype=torch.float32) if torch is not None else None
    t_ys = torch.ones(1024, device="cuda", dtype=torch.float32) if torch is not None else None
    nb_sqd = numba_vectorize()
    for label, fn in (
        ("ElementwiseKernel", (lambda: ours_ew(xs_, ys_), lambda: cupy_ew(xs_, ys_),
                               (lambda: (t_xs - t_ys) * (t_xs - t_ys)) if t_xs is not None else None,
                               (lambda: nb_sqd(xs_, ys_)) if nb_sqd else None)),
        ("ReductionKernel", (lambda: ours_sum(xs_), lambda: cupy_sum(xs_),
                             (lambda: torch.sum(t_xs)) if t_xs is not None else None, None)),
        ("fuse", ((lambda: ours_fused(xs_, ys_)) if ours_fused else None, lambda: cupy_fused(xs_, ys_),
                  None, None)),
    ):
        res = []
        for f in fn:
            if f is None:
                res.append(float("nan"))
                continue
            for _ in range(50):
                f()
            cp.cuda.Device().synchronize()
            if torch is not None:
                torch.cuda.synchronize()
            loops = []
            for _ in range(5):
                t = time.perf_counter()
                for _ in range(2000):
                    f()
                loops.append((time.perf_counter() - t) / 2000 * 1e6)
                cp.cuda.Device().synchronize()
                if torch is not None:
                    torch.cuda.synchronize()
            res.append(statistics.median(loops))
        overhead.append((label, *res))

    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"# pydevice {pydevice.compiler_version()} vs CuPy {cp.__version__}"
          f"{' and torch ' + torch.__version__ if torch else ''} on {dev} ({time.time() - t0:.0f} s)")
    print("| case | dtype | n | pydevice us | CuPy us | torch.sum us | pydevice GB/s | copy% | CuPy/pydevice |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name, dt, e, a, b, c, gbs, pct in rows:
        cs = f"{c:.1f}" if c == c else "-"
        a_s = f"{a:.1f}" if a == a else "-"
        ratio = f"{b / a:.2f}" if a == a else "-"
        print(f"| {name} | {dt} | 2^{e} | {a_s} | {b:.1f} | {cs} | {gbs:.0f} | {pct:.0f} | {ratio} |")
    print()
    print("| host overhead per call (2^10 elements) | pydevice us | CuPy us | torch eager us | numba @vectorize us |")
    print("|---|---:|---:|---:|---:|")
    for label, a, b, c, d in overhead:
        cells = [f"{v:.1f}" if v == v else "-" for v in (a, b, c, d)]
        print(f"| {label} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
