# Port of PolyBench/GPU 1.0 COVAR (covariance matrix), kernels mean_kernel, reduce_kernel, covar_kernel.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/COVAR/covariance.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original, including its grid for reduce_kernel: block (32, 8) and grid
# (M/32, N/32) -- the host code divides N by DIM_THREAD_BLOCK_KERNEL_2_X, so only the first
# N/4 rows are centred, and the reference reproduces that. Sizes: M = N = 1024 (the
# original's STANDARD_DATASET is 2048; covar_kernel runs one thread per column).
#
# entry: mean_kernel
# sig: int32, int32, float32[::1], float32[::1]
# entry: reduce_kernel
# sig: int32, int32, float32[::1], float32[::1]
# entry: covar_kernel
# sig: int32, int32, float32[::1], float32[::1]
import numpy as np

from cuda import device

M = 1024
N = 1024
FLOAT_N = 3214212.01


@device.kernel
def mean_kernel(m, n, mean, data):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if j < m:
        mean[j] = 0.0
        for i in range(n):
            mean[j] += data[i * M + j]
        mean[j] /= device.float32(FLOAT_N)


@device.kernel
def reduce_kernel(m, n, mean, data):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < n and j < m:
        data[i * M + j] -= mean[j]


@device.kernel
def covar_kernel(m, n, symmat, data):
    j1 = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if j1 < m:
        for j2 in range(j1, m):
            symmat[j1 * M + j2] = 0.0
            for i in range(n):
                symmat[j1 * M + j2] += data[i * M + j1] * data[i * M + j2]
            symmat[j2 * M + j1] = symmat[j1 * M + j2]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_covariance.cu"
TOL = {"mean": (1e-4, 1e-9), "symmat": (1e-3, 1e-3)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"M": 256, "N": 64}


def setup(rng):
    return {
        "data": rng.random(N * M, dtype=np.float32),
        "mean": np.zeros(M, np.float32),
        "symmat": np.zeros(M * M, np.float32),
    }


def run(launch, d):
    m, n = np.int32(M), np.int32(N)
    launch(mean_kernel, (M // 256, 1), (256, 1), m, n, d["mean"], d["data"])
    launch(reduce_kernel, (M // 32, N // 32), (32, 8), m, n, d["mean"], d["data"])
    launch(covar_kernel, (M // 256, 1), (256, 1), m, n, d["symmat"], d["data"])


def reference(h):
    data = h["data"].reshape(N, M).astype(np.float64)
    mean = data.sum(axis=0) / np.float32(FLOAT_N)
    rows = (N // 32) * 8  # the rows reduce_kernel's grid reaches
    data[:rows] -= mean
    return {"mean": mean, "symmat": (data.T @ data).ravel()}
