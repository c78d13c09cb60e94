# Port of llm.c's crossentropy_forward_kernel1.
# Origin: github.com/karpathy/llm.c, dev/cuda/crossentropy_forward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. floatX is float (the fp32 build).
#   Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original's crossentropy_forward1: block 512, grid ceil(B*T/512). V = 50257 as
# its main(), B = 4 and T = 512 (its main() has 8 and 1024: probs would be 1.6 GB).
#
# entry: crossentropy_forward_kernel1
# sig: float32[::1], float32[::1], int32[::1], int32, int32, int32
import math

import numpy as np

from cuda import device

B = 4
T = 512
V = 50257
BLOCK_SIZE = 512


@device.kernel
def crossentropy_forward_kernel1(losses, probs, targets, B, T, V):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i < B * T:
        b = i // T
        t = i % T
        probs_bt = probs[b * T * V + t * V:]
        ix = targets[b * T + t]
        losses[b * T + t] = -math.log(probs_bt[ix])


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_crossentropy_forward.cu"
TOL = {"losses": (1e-6, 1e-6)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 2, "T": 8, "V": 50}


def setup(rng):
    return {
        "losses": np.zeros(B * T, np.float32),
        "probs": rng.random(B * T * V, dtype=np.float32) + np.float32(1e-3),
        "targets": rng.integers(0, V, B * T, dtype=np.int32),
    }


def run(launch, d):
    launch(crossentropy_forward_kernel1, -(-B * T // BLOCK_SIZE), BLOCK_SIZE,
           d["losses"], d["probs"], d["targets"], np.int32(B), np.int32(T), np.int32(V))


def reference(h):
    rows = np.arange(B * T, dtype=np.int64) * V
    return {"losses": -np.log(h["probs"][rows + h["targets"]].astype(np.float64))}
