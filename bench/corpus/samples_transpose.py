# Port of the CUDA samples' transpose: kernels copy, copySharedMem, transposeNaive, transposeCoalesced,
# transposeNoBankConflicts, transposeDiagonal.
# Origin: github.com/NVIDIA/cuda-samples, Samples/6_Performance/transpose/transpose.cu, commit c94ff366aed18c797b8a85dfaac7817b0228b420.
#   Copyright (c) 2022, NVIDIA CORPORATION, BSD-3-Clause license (LICENSE in that
#   repository). Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the sample: grid (size_x/32, size_y/32), block (32, 16) (TILE_DIM x BLOCK_ROWS),
# size_x = size_y = 2048 (the sample's default is 1024). cg::sync(cta) is the block's sync().
#
# entry: copy
# sig: float32[::1], float32[::1], int32, int32
# entry: copySharedMem
# sig: float32[::1], float32[::1], int32, int32
# entry: transposeNaive
# sig: float32[::1], float32[::1], int32, int32
# entry: transposeCoalesced
# sig: float32[::1], float32[::1], int32, int32
# entry: transposeNoBankConflicts
# sig: float32[::1], float32[::1], int32, int32
# entry: transposeDiagonal
# sig: float32[::1], float32[::1], int32, int32
import numpy as np

from cuda import device
from cuda.device import cg

TILE_DIM = 32
BLOCK_ROWS = 16
SIZE_X = 2048
SIZE_Y = 2048


@device.kernel
def copy(odata, idata, width, height):
    xIndex = device.block_idx.x * TILE_DIM + device.thread_idx.x
    yIndex = device.block_idx.y * TILE_DIM + device.thread_idx.y
    index = xIndex + width * yIndex
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        odata[index + i * width] = idata[index + i * width]


@device.kernel
def copySharedMem(odata, idata, width, height):
    # Handle to thread block group
    cta = cg.this_thread_block()
    tile = device.shared_array((TILE_DIM, TILE_DIM), device.float32)
    xIndex = device.block_idx.x * TILE_DIM + device.thread_idx.x
    yIndex = device.block_idx.y * TILE_DIM + device.thread_idx.y
    index = xIndex + width * yIndex
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        if xIndex < width and yIndex < height:
            tile[device.thread_idx.y + i, device.thread_idx.x] = idata[index + i * width]
    cta.sync()
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        if xIndex < height and yIndex < width:
            odata[index + i * width] = tile[device.thread_idx.y + i, device.thread_idx.x]


@device.kernel
def transposeNaive(odata, idata, width, height):
    xIndex = device.block_idx.x * TILE_DIM + device.thread_idx.x
    yIndex = device.block_idx.y * TILE_DIM + device.thread_idx.y
    index_in = xIndex + width * yIndex
    index_out = yIndex + height * xIndex
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        odata[index_out + i] = idata[index_in + i * width]


@device.kernel
def transposeCoalesced(odata, idata, width, height):
    # Handle to thread block group
    cta = cg.this_thread_block()
    tile = device.shared_array((TILE_DIM, TILE_DIM), device.float32)
    xIndex = device.block_idx.x * TILE_DIM + device.thread_idx.x
    yIndex = device.block_idx.y * TILE_DIM + device.thread_idx.y
    index_in = xIndex + yIndex * width
    xIndex = device.block_idx.y * TILE_DIM + device.thread_idx.x
    yIndex = device.block_idx.x * TILE_DIM + device.thread_idx.y
    index_out = xIndex + yIndex * height
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        tile[device.thread_idx.y + i, device.thread_idx.x] = idata[index_in + i * width]
    cta.sync()
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        odata[index_out + i * height] = tile[device.thread_idx.x, device.thread_idx.y + i]


@device.kernel
def transposeNoBankConflicts(odata, idata, width, height):
    # Handle to thread block group
    cta = cg.this_thread_block()
    tile = device.shared_array((TILE_DIM, TILE_DIM + 1), device.float32)
    xIndex = device.block_idx.x * TILE_DIM + device.thread_idx.x
    yIndex = device.block_idx.y * TILE_DIM + device.thread_idx.y
    index_in = xIndex + yIndex * width
    xIndex = device.block_idx.y * TILE_DIM + device.thread_idx.x
    yIndex = device.block_idx.x * TILE_DIM + device.thread_idx.y
    index_out = xIndex + yIndex * height
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        tile[device.thread_idx.y + i, device.thread_idx.x] = idata[index_in + i * width]
    cta.sync()
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        odata[index_out + i * height] = tile[device.thread_idx.x, device.thread_idx.y + i]


@device.kernel
def transposeDiagonal(odata, idata, width, height):
    # Handle to thread block group
    cta = cg.this_thread_block()
    tile = device.shared_array((TILE_DIM, TILE_DIM + 1), device.float32)
    # do diagonal reordering
    if width == height:
        blockIdx_y = device.block_idx.x
        blockIdx_x = (device.block_idx.x + device.block_idx.y) % device.grid_dim.x
    else:
        bid = device.block_idx.x + device.grid_dim.x * device.block_idx.y
        blockIdx_y = bid % device.grid_dim.y
        blockIdx_x = ((bid // device.grid_dim.y) + blockIdx_y) % device.grid_dim.x
    # from here on the code is same as previous kernel except blockIdx_x replaces
    # blockIdx.x and similarly for y
    xIndex = blockIdx_x * TILE_DIM + device.thread_idx.x
    yIndex = blockIdx_y * TILE_DIM + device.thread_idx.y
    index_in = xIndex + yIndex * width
    xIndex = blockIdx_y * TILE_DIM + device.thread_idx.x
    yIndex = blockIdx_x * TILE_DIM + device.thread_idx.y
    index_out = xIndex + yIndex * height
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        tile[device.thread_idx.y + i, device.thread_idx.x] = idata[index_in + i * width]
    cta.sync()
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        odata[index_out + i * height] = tile[device.thread_idx.x, device.thread_idx.y + i]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "samples_transpose.cu"
TOL = {name: (0, 0) for name in ("o_copy", "o_copysh", "o_naive", "o_coal", "o_nbc", "o_diag")}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"SIZE_X": 64, "SIZE_Y": 64}  # copySharedMem copies only part of a non-square matrix


def setup(rng):
    d = {"idata": rng.random(SIZE_X * SIZE_Y, dtype=np.float32)}
    for name in TOL:
        d[name] = np.zeros(SIZE_X * SIZE_Y, np.float32)
    return d


def run(launch, d):
    grid, threads = (SIZE_X // TILE_DIM, SIZE_Y // TILE_DIM), (TILE_DIM, BLOCK_ROWS)
    w, h = np.int32(SIZE_X), np.int32(SIZE_Y)
    for k, out in ((copy, "o_copy"), (copySharedMem, "o_copysh"), (transposeNaive, "o_naive"),
                   (transposeCoalesced, "o_coal"), (transposeNoBankConflicts, "o_nbc"), (transposeDiagonal, "o_diag")):
        launch(k, grid, threads, d[out], d["idata"], w, h)


def reference(h):
    a = h["idata"]
    t = a.reshape(SIZE_Y, SIZE_X).T.ravel()
    return {"o_copy": a, "o_copysh": a, "o_naive": t, "o_coal": t, "o_nbc": t, "o_diag": t}
