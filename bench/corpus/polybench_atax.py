# Port of PolyBench/GPU 1.0 ATAX (y := A^T (A x)), kernels atax_kernel1 and atax_kernel2.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/ATAX/atax.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original, but with block (32, 1) where it has (32, 8), grids (ceil(NX/32), 1) and (ceil(NY/32), 1).
# Its kernels index with blockIdx.x/threadIdx.x only, so its 8 rows of threads a block
# race on the same outputs (each resets and accumulates them); the result is undefined.
# One row keeps the grid, the per-thread work and the memory traffic of a thread.
#
# entry: atax_kernel1
# sig: int32, int32, float32[::1], float32[::1], float32[::1]
# entry: atax_kernel2
# sig: int32, int32, float32[::1], float32[::1], float32[::1]
import numpy as np

from cuda import device

NX = 4096
NY = 4096
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def atax_kernel1(nx, ny, A, x, tmp):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if i < nx:
        tmp[i] = 0
        for j in range(ny):
            tmp[i] += A[i * NY + j] * x[j]


@device.kernel
def atax_kernel2(nx, ny, A, y, tmp):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if j < ny:
        y[j] = 0
        for i in range(nx):
            y[j] += A[i * NY + j] * tmp[i]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_atax.cu"
TOL = {"tmp": (1e-4, 1e-2), "y": (1e-4, 1e-1)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NX": 128, "NY": 128}


def setup(rng):
    return {
        "A": rng.random(NX * NY, dtype=np.float32),
        "x": rng.random(NY, dtype=np.float32),
        "y": np.zeros(NY, np.float32),
        "tmp": np.zeros(NX, np.float32),
    }


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, 1)  # the original's (32, 8) races: see the header
    nx, ny = np.int32(NX), np.int32(NY)
    launch(atax_kernel1, (-(-NX // block[0]), 1), block, nx, ny, d["A"], d["x"], d["tmp"])
    launch(atax_kernel2, (-(-NY // block[0]), 1), block, nx, ny, d["A"], d["y"], d["tmp"])


def reference(h):
    A = h["A"].reshape(NX, NY).astype(np.float64)
    tmp = A @ h["x"].astype(np.float64)
    return {"tmp": tmp, "y": A.T @ tmp}
