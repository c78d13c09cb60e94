# Port of Rodinia 3.1's srad_v2 (speckle-reducing anisotropic diffusion on 16x16 shared tiles
# with halos): kernels srad_cuda_1 and srad_cuda_2.
# Origin: github.com/yuhc/gpu-rodinia (a mirror of Rodinia 3.1), cuda/srad/srad_v2/
#   srad_kernel.cu and srad.cu, commit 9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4. Copyright (c)
#   2008-2011 University of Virginia, BSD-style license (LICENSE in that repository). Ported
#   to the cuda.device dialect for pydevice's corpus.
# Launch as the original: block (16, 16), grid (cols/16, rows/16), both kernels once per
# iteration after the host computes q0sqr over the region of interest. rows = cols = 2048,
# ROI rows and cols 0..127, lambda = 0.5, niter = 2 (its usual run: srad 2048 2048 0 127 0 127
# 0.5 2). Its `0.5*g2`, `(1.0/16.0)*(l*l)`, `.25*l` and `0.25 * lambda` are double products
# in C; here the Python floats take float32. The original's halo loads read a row or a column
# outside the image at the grid's edges (and then overwrite what they read); the port reads
# them only inside it. `lambda` is a Python keyword: `lambda_`.
#
# entry: srad_cuda_1
# sig: float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], int32, int32, float32
# entry: srad_cuda_2
# sig: float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], float32[::1], int32, int32, float32, float32
import numpy as np

from cuda import device

BLOCK_SIZE = 16
ROWS = 2048
COLS = 2048
R1, R2, C1, C2 = 0, 127, 0, 127
LAMBDA = 0.5
NITER = 2


@device.kernel
def srad_cuda_1(E_C, W_C, N_C, S_C, J_cuda, C_cuda, cols, rows, q0sqr):
    # block id
    bx = int(device.block_idx.x)
    by = int(device.block_idx.y)

    # thread id
    tx = int(device.thread_idx.x)
    ty = int(device.thread_idx.y)

    # indices
    index = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx + cols * ty + tx
    index_n = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx + tx - cols
    index_s = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx + cols * BLOCK_SIZE + tx
    index_w = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx + cols * ty - 1
    index_e = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx + cols * ty + BLOCK_SIZE

    # shared memory allocation
    temp = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    temp_result = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)

    north = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    south = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    east = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    west = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)

    gdx = int(device.grid_dim.x)
    gdy = int(device.grid_dim.y)

    # load data to shared memory
    if by > 0:  # the original reads J_cuda[index_n] first, out of bounds for by == 0
        north[ty, tx] = J_cuda[index_n]
    if by < gdy - 1:
        south[ty, tx] = J_cuda[index_s]
    if by == 0:
        north[ty, tx] = J_cuda[BLOCK_SIZE * bx + tx]
    elif by == gdy - 1:
        south[ty, tx] = J_cuda[cols * BLOCK_SIZE * (gdy - 1) + BLOCK_SIZE * bx + cols * (BLOCK_SIZE - 1) + tx]
    device.syncthreads()

    if bx > 0:
        west[ty, tx] = J_cuda[index_w]
    if bx < gdx - 1:
        east[ty, tx] = J_cuda[index_e]

    if bx == 0:
        west[ty, tx] = J_cuda[cols * BLOCK_SIZE * by + cols * ty]
    elif bx == gdx - 1:
        east[ty, tx] = J_cuda[cols * BLOCK_SIZE * by + BLOCK_SIZE * (gdx - 1) + cols * ty + BLOCK_SIZE - 1]

    device.syncthreads()

    temp[ty, tx] = J_cuda[index]

    device.syncthreads()

    jc = temp[ty, tx]

    if ty == 0 and tx == 0:  # nw
        n = north[ty, tx] - jc
        s = temp[ty + 1, tx] - jc
        w = west[ty, tx] - jc
        e = temp[ty, tx + 1] - jc
    elif ty == 0 and tx == BLOCK_SIZE - 1:  # ne
        n = north[ty, tx] - jc
        s = temp[ty + 1, tx] - jc
        w = temp[ty, tx - 1] - jc
        e = east[ty, tx] - jc
    elif ty == BLOCK_SIZE - 1 and tx == BLOCK_SIZE - 1:  # se
        n = temp[ty - 1, tx] - jc
        s = south[ty, tx] - jc
        w = temp[ty, tx - 1] - jc
        e = east[ty, tx] - jc
    elif ty == BLOCK_SIZE - 1 and tx == 0:  # sw
        n = temp[ty - 1, tx] - jc
        s = south[ty, tx] - jc
        w = west[ty, tx] - jc
        e = temp[ty, tx + 1] - jc
    elif ty == 0:  # n
        n = north[ty, tx] - jc
        s = temp[ty + 1, tx] - jc
        w = temp[ty, tx - 1] - jc
        e = temp[ty, tx + 1] - jc
    elif tx == BLOCK_SIZE - 1:  # e
        n = temp[ty - 1, tx] - jc
        s = temp[ty + 1, tx] - jc
        w = temp[ty, tx - 1] - jc
        e = east[ty, tx] - jc
    elif ty == BLOCK_SIZE - 1:  # s
        n = temp[ty - 1, tx] - jc
        s = south[ty, tx] - jc
        w = temp[ty, tx - 1] - jc
        e = temp[ty, tx + 1] - jc
    elif tx == 0:  # w
        n = temp[ty - 1, tx] - jc
        s = temp[ty + 1, tx] - jc
        w = west[ty, tx] - jc
        e = temp[ty, tx + 1] - jc
    else:  # the data elements which are not on the borders
        n = temp[ty - 1, tx] - jc
        s = temp[ty + 1, tx] - jc
        w = temp[ty, tx - 1] - jc
        e = temp[ty, tx + 1] - jc

    g2 = (n * n + s * s + w * w + e * e) / (jc * jc)

    l = (n + s + w + e) / jc

    num = (0.5 * g2) - ((1.0 / 16.0) * (l * l))
    den = 1 + (.25 * l)
    qsqr = num / (den * den)

    # diffusion coefficent (equ 33)
    den = (qsqr - q0sqr) / (q0sqr * (1 + q0sqr))
    c = 1.0 / (1.0 + den)

    # saturate diffusion coefficent
    if c < 0:
        temp_result[ty, tx] = 0
    elif c > 1:
        temp_result[ty, tx] = 1
    else:
        temp_result[ty, tx] = c

    device.syncthreads()

    C_cuda[index] = temp_result[ty, tx]
    E_C[index] = e
    W_C[index] = w
    S_C[index] = s
    N_C[index] = n


@device.kernel
def srad_cuda_2(E_C, W_C, N_C, S_C, J_cuda, C_cuda, cols, rows, lambda_, q0sqr):
    # block id
    bx = int(device.block_idx.x)
    by = int(device.block_idx.y)

    # thread id
    tx = int(device.thread_idx.x)
    ty = int(device.thread_idx.y)

    # indices
    index = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx + cols * ty + tx
    index_s = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx + cols * BLOCK_SIZE + tx
    index_e = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx + cols * ty + BLOCK_SIZE

    # shared memory allocation
    south_c = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    east_c = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)

    c_cuda_temp = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    c_cuda_result = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)
    temp = device.shared_array((BLOCK_SIZE, BLOCK_SIZE), device.float32)

    gdx = int(device.grid_dim.x)
    gdy = int(device.grid_dim.y)

    # load data to shared memory
    temp[ty, tx] = J_cuda[index]

    device.syncthreads()

    if by < gdy - 1:  # the original reads C_cuda[index_s] first, out of bounds for the last row
        south_c[ty, tx] = C_cuda[index_s]

    if by == gdy - 1:
        south_c[ty, tx] = C_cuda[cols * BLOCK_SIZE * (gdy - 1) + BLOCK_SIZE * bx + cols * (BLOCK_SIZE - 1) + tx]
    device.syncthreads()

    if bx < gdx - 1:
        east_c[ty, tx] = C_cuda[index_e]

    if bx == gdx - 1:
        east_c[ty, tx] = C_cuda[cols * BLOCK_SIZE * by + BLOCK_SIZE * (gdx - 1) + cols * ty + BLOCK_SIZE - 1]

    device.syncthreads()

    c_cuda_temp[ty, tx] = C_cuda[index]

    device.syncthreads()

    cc = c_cuda_temp[ty, tx]

    if ty == BLOCK_SIZE - 1 and tx == BLOCK_SIZE - 1:  # se
        cn = cc
        cs = south_c[ty, tx]
        cw = cc
        ce = east_c[ty, tx]
    elif tx == BLOCK_SIZE - 1:  # e
        cn = cc
        cs = c_cuda_temp[ty + 1, tx]
        cw = cc
        ce = east_c[ty, tx]
    elif ty == BLOCK_SIZE - 1:  # s
        cn = cc
        cs = south_c[ty, tx]
        cw = cc
        ce = c_cuda_temp[ty, tx + 1]
    else:  # the data elements which are not on the borders
        cn = cc
        cs = c_cuda_temp[ty + 1, tx]
        cw = cc
        ce = c_cuda_temp[ty, tx + 1]

    # divergence (equ 58)
    d_sum = cn * N_C[index] + cs * S_C[index] + cw * W_C[index] + ce * E_C[index]

    # image update (equ 61)
    c_cuda_result[ty, tx] = temp[ty, tx] + 0.25 * lambda_ * d_sum

    device.syncthreads()

    J_cuda[index] = c_cuda_result[ty, tx]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "rodinia_srad.cu"
TOL = {"J": (1e-4, 1e-5), "C": (1e-3, 1e-4)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"ROWS": 48, "COLS": 32, "R2": 15, "C2": 15}


def q0sqr_of(J):
    roi = J.reshape(ROWS, COLS)[R1:R2 + 1, C1:C2 + 1]
    size = roi.size
    s, s2 = float(roi.sum()), float((roi * roi).sum())
    mean = s / size
    var = s2 / size - mean * mean
    return np.float32(var / (mean * mean))


def setup(rng):
    n = ROWS * COLS
    d = {"J": np.exp(rng.random(n, dtype=np.float32)).astype(np.float32)}
    for k in ("E", "W", "N", "S", "C"):
        d[k] = np.zeros(n, np.float32)
    # J and C with a row of padding on each side: the original's halo loads read up to a row
    # outside them (run() passes the middle).
    for k in ("J", "C"):
        d[k + "pad"] = np.concatenate((np.ones(COLS, np.float32), d.pop(k), np.ones(COLS, np.float32)))
    return d


def run(launch, d):
    d["J"] = d["Jpad"][COLS:COLS + ROWS * COLS]
    d["C"] = d["Cpad"][COLS:COLS + ROWS * COLS]
    grid, block = (COLS // BLOCK_SIZE, ROWS // BLOCK_SIZE), (BLOCK_SIZE, BLOCK_SIZE)
    for _ in range(NITER):
        q0 = q0sqr_of(d["J"])
        launch(srad_cuda_1, grid, block, d["E"], d["W"], d["N"], d["S"], d["J"], d["C"], np.int32(COLS), np.int32(ROWS), q0)
        launch(srad_cuda_2, grid, block, d["E"], d["W"], d["N"], d["S"], d["J"], d["C"], np.int32(COLS), np.int32(ROWS),
               np.float32(LAMBDA), q0)


def reference(h):
    J = h["Jpad"][COLS:COLS + ROWS * COLS].reshape(ROWS, COLS).astype(np.float64)
    for _ in range(NITER):
        q0 = float(q0sqr_of(J.astype(np.float32).ravel()))
        p = np.pad(J, 1, mode="edge")
        n, s, w, e = p[:-2, 1:-1] - J, p[2:, 1:-1] - J, p[1:-1, :-2] - J, p[1:-1, 2:] - J
        g2 = (n * n + s * s + w * w + e * e) / (J * J)
        l = (n + s + w + e) / J
        num = 0.5 * g2 - (1.0 / 16.0) * l * l
        den = 1 + 0.25 * l
        qsqr = num / (den * den)
        den = (qsqr - q0) / (q0 * (1 + q0))
        C = np.clip(1.0 / (1.0 + den), 0.0, 1.0)
        pc = np.pad(C, 1, mode="edge")
        cs, ce = pc[2:, 1:-1], pc[1:-1, 2:]
        J = J + 0.25 * LAMBDA * (C * n + cs * s + C * w + ce * e)
    return {"J": J.ravel(), "C": C.ravel()}
