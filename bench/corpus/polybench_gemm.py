# Port of PolyBench/GPU 1.0 GEMM (C := alpha*A*B + beta*C), kernel gemm_kernel.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/GEMM/gemm.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (32, 8), grid (ceil(NI/32), ceil(NJ/8)), STANDARD_DATASET (512).
#
# entry: gemm_kernel
# sig: int32, int32, int32, float32, float32, float32[::1], float32[::1], float32[::1]
import numpy as np

from cuda import device

NI = 512
NJ = 512
NK = 512
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def gemm_kernel(ni, nj, nk, alpha, beta, a, b, c):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < ni and j < nj:
        c[i * NJ + j] *= beta
        for k in range(nk):
            c[i * NJ + j] += alpha * a[i * NK + k] * b[k * NJ + j]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_gemm.cu"
TOL = {"c": (1e-4, 1e-3)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NI": 64, "NJ": 64, "NK": 64}


def setup(rng):
    return {
        "alpha": np.float32(32412.0),
        "beta": np.float32(2123.0),
        "a": rng.random(NI * NK, dtype=np.float32),
        "b": rng.random(NK * NJ, dtype=np.float32),
        "c": rng.random(NI * NJ, dtype=np.float32),
    }


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y)
    grid = (-(-NI // block[0]), -(-NJ // block[1]))
    launch(gemm_kernel, grid, block, np.int32(NI), np.int32(NJ), np.int32(NK), d["alpha"], d["beta"], d["a"], d["b"], d["c"])


def reference(h):
    a = h["a"].reshape(NI, NK).astype(np.float64)
    b = h["b"].reshape(NK, NJ).astype(np.float64)
    c = h["c"].reshape(NI, NJ).astype(np.float64)
    return {"c": (float(h["alpha"]) * a @ b + float(h["beta"]) * c).ravel()}
