# Port of PolyBench/GPU 1.0 GESUMMV (y := alpha*A*x + beta*B*x), kernel gesummv_kernel.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/GESUMMV/gesummv.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (256, 1), grid (ceil(N/256), 1).
#
# entry: gesummv_kernel
# sig: int32, float32, float32, float32[::1], float32[::1], float32[::1], float32[::1], float32[::1]
import numpy as np

from cuda import device

N = 4096
DIM_THREAD_BLOCK_X = 256
DIM_THREAD_BLOCK_Y = 1


@device.kernel
def gesummv_kernel(n, alpha, beta, A, B, tmp, x, y):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    if i < n:
        for j in range(n):
            tmp[i] += A[i * N + j] * x[j]
            y[i] += B[i * N + j] * x[j]
        y[i] = alpha * tmp[i] + beta * y[i]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_gesummv.cu"
TOL = {"y": (1e-4, 1e-1), "tmp": (1e-4, 1e-2)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"N": 300}


def setup(rng):
    return {
        "alpha": np.float32(1.5),
        "beta": np.float32(0.5),
        "A": rng.random(N * N, dtype=np.float32),
        "B": rng.random(N * N, dtype=np.float32),
        "tmp": np.zeros(N, np.float32),
        "x": rng.random(N, dtype=np.float32),
        "y": np.zeros(N, np.float32),
    }


def run(launch, d):
    launch(gesummv_kernel, (-(-N // DIM_THREAD_BLOCK_X), 1), (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y),
           np.int32(N), d["alpha"], d["beta"], d["A"], d["B"], d["tmp"], d["x"], d["y"])


def reference(h):
    A = h["A"].reshape(N, N).astype(np.float64)
    B = h["B"].reshape(N, N).astype(np.float64)
    x = h["x"].astype(np.float64)
    tmp = A @ x
    return {"tmp": tmp, "y": float(h["alpha"]) * tmp + float(h["beta"]) * (B @ x)}
