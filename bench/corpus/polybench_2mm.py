# Port of PolyBench/GPU 1.0 2MM (D := alpha*A*B*C + beta*D), kernels mm2_kernel1 and mm2_kernel2.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/2MM/2mm.cu and 2mm.cuh,
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (32, 8), grid (ceil(NJ/32), ceil(NI/8)), STANDARD_DATASET sizes.
#
# entry: mm2_kernel1
# sig: int32, int32, int32, int32, float32, float32, float32[::1], float32[::1], float32[::1]
# entry: mm2_kernel2
# sig: int32, int32, int32, int32, float32, float32, float32[::1], float32[::1], float32[::1]
import numpy as np

from cuda import device

NI = 1024
NJ = 1024
NK = 1024
NL = 1024
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def mm2_kernel1(ni, nj, nk, nl, alpha, beta, tmp, A, B):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < ni and j < nj:
        tmp[i * NJ + j] = 0
        for k in range(nk):
            tmp[i * NJ + j] += alpha * A[i * NK + k] * B[k * NJ + j]


@device.kernel
def mm2_kernel2(ni, nj, nk, nl, alpha, beta, tmp, C, D):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < ni and j < nl:
        D[i * NL + j] *= beta
        for k in range(nj):
            D[i * NL + j] += tmp[i * NJ + k] * C[k * NL + j]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_2mm.cu"
TOL = {"tmp": (1e-4, 1e-3), "D": (1e-4, 1e-3)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NI": 64, "NJ": 64, "NK": 64, "NL": 64}


def setup(rng):
    return {
        "alpha": np.float32(1.5),
        "beta": np.float32(1.2),
        "tmp": np.zeros(NI * NJ, np.float32),
        "A": rng.random(NI * NK, dtype=np.float32),
        "B": rng.random(NK * NJ, dtype=np.float32),
        "C": rng.random(NJ * NL, dtype=np.float32),
        "D": rng.random(NI * NL, dtype=np.float32),
    }


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y)
    grid1 = (-(-NJ // block[0]), -(-NI // block[1]))
    grid2 = (-(-NL // block[0]), -(-NI // block[1]))
    n = [np.int32(v) for v in (NI, NJ, NK, NL)]
    launch(mm2_kernel1, grid1, block, *n, d["alpha"], d["beta"], d["tmp"], d["A"], d["B"])
    launch(mm2_kernel2, grid2, block, *n, d["alpha"], d["beta"], d["tmp"], d["C"], d["D"])


def reference(h):
    A, B = h["A"].reshape(NI, NK).astype(np.float64), h["B"].reshape(NK, NJ).astype(np.float64)
    C, D = h["C"].reshape(NJ, NL).astype(np.float64), h["D"].reshape(NI, NL).astype(np.float64)
    tmp = float(h["alpha"]) * A @ B
    return {"tmp": tmp.ravel(), "D": (float(h["beta"]) * D + tmp @ C).ravel()}
