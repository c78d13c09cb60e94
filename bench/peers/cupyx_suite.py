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
import cupyx
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


# ---- the second set (issue 21) --------------------------------------------------------------

SM_BLOCK = 256
SM_WARPS = 8
NEG_INF = np.float32(-np.inf)
ONE = np.float32(1.0)
LN_EPS = np.float32(cases.LN_EPS)
NBODY_BLOCK = cases.NBODY_BLOCK
NBODY_EPS2 = np.float32(cases.NBODY_EPS2)
MB_MAXIT = cases.MB_MAXIT
MB_X0 = np.float32(cases.MB_X0)
MB_Y0 = np.float32(cases.MB_Y0)
MB_DX = np.float32(cases.MB_DX)
MB_DY = np.float32(cases.MB_DY)
MB_FOUR = np.float32(4.0)
MB_TWO = np.float32(2.0)
CONV_K = 5
CONV_R = 2
CONV_TILE = 32
CONV_ROWS = 8
CONV_SIDE = 36
SORT_SEG = 2048
SORT_HALF = 1024
SCAN_BLOCK2 = 256
SCAN_WARPS = 8
SCAN_ITEMS = 8
SCAN_TILE = 2048
SCAN_PADDED = 2112
LOW32 = np.uint64(0xFFFFFFFF)
SHIFT32 = np.uint64(32)


@jit.rawkernel()
def softmax_rows(x, out):
    partial = jit.shared_memory(np.float32, SM_WARPS)
    row = np.int32(jit.blockIdx.x)
    t = np.int32(jit.threadIdx.x)
    lane = t % 32
    warp = t // 32
    cols = np.int32(x.shape[1])
    m = NEG_INF
    for j in range(t, cols, SM_BLOCK):
        m = cupy.maximum(m, x[row, j])
    offset = np.int32(16)
    while offset > 0:
        m = cupy.maximum(m, jit.shfl_xor_sync(FULL_MASK, m, offset))
        offset //= 2
    if lane == 0:
        partial[warp] = m
    jit.syncthreads()
    m = partial[0]
    for w in range(1, SM_WARPS):
        m = cupy.maximum(m, partial[w])
    jit.syncthreads()
    s = ZERO
    for j in range(t, cols, SM_BLOCK):
        s += cupy.exp(x[row, j] - m)
    offset = np.int32(16)
    while offset > 0:
        s += jit.shfl_xor_sync(FULL_MASK, s, offset)
        offset //= 2
    if lane == 0:
        partial[warp] = s
    jit.syncthreads()
    s = partial[0]
    for w in range(1, SM_WARPS):
        s += partial[w]
    inv = ONE / s
    for j in range(t, cols, SM_BLOCK):
        out[row, j] = cupy.exp(x[row, j] - m) * inv


# softmax_1pass (bench/kernels/softmax_1pass.py): x read once, each thread's 8 elements of
# the row (t + 256 * c) held in registers; cupyx.jit has no per-thread arrays and no vector
# loads, so they are 8 named scalars read by scalar (coalesced) loads. Two barriers.
@jit.rawkernel()
def softmax_1pass(x, out):
    maxima = jit.shared_memory(np.float32, SM_WARPS)
    sums = jit.shared_memory(np.float32, SM_WARPS)
    row = np.int32(jit.blockIdx.x)
    t = np.int32(jit.threadIdx.x)
    lane = t % 32
    warp = t // 32
    cols = np.int32(x.shape[1])
    v0 = x[row, t + 0] if t + 0 < cols else NEG_INF
    v1 = x[row, t + 256] if t + 256 < cols else NEG_INF
    v2 = x[row, t + 512] if t + 512 < cols else NEG_INF
    v3 = x[row, t + 768] if t + 768 < cols else NEG_INF
    v4 = x[row, t + 1024] if t + 1024 < cols else NEG_INF
    v5 = x[row, t + 1280] if t + 1280 < cols else NEG_INF
    v6 = x[row, t + 1536] if t + 1536 < cols else NEG_INF
    v7 = x[row, t + 1792] if t + 1792 < cols else NEG_INF
    m = cupy.maximum(cupy.maximum(cupy.maximum(v0, v1), cupy.maximum(v2, v3)),
                     cupy.maximum(cupy.maximum(v4, v5), cupy.maximum(v6, v7)))
    offset = np.int32(16)
    while offset > 0:
        m = cupy.maximum(m, jit.shfl_xor_sync(FULL_MASK, m, offset))
        offset //= 2
    if lane == 0:
        maxima[warp] = m
    jit.syncthreads()
    m = maxima[0]
    for w in range(1, SM_WARPS):
        m = cupy.maximum(m, maxima[w])
    v0 = cupy.exp(v0 - m)
    v1 = cupy.exp(v1 - m)
    v2 = cupy.exp(v2 - m)
    v3 = cupy.exp(v3 - m)
    v4 = cupy.exp(v4 - m)
    v5 = cupy.exp(v5 - m)
    v6 = cupy.exp(v6 - m)
    v7 = cupy.exp(v7 - m)
    s = ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7))
    offset = np.int32(16)
    while offset > 0:
        s += jit.shfl_xor_sync(FULL_MASK, s, offset)
        offset //= 2
    if lane == 0:
        sums[warp] = s
    jit.syncthreads()
    s = sums[0]
    for w in range(1, SM_WARPS):
        s += sums[w]
    inv = ONE / s
    if t + 0 < cols:
        out[row, t + 0] = v0 * inv
    if t + 256 < cols:
        out[row, t + 256] = v1 * inv
    if t + 512 < cols:
        out[row, t + 512] = v2 * inv
    if t + 768 < cols:
        out[row, t + 768] = v3 * inv
    if t + 1024 < cols:
        out[row, t + 1024] = v4 * inv
    if t + 1280 < cols:
        out[row, t + 1280] = v5 * inv
    if t + 1536 < cols:
        out[row, t + 1536] = v6 * inv
    if t + 1792 < cols:
        out[row, t + 1792] = v7 * inv


@jit.rawkernel()
def layernorm(x, w, b, out, mean, rstd):
    row = np.int32(jit.grid(1)) // 32
    lane = np.int32(jit.threadIdx.x) % 32
    rows = np.int32(x.shape[0])
    cols = np.int32(x.shape[1])
    if row < rows:
        s = ZERO
        for j in range(lane, cols, 32):
            s += x[row, j]
        offset = np.int32(16)
        while offset > 0:
            s += jit.shfl_xor_sync(FULL_MASK, s, offset)
            offset //= 2
        m = s / np.float32(cols)
        v = ZERO
        for j in range(lane, cols, 32):
            d = x[row, j] - m
            v += d * d
        offset = np.int32(16)
        while offset > 0:
            v += jit.shfl_xor_sync(FULL_MASK, v, offset)
            offset //= 2
        r = ONE / cupy.sqrt(v / np.float32(cols) + LN_EPS)
        if lane == 0:
            mean[row] = m
            rstd[row] = r
        for j in range(lane, cols, 32):
            out[row, j] = (x[row, j] - m) * r * w[j] + b[j]


@jit.rawkernel()
def nbody(pos, acc):
    tile = jit.shared_memory(np.float32, NBODY_BLOCK * 4)  # 1-D: no float4 in cupyx.jit
    t = np.int32(jit.threadIdx.x)
    i = np.int32(jit.grid(1))
    n = np.int32(pos.shape[0])
    px = pos[i, 0]
    py = pos[i, 1]
    pz = pos[i, 2]
    ax = ZERO
    ay = ZERO
    az = ZERO
    for base in range(0, n, NBODY_BLOCK):
        j = base + t
        tile[4 * t] = pos[j, 0]
        tile[4 * t + 1] = pos[j, 1]
        tile[4 * t + 2] = pos[j, 2]
        tile[4 * t + 3] = pos[j, 3]
        jit.syncthreads()
        for k in range(NBODY_BLOCK):
            dx = tile[4 * k] - px
            dy = tile[4 * k + 1] - py
            dz = tile[4 * k + 2] - pz
            d2 = dx * dx + dy * dy + dz * dz + NBODY_EPS2
            inv = cupyx.rsqrt(d2)
            s = tile[4 * k + 3] * inv * inv * inv
            ax += dx * s
            ay += dy * s
            az += dz * s
        jit.syncthreads()
    acc[i, 0] = ax
    acc[i, 1] = ay
    acc[i, 2] = az


@jit.rawkernel()
def spmv_csr(indptr, indices, data, x, y):
    row = np.int32(jit.grid(1)) // 32
    lane = np.int32(jit.threadIdx.x) % 32
    if row < len(y):
        s = ZERO
        for k in range(indptr[row] + lane, indptr[row + 1], 32):
            s += data[k] * x[indices[k]]
        offset = np.int32(16)
        while offset > 0:
            s += jit.shfl_xor_sync(FULL_MASK, s, offset)
            offset //= 2
        if lane == 0:
            y[row] = s


@jit.rawkernel()
def mandelbrot(out):
    j, i = jit.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        cx = MB_X0 + np.float32(j) * MB_DX
        cy = MB_Y0 + np.float32(i) * MB_DY
        x = ZERO
        y = ZERO
        it = np.int32(0)
        while it < MB_MAXIT:
            x2 = x * x
            y2 = y * y
            if x2 + y2 > MB_FOUR:
                break
            y = MB_TWO * x * y + cy
            x = x2 - y2 + cx
            it += 1
        out[i, j] = it


@jit.rawkernel()
def conv2d(img, w, out):
    tile = jit.shared_memory(np.float32, CONV_SIDE * CONV_SIDE)
    ws = jit.shared_memory(np.float32, CONV_K * CONV_K)
    tx = np.int32(jit.threadIdx.x)
    ty = np.int32(jit.threadIdx.y)
    h = np.int32(img.shape[0])
    wd = np.int32(img.shape[1])
    x0 = np.int32(jit.blockIdx.x) * CONV_TILE
    y0 = np.int32(jit.blockIdx.y) * CONV_TILE
    t = ty * CONV_TILE + tx
    if t < CONV_K * CONV_K:
        ws[t] = w[t // CONV_K, t % CONV_K]
    for yy in range(ty, CONV_SIDE, CONV_ROWS):
        for xx in range(tx, CONV_SIDE, CONV_TILE):
            gy = y0 + yy - CONV_R
            gx = x0 + xx - CONV_R
            v = ZERO
            if gy >= 0 and gy < h and gx >= 0 and gx < wd:
                v = img[gy, gx]
            tile[yy * CONV_SIDE + xx] = v
    jit.syncthreads()
    for r in range(0, CONV_TILE, CONV_ROWS):
        acc = ZERO
        for ky in range(CONV_K):
            for kx in range(CONV_K):
                acc += ws[ky * CONV_K + kx] * tile[(ty + r + ky) * CONV_SIDE + tx + kx]
        out[y0 + ty + r, x0 + tx] = acc


@jit.rawkernel()
def bitonic_sort(keys, out):
    s = jit.shared_memory(np.uint32, SORT_SEG)
    t = np.int32(jit.threadIdx.x)
    base = np.int32(jit.blockIdx.x) * SORT_SEG
    s[t] = keys[base + t]
    s[t + SORT_HALF] = keys[base + t + SORT_HALF]
    jit.syncthreads()
    k = np.int32(2)
    while k <= SORT_SEG:
        j = k // 2
        while j > 0:
            i = 2 * t - (t & (j - 1))
            a = s[i]
            b = s[i + j]
            up = (i & k) == 0
            if (a > b) == up:
                s[i] = b
                s[i + j] = a
            jit.syncthreads()
            j //= 2
        k *= 2
    out[base + t] = s[t]
    out[base + t + SORT_HALF] = s[t + SORT_HALF]


@jit.rawkernel()
def scan_lookback(x, out, status, state):
    buf = jit.shared_memory(np.int32, SCAN_PADDED)
    sums = jit.shared_memory(np.int32, SCAN_WARPS)
    carry = jit.shared_memory(np.int32, 1)
    t = np.int32(jit.threadIdx.x)
    lane = t % 32
    warp = t // 32
    tile = np.int32(jit.blockIdx.x)
    base = tile * SCAN_TILE
    for k in range(SCAN_ITEMS):
        e = k * SCAN_BLOCK2 + t
        buf[e + e // 32] = x[base + e]
    jit.syncthreads()
    own = np.int32(0)
    for k in range(SCAN_ITEMS):
        e = t * SCAN_ITEMS + k
        own += buf[e + e // 32]
    v = own
    d = np.uint32(1)
    while d < 32:
        up = jit.shfl_up_sync(FULL_MASK, v, d)
        if lane >= d:
            v += up
        d *= np.uint32(2)
    if lane == 31:
        sums[warp] = v
    jit.syncthreads()
    if warp == 0:
        w = np.int32(0)
        if lane < SCAN_WARPS:
            w = sums[lane]
        d = np.uint32(1)
        while d < SCAN_WARPS:
            up = jit.shfl_up_sync(FULL_MASK, w, d)
            if lane >= d:
                w += up
            d *= np.uint32(2)
        if lane < SCAN_WARPS:
            sums[lane] = w
    jit.syncthreads()
    before = v - own
    if warp > 0:
        before += sums[warp - 1]
    epoch = np.uint32(0)
    if t == 0:
        total = sums[SCAN_WARPS - 1]
        epoch = state[0]
        aggregate = np.uint64(2 * epoch + 1)
        inclusive = np.uint64(2 * epoch + 2)
        prefix = np.int32(0)
        if tile > 0:
            # no atomic load or store in cupyx.jit: exch stores, add of 0 loads
            jit.atomic_exch(status, tile, (aggregate << SHIFT32) | np.uint64(total))
            j = tile - 1
            while True:
                word = jit.atomic_add(status, j, np.uint64(0))
                flag = word >> SHIFT32
                if flag == inclusive:
                    prefix += np.int32(word & LOW32)
                    break
                if flag == aggregate:
                    prefix += np.int32(word & LOW32)
                    j -= 1
        jit.atomic_exch(status, tile, (inclusive << SHIFT32) | np.uint64(prefix + total))
        carry[0] = prefix
    jit.syncthreads()
    run = carry[0] + before
    for k in range(SCAN_ITEMS):
        e = t * SCAN_ITEMS + k
        run += buf[e + e // 32]
        buf[e + e // 32] = run
    jit.syncthreads()
    for k in range(SCAN_ITEMS):
        e = k * SCAN_BLOCK2 + t
        out[base + e] = buf[e + e // 32]
    if t == 0:
        done = jit.atomic_add(state, 1, np.uint32(1))
        if done == jit.gridDim.x - 1:
            state[1] = np.uint32(0)
            state[0] = np.uint32(epoch + 1)


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
    "softmax_rows": softmax_rows,
    "layernorm": layernorm,
    "softmax_1pass": softmax_1pass,
    "nbody": nbody,
    "spmv_csr": spmv_csr,
    "mandelbrot": mandelbrot,
    "conv2d": conv2d,
    "bitonic_sort": bitonic_sort,
    "scan_lookback": scan_lookback,
}

NOT_EXPRESSIBLE = {
    "bits_u32": "cupyx.jit has no bit-reverse intrinsic (brev); popc only as the ufunc "
    "cupy.bitwise_count",
    "sgemm_reg": "cupyx.jit has no per-thread (local) arrays for the 8 x 8 accumulators",
    "layernorm_1pass": "cupyx.jit has no per-thread (local) arrays for the 32 values of the "
    "row each lane holds (32 named scalars would do; not written), and no vector loads",
    "fft_radix4": "cupyx.jit cannot build a complex number from two floats (no complex(re, im))",
    "half2_poly": "cupyx.jit has no float16 fused multiply-add and no half2 arithmetic",
    "hgemm_mma": "cupyx.jit has no tensor-core (mma.sync, ldmatrix) intrinsics",
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
