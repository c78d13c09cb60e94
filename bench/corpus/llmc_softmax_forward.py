# Port of llm.c's softmax_forward kernels: kernel1 (a thread a row, float64 sum), kernel2 (a block a
# row, shared-memory trees), kernel4 (a block a row, warp shuffles, then shared memory across
# warps), online_kernel1 (a thread a row, one pass for the max and the float64 sum).
# Origin: github.com/karpathy/llm.c, dev/cuda/softmax_forward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. Ported to the cuda.device dialect for
#   pydevice's corpus.
# Launch as the original's softmax_forward1/2/4/online1 with block_size 256: kernel1 and
# online_kernel1 grid ceil(N/256); kernel2 grid N, block_size floats of dynamic shared memory; kernel4 grid N,
# block_size/32 floats. N = B*T with B = 8, T = 128 (its main() has T = 1024), C = V = 50257.
#
# entry: softmax_forward_kernel1
# sig: float32[::1], float32[::1], int32, int32
# entry: softmax_forward_kernel2
# sig: float32[::1], float32[::1], int32, int32
# entry: softmax_forward_kernel4
# sig: float32[::1], float32[::1], int32, int32
# entry: softmax_forward_online_kernel1
# sig: float32[::1], float32[::1], int32, int32
import math

import numpy as np

from cuda import device

B = 8
T = 128
V = 50257
BLOCK_SIZE = 256


@device.kernel
def softmax_forward_kernel1(out, inp, N, C):
    # inp is (N, C)
    # out is (N, C), each row of inp will get softmaxed
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i < N:
        inp_row = inp[i * C:]
        out_row = out[i * C:]

        maxval = -math.inf
        for j in range(C):
            if inp_row[j] > maxval:
                maxval = inp_row[j]
        sum = device.float64(0.0)
        for j in range(C):
            out_row[j] = math.exp(inp_row[j] - maxval)
            sum += out_row[j]
        for j in range(C):
            out_row[j] /= device.float32(sum)


@device.kernel
def softmax_forward_kernel2(out, inp, N, C):
    # inp is (N, C)
    # in each row of C elements, first calculates maxval, then returns expf(val - maxval)
    shared = device.dynamic_shared_array().view(device.float32)
    idx = device.block_idx.x  # ranges [0, N)
    tid = device.thread_idx.x  # ranges [0, block_size)
    block_size = device.block_dim.x
    x = inp[idx * C:]  # idx-th row of inp
    # thread coarsening
    maxval = -math.inf
    for i in range(tid, C, block_size):
        maxval = max(maxval, x[i])
    shared[tid] = maxval
    # reductions
    stride = block_size // 2
    while stride >= 1:
        device.syncthreads()
        if tid < stride:
            shared[tid] = max(shared[tid], shared[tid + stride])
        stride //= 2
    device.syncthreads()
    offset = shared[0]
    # compute expf and write the result to global memory
    for i in range(tid, C, block_size):
        out[idx * C + i] = math.exp(x[i] - offset)
    device.syncthreads()
    # thread coarsening again, for the sum
    x = out[idx * C:]  # idx-th row of out
    sumval = 0.0
    for i in range(tid, C, block_size):
        sumval += x[i]
    shared[tid] = sumval
    # reductions
    stride = block_size // 2
    while stride >= 1:
        device.syncthreads()
        if tid < stride:
            shared[tid] += shared[tid + stride]
        stride //= 2
    # broadcast the sum to all threads in the block
    device.syncthreads()
    sum = shared[0]
    # divide the input values by the sum
    for i in range(tid, C, block_size):
        out[idx * C + i] = x[i] / sum


@device.func
def warpReduceMax(val: float) -> float:
    # A @func is heterogeneous in cuda.device: the shuffles need a device-only branch (E0243).
    if device.target(device.is_device):
        offset = 16
        while offset > 0:
            val = max(val, device.shfl_down_sync(0xFFFFFFFF, val, offset))
            offset //= 2
    return val


@device.func
def warpReduceSum(val: float) -> float:
    # A @func is heterogeneous in cuda.device: the shuffles need a device-only branch (E0243).
    if device.target(device.is_device):
        offset = 16
        while offset > 0:
            val += device.shfl_xor_sync(0xFFFFFFFF, val, offset)
            offset //= 2
    return val


@device.kernel
def softmax_forward_kernel4(out, inp, N, C):
    # out is (N, C) just like inp. Each row of inp will get softmaxed.
    shared = device.dynamic_shared_array().view(device.float32)
    idx = device.block_idx.x
    tid = int(device.thread_idx.x)
    warpId = int(device.thread_idx.x // 32)  # warp index within a block
    laneId = int(device.thread_idx.x % 32)  # thread index within a warp

    # the number of warps per block. recall that blockDim.x is block_size
    warpsPerBlock = int(device.block_dim.x // 32)

    # shared[] must be allocated to have warpsPerBlock elements
    # those will be used for max and sum values
    max_or_sum_storage = shared

    # one row of inp, i.e. inp[idx, :] of shape (C,)
    x = inp[idx * C:]

    # first, thread coarsening by directly accessing global memory in series
    maxval = -math.inf
    for i in range(tid, C, int(device.block_dim.x)):
        maxval = max(maxval, x[i])
    # now within-warp reductions for maxval
    maxval = warpReduceMax(maxval)

    # the 0th thread of each warp writes the maxval of that warp to shared memory
    if laneId == 0:
        max_or_sum_storage[warpId] = maxval
    device.syncthreads()

    # now the 0th thread of the block reduces the max values in shared memory, i.e. across warps
    if tid == 0:
        val = max_or_sum_storage[tid]
        for i in range(1, warpsPerBlock):
            val = max(val, max_or_sum_storage[i])
        # store the final max in the first position
        max_or_sum_storage[0] = val
    device.syncthreads()
    # broadcast the max to all threads
    offset = max_or_sum_storage[0]

    # compute expf and write the result to global memory
    for i in range(tid, C, int(device.block_dim.x)):
        out[idx * C + i] = math.exp(x[i] - offset)

    # okay now we calculated exp(x - max(x))
    # step 2: sum all the values and divide by the sum

    # thread coarsening for sum
    x = out[idx * C:]
    sumval = 0.0
    for i in range(tid, C, int(device.block_dim.x)):
        sumval += x[i]
    # within-warp reduction for sumval
    sumval = warpReduceSum(sumval)

    # write sumval to shared memory
    if laneId == 0:
        max_or_sum_storage[warpId] = sumval
    device.syncthreads()

    # inter-thread reduction of sum
    if tid == 0:
        val = max_or_sum_storage[tid]
        for i in range(1, warpsPerBlock):
            val += max_or_sum_storage[i]
        # store the final max in the first position
        max_or_sum_storage[0] = val
    device.syncthreads()
    # broadcast the sum to all threads
    sum = max_or_sum_storage[0]

    # divide the whole row by the sum
    for i in range(tid, C, int(device.block_dim.x)):
        out[idx * C + i] = x[i] / sum


@device.kernel
def softmax_forward_online_kernel1(out, inp, N, C):
    # inp is (N, C)
    # out is (N, C), each row of inp will get softmaxed
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i < N:
        inp_row = inp[i * C:]
        out_row = out[i * C:]

        maxval = -math.inf
        sum = device.float64(0.0)
        for j in range(C):
            maxval_prev = maxval
            current_val = inp_row[j]
            if current_val > maxval:
                maxval = current_val
                sum = sum * math.exp(maxval_prev - maxval) + math.exp(current_val - maxval)
            else:
                sum += math.exp(current_val - maxval)

        for j in range(C):
            out_row[j] = math.exp(inp_row[j] - maxval) / sum


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_softmax_forward.cu"
TOL = {"out1": (1e-4, 1e-9), "out2": (1e-4, 1e-9), "out4": (1e-4, 1e-9), "outo": (1e-4, 1e-9)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 2, "T": 4, "V": 100, "BLOCK_SIZE": 64}


def setup(rng):
    n = B * T
    return {
        "inp": rng.standard_normal(n * V, dtype=np.float32) * np.float32(3.0),
        "out1": np.zeros(n * V, np.float32),
        "out2": np.zeros(n * V, np.float32),
        "out4": np.zeros(n * V, np.float32),
        "outo": np.zeros(n * V, np.float32),
    }


def run(launch, d):
    n, bs = B * T, BLOCK_SIZE
    args = (np.int32(n), np.int32(V))
    launch(softmax_forward_kernel1, -(-n // bs), bs, d["out1"], d["inp"], *args)
    launch(softmax_forward_kernel2, n, bs, d["out2"], d["inp"], *args, shared=bs * 4)
    launch(softmax_forward_kernel4, n, bs, d["out4"], d["inp"], *args, shared=bs // 32 * 4)
    launch(softmax_forward_online_kernel1, -(-n // bs), bs, d["outo"], d["inp"], *args)


def reference(h):
    x = h["inp"].reshape(B * T, V).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    out = (e / e.sum(axis=1, keepdims=True)).ravel()
    return {"out1": out, "out2": out, "out4": out, "outo": out}
