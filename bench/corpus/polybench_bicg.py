# Port of PolyBench/GPU 1.0 BICG (s := A^T r, q := A p), kernels bicg_kernel1 and bicg_kernel2.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/BICG/bicg.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (256, 1), grids (ceil(NY/256), 1) and (ceil(NX/256), 1).
#
# entry: bicg_kernel1
# sig: int32, int32, float32[::1], float32[::1], float32[::1]
# entry: bicg_kernel2
# sig: int32, int32, float32[::1], float32[::1], float32[::1]
import numpy as np

from cuda import device

NX = 4096
NY = 4096
DIM_THREAD_BLOCK_X = 256
DIM_THREAD_BLOCK_Y = 1


@device.kernel
def bicg_kernel1(nx, ny, A, r, s):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if j < ny:
        s[j] = 0.0
        for i in range(nx):
            s[j] += r[i] * A[i * NY + j]


@device.kernel
def bicg_kernel2(nx, ny, A, p, q):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if i < nx:
        q[i] = 0.0
        for j in range(ny):
            q[i] += A[i * NY + j] * p[j]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_bicg.cu"
TOL = {"s": (1e-4, 1e-2), "q": (1e-4, 1e-2)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NX": 300, "NY": 300}


def setup(rng):
    return {
        "A": rng.random(NX * NY, dtype=np.float32),
        "r": rng.random(NX, dtype=np.float32),
        "p": rng.random(NY, dtype=np.float32),
        "s": np.zeros(NY, np.float32),
        "q": np.zeros(NX, np.float32),
    }


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y)
    nx, ny = np.int32(NX), np.int32(NY)
    launch(bicg_kernel1, (-(-NY // block[0]), 1), block, nx, ny, d["A"], d["r"], d["s"])
    launch(bicg_kernel2, (-(-NX // block[0]), 1), block, nx, ny, d["A"], d["p"], d["q"])


def reference(h):
    A = h["A"].reshape(NX, NY).astype(np.float64)
    return {"s": A.T @ h["r"].astype(np.float64), "q": A @ h["p"].astype(np.float64)}
