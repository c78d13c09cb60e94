"""Host time per launch of a 3-array kernel (c = a + b, 4096 float32 elements), side by side:
pydevice (`device.launch` and `kernel[grid, block]`) on CuPy arrays and on PyTorch tensors,
CuPy's RawKernel, and numba-cuda with its device arrays and with CuPy arrays.

Each case launches `LAUNCHES` times back to back on one stream and synchronizes at the end;
the host time per launch is the loop's wall time over the count (the kernel is tiny, so the
GPU keeps up and the host is what is measured). `REPEATS` rounds, each running every case
once in turn (before session 16 each case ran its repeats alone, in order, so the first
cases also paid the machine's warm-up); median and best printed, one JSON line per case,
then a table. Run on the GPU machine:
    python3 bench/python/launch_overhead.py
"""
import json
import statistics
import sys
import time

import numpy as np

LAUNCHES = 20000
REPEATS = 7
N = 4096
GRID, BLOCK = N // 256, 256
results = []


CASES = []  # (name, launch, sync), timed together at the end


def measure(name, launch, sync):
    for _ in range(200):  # warm-up (and first-launch specialization)
        launch()
    sync()
    CASES.append((name, launch, sync))


def run_all():
    """Times every case, REPEATS rounds in which each case runs once in turn (so no case
    pays more of the machine's warm-up or drift than another); median and best per case."""
    times = {name: [] for name, _, _ in CASES}
    for _ in range(REPEATS):
        for name, launch, sync in CASES:
            sync()
            t0 = time.perf_counter()
            for _ in range(LAUNCHES):
                launch()
            t1 = time.perf_counter()
            sync()
            times[name].append((t1 - t0) / LAUNCHES * 1e6)
    for name, _, _ in CASES:
        t = times[name]
        r = {"case": name, "median_us": round(statistics.median(t), 3), "min_us": round(min(t), 3)}
        results.append(r)
        print(json.dumps(r), flush=True)


def case(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (a missing framework skips its cases)
        print(json.dumps({"case": fn.__name__, "skipped": f"{type(e).__name__}: {e}"}), flush=True)


import cupy  # noqa: E402

a = cupy.arange(N, dtype=cupy.float32)
b = cupy.ones(N, dtype=cupy.float32)
c = cupy.zeros(N, dtype=cupy.float32)
stream = cupy.cuda.Stream(non_blocking=True)
stream.use()  # CuPy's current stream (RawKernel launches there); the others are given it


def pydevice_cupy():
    from cuda import device

    @device.kernel
    def vec_add(a, b, c):
        i = device.tid(1)
        if i < len(c):
            c[i] = a[i] + b[i]

    measure("pydevice device.launch, CuPy arrays",
            lambda: device.launch(vec_add, a, b, c, grid=GRID, block=BLOCK, stream=stream),
            stream.synchronize)
    cfg = vec_add[GRID, BLOCK, stream]
    measure("pydevice kernel[grid, block, stream], CuPy arrays", lambda: cfg(a, b, c), stream.synchronize)
    stream.synchronize()
    assert bool((c == a + b).all())


def pydevice_torch():
    import torch
    from cuda import device

    @device.kernel
    def vec_add_t(a, b, c):
        i = device.tid(1)
        if i < len(c):
            c[i] = a[i] + b[i]

    ta = torch.arange(N, device="cuda", dtype=torch.float32)
    tb = torch.ones(N, device="cuda", dtype=torch.float32)
    tc = torch.zeros(N, device="cuda", dtype=torch.float32)
    ts = torch.cuda.Stream()
    measure("pydevice device.launch, PyTorch tensors",
            lambda: device.launch(vec_add_t, ta, tb, tc, grid=GRID, block=BLOCK, stream=ts),
            ts.synchronize)
    assert torch.equal(tc, ta + tb)


def cupy_rawkernel():
    k = cupy.RawKernel(r'''
    extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
        int i = blockDim.x * blockIdx.x + threadIdx.x;
        if (i < n) c[i] = a[i] + b[i];
    }''', "vec_add")
    n = np.int32(N)
    # `stream` is CuPy's current stream for the whole run (stream.use() above).
    measure("CuPy RawKernel, CuPy arrays", lambda: k((GRID,), (BLOCK,), (a, b, c, n)), stream.synchronize)


def numba_cases():
    np.row_stack = np.vstack  # numba-cuda 0.30.4 still refers to it (removed in NumPy 2.5)
    from numba import cuda

    @cuda.jit
    def vec_add_nb(a, b, c):
        i = cuda.grid(1)
        if i < c.size:
            c[i] = a[i] + b[i]

    da, db, dc = cuda.to_device(np.arange(N, dtype=np.float32)), cuda.to_device(np.ones(N, np.float32)), cuda.device_array(N, np.float32)
    ns = cuda.stream()
    k = vec_add_nb[GRID, BLOCK, ns]
    measure("numba-cuda, its device arrays", lambda: k(da, db, dc), ns.synchronize)
    ext = cuda.external_stream(stream.ptr)
    k2 = vec_add_nb[GRID, BLOCK, ext]
    measure("numba-cuda, CuPy arrays", lambda: k2(a, b, c), stream.synchronize)


for fn in (pydevice_cupy, pydevice_torch, cupy_rawkernel, numba_cases):
    case(fn)
run_all()

print()
print(f"| case | median µs/launch | best µs/launch |  ({LAUNCHES} launches x {REPEATS}, {N} elements)")
print("|---|---|---|")
for r in results:
    print(f"| {r['case']} | {r['median_us']} | {r['min_us']} |")
sys.stdout.flush()
