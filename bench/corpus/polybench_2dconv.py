# Port of PolyBench/GPU 1.0 2DCONV (3x3 convolution), kernel convolution2D_kernel.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/2DCONV/2DConvolution.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (32, 8), grid (ceil(NI/32), ceil(NJ/8)), NI = NJ = 4096.
#
# entry: convolution2D_kernel
# sig: int32, int32, float32[::1], float32[::1]
import numpy as np

from cuda import device

NI = 4096
NJ = 4096
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def convolution2D_kernel(ni, nj, A, B):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    c11 = +0.2
    c21 = +0.5
    c31 = -0.8
    c12 = -0.3
    c22 = +0.6
    c32 = -0.9
    c13 = +0.4
    c23 = +0.7
    c33 = +0.10

    if i < ni - 1 and j < nj - 1 and i > 0 and j > 0:
        B[i * NJ + j] = (c11 * A[(i - 1) * NJ + (j - 1)] + c21 * A[(i - 1) * NJ + (j + 0)] + c31 * A[(i - 1) * NJ + (j + 1)]
                         + c12 * A[(i + 0) * NJ + (j - 1)] + c22 * A[(i + 0) * NJ + (j + 0)] + c32 * A[(i + 0) * NJ + (j + 1)]
                         + c13 * A[(i + 1) * NJ + (j - 1)] + c23 * A[(i + 1) * NJ + (j + 0)] + c33 * A[(i + 1) * NJ + (j + 1)])


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_2dconv.cu"
TOL = {"B": (1e-5, 1e-5)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NI": 40, "NJ": 40}


def setup(rng):
    return {"A": rng.random(NI * NJ, dtype=np.float32), "B": np.zeros(NI * NJ, np.float32)}


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y)
    grid = (-(-NI // block[0]), -(-NJ // block[1]))
    launch(convolution2D_kernel, grid, block, np.int32(NI), np.int32(NJ), d["A"], d["B"])


def reference(h):
    A = h["A"].reshape(NI, NJ).astype(np.float64)
    c = [[0.2, -0.3, 0.4], [0.5, 0.6, 0.7], [-0.8, -0.9, 0.10]]  # c[col][row] as c11..c33 read
    B = np.zeros((NI, NJ))
    for di in range(3):
        for dj in range(3):
            B[1:-1, 1:-1] += c[dj][di] * A[di:NI - 2 + di, dj:NJ - 2 + dj]
    return {"B": B.ravel()}
