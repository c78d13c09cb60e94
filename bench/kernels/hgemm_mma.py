# hgemm_mma: c = a @ b on the tensor cores, a and b float16 (row-major), c float32, through
# mma.sync m16n8k16 (docs/semantics.md §19.2). Each block of 256 threads (8 warps, 2 x 4)
# computes a 128 x 128 tile of c in steps of 32 along k; each warp a 64 x 32 sub-tile, 4 x 4
# mma tiles of 16 x 8 in registers. The a (128 x 32) and b (32 x 128) tiles are double-
# buffered in shared memory (rows padded by 8 elements so ldmatrix is free of bank
# conflicts): while the warps multiply one stage, each thread holds the next tiles' four
# 16-byte pieces in registers (loaded as uint32x4) and stores them to the other stage.
# Fragments come from shared memory by ldmatrix (b transposed on the way).
# Benchmark: 4096 x 4096 x 4096 (137 GFLOP a launch); 2-D launch, block (256,),
# grid (n / 128, m / 128). m and n must be multiples of 128, k of 32.
from cuda import device
from cuda.device import mma

BM = 128  # = BN: tile of c a block
BK = 32
LDA = BK + 8  # padded shared row of the a tile, in elements
LDB = BM + 8  # padded shared row of the b tile
STAGE_A = BM * LDA
STAGE_B = BK * LDB


@device.kernel
def hgemm_mma(a, b, c):
    sa = device.shared_array(2 * STAGE_A, device.float16, align=16)
    sb = device.shared_array(2 * STAGE_B, device.float16, align=16)
    sav = sa.view(device.uint32x4)
    sbv = sb.view(device.uint32x4)
    av = a.reshape(a.size).view(device.uint32x4)
    bv = b.reshape(b.size).view(device.uint32x4)
    acc = device.local_array((4, 4, 4), device.float32)
    t = device.thread_idx.x
    lane = t % 32
    warp = t // 32
    wm = warp // 4 * 64  # the warp's rows within the tile
    wn = warp % 4 * 32  # and columns
    row0 = device.block_idx.y * BM
    col0 = device.block_idx.x * BM
    k = a.shape[1]
    n = b.shape[1]
    kv = k // 8  # 16-byte pieces a row of a
    nv = n // 8
    for i in range(4):
        for j in range(4):
            for e in range(4):
                acc[i, j, e] = 0.0

    # Piece p of a tile: a rows p // 4, pieces p % 4; b rows p // 16, pieces p % 16.
    p0 = t
    p1 = t + 256
    ga0 = (row0 + p0 // 4) * kv + p0 % 4
    ga1 = (row0 + p1 // 4) * kv + p1 % 4
    gb0 = (p0 // 16) * nv + col0 // 8 + p0 % 16
    gb1 = (p1 // 16) * nv + col0 // 8 + p1 % 16
    sa0 = (p0 // 4) * (LDA // 8) + p0 % 4
    sa1 = (p1 // 4) * (LDA // 8) + p1 % 4
    sb0 = (p0 // 16) * (LDB // 8) + p0 % 16
    sb1 = (p1 // 16) * (LDB // 8) + p1 % 16

    ra0 = av[ga0]
    ra1 = av[ga1]
    rb0 = bv[gb0]
    rb1 = bv[gb1]
    sav[sa0] = ra0
    sav[sa1] = ra1
    sbv[sb0] = rb0
    sbv[sb1] = rb1
    device.syncthreads()

    nk = k // BK
    for kt in range(nk):
        stage = kt % 2
        if kt + 1 < nk:
            ra0 = av[ga0 + (kt + 1) * (BK // 8)]
            ra1 = av[ga1 + (kt + 1) * (BK // 8)]
            rb0 = bv[gb0 + (kt + 1) * BK * nv]
            rb1 = bv[gb1 + (kt + 1) * BK * nv]
        base_a = stage * STAGE_A
        base_b = stage * STAGE_B
        for kk in range(0, BK, 16):
            b01 = mma.ldmatrix(sb, base_b + (kk + lane % 16) * LDB + wn + lane // 16 * 8, 4, trans=True)
            b23 = mma.ldmatrix(sb, base_b + (kk + lane % 16) * LDB + wn + 16 + lane // 16 * 8, 4, trans=True)
            for i in range(4):
                fa = mma.ldmatrix(sa, base_a + (wm + i * 16 + lane % 16) * LDA + kk + lane // 16 * 8, 4)
                d = mma.mma_sync_m16n8k16(fa, (b01[0], b01[1]), (acc[i, 0, 0], acc[i, 0, 1], acc[i, 0, 2], acc[i, 0, 3]))
                acc[i, 0, 0] = d[0]
                acc[i, 0, 1] = d[1]
                acc[i, 0, 2] = d[2]
                acc[i, 0, 3] = d[3]
                d = mma.mma_sync_m16n8k16(fa, (b01[2], b01[3]), (acc[i, 1, 0], acc[i, 1, 1], acc[i, 1, 2], acc[i, 1, 3]))
                acc[i, 1, 0] = d[0]
                acc[i, 1, 1] = d[1]
                acc[i, 1, 2] = d[2]
                acc[i, 1, 3] = d[3]
                d = mma.mma_sync_m16n8k16(fa, (b23[0], b23[1]), (acc[i, 2, 0], acc[i, 2, 1], acc[i, 2, 2], acc[i, 2, 3]))
                acc[i, 2, 0] = d[0]
                acc[i, 2, 1] = d[1]
                acc[i, 2, 2] = d[2]
                acc[i, 2, 3] = d[3]
                d = mma.mma_sync_m16n8k16(fa, (b23[2], b23[3]), (acc[i, 3, 0], acc[i, 3, 1], acc[i, 3, 2], acc[i, 3, 3]))
                acc[i, 3, 0] = d[0]
                acc[i, 3, 1] = d[1]
                acc[i, 3, 2] = d[2]
                acc[i, 3, 3] = d[3]
        if kt + 1 < nk:
            nxt = (1 - stage) * (STAGE_A // 8)
            sav[nxt + sa0] = ra0
            sav[nxt + sa1] = ra1
            nxt = (1 - stage) * (STAGE_B // 8)
            sbv[nxt + sb0] = rb0
            sbv[nxt + sb1] = rb1
        device.syncthreads()

    g = lane // 4
    q = lane % 4
    for i in range(4):
        for j in range(4):
            r = row0 + wm + i * 16 + g
            col = col0 + wn + j * 8 + 2 * q
            c[r, col] = acc[i, j, 0]
            c[r, col + 1] = acc[i, j, 1]
            c[r + 8, col] = acc[i, j, 2]
            c[r + 8, col + 1] = acc[i, j, 3]
