# Port of Rodinia 3.1's gaussian (Gaussian elimination): kernels Fan1 and Fan2.
# Origin: github.com/yuhc/gpu-rodinia (a mirror of Rodinia 3.1), cuda/gaussian/gaussian.cu,
#   commit 9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4. Copyright (c) 2008-2011 University of
#   Virginia, BSD-style license (LICENSE in that repository). Ported to the cuda.device dialect
#   for pydevice's corpus.
# Launch as the original's ForwardSub: for t in 0..Size-2, Fan1 on grid ceil(Size/512) x
# block 512, then Fan2 on grid (ceil(Size/4), ceil(Size/4)) x block (4, 4). Size = 1024; the
# matrix is diagonally dominant (the original builds one from exponentials or reads a file).
#
# entry: Fan1
# sig: float32[::1], float32[::1], int32, int32
# entry: Fan2
# sig: float32[::1], float32[::1], float32[::1], int32, int32, int32
import numpy as np

from cuda import device

SIZE = 1024
MAXBLOCKSIZE = 512
BLOCK_SIZE_XY = 4


@device.kernel
def Fan1(m_cuda, a_cuda, Size, t):
    if device.thread_idx.x + device.block_idx.x * device.block_dim.x >= Size - 1 - t:
        return
    m_cuda[Size * (device.block_dim.x * device.block_idx.x + device.thread_idx.x + t + 1) + t] = \
        a_cuda[Size * (device.block_dim.x * device.block_idx.x + device.thread_idx.x + t + 1) + t] / a_cuda[Size * t + t]


@device.kernel
def Fan2(m_cuda, a_cuda, b_cuda, Size, j1, t):
    if device.thread_idx.x + device.block_idx.x * device.block_dim.x >= Size - 1 - t:
        return
    if device.thread_idx.y + device.block_idx.y * device.block_dim.y >= Size - t:
        return

    xidx = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    yidx = device.block_idx.y * device.block_dim.y + device.thread_idx.y

    a_cuda[Size * (xidx + 1 + t) + (yidx + t)] -= m_cuda[Size * (xidx + 1 + t) + t] * a_cuda[Size * t + (yidx + t)]
    if yidx == 0:
        b_cuda[xidx + 1 + t] -= m_cuda[Size * (xidx + 1 + t) + (yidx + t)] * b_cuda[t]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "rodinia_gaussian.cu"
TOL = {"a": (1e-3, 1e-3), "b": (1e-3, 1e-3), "m": (1e-3, 1e-5)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"SIZE": 21}


def setup(rng):
    a = rng.random((SIZE, SIZE), dtype=np.float32) + np.float32(SIZE) * np.eye(SIZE, dtype=np.float32)
    return {"a": a.ravel(), "b": rng.random(SIZE, dtype=np.float32), "m": np.zeros(SIZE * SIZE, np.float32)}


def run(launch, d):
    grid = SIZE // MAXBLOCKSIZE + (0 if SIZE % MAXBLOCKSIZE == 0 else 1)
    grid2 = SIZE // BLOCK_SIZE_XY + (0 if SIZE % BLOCK_SIZE_XY == 0 else 1)
    n = np.int32(SIZE)
    for t in range(SIZE - 1):
        launch(Fan1, grid, MAXBLOCKSIZE, d["m"], d["a"], n, np.int32(t))
        launch(Fan2, (grid2, grid2), (BLOCK_SIZE_XY, BLOCK_SIZE_XY), d["m"], d["a"], d["b"], n, np.int32(SIZE - t), np.int32(t))


def reference(h):
    a = h["a"].reshape(SIZE, SIZE).astype(np.float64)
    b = h["b"].astype(np.float64)
    m = np.zeros((SIZE, SIZE))
    for t in range(SIZE - 1):
        m[t + 1:, t] = a[t + 1:, t] / a[t, t]
        a[t + 1:, t:] -= m[t + 1:, t, None] * a[t, t:]
        b[t + 1:] -= m[t + 1:, t] * b[t]
    return {"a": a.ravel(), "b": b, "m": m.ravel()}
