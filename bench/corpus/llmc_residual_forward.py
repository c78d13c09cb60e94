# Port of llm.c's residual_forward_kernel1 (out = inp1 + inp2).
# Origin: github.com/karpathy/llm.c, dev/cuda/residual_forward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. floatX is float (the fp32 build).
#   Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original's residual_forward1: block 512, grid ceil(N/512), N = 8*1024*768.
#
# entry: residual_forward_kernel1
# sig: float32[::1], float32[::1], float32[::1], int32
import numpy as np

from cuda import device

B = 8
T = 1024
C = 768
BLOCK_SIZE = 512


@device.kernel
def residual_forward_kernel1(out, inp1, inp2, N):
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if idx < N:
        out[idx] = inp1[idx] + inp2[idx]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_residual_forward.cu"
TOL = {"out": (0, 0)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 1, "T": 4, "C": 100}


def setup(rng):
    n = B * T * C
    return {
        "out": np.zeros(n, np.float32),
        "inp1": rng.standard_normal(n, dtype=np.float32),
        "inp2": rng.standard_normal(n, dtype=np.float32),
    }


def run(launch, d):
    n = B * T * C
    launch(residual_forward_kernel1, -(-n // BLOCK_SIZE), BLOCK_SIZE, d["out"], d["inp1"], d["inp2"], np.int32(n))


def reference(h):
    return {"out": h["inp1"] + h["inp2"]}
