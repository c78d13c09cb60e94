# Port of llm.c's gelu_forward_kernel1 (tanh GELU).
# Origin: github.com/karpathy/llm.c, dev/cuda/gelu_forward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. floatX is float (the fp32 build).
#   Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original's gelu_forward1: block 512, grid ceil(N/512), N = B*T*C = 8*1024*768.
#
# entry: gelu_forward_kernel1
# sig: float32[::1], float32[::1], int32
import math

import numpy as np

from cuda import device

B = 8
T = 1024
C = 768
BLOCK_SIZE = 512


@device.kernel
def gelu_forward_kernel1(out, inp, N):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i < N:
        xi = inp[i]
        cube = 0.044715 * xi * xi * xi
        # GELU_SCALING_FACTOR is a macro for sqrtf(2.0f / M_PI) in the original; a module
        # global `math.sqrt(2.0 / math.pi)` is not a constant pydevice accepts (README, findings)
        out[i] = 0.5 * xi * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (xi + cube)))


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_gelu_forward.cu"
TOL = {"out": (1e-5, 1e-6)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 1, "T": 4, "C": 100}


def setup(rng):
    n = B * T * C
    return {"out": np.zeros(n, np.float32), "inp": rng.standard_normal(n, dtype=np.float32)}


def run(launch, d):
    n = B * T * C
    launch(gelu_forward_kernel1, -(-n // BLOCK_SIZE), BLOCK_SIZE, d["out"], d["inp"], np.int32(n))


def reference(h):
    x = h["inp"].astype(np.float64)
    return {"out": 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))}
