"""Host cost per call of ElementwiseKernel, ReductionKernel and fuse without a GPU: the
general path (Python glue: argument description, resolution, output allocation, binding and
packing) against the native fast path (python/src/calls.rs), both up to the driver call.

It runs anywhere the package and CuPy are installed (no CUDA driver needed); a measurement,
not a test. The arguments are real `cupy.ndarray`s over memory never touched
(`UnownedMemory`); CuPy's allocation and current-stream functions are replaced by stand-ins
(`_native.set_cupy_hooks`) that make arrays at made-up addresses (as cheap as CuPy's memory
pool is not: on a GPU machine `cupy.ndarray(shape, dtype)` costs more); the general path's
last step (`launch`: bind, compile-cache lookup, load, pack, driver call) is replaced by
`general_packed` (bind, compile-cache lookup, pack) and the fast path launches dry (no
driver call). So both sides leave out the same driver call and differ in what runs before.

    python3 bench/python/kernels_host_cost.py [--n 20000] [--repeats 7]

On the GPU machine, `bench/python/elementwise_bench.py` measures the whole call against
CuPy's own kernels.
"""
import argparse
import itertools
import json
import statistics
import sys
import time

import numpy as np

try:
    import cupy
    from cupy.cuda import memory
except ImportError:
    sys.exit("this benchmark needs CuPy (it runs without a GPU)")

import pydevice
from pydevice import _core, _kernels, _native

N = 1024
WIDE = 256  # red-wide's outputs at 2**18 elements
BASE = 0x7F20_0000_0000


def array(shape, dtype=np.float32, base=BASE):
    n = int(np.prod(shape)) if shape else 1
    mem = memory.UnownedMemory(base, max(n, 1) * np.dtype(dtype).itemsize, None, device_id=0)
    return cupy.ndarray(shape, dtype=dtype, memptr=memory.MemoryPointer(mem, 0))


class Hooks:
    """Stand-ins for `cupy.ndarray(shape, dtype)` and `cupy.cuda.get_current_stream()`: arrays
    handed out round-robin from a few made up per (shape, dtype) (making one over
    UnownedMemory costs far more than a CuPy memory-pool hit, so they are made once)."""

    def __init__(self):
        self.next = BASE + (1 << 32)
        self.pools = {}

    def empty(self, shape, dtype):
        key = (tuple(shape), np.dtype(dtype))
        pool = self.pools.get(key)
        if pool is None:
            made = []
            for _ in range(4):
                self.next += 1 << 20
                made.append(array(key[0], dtype, self.next))
            pool = self.pools[key] = itertools.cycle(made)
        return next(pool)

    def stream(self):
        return self

    ptr = 0


CASE = ""


def measure(cases, n, repeats):
    """Times `cases` ((name, fn) pairs) in `repeats` rounds, each running every case once in
    turn (so that no case pays more of the machine's warm-up or drift than another); one
    JSON line per case (median and best microseconds per call)."""
    cases = [(name, fn) for name, fn in cases if CASE in name]
    for _, fn in cases:
        for _ in range(200):
            fn()
    times = {name: [] for name, _ in cases}
    for _ in range(repeats):
        for name, fn in cases:
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            times[name].append((time.perf_counter() - t0) / n * 1e6)
    out = []
    for name, _ in cases:
        t = times[name]
        r = {"case": name, "median_us": round(statistics.median(t), 3), "min_us": round(min(t), 3)}
        print(json.dumps(r), flush=True)
        out.append(r)
    return out


def general_path(hooks):
    """Replaces the general path's GPU steps with their host-only counterparts (see the
    module documentation); returns a function that undoes it."""
    saved = (_kernels._Args.stream, _kernels._Args.empty, _kernels._Args.scratch)

    def empty(self, shape, dtype_name):
        shape = tuple(int(s) for s in shape)
        a = hooks.empty(shape, dtype_name)
        return a, ("A", dtype_name, a.data.ptr, shape, _kernels._c_strides(shape))

    def scratch(self, nbytes):
        a = hooks.empty((nbytes,), np.uint8)
        return a, a.data.ptr

    _kernels._Args.stream = lambda self, s: 0
    _kernels._Args.empty = empty
    _kernels._Args.scratch = scratch

    def undo():
        _kernels._Args.stream, _kernels._Args.empty, _kernels._Args.scratch = saved

    return undo


class _GeneralOnly:
    """A native kernel half whose `launch` packs without launching and whose fast path is
    off: the general path (the kernels' `_call`), up to the driver call."""

    def __init__(self, k, reduction):
        self._k = k
        self._reduction = reduction

    def call_fast(self, *a):
        return NotImplemented

    def launch(self, call, outs, *rest):
        if self._reduction:
            self._k.general_packed(call, outs, rest[0])
        else:
            self._k.general_packed(call, outs)

    def __getattr__(self, name):
        return getattr(self._k, name)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--case", default="", help="run only the cases whose name contains this")
    o = p.parse_args()
    global CASE
    CASE = o.case
    hooks = Hooks()
    x = array((N,))
    _core._describe(x)  # registers CuPy's own hooks (the first CuPy array does); replaced here
    _native.set_cupy_hooks(hooks.empty, hooks.stream)
    y = array((N,), base=BASE + 0x100000)
    ew = pydevice.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "sqd")
    red = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum")

    @pydevice.fuse(kernel_name="sqd_fused")
    def fused(x, y):
        return (x - y) * (x - y)

    print(json.dumps({"python": sys.version.split()[0], "cupy": cupy.__version__, "n": N}), flush=True)
    rows = []
    # General path (what every call cost before the fast path).
    undo = general_path(hooks)
    fast_ew, fast_red = ew._k, red._k
    ew._k, red._k = _GeneralOnly(fast_ew, False), _GeneralOnly(fast_red, True)
    # The fused function's plan for (x, y): one elementwise kernel (its native half is
    # `kern._k`), remembered as __call__ would.
    plan = fused._plan((x, y))
    kern = plan.groups[0][0]
    fused_k = kern._k
    kern._k = _GeneralOnly(fused_k, False)
    fused_fast, fused._fast = fused._fast, _native.FuseDispatch()  # empty: always misses
    z = array((N,), base=BASE + 0x200000)
    # Strided views (every other element of 2N, as elementwise_bench.py's ew-strided) and a
    # (1024, N) matrix reduced over axis 0 (red-wide: many outputs, 1024 rows).
    x2 = array((2 * N,), base=BASE + 0x300000)
    y2 = array((2 * N,), base=BASE + 0x400000)
    xv, yv = x2[::2], y2[::2]
    xw = array((1024, WIDE), base=BASE + 0x800000)
    g = measure([
        ("ElementwiseKernel, general path", lambda: ew._call(x, y)),
        ("ElementwiseKernel, output given, general path", lambda: ew._call(x, y, z)),
        ("ElementwiseKernel, strided views, general path", lambda: ew._call(xv, yv)),
        ("ReductionKernel (full), general path", lambda: red._call(x)),
        (f"ReductionKernel (axis 0 of (1024, {WIDE})), general path", lambda: red._call(xw, axis=0)),
        ("fuse, general path", lambda: fused(x, y)),
    ], o.n, o.repeats)
    undo()
    ew._k, red._k, kern._k, fused._fast = fast_ew, fast_red, fused_k, fused_fast
    # Fast path: each call signature remembered once with a dry run.
    a = _kernels._Args((x, y), 2)
    call = ew._k.resolve(tuple(a.descs), None)
    outs = (("A", "float32", BASE + (1 << 40), (N,), (1,)),)
    assert ew._k.remember_dry_run((x, y), call, outs, 0, None)
    assert ew._k.remember_dry_run((x, y, z), ew._k.resolve(tuple(_kernels._Args((x, y, z), 2).descs), None), (), 0, None)
    assert kern._k.remember_dry_run((x, y), kern._k.resolve(tuple(a.descs), None), outs, 0, None)
    assert fused._fast.insert((x, y), *fused._fast_entry(plan, (x, y)))
    a = _kernels._Args((x,), 1)
    rcall = red._k.resolve(tuple(a.descs), None, False)
    routs = (("A", "float32", BASE + (1 << 40), (), ()),)
    assert red._k.remember_dry_run((x,), rcall, routs, BASE + (1 << 41), None, False, 0)
    a = _kernels._Args((xv, yv), 2)
    assert ew._k.remember_dry_run((xv, yv), ew._k.resolve(tuple(a.descs), None), outs, 0, None)
    a = _kernels._Args((xw,), 1)
    wcall = red._k.resolve(tuple(a.descs), [0], False)
    wouts = (("A", "float32", BASE + (1 << 40), (WIDE,), (1,)),)
    assert red._k.remember_dry_run((xw,), wcall, wouts, BASE + (1 << 41), 0, False, 0)
    f = measure([
        ("ElementwiseKernel, fast path", lambda: ew(x, y)),
        ("ElementwiseKernel, output given, fast path", lambda: ew(x, y, z)),
        ("ElementwiseKernel, strided views, fast path", lambda: ew(xv, yv)),
        ("ElementwiseKernel, strided views made in the call, fast path", lambda: ew(x2[::2], y2[::2])),
        ("ElementwiseKernel, native half alone (call_fast), fast path", lambda: ew._k.call_fast((x, y), None, None)),
        ("ReductionKernel (full), fast path", lambda: red(x)),
        (f"ReductionKernel (axis 0 of (1024, {WIDE})), fast path", lambda: red(xw, axis=0)),
        ("fuse, fast path", lambda: fused(x, y)),
        ("two CuPy views (x2[::2], y2[::2]) alone, fast path", lambda: (x2[::2], y2[::2])),
        ("hooks.empty alone (the stand-in allocation), fast path", lambda: hooks.empty((N,), np.float32)),
    ], o.n, o.repeats)
    # The fast path with CuPy's own array construction (over a stand-in allocator: CuPy's
    # memory pool costs more on a GPU machine): `cupy.ndarray(shape, dtype)` against its two
    # steps (`_core._cupy_construct`, what the fast path uses when CuPy is laid out so).
    stand_in = memory.MemoryPointer(memory.UnownedMemory(BASE + (1 << 44), 1 << 30, None, device_id=0), 0)
    saved = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(lambda nbytes: stand_in)
    construct = _core._cupy_construct(cupy)
    _native.set_cupy_hooks(cupy.ndarray, hooks.stream)
    f += measure([("ElementwiseKernel, CuPy allocates (cupy.ndarray), fast path", lambda: ew(x, y))], o.n, o.repeats)
    if construct is not None:
        _native.set_cupy_hooks(cupy.ndarray, hooks.stream, construct)
        f += measure([("ElementwiseKernel, CuPy allocates (two steps), fast path", lambda: ew(x, y))], o.n, o.repeats)
    cupy.cuda.set_allocator(saved)
    gm = {r["case"].rsplit(", ", 1)[0]: r["median_us"] for r in g}
    fm = {r["case"].rsplit(", ", 1)[0]: r["median_us"] for r in f}
    for label in dict.fromkeys(list(gm) + list(fm)):
        if label in gm or label in fm:
            rows.append((label, gm.get(label, float("nan")), fm.get(label, float("nan"))))
    print()
    print(f"| host µs per call, no driver call ({N} float32) | general path | fast path |")
    print("|---|---:|---:|")
    for label, a, b in rows:
        print(f"| {label} | {a} | {b} |")


if __name__ == "__main__":
    main()
