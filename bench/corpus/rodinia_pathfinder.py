# Port of Rodinia 3.1's pathfinder (dynamic programming, a pyramid of steps a launch in shared memory): kernel
# dynproc_kernel.
# Origin: github.com/yuhc/gpu-rodinia (a mirror of Rodinia 3.1), cuda/pathfinder/pathfinder.cu,
#   commit 9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4. Copyright (c) 2008-2011 University of
#   Virginia, BSD-style license (LICENSE in that repository). Ported to the cuda.device dialect
#   for pydevice's corpus.
# Launch as the original's calc_path: block 256, grid blockCols, one launch per
# pyramid_height rows, swapping the two result rows. cols = 100000, rows = 100,
# pyramid_height = 20 (its usual run), the wall random in 0..9 as its init().
#
# entry: dynproc_kernel
# sig: int32, int32[::1], int32[::1], int32[::1], int32, int32, int32, int32
import numpy as np

from cuda import device

BLOCK_SIZE = 256
HALO = 1  # halo width along one direction when advancing to the next iteration
COLS = 100000
ROWS = 100
PYRAMID_HEIGHT = 20


@device.kernel
def dynproc_kernel(iteration, gpuWall, gpuSrc, gpuResults, cols, rows, startStep, border):
    prev = device.shared_array(BLOCK_SIZE, device.int32)
    result = device.shared_array(BLOCK_SIZE, device.int32)

    bx = int(device.block_idx.x)
    tx = int(device.thread_idx.x)

    # each block finally computes result for a small block after N iterations.
    # it is the non-overlapping small blocks that cover all the input data

    # calculate the small block size
    small_block_cols = BLOCK_SIZE - iteration * HALO * 2

    # calculate the boundary for the block according to the boundary of its small block
    blkX = small_block_cols * bx - border
    blkXmax = blkX + BLOCK_SIZE - 1

    # calculate the global thread coordination
    xidx = blkX + tx

    # effective range within this block that falls within the valid range of the input data
    # used to rule out computation outside the boundary.
    validXmin = -blkX if blkX < 0 else 0
    validXmax = BLOCK_SIZE - 1 - (blkXmax - cols + 1) if blkXmax > cols - 1 else BLOCK_SIZE - 1

    W = tx - 1
    E = tx + 1

    W = validXmin if W < validXmin else W
    E = validXmax if E > validXmax else E

    isValid = tx >= validXmin and tx <= validXmax

    if xidx >= 0 and xidx <= cols - 1:
        prev[tx] = gpuSrc[xidx]
    device.syncthreads()  # [Ronny] Added sync to avoid race on prev Aug. 14 2012
    computed = False
    for i in range(iteration):
        computed = False
        if tx >= i + 1 and tx <= BLOCK_SIZE - i - 2 and isValid:
            computed = True
            left = prev[W]
            up = prev[tx]
            right = prev[E]
            shortest = min(left, up)
            shortest = min(shortest, right)
            index = cols * (startStep + i) + xidx
            result[tx] = shortest + gpuWall[index]
        device.syncthreads()
        if i == iteration - 1:
            break
        if computed:  # Assign the computation range
            prev[tx] = result[tx]
        device.syncthreads()  # [Ronny] Added sync to avoid race on prev Aug. 14 2012

    # update the global memory
    # after the last iteration, only threads coordinated within the
    # small block perform the calculation and switch on ``computed''
    if computed:
        gpuResults[xidx] = result[tx]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "rodinia_pathfinder.cu"
TOL = {"result": (0, 0)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"COLS": 600, "ROWS": 9, "PYRAMID_HEIGHT": 3}


def setup(rng):
    data = rng.integers(0, 10, (ROWS, COLS)).astype(np.int32)
    return {"wall": data[1:].ravel().copy(), "res0": data[0].copy(), "res1": np.zeros(COLS, np.int32), "data": data}


def run(launch, d):
    border_cols = PYRAMID_HEIGHT * HALO
    small_block_col = BLOCK_SIZE - PYRAMID_HEIGHT * HALO * 2
    block_cols = COLS // small_block_col + (0 if COLS % small_block_col == 0 else 1)
    src, dst = 1, 0
    for t in range(0, ROWS - 1, PYRAMID_HEIGHT):
        src, dst = dst, src
        launch(dynproc_kernel, block_cols, BLOCK_SIZE, np.int32(min(PYRAMID_HEIGHT, ROWS - t - 1)), d["wall"],
               d["res%d" % src], d["res%d" % dst], np.int32(COLS), np.int32(ROWS), np.int32(t), np.int32(border_cols))
    d["result"] = d["res%d" % dst]


def reference(h):
    data = h["data"].astype(np.int64)
    dp = data[0].copy()
    for r in range(1, ROWS):
        left = np.concatenate(([dp[0]], dp[:-1]))
        right = np.concatenate((dp[1:], [dp[-1]]))
        dp = np.minimum(np.minimum(left, dp), right) + data[r]
    return {"result": dp}
