# Port of llm.c's gelu_backward1 (the tanh GELU's gradient).
# Origin: github.com/karpathy/llm.c, dev/cuda/gelu_backward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. floatX is float (the fp32 build).
#   Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original's gelu_backward1: block 512, grid ceil(N/512), N = B*T*C = 8*1024*768.
# GELU_SCALING_FACTOR (a macro for sqrtf(2.0f / M_PI)) is written out where it is used (README,
# finding 1).
#
# entry: gelu_backward1
# sig: float32[::1], float32[::1], float32[::1], int32
import math

import numpy as np

from cuda import device

B = 8
T = 1024
C = 768
BLOCK_SIZE = 512


@device.kernel
def gelu_backward1(dinp, inp, dout, N):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i < N:
        x = inp[i]
        cube = 0.044715 * x * x * x
        tanh_arg = math.sqrt(2.0 / math.pi) * (x + cube)
        tanh_out = math.tanh(tanh_arg)
        coshf_out = math.cosh(tanh_arg)
        sech_out = 1.0 / (coshf_out * coshf_out)
        local_grad = 0.5 * (1.0 + tanh_out) + x * 0.5 * sech_out * math.sqrt(2.0 / math.pi) * (1.0 + 3.0 * 0.044715 * x * x)
        dinp[i] = local_grad * dout[i]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_gelu_backward.cu"
TOL = {"dinp": (1e-4, 1e-6)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 1, "T": 4, "C": 100}


def setup(rng):
    n = B * T * C
    return {"dinp": np.zeros(n, np.float32), "inp": rng.standard_normal(n, dtype=np.float32),
            "dout": rng.standard_normal(n, dtype=np.float32)}


def run(launch, d):
    n = B * T * C
    launch(gelu_backward1, -(-n // BLOCK_SIZE), BLOCK_SIZE, d["dinp"], d["inp"], d["dout"], np.int32(n))


def reference(h):
    x = h["inp"].astype(np.float64)
    s = math.sqrt(2.0 / math.pi)
    a = s * (x + 0.044715 * x ** 3)
    grad = 0.5 * (1.0 + np.tanh(a)) + x * 0.5 / np.cosh(a) ** 2 * s * (1.0 + 3.0 * 0.044715 * x * x)
    return {"dinp": grad * h["dout"]}
