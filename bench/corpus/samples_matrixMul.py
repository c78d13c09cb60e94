# Port of the CUDA samples' matrixMul: kernel MatrixMulCUDA<32>.
# Origin: github.com/NVIDIA/cuda-samples, Samples/0_Introduction/matrixMul/matrixMul.cu, commit c94ff366aed18c797b8a85dfaac7817b0228b420.
#   Copyright (c) 2022, NVIDIA CORPORATION, BSD-3-Clause license (LICENSE in that
#   repository). Ported to the cuda.device dialect for pydevice's corpus.
# BLOCK_SIZE is the template argument (32, the sample's default block_size). Launch as the
# sample: block (32, 32), grid (wB/32, hA/32); sizes dimsA = (wA, hA) = (2048, 2048),
# dimsB = (2048, 2048) (the sample's default is 320 x 320 by 640 x 320).
#
# entry: MatrixMulCUDA
# sig: float32[::1], float32[::1], float32[::1], int32, int32
import numpy as np

from cuda import device

BLOCK_SIZE = 32
WA = 2048
HA = 2048
WB = 2048


@device.kernel
def MatrixMulCUDA(C, A, B, wA, wB):
    # Block index (int, as the sample declares them)
    bx = int(device.block_idx.x)
    by = int(device.block_idx.y)
    # Thread index
    tx = int(device.thread_idx.x)
    ty = int(device.thread_idx.y)
    # Index of the first sub-matrix of A processed by the block
    aBegin = wA * BLOCK_SIZE * by
    # Index of the last sub-matrix of A processed by the block
    aEnd = aBegin + wA - 1
    # Step size used to iterate through the sub-matrices of A
    aStep = BLOCK_SIZE
    # Index of the first sub-matrix of B processed by the block
    bBegin = BLOCK_SIZE * bx
    # Step size used to iterate through the sub-matrices of B
    bStep = BLOCK_SIZE * wB
    # Csub is used to store the element of the block sub-matrix computed by the thread
    Csub = 0.0
    As = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    Bs = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    a = aBegin
    b = bBegin
    while a <= aEnd:
        As[ty, tx] = A[a + wA * ty + tx]
        Bs[ty, tx] = B[b + wB * ty + tx]
        device.syncthreads()
        for k in range(BLOCK_SIZE):
            Csub += As[ty, k] * Bs[k, tx]
        device.syncthreads()
        a += aStep
        b += bStep
    # Write the block sub-matrix to device memory; each thread writes one element
    c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx
    C[c + wB * ty + tx] = Csub


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "samples_matrixMul.cu"
TOL = {"C": (1e-4, 1e-3)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"WA": 64, "HA": 32, "WB": 96, "BLOCK_SIZE": 32}


def setup(rng):
    return {"A": rng.random(HA * WA, dtype=np.float32), "B": rng.random(WA * WB, dtype=np.float32),
            "C": np.zeros(HA * WB, np.float32)}


def run(launch, d):
    launch(MatrixMulCUDA, (WB // BLOCK_SIZE, HA // BLOCK_SIZE), (BLOCK_SIZE, BLOCK_SIZE), d["C"], d["A"], d["B"], np.int32(WA), np.int32(WB))


def reference(h):
    A = h["A"].reshape(HA, WA).astype(np.float64)
    B = h["B"].reshape(WA, WB).astype(np.float64)
    return {"C": (A @ B).ravel()}
