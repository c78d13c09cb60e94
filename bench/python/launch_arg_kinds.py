"""Host cost per launch by argument kind (issue 31): the same kernel shape, `out[i] = a[i] *
s + t` over 4096 float32 elements, launched with its two scalars given as Python numbers,
NumPy scalars of each common type, or fields of a `@struct`, beside the same launch with
only arrays. Issue 31 measured 5-8 us with Python numbers, 24.6 us with a NumPy `float64`
and 48.3 us with a `@struct` (the Python path); with the native fast path for NumPy scalars
and structs (python/src/fast.rs) they should be within 1 us of each other.

With a GPU and CuPy (the GPU machine), real launches on one stream, synchronized at the end
of each round; without them, the host part only, with dry-run launchers (everything but the
driver call) and CuPy stand-ins, as bench/python/launch_host_cost.py does. Every case also
reports whether its launches took the fast path (the dispatcher's `fast_launches` counter).

    python3 bench/python/launch_arg_kinds.py [--n 20000] [--repeats 7]

One JSON line per case (median and best microseconds per launch), then a table.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

from cuda import device
from cuda.device import float32, int32
import pydevice._core as core

N = 4096
GRID, BLOCK = N // 256, 256
FAKE_BASE = 0x7F00_0000_0000


@device.struct
class Affine:
    s: float32
    t: float32


@device.kernel
def scale_shift(a, out, s, t):
    i = device.tid(1)
    if i < len(out):
        out[i] = a[i] * s + t


@device.kernel
def scale_shift_struct(a, out, p):
    i = device.tid(1)
    if i < len(out):
        out[i] = a[i] * p.s + p.t


@device.kernel
def scale_shift_arrays(a, out, st):
    i = device.tid(1)
    if i < len(out):
        out[i] = a[i] * st[0] + st[1]


def gpu_arrays():
    """Real CuPy arrays and a sync function, or None without a GPU and CuPy."""
    try:
        import cupy

        if not core._native.driver_available() or cupy.cuda.runtime.getDeviceCount() == 0:
            return None
    except Exception:
        return None
    a = cupy.arange(N, dtype=np.float32)
    out = cupy.empty(N, dtype=np.float32)
    st = cupy.asarray([2.0, 1.0], dtype=np.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    return (a, out, st), stream, stream.synchronize


def dry_arrays():
    """CuPy stand-ins and dry-run launchers for every case (no GPU)."""
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from launch_host_cost import _standin_class  # noqa: E402

    cls = _standin_class()
    return (cls(FAKE_BASE), cls(FAKE_BASE + N * 4), cls(FAKE_BASE + 2 * N * 4)), None, lambda: None


def prepare_dry(kernel, args):
    keys = tuple(core._describe(a)[0] for a in args)
    m = kernel._mod()
    launcher = m.compile(kernel.__name__, kernel._types_of_keys(keys, args, m), "sm_90", 3).dry_run_launcher(0)
    kernel._specs[(keys, 0)] = core._Specialization(None, launcher, ())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=7)
    o = p.parse_args()
    real = gpu_arrays()
    (a, out, st), stream, sync = real if real is not None else dry_arrays()
    mode = "GPU" if real is not None else "dry run (host only)"
    print(json.dumps({"python": sys.version.split()[0], "numpy": np.__version__, "mode": mode}), flush=True)
    cases = [
        ("arrays only (scalars in a device array)", scale_shift_arrays, (a, out, st)),
        ("Python floats", scale_shift, (a, out, 2.0, 1.0)),
        ("Python ints", scale_shift, (a, out, 2, 1)),
        ("np.float32", scale_shift, (a, out, np.float32(2.0), np.float32(1.0))),
        ("np.float64", scale_shift, (a, out, np.float64(2.0), np.float64(1.0))),
        ("np.int32", scale_shift, (a, out, np.int32(2), np.int32(1))),
        ("np.int64", scale_shift, (a, out, np.int64(2), np.int64(1))),
        ("np.uint32", scale_shift, (a, out, np.uint32(2), np.uint32(1))),
        ("@struct of Python floats", scale_shift_struct, (a, out, Affine(2.0, 1.0))),
        ("@struct of np.float32", scale_shift_struct, (a, out, Affine(np.float32(2.0), np.float32(1.0)))),
    ]
    rows = []
    for name, kernel, args in cases:
        if real is None:
            prepare_dry(kernel, args)
        # The first launch takes the Python path (and specializes); later ones may not.
        for _ in range(200):
            device.launch(kernel, *args, grid=GRID, block=BLOCK, stream=stream)
        sync()
        before = kernel._dispatcher.fast_launches
        times = []
        for _ in range(o.repeats):
            sync()
            t0 = time.perf_counter()
            for _ in range(o.n):
                device.launch(kernel, *args, grid=GRID, block=BLOCK, stream=stream)
            t1 = time.perf_counter()
            sync()
            times.append((t1 - t0) / o.n * 1e6)
        fast = kernel._dispatcher.fast_launches - before == o.n * o.repeats
        r = {
            "case": name,
            "median_us": round(statistics.median(times), 3),
            "min_us": round(min(times), 3),
            "fast_path": fast,
        }
        rows.append(r)
        print(json.dumps(r), flush=True)
    print(f"\n| arguments ({mode}) | median µs | best µs | fast path |\n|---|---:|---:|---|")
    for r in rows:
        print(f"| {r['case']} | {r['median_us']:.2f} | {r['min_us']:.2f} | {'yes' if r['fast_path'] else 'no'} |")


if __name__ == "__main__":
    main()
