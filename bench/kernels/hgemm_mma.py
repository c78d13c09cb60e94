# hgemm_mma: c = a @ b on the tensor cores, a and b float16 (row-major), c float32, through
# mma.sync m16n8k16 (docs/semantics.md §19.2). Each block of 256 threads (8 warps, 2 x 4)
# computes a 128 x 256 tile of c in steps of 32 along k; each warp a 64 x 64 sub-tile, 4 x 8
# mma tiles of 16 x 8 in registers. The a (128 x 32) and b (32 x 256) tiles of STAGES k steps
# are in flight at once: a 4-stage cp.async pipeline (cg.memcpy_async, §17.6; one commit
# group and one barrier a k step) in 96 KiB of dynamic shared memory. Shared rows are
# XOR-swizzled by 16-byte chunk so that both the asynchronous stores and the ldmatrix.x4
# reads are free of bank conflicts: an a row (64 B) keeps chunk c at c ^ ((row >> 1) & 3), a
# b row (512 B) at c ^ (row & 7). The fragments of the next 16-wide k sub-step are loaded
# while the current one multiplies. Blocks are numbered in groups of GROUP block rows, down
# the columns inside a group, so that the blocks resident at once share a and b tiles in L2.
# The epilogue stores float32x2 pairs.
# Benchmark: 4096 x 4096 x 4096 (137 GFLOP a launch); 1-D launch, block (256,), grid
# ((m / 128) * (n / 256),), SHARED bytes of dynamic shared memory (`--shared 98304`).
# m must be a multiple of 128, n of 256, k of 32.
from cuda import device
from cuda.device import cg, mma

BM = 128  # tile of c a block: BM x BN
BN = 256
BK = 32
STAGES = 4
GROUP = 16  # block rows a group (L2 order)
STAGE_A = BM * BK  # float16 elements of one stage's a tile
STAGE = STAGE_A + BK * BN  # and of the whole stage (a, then b)
SHARED = STAGES * STAGE * 2  # bytes: 98304


@device.kernel(max_threads=256, min_blocks=1)
def hgemm_mma(a, b, c):
    sm = device.dynamic_shared_array().view(device.float16)
    av = a.reshape(a.size)
    bv = b.reshape(b.size)
    cv = c.reshape(c.size).view(device.float32x2)
    acc = device.local_array((4, 8, 4), device.float32)
    fa = device.local_array((2, 4, 4), device.float16x2)  # [buffer, i, register]
    fbr = device.local_array((2, 4, 4), device.float16x2)  # [buffer, pair of n tiles, register]
    t = device.thread_idx.x
    lane = t % 32
    warp = t // 32
    wm = warp // 4 * 64  # the warp's rows within the tile
    wn = warp % 4 * 64  # and columns
    m = a.shape[0]
    k = a.shape[1]
    n = b.shape[1]
    # The block's tile: groups of GROUP block rows, numbered down the columns (in uint32:
    # 32-bit divisions, as the C++ peer's `int`s, and values known not to be negative).
    bid = device.uint32(device.block_idx.x)
    per_group = device.uint32(GROUP * (n // BN))
    first = bid // per_group * GROUP
    rows = min(device.uint32(m // BM) - first, GROUP)
    inner = bid % per_group
    row0 = (first + inner % rows) * BM
    col0 = inner // rows * BN
    for i in device.static_range(4):
        for j in device.static_range(8):
            for e in device.static_range(4):
                acc[i, j, e] = 0.0

    # The 16-byte pieces this thread copies a stage (offsets in elements): a rows t // 4 and
    # 64 + t // 4, chunk t % 4; b rows t // 32 + 8 i (i < 4), chunk t % 32. Shared offsets
    # are swizzled.
    ar = t // 4
    ac = t % 4
    br = t // 32
    bc = t % 32
    sa = ar * 32 + (ac ^ ((ar >> 1) & 3)) * 8
    sb = STAGE_A + br * 256 + (bc ^ (br & 7)) * 8
    ga = (row0 + ar) * k + ac * 8
    gb = br * n + col0 + bc * 8
    # The ldmatrix rows of this lane: a rows wm + 16 i + lane % 16, k chunk 2 s + lane // 16
    # (s the 16-wide sub-step); b rows 16 s + lane % 16, n chunk wn // 8 + 2 j + lane // 16.
    lr = lane % 16
    lh = lane // 16
    fa0 = (wm + lr) * 32 + (lh ^ ((lr >> 1) & 3)) * 8
    fa1 = (wm + lr) * 32 + ((2 + lh) ^ ((lr >> 1) & 3)) * 8
    fb = device.local_array(4, device.int32)
    for j in device.static_range(4):
        fb[j] = STAGE_A + lr * 256 + wn + ((2 * j + lh) ^ (lr & 7)) * 8

    nk = k // BK
    for s in device.static_range(STAGES - 1):
        if s < nk:
            st = s * STAGE
            cg.memcpy_async(sm, st + sa, av, ga + s * BK, 8)
            cg.memcpy_async(sm, st + sa + 64 * 32, av, ga + s * BK + 64 * k, 8)
            for i in device.static_range(4):
                cg.memcpy_async(sm, st + sb + i * 8 * 256, bv, gb + s * BK * n + i * 8 * n, 8)
        cg.memcpy_async_commit()
    for kt in range(nk):
        cg.memcpy_async_wait(STAGES - 2)
        device.syncthreads()  # tile kt is in; every warp is done with the stage loaded next
        nt = kt + STAGES - 1
        if nt < nk:
            st = nt % STAGES * STAGE
            cg.memcpy_async(sm, st + sa, av, ga + nt * BK, 8)
            cg.memcpy_async(sm, st + sa + 64 * 32, av, ga + nt * BK + 64 * k, 8)
            for i in device.static_range(4):
                cg.memcpy_async(sm, st + sb + i * 8 * 256, bv, gb + nt * BK * n + i * 8 * n, 8)
        cg.memcpy_async_commit()
        st = kt % STAGES * STAGE
        for s in device.static_range(2):
            if s == 0:  # sub-step 0's fragments; sub-step 1's are loaded during sub-step 0
                for i in device.static_range(4):
                    r = mma.ldmatrix(sm, st + fa0 + i * 16 * 32, 4)
                    fa[0, i, 0] = r[0]
                    fa[0, i, 1] = r[1]
                    fa[0, i, 2] = r[2]
                    fa[0, i, 3] = r[3]
                for j in device.static_range(4):
                    r = mma.ldmatrix(sm, st + fb[j], 4, trans=True)
                    fbr[0, j, 0] = r[0]
                    fbr[0, j, 1] = r[1]
                    fbr[0, j, 2] = r[2]
                    fbr[0, j, 3] = r[3]
                for i in device.static_range(4):
                    r = mma.ldmatrix(sm, st + fa1 + i * 16 * 32, 4)
                    fa[1, i, 0] = r[0]
                    fa[1, i, 1] = r[1]
                    fa[1, i, 2] = r[2]
                    fa[1, i, 3] = r[3]
                for j in device.static_range(4):
                    r = mma.ldmatrix(sm, st + fb[j] + 16 * 256, 4, trans=True)
                    fbr[1, j, 0] = r[0]
                    fbr[1, j, 1] = r[1]
                    fbr[1, j, 2] = r[2]
                    fbr[1, j, 3] = r[3]
            for i in device.static_range(4):
                for j in device.static_range(8):
                    d = mma.mma_sync_m16n8k16(
                        (fa[s, i, 0], fa[s, i, 1], fa[s, i, 2], fa[s, i, 3]),
                        (fbr[s, j // 2, j % 2 * 2], fbr[s, j // 2, j % 2 * 2 + 1]),
                        (acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3]),
                    )
                    acc[i, j, 0] = d[0]
                    acc[i, j, 1] = d[1]
                    acc[i, j, 2] = d[2]
                    acc[i, j, 3] = d[3]

    g = lane // 4
    q = lane % 4
    for i in device.static_range(4):
        for j in device.static_range(8):
            row = row0 + wm + i * 16 + g
            col = col0 + wn + j * 8 + 2 * q
            cv[(row * n + col) // 2] = device.float32x2(acc[i, j, 0], acc[i, j, 1])
            cv[((row + 8) * n + col) // 2] = device.float32x2(acc[i, j, 2], acc[i, j, 3])
