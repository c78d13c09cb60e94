# Port of PolyBench/GPU 1.0 SYRK (C := alpha*A*A^T + beta*C), kernel syrk_kernel.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/SYRK/syrk.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (32, 8), grid (ceil(NI/32), ceil(NI/8)), STANDARD_DATASET (1024).
#
# entry: syrk_kernel
# sig: int32, int32, float32, float32, float32[::1], float32[::1]
import numpy as np

from cuda import device

NI = 1024
NJ = 1024
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def syrk_kernel(ni, nj, alpha, beta, a, c):
    # C := alpha*A*A' + beta*C
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < ni and j < ni:
        c[i * NI + j] *= beta
        for k in range(nj):
            c[i * NI + j] += alpha * a[i * NJ + k] * a[j * NJ + k]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_syrk.cu"
TOL = {"c": (1e-4, 1e-3)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NI": 64, "NJ": 64}


def setup(rng):
    return {
        "alpha": np.float32(1.5),
        "beta": np.float32(1.2),
        "a": rng.random(NI * NJ, dtype=np.float32),
        "c": rng.random(NI * NI, dtype=np.float32),
    }


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y)
    grid = (-(-NI // block[0]), -(-NI // block[1]))
    launch(syrk_kernel, grid, block, np.int32(NI), np.int32(NJ), d["alpha"], d["beta"], d["a"], d["c"])


def reference(h):
    a = h["a"].reshape(NI, NJ).astype(np.float64)
    c = h["c"].reshape(NI, NI).astype(np.float64)
    return {"c": (float(h["alpha"]) * a @ a.T + float(h["beta"]) * c).ravel()}
