# Port of PolyBench/GPU 1.0 FDTD-2D (2-D finite-difference time domain), kernels fdtd_step1..3_kernel.
# Origin: github.com/sgrauerg/polybenchGpu, CUDA/FDTD-2D/fdtd2d.cu (and its .cuh),
#   commit 5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c. PolyBench/GPU 1.0, Copyright (c) 2012,
#   2013 University of Delaware (Scott Grauer-Gray, Will Killian, Louis-Noel Pouchet); the
#   repository carries no license file. Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (32, 8), grid (ceil(NY/32), ceil(NX/8)), the three kernels once
# per time step. Sizes: NX = NY = 2048 as STANDARD_DATASET, TMAX = 50 steps (the original: 500).
#
# entry: fdtd_step1_kernel
# sig: int32, int32, float32[::1], float32[::1], float32[::1], float32[::1], int32
# entry: fdtd_step2_kernel
# sig: int32, int32, float32[::1], float32[::1], float32[::1], int32
# entry: fdtd_step3_kernel
# sig: int32, int32, float32[::1], float32[::1], float32[::1], int32
import numpy as np

from cuda import device

TMAX = 50
NX = 2048
NY = 2048
DIM_THREAD_BLOCK_X = 32
DIM_THREAD_BLOCK_Y = 8


@device.kernel
def fdtd_step1_kernel(nx, ny, _fict_, ex, ey, hz, t):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < nx and j < ny:
        if i == 0:
            ey[i * NY + j] = _fict_[t]
        else:
            ey[i * NY + j] = ey[i * NY + j] - 0.5 * (hz[i * NY + j] - hz[(i - 1) * NY + j])


@device.kernel
def fdtd_step2_kernel(nx, ny, ex, ey, hz, t):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < nx and j < ny and j > 0:
        ex[i * NY + j] = ex[i * NY + j] - 0.5 * (hz[i * NY + j] - hz[i * NY + (j - 1)])


@device.kernel
def fdtd_step3_kernel(nx, ny, ex, ey, hz, t):
    j = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    i = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    if i < nx - 1 and j < ny - 1:
        hz[i * NY + j] = hz[i * NY + j] - 0.7 * (ex[i * NY + (j + 1)] - ex[i * NY + j] + ey[(i + 1) * NY + j] - ey[i * NY + j])


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "polybench_fdtd2d.cu"
TOL = {"ex": (1e-3, 1e-3), "ey": (1e-3, 1e-3), "hz": (1e-3, 1e-3)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NX": 40, "NY": 40, "TMAX": 3}


def setup(rng):
    return {
        "_fict_": rng.random(TMAX, dtype=np.float32),
        "ex": rng.random(NX * NY, dtype=np.float32),
        "ey": rng.random(NX * NY, dtype=np.float32),
        "hz": rng.random(NX * NY, dtype=np.float32),
    }


def run(launch, d):
    block = (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y)
    grid = (-(-NY // block[0]), -(-NX // block[1]))
    nx, ny = np.int32(NX), np.int32(NY)
    for t in range(TMAX):
        launch(fdtd_step1_kernel, grid, block, nx, ny, d["_fict_"], d["ex"], d["ey"], d["hz"], np.int32(t))
        launch(fdtd_step2_kernel, grid, block, nx, ny, d["ex"], d["ey"], d["hz"], np.int32(t))
        launch(fdtd_step3_kernel, grid, block, nx, ny, d["ex"], d["ey"], d["hz"], np.int32(t))


def reference(h):
    ex = h["ex"].reshape(NX, NY).copy()
    ey = h["ey"].reshape(NX, NY).copy()
    hz = h["hz"].reshape(NX, NY).copy()
    half, c7 = np.float32(0.5), np.float32(0.7)
    for t in range(TMAX):
        ey[1:, :] = ey[1:, :] - half * (hz[1:, :] - hz[:-1, :])
        ey[0, :] = h["_fict_"][t]
        ex[:, 1:] = ex[:, 1:] - half * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] = hz[:-1, :-1] - c7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return {"ex": ex.ravel(), "ey": ey.ravel(), "hz": hz.ravel()}
