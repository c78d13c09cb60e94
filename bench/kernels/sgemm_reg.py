# sgemm_reg: c = a @ b for square float32 matrices, register-tiled, no tensor cores: each
# block computes a 128 x 128 tile of c from 128 x 8 tiles of a (stored transposed) and
# 8 x 128 tiles of b in shared memory; each of its 16 x 16 threads accumulates an 8 x 8
# sub-tile in registers from 8 values of a and 8 of b per step of k (64 FMAs a step).
# Benchmark: 2048 x 2048 (17 GFLOP a launch); 2-D launch, block (16, 16),
# grid (n / 128, n / 128). n must be a multiple of BM (and so of BK).
from cuda import device

BM = 128  # = BN: tile of c a block
BK = 8
TM = 8  # = TN: sub-tile of c a thread
LOADS = 4  # BM * BK / 256 elements of each tile loaded by each thread


@device.kernel
def sgemm_reg(a, b, c):
    sa = device.shared_array((BK, BM), device.float32, align=16)
    sb = device.shared_array((BK, BM), device.float32, align=16)
    acc = device.local_array((TM, TM), device.float32)
    ra = device.local_array(TM, device.float32)
    rb = device.local_array(TM, device.float32)
    tx = device.thread_idx.x
    ty = device.thread_idx.y
    t = ty * 16 + tx
    row0 = device.block_idx.y * BM
    col0 = device.block_idx.x * BM
    n = a.shape[0]

    for m in range(TM):
        for q in range(TM):
            acc[m, q] = 0.0
    for k0 in range(0, n, BK):
        for l in range(LOADS):
            e = t + l * 256
            sa[e % BK, e // BK] = a[row0 + e // BK, k0 + e % BK]
            sb[e // BM, e % BM] = b[k0 + e // BM, col0 + e % BM]
        device.syncthreads()
        for k in range(BK):
            for m in range(TM):
                ra[m] = sa[k, ty * TM + m]
            for q in range(TM):
                rb[q] = sb[k, tx * TM + q]
            for m in range(TM):
                for q in range(TM):
                    acc[m, q] += ra[m] * rb[q]
        device.syncthreads()
    for m in range(TM):
        for q in range(TM):
            c[row0 + ty * TM + m, col0 + tx * TM + q] = acc[m, q]
