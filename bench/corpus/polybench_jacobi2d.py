# Port of PolyBench/GPU 1.0 JACOBI2D (5-point Jacobi sweeps), kernels runJacobiCUDA_kernel1 and runJacobiCUDA_kernel2.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/JACOBI2D/jacobi2D.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (32, 8), grid (ceil(N/32), ceil(N/8)), both kernels once per
# step, TSTEPS = 20, N = 1000 (STANDARD_DATASET).
#
# entry: runJacobiCUDA_kernel1
# sig: int32, float32[::1], float32[::1]
# entry: runJacobiCUDA_kernel2
# sig: int32, float32[::1], float32[::1]
import numpy as np

from cuda import device

TSTEPS = 20
N = 1000
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def runJacobiCUDA_kernel1(n, A, B):
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if i >= 1 and i < n - 1 and j >= 1 and j < n - 1:
        B[i * N + j] = 0.2 * (A[i * N + j] + A[i * N + (j - 1)] + A[i * N + (1 + j)] + A[(1 + i) * N + j] + A[(i - 1) * N + j])


@device.kernel
def runJacobiCUDA_kernel2(n, A, B):
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if i >= 1 and i < n - 1 and j >= 1 and j < n - 1:
        A[i * N + j] = B[i * N + j]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_jacobi2d.cu"
TOL = {"A": (1e-5, 1e-5), "B": (1e-5, 1e-5)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"N": 50, "TSTEPS": 3}


def setup(rng):
    a = rng.random(N * N, dtype=np.float32)
    return {"A": a, "B": a.copy()}


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y)
    grid = (-(-N // block[0]), -(-N // block[1]))
    for t in range(TSTEPS):
        launch(runJacobiCUDA_kernel1, grid, block, np.int32(N), d["A"], d["B"])
        launch(runJacobiCUDA_kernel2, grid, block, np.int32(N), d["A"], d["B"])


def reference(h):
    A = h["A"].reshape(N, N).copy()
    B = h["B"].reshape(N, N).copy()
    for t in range(TSTEPS):
        B[1:-1, 1:-1] = np.float32(0.2) * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = B[1:-1, 1:-1]
    return {"A": A.ravel(), "B": B.ravel()}
