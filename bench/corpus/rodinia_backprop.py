# Port of Rodinia 3.1's backprop (a neural-network layer's forward sums and weight update):
# kernels bpnn_layerforward_CUDA and bpnn_adjust_weights_cuda.
# Origin: github.com/yuhc/gpu-rodinia (a mirror of Rodinia 3.1), cuda/backprop/
#   backprop_cuda_kernel.cu and backprop.h, commit 9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4.
#   Copyright (c) 2008-2011 University of Virginia, BSD-style license (LICENSE in that
#   repository). Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original's bpnn_train_cuda: block (16, 16), grid (1, in/16), in = 65536 input
# units (its usual run), hid = 16. `__log2f(HEIGHT)` and `__powf(2, i)` are `math.log2` and
# `2 ** i`. ETA and MOMENTUM are double constants in C (so the update is computed in double
# there); here they are Python floats, which take float32 from the arrays. The parameter
# `in` is a Python keyword: `in_`.
#
# entry: bpnn_layerforward_CUDA
# sig: float32[::1], float32[::1], float32[::1], float32[::1], int32, int32
# entry: bpnn_adjust_weights_cuda
# sig: float32[::1], int32, float32[::1], int32, float32[::1], float32[::1]
import math

import numpy as np

from cuda import device

WIDTH = 16  # shared memory width
HEIGHT = 16  # shared memory height
ETA = 0.3  # eta value
MOMENTUM = 0.3  # momentum value
IN = 65536
HID = 16


@device.kernel
def bpnn_layerforward_CUDA(input_cuda, output_hidden_cuda, input_hidden_cuda, hidden_partial_sum, in_, hid):
    by = int(device.block_idx.y)
    tx = int(device.thread_idx.x)
    ty = int(device.thread_idx.y)

    index = (hid + 1) * HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1)
    index_in = HEIGHT * by + ty + 1

    input_node = device.shared_array(HEIGHT, device.float32)
    weight_matrix = device.shared_array((HEIGHT, WIDTH), device.float32)

    if tx == 0:
        input_node[ty] = input_cuda[index_in]
    device.syncthreads()

    weight_matrix[ty, tx] = input_hidden_cuda[index]
    device.syncthreads()

    weight_matrix[ty, tx] = weight_matrix[ty, tx] * input_node[ty]
    device.syncthreads()

    for i in range(1, int(math.log2(HEIGHT)) + 1):
        power_two = 2 ** i
        if ty % power_two == 0:
            weight_matrix[ty, tx] = weight_matrix[ty, tx] + weight_matrix[ty + power_two // 2, tx]
        device.syncthreads()

    input_hidden_cuda[index] = weight_matrix[ty, tx]
    device.syncthreads()

    if tx == 0:
        hidden_partial_sum[by * hid + ty] = weight_matrix[tx, ty]


@device.kernel
def bpnn_adjust_weights_cuda(delta, hid, ly, in_, w, oldw):
    by = int(device.block_idx.y)
    tx = int(device.thread_idx.x)
    ty = int(device.thread_idx.y)

    index = (hid + 1) * HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1)
    index_y = HEIGHT * by + ty + 1
    index_x = tx + 1
    # eta = 0.3
    # momentum = 0.3

    w[index] += (ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index])
    oldw[index] = (ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index])

    device.syncthreads()

    if ty == 0 and by == 0:
        w[index_x] += (ETA * delta[index_x]) + (MOMENTUM * oldw[index_x])
        oldw[index_x] = (ETA * delta[index_x]) + (MOMENTUM * oldw[index_x])


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "rodinia_backprop.cu"
TOL = {"partial": (1e-4, 1e-5), "w": (1e-5, 1e-6), "oldw": (1e-5, 1e-6)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"IN": 48}


def setup(rng):
    n = (IN + 1) * (HID + 1)
    return {
        "input": rng.random(IN + 1, dtype=np.float32),
        "output_hidden": np.zeros(HID + 1, np.float32),
        "input_hidden": rng.random(n, dtype=np.float32) - np.float32(0.5),
        "partial": np.zeros(IN // 16 * WIDTH, np.float32),
        "delta": rng.random(HID + 1, dtype=np.float32) - np.float32(0.5),
        "w": rng.random(n, dtype=np.float32) - np.float32(0.5),
        "oldw": rng.random(n, dtype=np.float32) * np.float32(0.1),
    }


def run(launch, d):
    grid, threads = (1, IN // 16), (16, 16)
    launch(bpnn_layerforward_CUDA, grid, threads, d["input"], d["output_hidden"], d["input_hidden"], d["partial"], np.int32(IN), np.int32(HID))
    launch(bpnn_adjust_weights_cuda, grid, threads, d["delta"], np.int32(HID), d["input"], np.int32(IN), d["w"], d["oldw"])


def reference(h):
    x = h["input"].astype(np.float64)
    wih = h["input_hidden"].reshape(IN + 1, HID + 1).astype(np.float64)
    prod = wih[1:, 1:] * x[1:, None]  # (IN, HID): row r+1 of the weights times input r+1
    partial = prod.reshape(IN // 16, 16, HID).sum(axis=1)  # by, column
    w = h["w"].reshape(IN + 1, HID + 1).astype(np.float64)
    old = h["oldw"].reshape(IN + 1, HID + 1).astype(np.float64)
    delta = h["delta"].astype(np.float64)
    upd = ETA * delta[None, 1:] * x[1:, None] + MOMENTUM * old[1:, 1:]
    w[1:, 1:] += upd
    old[1:, 1:] = upd
    upd0 = ETA * delta[1:] + MOMENTUM * old[0, 1:]
    w[0, 1:] += upd0
    old[0, 1:] = upd0
    return {"partial": partial.ravel(), "w": w.ravel(), "oldw": old.ravel()}
