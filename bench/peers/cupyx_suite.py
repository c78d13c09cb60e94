"""cupyx.jit peer of the pydevice kernel benchmark (see bench/README.md).

The kernels of bench/kernels/ written with @jit.rawkernel(). For each: inputs from
bench/cases.py copied to CuPy arrays, one launch checked against the numpy reference,
5 untimed launches, then 50 launches queued back to back with a CuPy event between each two
(cases.time_launches); the median interval goes to stdout as one JSON line. cupyx.jit has no bit-reverse intrinsic, so bits_u32 is reported
as {"ok": false} with a note rather than written some other way. Shared memory in cupyx.jit
is 1-D, so 2-D tiles are indexed by hand; math goes through CuPy ufuncs (cupy.exp, ...);
thread indices are cast to int32 where they meet int loop variables, since cupyx.jit will
not add a uint32 to an int32.
Then the compile and launch costs:
  first_call       vector_add's first launch in a fresh process with an empty kernel cache
                   (transpile, NVRTC, load, run), arrays already allocated
  launch_overhead  host us per asynchronous launch of an empty kernel, through cupyx.jit
                   and through a cupy.RawKernel (CUDA C++ compiled by NVRTC)

usage: cupyx_suite.py [kernel ...]
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import cupy
import numpy as np
from cupyx import jit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cases  # noqa: E402

warnings.filterwarnings("ignore", message="cupyx.jit.rawkernel is experimental")

FULL_MASK = 0xFFFFFFFF
TRANSPOSE_TILE = 32
TRANSPOSE_PADDED = 33
TRANSPOSE_ROWS = 8
REDUCE_BLOCK = 256
WARPS = REDUCE_BLOCK // 32
BINS = 256
MATMUL_TILE = 16
SCAN_BLOCK = cases.SCAN_BLOCK
ZERO = np.float32(0.0)
HALF = np.float32(0.5)
EIGHTH = np.float32(0.125)


@jit.rawkernel()
def vector_add(a, b, out):
    i = jit.grid(1)
    if i < len(out):
        out[i] = a[i] + b[i]


@jit.rawkernel()
def saxpy(alpha, x, y, out):
    i = jit.grid(1)
    if i < len(out):
        out[i] = alpha * x[i] + y[i]


@jit.rawkernel()
def transpose_naive(src, dst):
    col, row = jit.grid(2)
    if row < src.shape[0] and col < src.shape[1]:
        dst[col, row] = src[row, col]


@jit.rawkernel()
def transpose_tiled(src, dst):
    tile = jit.shared_memory(np.float32, TRANSPOSE_TILE * TRANSPOSE_PADDED)
    tx = np.int32(jit.threadIdx.x)
    ty = np.int32(jit.threadIdx.y)
    bx = np.int32(jit.blockIdx.x)
    by = np.int32(jit.blockIdx.y)
    col = bx * TRANSPOSE_TILE + tx
    row0 = by * TRANSPOSE_TILE
    for k in range(0, TRANSPOSE_TILE, TRANSPOSE_ROWS):
        tile[(ty + k) * TRANSPOSE_PADDED + tx] = src[row0 + ty + k, col]
    jit.syncthreads()
    col = by * TRANSPOSE_TILE + tx
    row0 = bx * TRANSPOSE_TILE
    for k in range(0, TRANSPOSE_TILE, TRANSPOSE_ROWS):
        dst[row0 + ty + k, col] = tile[tx * TRANSPOSE_PADDED + ty + k]


@jit.rawkernel()
def reduce_block(x, out):
    partial = jit.shared_memory(np.float32, REDUCE_BLOCK)
    t = np.int32(jit.threadIdx.x)
    acc = ZERO
    for i in range(jit.grid(1), len(x), jit.gridsize(1)):
        acc += x[i]
    partial[t] = acc
    jit.syncthreads()
    stride = REDUCE_BLOCK // 2
    while stride > 0:
        if t < stride:
            partial[t] += partial[t + stride]
        jit.syncthreads()
        stride //= 2
    if t == 0:
        jit.atomic_add(out, 0, partial[0])


@jit.rawkernel()
def reduce_warp(x, out):
    warp_sums = jit.shared_memory(np.float32, WARPS)
    lane = np.int32(jit.threadIdx.x) % 32
    warp = np.int32(jit.threadIdx.x) // 32
    acc = ZERO
    for i in range(jit.grid(1), len(x), jit.gridsize(1)):
        acc += x[i]
    delta = 16
    while delta > 0:  # shfl_down_sync takes a uint32 delta and will not cast an int
        acc += jit.shfl_down_sync(FULL_MASK, acc, np.uint32(delta))
        delta //= 2
    if lane == 0:
        warp_sums[warp] = acc
    jit.syncthreads()
    if warp == 0:
        acc = ZERO
        if lane < WARPS:
            acc = warp_sums[lane]
        delta = WARPS // 2
        while delta > 0:
            acc += jit.shfl_down_sync(FULL_MASK, acc, np.uint32(delta))
            delta //= 2
        if lane == 0:
            jit.atomic_add(out, 0, acc)


@jit.rawkernel()
def histogram(data, bins):
    local = jit.shared_memory(np.int32, BINS)
    for b in range(jit.threadIdx.x, BINS, jit.blockDim.x):
        local[b] = 0
    jit.syncthreads()
    for i in range(jit.grid(1), len(data), jit.gridsize(1)):
        jit.atomic_add(local, data[i], 1)
    jit.syncthreads()
    for b in range(jit.threadIdx.x, BINS, jit.blockDim.x):
        jit.atomic_add(bins, b, local[b])


@jit.rawkernel()
def stencil5(u, out):
    j, i = jit.grid(2)
    rows = u.shape[0]
    cols = u.shape[1]
    if i < rows and j < cols:
        if i > 0 and i < rows - 1 and j > 0 and j < cols - 1:
            out[i, j] = HALF * u[i, j] + EIGHTH * (
                u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
            )
        else:
            out[i, j] = u[i, j]


@jit.rawkernel()
def matmul_tiled(a, b, c):
    sa = jit.shared_memory(np.float32, MATMUL_TILE * MATMUL_TILE)
    sb = jit.shared_memory(np.float32, MATMUL_TILE * MATMUL_TILE)
    tx = np.int32(jit.threadIdx.x)
    ty = np.int32(jit.threadIdx.y)
    col, row = jit.grid(2)
    n = a.shape[0]
    acc = ZERO
    for t in range(0, n, MATMUL_TILE):
        sa[ty * MATMUL_TILE + tx] = a[row, t + tx]
        sb[ty * MATMUL_TILE + tx] = b[t + ty, col]
        jit.syncthreads()
        for k in range(MATMUL_TILE):
            acc += sa[ty * MATMUL_TILE + k] * sb[k * MATMUL_TILE + tx]
        jit.syncthreads()
    c[row, col] = acc


@jit.rawkernel()
def scan_block(x, out):
    buf = jit.shared_memory(np.int32, SCAN_BLOCK)
    t = np.int32(jit.threadIdx.x)
    i = jit.grid(1)
    v = x[i]
    buf[t] = v
    jit.syncthreads()
    offset = 1
    while offset < SCAN_BLOCK:
        if t >= offset:
            v += buf[t - offset]
        jit.syncthreads()
        buf[t] = v
        jit.syncthreads()
        offset *= 2
    out[i] = v


@jit.rawkernel()
def math_f64(x, out):
    i = jit.grid(1)
    if i < len(out):
        v = x[i]
        out[i] = cupy.exp(v) * cupy.sin(v) + cupy.sqrt(cupy.abs(v))


@jit.rawkernel()
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
}

NOT_EXPRESSIBLE = {
    "bits_u32": "cupyx.jit has no bit-reverse intrinsic (brev); popc only as the ufunc "
    "cupy.bitwise_count",
}

RAW_EMPTY = r'extern "C" __global__ void empty(float* a) {}'


def emit(rec):
    print(json.dumps(rec), flush=True)


def log(msg):
    print(f"cupyx_suite: {msg}", file=sys.stderr, flush=True)


def bench(case):
    if case.name in NOT_EXPRESSIBLE:
        emit({"impl": "cupyx", "kernel": case.name, "ok": False, "note": NOT_EXPRESSIBLE[case.name]})
        return
    args = case.inputs()
    params = tuple(cupy.asarray(v) if isinstance(v, np.ndarray) else v for v in args.values())
    kernel = KERNELS[case.name]

    def launch():
        kernel(case.grid, case.block, params)

    launch()
    cupy.cuda.Device().synchronize()
    names = list(args)
    got = {k: cupy.asnumpy(params[names.index(k)]) for k in case.outputs}
    ok, note = case.check(args, got)
    median, low = cases.time_launches(
        launch, cupy.cuda.Event, cupy.cuda.get_elapsed_time
    )
    emit(cases.result("cupyx", case, median, low, ok, note))


def launch_overhead():
    a = cupy.empty(1, np.float32)
    raw = cupy.RawKernel(RAW_EMPTY, "empty")
    sync = cupy.cuda.Device().synchronize
    emit(cases.launch_record("cupy.RawKernel", *cases.launch_cost(lambda: raw((1,), (32,), (a,)), sync)))
    emit(cases.launch_record("cupyx", *cases.launch_cost(lambda: empty((1,), (32,), (a,)), sync)))


def probe_first_call():
    n = 1 << 20
    a = cupy.ones(n, np.float32)
    out = cupy.empty(n, np.float32)
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    vector_add((n // 256,), (256,), (a, a, out))
    cupy.cuda.Device().synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    emit({"impl": "cupyx", "kernel": "first_call", "target": "vector_add", "ms": round(ms, 1)})


def run_probe():
    with tempfile.TemporaryDirectory() as cache:  # no kernel cached on disk from earlier runs
        res = subprocess.run(
            [sys.executable, __file__, "--probe"],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "CUPY_CACHE_DIR": cache},
        )
    lines = res.stdout.strip().splitlines()
    if res.returncode != 0 or not lines:
        emit({"impl": "cupyx", "kernel": "first_call", "target": "vector_add", "ok": False,
              "note": res.stderr.strip()[-300:]})
    else:
        print(lines[-1], flush=True)


def main(argv):
    if argv[:1] == ["--probe"]:
        probe_first_call()
        return
    for case in cases.select(argv):
        log(case.name)
        try:
            bench(case)
        except Exception as e:  # report and go on with the next kernel
            emit({"impl": "cupyx", "kernel": case.name, "ok": False, "note": f"{type(e).__name__}: {e}"[:300]})
    if argv:
        return
    log("launch overhead and first-call probe")
    launch_overhead()
    run_probe()


if __name__ == "__main__":
    main(sys.argv[1:])
