"""Host cost per launch without a GPU: everything `device.launch` does on the host (reading
the arguments, finding the GPU and the prepared launcher, packing the parameters, releasing
the GIL) except the driver call, which a dry-run launcher (`Kernel.dry_run_launcher`) skips.

It runs anywhere the package is installed (no CUDA driver needed); it is a measurement, not
a test (nothing is asserted about the times). With CuPy installed, the arguments are real
`cupy.ndarray`s over memory that is never touched (`UnownedMemory` at a made-up address);
without it, a stand-in class with the same attributes. A CAI-only array class (like numba's
device arrays) measures the general Python path.

    python3 bench/python/launch_host_cost.py [--n 200000] [--repeats 7] [--case TEXT]

Wall times on a shared machine are noisy; instruction counts are not. Under callgrind, two
runs of one case with different `--n` give the instructions per launch as their difference
over the difference of launch counts (setup and warm-up cancel):

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \
        python3 bench/python/launch_host_cost.py --case "stream object" --n 2000 --repeats 1

Prints one JSON line per case (median and best microseconds per launch). On the GPU machine,
`bench/python/launch_overhead.py` measures the whole launch, driver call included, against
CuPy, PyTorch and numba-cuda.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

from cuda import device
import pydevice._core as core

N = 4096
GRID, BLOCK = N // 256, 256
FAKE_BASE = 0x7F00_0000_0000


@device.kernel
def vec_add(a, b, c):
    i = device.tid(1)
    if i < len(c):
        c[i] = a[i] + b[i]


def cupy_arrays():
    try:
        import cupy
        from cupy.cuda import memory
    except ImportError:
        return None
    out = []
    for k in range(3):
        mem = memory.UnownedMemory(FAKE_BASE + k * N * 4, N * 4, None, device_id=0)
        out.append(cupy.ndarray((N,), dtype=np.float32, memptr=memory.MemoryPointer(mem, 0)))
    return out


class _Mem:
    def __init__(self, ptr):
        self.ptr = ptr
        self.device_id = 0


def _standin_class():
    """A class the package takes for `cupy.ndarray` (module `cupy...`, name `ndarray`) whose
    shape and strides are built per access, as CuPy's are."""

    def init(self, ptr):
        self.data = _Mem(ptr)
        self.dtype = np.dtype(np.float32)
        self.itemsize = 4
        self._c_contiguous = True

    ns = {
        "__init__": init,
        "shape": property(lambda self: (N,)),
        "ndim": property(lambda self: 1),
        "size": property(lambda self: N),
        "strides": property(lambda self: (4,)),
        "__module__": "cupy_standin",
    }
    return type("ndarray", (), ns)


class CaiArray:
    """A device array known only through `__cuda_array_interface__` (built per access, as
    numba's device arrays do)."""

    def __init__(self, ptr):
        self.ptr = ptr

    @property
    def __cuda_array_interface__(self):
        return {"shape": (N,), "typestr": "<f4", "data": (self.ptr, False), "strides": None, "version": 3}


class FakeStream:
    """A stream object like CuPy's: a `ptr` attribute. Handle 2 (the per-thread default
    stream) needs no driver to find its GPU."""

    ptr = 2


CASE = ""


def measure(name, fn, n, repeats):
    if CASE not in name:
        return None
    for _ in range(1000):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n * 1e6)
    r = {"case": name, "median_us": round(statistics.median(times), 3), "min_us": round(min(times), 3)}
    print(json.dumps(r), flush=True)
    return r


def prepare(args):
    """Specializes `vec_add` for `args` (compiling for sm_90, no GPU needed) and gives it a
    dry-run launcher for GPU 0, in both the fast path and the Python path."""
    keys = tuple(core._describe(a)[0] for a in args)
    m = vec_add._mod()
    types = vec_add._types_of_keys(keys, args, m)
    launcher = m.compile("vec_add", types, "sm_90", 3).dry_run_launcher(0)
    spec = core._Specialization(None, launcher, ())
    vec_add._specs[(keys, 0)] = spec
    vec_add._dispatcher.insert(tuple(args), launcher)
    return launcher


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--case", default="", help="run only the cases whose name contains this")
    o = p.parse_args()
    global CASE
    CASE = o.case
    arrays = cupy_arrays()
    kind = "CuPy arrays"
    if arrays is None:
        cls = _standin_class()
        arrays = [cls(FAKE_BASE + k * N * 4) for k in range(3)]
        kind = "CuPy stand-ins"
    a, b, c = arrays
    stream = FakeStream()
    launcher = prepare(arrays)
    print(json.dumps({"python": sys.version.split()[0], "arrays": kind}), flush=True)
    n, r = o.n, o.repeats
    measure(f"device.launch, {kind}, stream object",
            lambda: device.launch(vec_add, a, b, c, grid=GRID, block=BLOCK, stream=stream), n, r)
    measure(f"device.launch, {kind}, no stream",
            lambda: device.launch(vec_add, a, b, c, grid=GRID, block=BLOCK), n, r)
    cfg = vec_add[GRID, BLOCK, stream]
    measure(f"kernel[grid, block, stream](...), {kind}", lambda: cfg(a, b, c), n, r)
    vals = ((FAKE_BASE, (N,), (1,)),) * 3
    measure("Launcher.launch, packed values (the Python path's last step)",
            lambda: launcher.launch(vals, GRID, BLOCK, 0, 2), n, r)
    # The Python path: CAI-only arrays (numba's device arrays) have no fast path.
    cai = [CaiArray(FAKE_BASE + k * N * 4) for k in range(3)]
    prepare(cai)
    measure("device.launch, CAI-only arrays (the Python path)",
            lambda: device.launch(vec_add, *cai, grid=GRID, block=BLOCK, stream=stream), n // 4, r)


if __name__ == "__main__":
    main()
