# Port of PolyBench/GPU 1.0 SYR2K (C := alpha*A*B^T + alpha*B*A^T + beta*C), kernel syr2k_kernel.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/SYR2K/syr2k.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (32, 8), grid (ceil(NI/32), ceil(NI/8)), STANDARD_DATASET (1024).
#
# entry: syr2k_kernel
# sig: int32, int32, float32, float32, float32[::1], float32[::1], float32[::1]
import numpy as np

from cuda import device

NI = 1024
NJ = 1024
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def syr2k_kernel(ni, nj, alpha, beta, a, b, c):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < NI and j < NI:
        c[i * NI + j] *= beta
        for k in range(NJ):
            c[i * NI + j] += alpha * a[i * NJ + k] * b[j * NJ + k] + alpha * b[i * NJ + k] * a[j * NJ + k]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_syr2k.cu"
TOL = {"c": (1e-4, 1e-3)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NI": 64, "NJ": 64}


def setup(rng):
    return {
        "alpha": np.float32(1.5),
        "beta": np.float32(1.2),
        "a": rng.random(NI * NJ, dtype=np.float32),
        "b": rng.random(NI * NJ, dtype=np.float32),
        "c": rng.random(NI * NI, dtype=np.float32),
    }


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y)
    grid = (-(-NI // block[0]), -(-NI // block[1]))
    launch(syr2k_kernel, grid, block, np.int32(NI), np.int32(NJ), d["alpha"], d["beta"], d["a"], d["b"], d["c"])


def reference(h):
    a = h["a"].reshape(NI, NJ).astype(np.float64)
    b = h["b"].reshape(NI, NJ).astype(np.float64)
    c = h["c"].reshape(NI, NI).astype(np.float64)
    al = float(h["alpha"])
    return {"c": (al * a @ b.T + al * b @ a.T + float(h["beta"]) * c).ravel()}
