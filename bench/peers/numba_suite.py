"""numba-cuda peer of the pydevice kernel benchmark (see bench/README.md).

The twelve kernels of bench/kernels/ written with @cuda.jit. For each: inputs from
bench/cases.py copied to numba device arrays, one launch checked against the numpy reference,
5 untimed launches, then 50 launches queued back to back with a numba CUDA event between
each two (cases.time_launches); the median interval goes to stdout as one JSON line. Then the compile and launch costs:
  compile_ptx   cuda.compile_ptx of vector_add and saxpy, each in a fresh process:
                cold = the first compile there, warm = median of 10 more
  first_call    vector_add's first launch in a fresh process (type, compile, load, run),
                device arrays already allocated
  launch_overhead  host us per asynchronous launch of an empty kernel on a device array

usage: numba_suite.py [kernel ...]
"""

import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 still refers to it; NumPy 2.5 removed it
    np.row_stack = np.vstack
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

from numba import cuda, float32, int32, uint32  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cases  # noqa: E402

FULL_MASK = 0xFFFFFFFF
TRANSPOSE_TILE = 32
TRANSPOSE_PADDED = 33  # shared.array needs literal sizes, not TILE + 1
TRANSPOSE_ROWS = 8
REDUCE_BLOCK = 256
WARPS = REDUCE_BLOCK // 32
BINS = 256
MATMUL_TILE = 16
SCAN_BLOCK = cases.SCAN_BLOCK
HALF = float32(0.5)
EIGHTH = float32(0.125)


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] + b[i]


@cuda.jit
def saxpy(alpha, x, y, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = alpha * x[i] + y[i]


@cuda.jit
def transpose_naive(src, dst):
    col, row = cuda.grid(2)
    if row < src.shape[0] and col < src.shape[1]:
        dst[col, row] = src[row, col]


@cuda.jit
def transpose_tiled(src, dst):
    tile = cuda.shared.array((TRANSPOSE_TILE, TRANSPOSE_PADDED), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col = cuda.blockIdx.x * TRANSPOSE_TILE + tx
    row0 = cuda.blockIdx.y * TRANSPOSE_TILE
    for k in range(0, TRANSPOSE_TILE, TRANSPOSE_ROWS):
        tile[ty + k, tx] = src[row0 + ty + k, col]
    cuda.syncthreads()
    col = cuda.blockIdx.y * TRANSPOSE_TILE + tx
    row0 = cuda.blockIdx.x * TRANSPOSE_TILE
    for k in range(0, TRANSPOSE_TILE, TRANSPOSE_ROWS):
        dst[row0 + ty + k, col] = tile[tx, ty + k]


@cuda.jit
def reduce_block(x, out):
    partial = cuda.shared.array(REDUCE_BLOCK, float32)
    t = cuda.threadIdx.x
    acc = float32(0.0)
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        acc += x[i]
    partial[t] = acc
    cuda.syncthreads()
    stride = REDUCE_BLOCK // 2
    while stride > 0:
        if t < stride:
            partial[t] += partial[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        cuda.atomic.add(out, 0, partial[0])


@cuda.jit
def reduce_warp(x, out):
    warp_sums = cuda.shared.array(WARPS, float32)
    lane = cuda.threadIdx.x % 32
    warp = cuda.threadIdx.x // 32
    acc = float32(0.0)
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        acc += x[i]
    delta = 16
    while delta > 0:
        acc += cuda.shfl_down_sync(FULL_MASK, acc, delta)
        delta //= 2
    if lane == 0:
        warp_sums[warp] = acc
    cuda.syncthreads()
    if warp == 0:
        acc = float32(0.0)
        if lane < WARPS:
            acc = warp_sums[lane]
        delta = WARPS // 2
        while delta > 0:
            acc += cuda.shfl_down_sync(FULL_MASK, acc, delta)
            delta //= 2
        if lane == 0:
            cuda.atomic.add(out, 0, acc)


@cuda.jit
def histogram(data, bins):
    local = cuda.shared.array(BINS, int32)
    for b in range(cuda.threadIdx.x, BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(local, data[i], 1)
    cuda.syncthreads()
    for b in range(cuda.threadIdx.x, BINS, cuda.blockDim.x):
        cuda.atomic.add(bins, b, local[b])


@cuda.jit
def stencil5(u, out):
    j, i = cuda.grid(2)
    rows, cols = u.shape
    if i < rows and j < cols:
        if i > 0 and i < rows - 1 and j > 0 and j < cols - 1:
            out[i, j] = HALF * u[i, j] + EIGHTH * (
                u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
            )
        else:
            out[i, j] = u[i, j]


@cuda.jit
def matmul_tiled(a, b, c):
    sa = cuda.shared.array((MATMUL_TILE, MATMUL_TILE), float32)
    sb = cuda.shared.array((MATMUL_TILE, MATMUL_TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col, row = cuda.grid(2)
    n = a.shape[0]
    acc = float32(0.0)
    for t in range(0, n, MATMUL_TILE):
        sa[ty, tx] = a[row, t + tx]
        sb[ty, tx] = b[t + ty, col]
        cuda.syncthreads()
        for k in range(MATMUL_TILE):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    c[row, col] = acc


@cuda.jit
def scan_block(x, out):
    buf = cuda.shared.array(SCAN_BLOCK, int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = x[i]
    buf[t] = v
    cuda.syncthreads()
    offset = 1
    while offset < SCAN_BLOCK:
        if t >= offset:
            v += buf[t - offset]
        cuda.syncthreads()
        buf[t] = v
        cuda.syncthreads()
        offset *= 2
    out[i] = v


@cuda.jit
def math_f64(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        out[i] = math.exp(v) * math.sin(v) + math.sqrt(abs(v))


@cuda.jit
def bits_u32(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        h = x[i]
        for _ in range(4):
            # numba widens uint32 arithmetic to 64 bits: truncate back after each step
            h = uint32(h ^ (h << 13))
            h = uint32(h ^ (h >> 17))
            h = uint32(h ^ (h << 5))
        out[i] = cuda.brev(h) ^ uint32(cuda.popc(x[i]))


@cuda.jit
def empty(a):
    pass


KERNELS = {
    "vector_add": vector_add,
    "saxpy": saxpy,
    "transpose_naive": transpose_naive,
    "transpose_tiled": transpose_tiled,
    "reduce_block": reduce_block,
    "reduce_warp": reduce_warp,
    "histogram": histogram,
    "stencil5": stencil5,
    "matmul_tiled": matmul_tiled,
    "scan_block": scan_block,
    "math_f64": math_f64,
    "bits_u32": bits_u32,
}

SIGNATURES = {
    "vector_add": "void(float32[::1], float32[::1], float32[::1])",
    "saxpy": "void(float32, float32[::1], float32[::1], float32[::1])",
}


def emit(rec):
    print(json.dumps(rec), flush=True)


def log(msg):
    print(f"numba_suite: {msg}", file=sys.stderr, flush=True)


def bench(case):
    args = case.inputs()
    params = [cuda.to_device(v) if isinstance(v, np.ndarray) else v for v in args.values()]
    kernel = KERNELS[case.name][case.grid, case.block]
    kernel(*params)
    cuda.synchronize()
    names = list(args)
    got = {k: params[names.index(k)].copy_to_host() for k in case.outputs}
    ok, note = case.check(args, got)
    median, low = cases.time_launches(
        lambda: kernel(*params), cuda.event, cuda.event_elapsed_time
    )
    emit(cases.result("numba", case, median, low, ok, note))


def launch_overhead():
    a = cuda.device_array(1, np.float32)
    launch = empty[1, 32]
    emit(cases.launch_record("numba", *cases.launch_cost(lambda: launch(a), cuda.synchronize)))


def probe(what, target):
    """Run in a fresh process (see main): measure one cold cost and print it."""
    if what == "compile_ptx":
        fn, sig = KERNELS[target].py_func, SIGNATURES[target]
        t0 = time.perf_counter()
        cuda.compile_ptx(fn, sig, cc=(9, 0))
        cold = time.perf_counter() - t0
        warm = []
        for _ in range(10):
            t0 = time.perf_counter()
            cuda.compile_ptx(fn, sig, cc=(9, 0))
            warm.append(time.perf_counter() - t0)
        rec = {"cold_ms": round(cold * 1e3, 1), "warm_ms": round(statistics.median(warm) * 1e3, 1)}
    else:  # first_call
        n = 1 << 20
        a = cuda.to_device(np.ones(n, np.float32))
        out = cuda.device_array(n, np.float32)
        cuda.synchronize()
        t0 = time.perf_counter()
        vector_add[n // 256, 256](a, a, out)
        cuda.synchronize()
        rec = {"ms": round((time.perf_counter() - t0) * 1e3, 1)}
    emit({"impl": "numba", "kernel": what, "target": target, **rec})


def run_probe(what, target):
    res = subprocess.run(
        [sys.executable, __file__, "--probe", what, target],
        capture_output=True, text=True, timeout=120,
    )
    lines = res.stdout.strip().splitlines()
    if res.returncode != 0 or not lines:
        emit({"impl": "numba", "kernel": what, "target": target, "ok": False,
              "note": res.stderr.strip()[-300:]})
    else:
        print(lines[-1], flush=True)


def main(argv):
    if argv[:1] == ["--probe"]:
        probe(argv[1], argv[2])
        return
    for case in cases.select(argv):
        log(case.name)
        try:
            bench(case)
        except Exception as e:  # report and go on with the next kernel
            emit({"impl": "numba", "kernel": case.name, "ok": False, "note": f"{type(e).__name__}: {e}"[:300]})
    if argv:
        return
    log("launch overhead, compile and first-call probes")
    launch_overhead()
    for target in ("vector_add", "saxpy"):
        run_probe("compile_ptx", target)
    run_probe("first_call", "vector_add")


if __name__ == "__main__":
    main(sys.argv[1:])
