# Port of llm.c's layernorm_forward kernels: kernel1 (a thread a row), mean_kernel + rstd_kernel +
# normalization_kernel (a block a row, shared-memory trees), kernel3 (a warp a row through
# cooperative groups).
# Origin: github.com/karpathy/llm.c, dev/cuda/layernorm_forward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. Ported to the cuda.device dialect for
#   pydevice's corpus.
# Launch as the original's layernorm_forward1/2/3 with block_size 256: kernel1 grid
# ceil(N/256); mean/rstd grid N with block_size floats of dynamic shared memory;
# normalization_kernel grid ceil(B*T*C/256); kernel3 grid ceil(N*32/256). B = 8, T = 1024,
# C = 768 as its main().
#
# entry: layernorm_forward_kernel1
# sig: float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], int32, int32
# entry: mean_kernel
# sig: float32[::1], float32[::1], int32, int32, int32
# entry: rstd_kernel
# sig: float32[::1], float32[::1], float32[::1], int32, int32, int32
# entry: normalization_kernel
# sig: float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], int32, int32, int32
# entry: layernorm_forward_kernel3
# sig: float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], int32, int32
import math

import numpy as np

from cuda import device
from cuda.device import cg

B = 8
T = 1024
C = 768
BLOCK_SIZE = 256


@device.kernel
def layernorm_forward_kernel1(out, mean, rstd, inp, weight, bias, N, C):
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    eps = 1e-5

    if idx < N:
        # seek to the input position inp[idx,:]
        x = inp[idx * C:]
        # calculate the mean
        m = 0.0
        for i in range(C):
            m += x[i]
        m = m / float(C)
        # calculate the variance (without any bias correction)
        v = 0.0
        for i in range(C):
            xshift = x[i] - m
            v += xshift * xshift
        v = v / float(C)
        # calculate the rstd
        s = 1.0 / math.sqrt(v + eps)
        # seek to the output position in out[idx,:]
        out_idx = out[idx * C:]
        for i in range(C):
            n = s * (x[i] - m)  # normalized output
            o = n * weight[i] + bias[i]  # scale and shift it
            out_idx[i] = o  # write
        # cache the mean and rstd for the backward pass later
        mean[idx] = m
        rstd[idx] = s


@device.kernel
def mean_kernel(mean, inp, N, C, block_size):
    shared = device.dynamic_shared_array().view(device.float32)
    idx = device.block_idx.x  # range [0, B*T)
    tid = device.thread_idx.x  # range [0, block_size)
    x = inp[idx * C:]
    # thread coarsening
    sum = 0.0
    for i in range(tid, C, block_size):
        sum += x[i]
    shared[tid] = sum
    device.syncthreads()
    # reductions
    stride = block_size // 2
    while stride >= 1:
        device.syncthreads()
        if tid < stride:
            shared[tid] += shared[tid + stride]
        stride //= 2
    # write the final result (at thread 0) to global memory
    if tid == 0:
        mean[idx] = shared[0] / float(C)


@device.kernel
def rstd_kernel(rstd, inp, mean, N, C, block_size):
    shared = device.dynamic_shared_array().view(device.float32)
    idx = device.block_idx.x  # range [0, B*T)
    tid = device.thread_idx.x  # range [0, block_size)
    x = inp[idx * C:]
    m = mean[idx]
    # thread coarsening
    sum = 0.0
    for i in range(tid, C, block_size):
        diff = x[i] - m
        sum += diff * diff
    shared[tid] = sum
    device.syncthreads()
    # reductions
    stride = block_size // 2
    while stride >= 1:
        device.syncthreads()
        if tid < stride:
            shared[tid] += shared[tid + stride]
        stride //= 2
    # write the final result (at thread 0) to global memory
    if tid == 0:
        rstd[idx] = 1.0 / math.sqrt(shared[0] / float(C) + 1e-5)


@device.kernel
def normalization_kernel(out, inp, mean, rstd, weight, bias, B, T, C):
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    bt = idx // C
    c = idx % C

    m = mean[bt]
    s = rstd[bt]
    xi = inp[idx]
    n = s * (xi - m)
    o = n * weight[c] + bias[c]

    out[idx] = o


@device.kernel
def layernorm_forward_kernel3(out, mean, rstd, inp, weight, bias, N, C):
    block = cg.this_thread_block()
    warp = cg.tiled_partition(block, 32)
    # meta_group_size is the number of warps in a block, and meta_group_rank is the warp index
    idx = device.block_idx.x * warp.meta_group_size() + warp.meta_group_rank()
    if idx >= N:
        return

    # the row of input that this group of threads is responsible for
    x = inp[idx * C:]

    # mean
    sum = 0.0
    for i in range(warp.thread_rank(), C, warp.size()):
        sum += x[i]
    sum = cg.reduce(warp, sum, 'add')
    m = sum / float(C)
    if warp.thread_rank() == 0:
        mean[idx] = m

    # rstd
    sum = 0.0
    for i in range(warp.thread_rank(), C, warp.size()):
        diff = x[i] - m
        sum += diff * diff
    sum = cg.reduce(warp, sum, 'add')
    s = device.rsqrt(sum / float(C) + 1e-5)
    if warp.thread_rank() == 0:
        rstd[idx] = s

    # final normalization and scaling by weight/bias
    o = out[idx * C:]
    for c in range(warp.thread_rank(), C, warp.size()):
        n = s * (x[c] - m)
        o[c] = n * weight[c] + bias[c]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_layernorm_forward.cu"
TOL = {name: (1e-4, 1e-4) for name in ("out1", "mean1", "rstd1", "out2", "mean2", "rstd2", "out3", "mean3", "rstd3")}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 2, "T": 8, "C": 40, "BLOCK_SIZE": 64}


def setup(rng):
    n = B * T
    d = {
        "inp": rng.standard_normal(n * C, dtype=np.float32),
        "weight": rng.standard_normal(C, dtype=np.float32),
        "bias": rng.standard_normal(C, dtype=np.float32),
    }
    for k in "123":
        d["out" + k] = np.zeros(n * C, np.float32)
        d["mean" + k] = np.zeros(n, np.float32)
        d["rstd" + k] = np.zeros(n, np.float32)
    return d


def run(launch, d):
    n, c = B * T, C
    bs = BLOCK_SIZE
    i32 = np.int32
    launch(layernorm_forward_kernel1, -(-n // bs), bs, d["out1"], d["mean1"], d["rstd1"], d["inp"], d["weight"], d["bias"], i32(n), i32(c))
    launch(mean_kernel, n, bs, d["mean2"], d["inp"], i32(n), i32(c), i32(bs), shared=bs * 4)
    launch(rstd_kernel, n, bs, d["rstd2"], d["inp"], d["mean2"], i32(n), i32(c), i32(bs), shared=bs * 4)
    launch(normalization_kernel, -(-n * c // bs), bs, d["out2"], d["inp"], d["mean2"], d["rstd2"], d["weight"], d["bias"], i32(B), i32(T), i32(c))
    launch(layernorm_forward_kernel3, -(-n * 32 // bs), bs, d["out3"], d["mean3"], d["rstd3"], d["inp"], d["weight"], d["bias"], i32(n), i32(c))


def reference(h):
    x = h["inp"].reshape(B * T, C).astype(np.float64)
    m = x.mean(axis=1)
    s = 1.0 / np.sqrt(((x - m[:, None]) ** 2).mean(axis=1) + 1e-5)
    out = ((x - m[:, None]) * s[:, None] * h["weight"] + h["bias"]).ravel()
    r = {}
    for k in "123":
        r["out" + k], r["mean" + k], r["rstd" + k] = out, m, s
    return r
