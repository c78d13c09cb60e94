# Port of PolyBench/GPU 1.0 3MM (G := (A*B)*(C*D)), kernels mm3_kernel1..3.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/3MM/3mm.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (32, 8), grids ceil(N/32) x ceil(N/8), STANDARD_DATASET (512).
#
# entry: mm3_kernel1
# sig: int32, int32, int32, int32, int32, float32[::1], float32[::1], float32[::1]
# entry: mm3_kernel2
# sig: int32, int32, int32, int32, int32, float32[::1], float32[::1], float32[::1]
# entry: mm3_kernel3
# sig: int32, int32, int32, int32, int32, float32[::1], float32[::1], float32[::1]
import numpy as np

from cuda import device

NI = 512
NJ = 512
NK = 512
NL = 512
NM = 512
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def mm3_kernel1(ni, nj, nk, nl, nm, A, B, E):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < ni and j < nj:
        E[i * NJ + j] = 0
        for k in range(nk):
            E[i * NJ + j] += A[i * NK + k] * B[k * NJ + j]


@device.kernel
def mm3_kernel2(ni, nj, nk, nl, nm, C, D, F):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < nj and j < nl:
        F[i * NL + j] = 0
        for k in range(nm):
            F[i * NL + j] += C[i * NM + k] * D[k * NL + j]


@device.kernel
def mm3_kernel3(ni, nj, nk, nl, nm, E, F, G):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < ni and j < nl:
        G[i * NL + j] = 0
        for k in range(nj):
            G[i * NL + j] += E[i * NJ + k] * F[k * NL + j]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_3mm.cu"
TOL = {"G": (1e-4, 1e-2)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NI": 64, "NJ": 64, "NK": 64, "NL": 64, "NM": 64}


def setup(rng):
    return {
        "A": rng.random(NI * NK, dtype=np.float32),
        "B": rng.random(NK * NJ, dtype=np.float32),
        "C": rng.random(NJ * NM, dtype=np.float32),
        "D": rng.random(NM * NL, dtype=np.float32),
        "E": np.zeros(NI * NJ, np.float32),
        "F": np.zeros(NJ * NL, np.float32),
        "G": np.zeros(NI * NL, np.float32),
    }


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y)
    n = [np.int32(v) for v in (NI, NJ, NK, NL, NM)]
    launch(mm3_kernel1, (-(-NJ // 32), -(-NI // 8)), block, *n, d["A"], d["B"], d["E"])
    launch(mm3_kernel2, (-(-NL // 32), -(-NJ // 8)), block, *n, d["C"], d["D"], d["F"])
    launch(mm3_kernel3, (-(-NL // 32), -(-NI // 8)), block, *n, d["E"], d["F"], d["G"])


def reference(h):
    f = lambda x, r, c: h[x].reshape(r, c).astype(np.float64)
    E = f("A", NI, NK) @ f("B", NK, NJ)
    F = f("C", NJ, NM) @ f("D", NM, NL)
    return {"G": (E @ F).ravel()}
