# Port of PolyBench/GPU 1.0 MVT (x1 += A y1, x2 += A^T y2), kernels mvt_kernel1 and mvt_kernel2.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/MVT/mvt.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original, but with block (32, 1) where it has (32, 8), grid (ceil(N/32), 1).
# Its kernels index with blockIdx.x/threadIdx.x only, so its 8 rows of threads a block
# race on the same outputs (each resets and accumulates them); the result is undefined.
# One row keeps the grid, the per-thread work and the memory traffic of a thread.
#
# entry: mvt_kernel1
# sig: int32, float32[::1], float32[::1], float32[::1]
# entry: mvt_kernel2
# sig: int32, float32[::1], float32[::1], float32[::1]
import numpy as np

from cuda import device

N = 4096
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def mvt_kernel1(n, a, x1, y_1):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if i < n:
        for j in range(n):
            x1[i] += a[i * N + j] * y_1[j]


@device.kernel
def mvt_kernel2(n, a, x2, y_2):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if i < n:
        for j in range(n):
            x2[i] += a[j * N + i] * y_2[j]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_mvt.cu"
TOL = {"x1": (1e-4, 1e-2), "x2": (1e-4, 1e-2)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"N": 100}


def setup(rng):
    return {
        "a": rng.random(N * N, dtype=np.float32),
        "x1": rng.random(N, dtype=np.float32),
        "x2": rng.random(N, dtype=np.float32),
        "y_1": rng.random(N, dtype=np.float32),
        "y_2": rng.random(N, dtype=np.float32),
    }


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, 1)  # the original's (32, 8) races: see the header
    grid = (-(-N // DIM_THREAD_BLOCK_X), 1)
    launch(mvt_kernel1, grid, block, np.int32(N), d["a"], d["x1"], d["y_1"])
    launch(mvt_kernel2, grid, block, np.int32(N), d["a"], d["x2"], d["y_2"])


def reference(h):
    a = h["a"].reshape(N, N).astype(np.float64)
    return {"x1": h["x1"] + a @ h["y_1"].astype(np.float64), "x2": h["x2"] + a.T @ h["y_2"].astype(np.float64)}
