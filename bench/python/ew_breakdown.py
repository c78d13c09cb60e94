"""Where the time of a kernel-builder call goes, ours against CuPy's: host time per call and
GPU time per call measured apart (`cupyx.profiler.benchmark`: CPU wall time of the call, and
CUDA events around it on the stream), for the cases where issue 20's table still loses.

    python3 bench/python/ew_breakdown.py

Also times the host-side pieces both paths pay (`cupy.empty`, slicing a strided view), so
a difference can be told apart from what the benchmark's lambdas add.
"""

import statistics
import sys

import numpy as np

try:
    import cupy as cp
    from cupyx.profiler import benchmark
except ImportError:  # pragma: no cover
    sys.exit("this benchmark needs CuPy")

import pydevice

BODY = "z = (x - y) * (x - y)"
ours_ew = pydevice.ElementwiseKernel("T x, T y", "T z", BODY, "sqd")
cupy_ew = cp.ElementwiseKernel("T x, T y", "T z", BODY, "sqd")
ours_sum = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum")
cupy_sum = cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum")


def split(fn, n_repeat=2000):
    """(median host us, median GPU us) per call."""
    r = benchmark(fn, n_repeat=n_repeat, n_warmup=20)
    return statistics.median(r.cpu_times) * 1e6, statistics.median(r.gpu_times[0]) * 1e6


def main():
    rows = []
    for dt in ("float32", "float64"):
        for e in (10, 14, 18, 22):
            n = 1 << e
            x = cp.random.standard_normal(n).astype(dt)
            y = cp.random.standard_normal(n).astype(dt)
            xs = cp.random.standard_normal(2 * n).astype(dt)
            ys = cp.random.standard_normal(2 * n).astype(dt)
            xv, yv = xs[::2], ys[::2]
            z = cp.empty_like(x)
            x_wide = x.reshape(1024, -1) if n >= 1024 else x.reshape(-1, 1)
            x2 = x.reshape(-1, 1024) if n >= 1024 else x.reshape(1, -1)
            yb = y[: x2.shape[1]]
            cases = [
                ("ew-contig", lambda: ours_ew(x, y), lambda: cupy_ew(x, y)),
                ("ew-bcast", lambda: ours_ew(x2, yb), lambda: cupy_ew(x2, yb)),
                ("ew-contig out=", lambda: ours_ew(x, y, z), lambda: cupy_ew(x, y, z)),
                ("ew-strided (views made)", lambda: ours_ew(xv, yv), lambda: cupy_ew(xv, yv)),
                ("ew-strided out=", lambda: ours_ew(xv, yv, z), lambda: cupy_ew(xv, yv, z)),
                ("red-wide", lambda: ours_sum(x_wide, axis=0), lambda: cupy_sum(x_wide, axis=0)),
                ("red-full", lambda: ours_sum(x), lambda: cupy_sum(x)),
            ]
            for name, ours, theirs in cases:
                oh, og = split(ours)
                th, tg = split(theirs)
                rows.append((name, dt, e, oh, og, th, tg))
    print("| case | dtype | n | ours host us | ours GPU us | CuPy host us | CuPy GPU us |")
    print("|---|---|---|---:|---:|---:|---:|")
    for name, dt, e, oh, og, th, tg in rows:
        print(f"| {name} | {dt} | 2^{e} | {oh:.1f} | {og:.1f} | {th:.1f} | {tg:.1f} |")
    a = cp.ones(1 << 11, dtype=np.float32)
    print()
    for label, fn in (
        ("cupy.empty(1024, float32)", lambda: cp.empty(1024, dtype=np.float32)),
        ("a[::2] (a CuPy view)", lambda: a[::2]),
        ("a[::2].__cuda_array_interface__", lambda: a[::2].__cuda_array_interface__),
    ):
        h, _ = split(fn, 5000)
        print(f"{label}: {h:.2f} us host")


if __name__ == "__main__":
    main()
