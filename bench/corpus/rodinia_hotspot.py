# Port of Rodinia 3.1's hotspot (thermal simulation, a pyramid of stencil steps a launch in shared memory):
# kernel calculate_temp.
# Origin: github.com/yuhc/gpu-rodinia (a mirror of Rodinia 3.1), cuda/hotspot/hotspot.cu,
#   commit 9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4. Copyright (c) 2008-2011 University of
#   Virginia, BSD-style license (LICENSE in that repository). Ported to the cuda.device dialect
#   for pydevice's corpus.
# Launch as the original's compute_tran_temp: block (16, 16), grid (blockCols, blockRows),
# one launch per pyramid_height steps, swapping the two temperature buffers. grid_rows =
# grid_cols = 1024, pyramid_height = 2, total_iterations = 60; the chip constants of the
# original. Its `2.0*temp_on_cuda[..]` is a double product in C; here `2.0 *` is float32 (a
# Python float literal takes the array's type), so the two compute in different precisions.
#
# entry: calculate_temp
# sig: int32, float32[::1], float32[::1], float32[::1], int32, int32, int32, int32, float32, float32, float32, float32, float32, float32
import numpy as np

from cuda import device

BLOCK_SIZE = 16
EXPAND_RATE = 2
GRID = 1024
PYRAMID_HEIGHT = 2
TOTAL_ITERATIONS = 60
MAX_PD = 3.0e6
PRECISION = 0.001
SPEC_HEAT_SI = 1.75e6
K_SI = 100
FACTOR_CHIP = 0.5
T_CHIP = 0.0005
CHIP_HEIGHT = 0.016
CHIP_WIDTH = 0.016


@device.kernel
def calculate_temp(iteration, power, temp_src, temp_dst, grid_cols, grid_rows, border_cols, border_rows,
                   Cap, Rx, Ry, Rz, step, time_elapsed):
    temp_on_cuda = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    power_on_cuda = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    temp_t = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)  # saving temporary temperature result

    amb_temp = 80.0

    bx = int(device.block_idx.x)
    by = int(device.block_idx.y)

    tx = int(device.thread_idx.x)
    ty = int(device.thread_idx.y)

    step_div_Cap = step / Cap

    Rx_1 = 1 / Rx
    Ry_1 = 1 / Ry
    Rz_1 = 1 / Rz

    # each block finally computes result for a small block after N iterations.
    # it is the non-overlapping small blocks that cover all the input data

    # calculate the small block size
    small_block_rows = BLOCK_SIZE - iteration * 2  # EXPAND_RATE
    small_block_cols = BLOCK_SIZE - iteration * 2  # EXPAND_RATE

    # calculate the boundary for the block according to the boundary of its small block
    blkY = small_block_rows * by - border_rows
    blkX = small_block_cols * bx - border_cols
    blkYmax = blkY + BLOCK_SIZE - 1
    blkXmax = blkX + BLOCK_SIZE - 1

    # calculate the global thread coordination
    yidx = blkY + ty
    xidx = blkX + tx

    # load data if it is within the valid input range
    loadYidx = yidx
    loadXidx = xidx
    index = grid_cols * loadYidx + loadXidx

    if loadYidx >= 0 and loadYidx <= grid_rows - 1 and loadXidx >= 0 and loadXidx <= grid_cols - 1:
        temp_on_cuda[ty, tx] = temp_src[index]  # Load the temperature data from global memory to shared memory
        power_on_cuda[ty, tx] = power[index]  # Load the power data from global memory to shared memory
    device.syncthreads()

    # effective range within this block that falls within the valid range of the input data
    # used to rule out computation outside the boundary.
    validYmin = -blkY if blkY < 0 else 0
    validYmax = BLOCK_SIZE - 1 - (blkYmax - grid_rows + 1) if blkYmax > grid_rows - 1 else BLOCK_SIZE - 1
    validXmin = -blkX if blkX < 0 else 0
    validXmax = BLOCK_SIZE - 1 - (blkXmax - grid_cols + 1) if blkXmax > grid_cols - 1 else BLOCK_SIZE - 1

    N = ty - 1
    S = ty + 1
    W = tx - 1
    E = tx + 1

    N = validYmin if N < validYmin else N
    S = validYmax if S > validYmax else S
    W = validXmin if W < validXmin else W
    E = validXmax if E > validXmax else E

    computed = False
    for i in range(iteration):
        computed = False
        if (tx >= i + 1 and tx <= BLOCK_SIZE - i - 2 and ty >= i + 1 and ty <= BLOCK_SIZE - i - 2
                and tx >= validXmin and tx <= validXmax and ty >= validYmin and ty <= validYmax):
            computed = True
            temp_t[ty, tx] = temp_on_cuda[ty, tx] + step_div_Cap * (
                power_on_cuda[ty, tx]
                + (temp_on_cuda[S, tx] + temp_on_cuda[N, tx] - 2.0 * temp_on_cuda[ty, tx]) * Ry_1
                + (temp_on_cuda[ty, E] + temp_on_cuda[ty, W] - 2.0 * temp_on_cuda[ty, tx]) * Rx_1
                + (amb_temp - temp_on_cuda[ty, tx]) * Rz_1)
        device.syncthreads()
        if i == iteration - 1:
            break
        if computed:  # Assign the computation range
            temp_on_cuda[ty, tx] = temp_t[ty, tx]
        device.syncthreads()

    # update the global memory
    # after the last iteration, only threads coordinated within the
    # small block perform the calculation and switch on ``computed''
    if computed:
        temp_dst[index] = temp_t[ty, tx]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "rodinia_hotspot.cu"
TOL = {"result": (1e-4, 1e-3)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"GRID": 40, "TOTAL_ITERATIONS": 5}


def constants():
    f = np.float32
    grid_height = f(CHIP_HEIGHT) / f(GRID)
    grid_width = f(CHIP_WIDTH) / f(GRID)
    cap = f(FACTOR_CHIP * SPEC_HEAT_SI * T_CHIP) * grid_width * grid_height
    rx = f(grid_width / (2.0 * K_SI * T_CHIP * grid_height))
    ry = f(grid_height / (2.0 * K_SI * T_CHIP * grid_width))
    rz = f(T_CHIP / (K_SI * grid_height * grid_width))
    max_slope = f(MAX_PD / (FACTOR_CHIP * T_CHIP * SPEC_HEAT_SI))
    step = f(PRECISION / max_slope)
    return f(cap), rx, ry, rz, step


def setup(rng):
    n = GRID * GRID
    return {"power": rng.random(n, dtype=np.float32) * np.float32(1e-3),
            "temp0": np.float32(320.0) + rng.random(n, dtype=np.float32) * np.float32(20.0),
            "temp1": np.zeros(n, np.float32)}


def run(launch, d):
    border = PYRAMID_HEIGHT * EXPAND_RATE // 2
    small_block = BLOCK_SIZE - PYRAMID_HEIGHT * EXPAND_RATE
    blocks = GRID // small_block + (0 if GRID % small_block == 0 else 1)
    cap, rx, ry, rz, step = constants()
    src, dst = 1, 0
    for t in range(0, TOTAL_ITERATIONS, PYRAMID_HEIGHT):
        src, dst = dst, src
        launch(calculate_temp, (blocks, blocks), (BLOCK_SIZE, BLOCK_SIZE), np.int32(min(PYRAMID_HEIGHT, TOTAL_ITERATIONS - t)),
               d["power"], d["temp%d" % src], d["temp%d" % dst], np.int32(GRID), np.int32(GRID), np.int32(border), np.int32(border),
               cap, rx, ry, rz, step, np.float32(0.001))
    d["result"] = d["temp%d" % dst]


def reference(h):
    cap, rx, ry, rz, step = (float(x) for x in constants())
    t = h["temp0"].reshape(GRID, GRID).astype(np.float64)
    p = h["power"].reshape(GRID, GRID).astype(np.float64)
    for _ in range(TOTAL_ITERATIONS):
        tp = np.pad(t, 1, mode="edge")
        n, s, w, e = tp[:-2, 1:-1], tp[2:, 1:-1], tp[1:-1, :-2], tp[1:-1, 2:]
        t = t + (step / cap) * (p + (s + n - 2.0 * t) / ry + (e + w - 2.0 * t) / rx + (80.0 - t) / rz)
    return {"result": t.ravel()}
