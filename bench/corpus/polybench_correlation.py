# Port of PolyBench/GPU 1.0 CORR (correlation matrix), kernels mean_kernel, std_kernel, reduce_kernel, corr_kernel.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/CORR/correlation.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: blocks (256, 1), (256, 1), (32, 8), (256, 1); grids from M and N as
# its host code computes them. Sizes: M = N = 1024 (the original's STANDARD_DATASET is 2048;
# corr_kernel runs one thread per column, M^2 N / 2 steps, so 1024 keeps a run under a second).
#
# entry: mean_kernel
# sig: int32, int32, float32[::1], float32[::1]
# entry: std_kernel
# sig: int32, int32, float32[::1], float32[::1], float32[::1]
# entry: reduce_kernel
# sig: int32, int32, float32[::1], float32[::1], float32[::1]
# entry: corr_kernel
# sig: int32, int32, float32[::1], float32[::1]
import math

import numpy as np

from cuda import device

M = 1024
N = 1024
FLOAT_N = 3214212.01
EPS = 0.005


@device.kernel
def mean_kernel(m, n, mean, data):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if j < m:
        mean[j] = 0.0
        for i in range(n):
            mean[j] += data[i * M + j]
        mean[j] /= device.float32(FLOAT_N)


@device.kernel
def std_kernel(m, n, mean, std, data):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if j < m:
        std[j] = 0.0
        for i in range(n):
            std[j] += (data[i * M + j] - mean[j]) * (data[i * M + j] - mean[j])
        std[j] /= FLOAT_N
        std[j] = math.sqrt(std[j])
        if std[j] <= EPS:
            std[j] = 1.0


@device.kernel
def reduce_kernel(m, n, mean, std, data):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < n and j < m:
        data[i * M + j] -= mean[j]
        data[i * M + j] /= math.sqrt(FLOAT_N) * std[j]


@device.kernel
def corr_kernel(m, n, symmat, data):
    j1 = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if j1 < m - 1:
        symmat[j1 * M + j1] = 1.0
        for j2 in range(j1 + 1, m):
            symmat[j1 * M + j2] = 0.0
            for i in range(n):
                symmat[j1 * M + j2] += data[i * M + j1] * data[i * M + j2]
            symmat[j2 * M + j1] = symmat[j1 * M + j2]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_correlation.cu"
TOL = {"mean": (1e-4, 1e-9), "std": (1e-3, 1e-9), "symmat": (1e-3, 1e-12)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"M": 256, "N": 16}


def setup(rng):
    return {
        "data": rng.random(N * M, dtype=np.float32),
        "mean": np.zeros(M, np.float32),
        "std": np.zeros(M, np.float32),
        "symmat": np.zeros(M * M, np.float32),
    }


def run(launch, d):
    m, n = np.int32(M), np.int32(N)
    launch(mean_kernel, (M // 256, 1), (256, 1), m, n, d["mean"], d["data"])
    launch(std_kernel, (M // 256, 1), (256, 1), m, n, d["mean"], d["std"], d["data"])
    launch(reduce_kernel, (M // 32, N // 8), (32, 8), m, n, d["mean"], d["std"], d["data"])
    launch(corr_kernel, (M // 256, 1), (256, 1), m, n, d["symmat"], d["data"])


def reference(h):
    data = h["data"].reshape(N, M).astype(np.float64)
    mean = data.sum(axis=0) / np.float32(FLOAT_N)
    std = np.sqrt(((data - mean) ** 2).sum(axis=0) / FLOAT_N)
    std = np.where(std <= EPS, 1.0, std)
    z = (data - mean) / (math.sqrt(FLOAT_N) * std)
    sym = z.T @ z
    np.fill_diagonal(sym, 1.0)
    sym[M - 1, M - 1] = 0.0  # corr_kernel leaves the last diagonal element as it was (0)
    return {"mean": mean, "std": std, "symmat": sym.ravel()}
