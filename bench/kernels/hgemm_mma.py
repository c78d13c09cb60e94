# hgemm_mma: c = a @ b on the tensor cores, a and b float16 (row-major), c float32, through
# mma.sync m16n8k16 (docs/semantics.md §19.2). Each block of (BM / 64) x (BN / 64) warps
# computes a BM x BN tile of c in steps of BK along k; each warp a 64 x 64 sub-tile, 4 x 8 mma
# tiles of 16 x 8 in registers. The a (BM x BK) and b (BK x BN) tiles of the next STAGES - 1
# k steps are in flight: a cp.async pipeline (cg.memcpy_async, §17.6; one commit group and
# one barrier a k step) in dynamic shared memory. Shared rows are XOR-swizzled by 16-byte
# chunk so that both the asynchronous stores and the ldmatrix.x4 reads are free of bank
# conflicts: an a row keeps chunk c at c ^ ((row >> 1) & 3) (BK 32: 64-byte rows) or
# c ^ (row & 7) (BK 64), a b row at c ^ (row & 7). The fragments of the next 16-wide k
# sub-step load while the current one multiplies. EARLY places the wait and barrier before
# the last sub-step's multiplies, so that the next k step's first fragments load while they
# run (CUTLASS's multistage order); else they open each k step. Blocks are numbered in
# groups of GROUP block rows, down the columns inside a group, so that the blocks resident
# at once share a and b tiles in L2. The epilogue stores float32x2 pairs. The register loops
# are device.static_range (unrolled while compiling, §4.6.2), as the C++ peer's
# `#pragma unroll`: rolled, their arrays would live in local memory.
# Benchmark: 4096 x 4096 x 4096 (137 GFLOP a launch); 1-D launch, block (THREADS,), grid
# ((m / BM) * (n / BN),), SHARED bytes of dynamic shared memory (`pydevice run --shared`).
# m, n and k must be multiples of BM, BN and BK.
from cuda import device
from cuda.device import cg, mma

BM = 128  # tile of c a block: BM x BN
BN = 128  # (128 x 128 x 32, 4 stages: the fastest shape without EARLY on the H100, session 16)
BK = 32  # k step: 32 or 64
STAGES = 4
EARLY = False
GROUP = 16  # block rows a group (L2 order)
THREADS = (BM // 64) * (BN // 64) * 32
STAGE_A = BM * BK  # float16 elements of one stage's a tile
STAGE = STAGE_A + BK * BN  # and of the whole stage (a, then b)
SHARED = STAGES * STAGE * 2  # bytes
A_CH = BK // 8  # 16-byte chunks a row of a
B_CH = BN // 8  # and of b
A_ROWS = THREADS // A_CH  # rows between the a pieces a thread copies
B_ROWS = THREADS // B_CH  # and the b pieces
SUB = BK // 16  # mma k sub-steps a k step


@device.func
def swz_a(row, c):
    """The place of chunk c in shared row `row` of a."""
    if BK == 32:
        return c ^ ((row >> 1) & 3)
    return c ^ (row & 7)


@device.kernel(max_threads=THREADS, min_blocks=1)
def hgemm_mma(a, b, c):
    sm = device.dynamic_shared_array().view(device.float16)
    av = a.reshape(a.size)
    bv = b.reshape(b.size)
    cv = c.reshape(c.size).view(device.float32x2)
    acc = device.local_array((4, 8, 4), device.float32)
    fa = device.local_array((2, 4, 4), device.float16x2)  # [buffer, i, register]
    fbr = device.local_array((2, 4, 4), device.float16x2)  # [buffer, pair of n tiles, register]
    t = device.uint32(device.thread_idx.x)
    lane = t % 32
    warp = t // 32
    wm = warp // (BN // 64) * 64  # the warp's rows within the tile
    wn = warp % (BN // 64) * 64  # and columns
    m = device.uint32(a.shape[0])
    k = device.uint32(a.shape[1])
    n = device.uint32(b.shape[1])
    # The block's tile: groups of GROUP block rows, numbered down the columns.
    bid = device.uint32(device.block_idx.x)
    per_group = GROUP * (n // BN)
    first = bid // per_group * GROUP
    rows = min(m // BM - first, GROUP)
    inner = bid % per_group
    row0 = (first + inner % rows) * BM
    col0 = inner // rows * BN
    for i in device.static_range(4):
        for j in device.static_range(8):
            for e in device.static_range(4):
                acc[i, j, e] = 0.0

    # The 16-byte pieces this thread copies a stage (offsets in elements): a rows
    # t // A_CH + i * THREADS // A_CH, chunk t % A_CH; b rows t // B_CH + i * THREADS // B_CH,
    # chunk t % B_CH. Shared offsets are swizzled.
    ar = t // A_CH
    ac = t % A_CH
    br = t // B_CH
    bc = t % B_CH
    sa = ar * BK + swz_a(ar, ac) * 8
    sb = STAGE_A + br * BN + (bc ^ (br & 7)) * 8
    ga = (row0 + ar) * k + ac * 8
    gb = br * n + col0 + bc * 8
    # The ldmatrix rows of this lane: a rows wm + 16 i + lane % 16, k chunk 2 s + lane // 16
    # (s the sub-step); b rows 16 s + lane % 16, n chunk wn // 8 + 2 j + lane // 16.
    lr = lane % 16
    lh = lane // 16
    fa_off = device.local_array(SUB, device.uint32)
    for s in device.static_range(SUB):
        fa_off[s] = (wm + lr) * BK + swz_a(lr, 2 * s + lh) * 8
    fb = device.local_array(4, device.uint32)
    for j in device.static_range(4):
        fb[j] = STAGE_A + lr * BN + wn + ((2 * j + lh) ^ (lr & 7)) * 8

    nk = k // BK
    for s in device.static_range(STAGES - 1):
        if s < nk:
            st = s * STAGE
            for i in device.static_range(BM * A_CH // THREADS):
                cg.memcpy_async(sm, st + sa + i * A_ROWS * BK, av, ga + s * BK + i * A_ROWS * k, 8)
            for i in device.static_range(BK * B_CH // THREADS):
                cg.memcpy_async(sm, st + sb + i * B_ROWS * BN, bv, gb + s * BK * n + i * B_ROWS * n, 8)
        cg.memcpy_async_commit()
    # (The copies and fragment loads below are written out in each place: a @func must also
    # run on the host, so the device-only memcpy_async and ldmatrix cannot live in one.)
    if not EARLY:
        for kt in range(nk):
            cg.memcpy_async_wait(STAGES - 2)
            device.syncthreads()  # tile kt is in; every warp is done with the stage loaded next
            nt = kt + STAGES - 1
            if nt < nk:
                st = nt % STAGES * STAGE
                for i in device.static_range(BM * A_CH // THREADS):
                    cg.memcpy_async(sm, st + sa + i * A_ROWS * BK, av, ga + nt * BK + i * A_ROWS * k, 8)
                for i in device.static_range(BK * B_CH // THREADS):
                    cg.memcpy_async(sm, st + sb + i * B_ROWS * BN, bv, gb + nt * BK * n + i * B_ROWS * n, 8)
            cg.memcpy_async_commit()
            st = kt % STAGES * STAGE
            for i in device.static_range(4):
                r = mma.ldmatrix(sm, st + fa_off[0] + i * 16 * BK, 4)
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
            for s in device.static_range(SUB):
                if s + 1 < SUB:  # the next sub-step's fragments load under this one's MMAs
                    for i in device.static_range(4):
                        r = mma.ldmatrix(sm, st + fa_off[s + 1] + i * 16 * BK, 4)
                        fa[(s + 1) % 2, i, 0] = r[0]
                        fa[(s + 1) % 2, i, 1] = r[1]
                        fa[(s + 1) % 2, i, 2] = r[2]
                        fa[(s + 1) % 2, i, 3] = r[3]
                    for j in device.static_range(4):
                        r = mma.ldmatrix(sm, st + fb[j] + s + 1 * 16 * BN, 4, trans=True)
                        fbr[(s + 1) % 2, j, 0] = r[0]
                        fbr[(s + 1) % 2, j, 1] = r[1]
                        fbr[(s + 1) % 2, j, 2] = r[2]
                        fbr[(s + 1) % 2, j, 3] = r[3]
                for i in device.static_range(4):
                    for j in device.static_range(8):
                        d = mma.mma_sync_m16n8k16(
                            (fa[s % 2, i, 0], fa[s % 2, i, 1], fa[s % 2, i, 2], fa[s % 2, i, 3]),
                            (fbr[s % 2, j // 2, j % 2 * 2], fbr[s % 2, j // 2, j % 2 * 2 + 1]),
                            (acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3]),
                        )
                        acc[i, j, 0] = d[0]
                        acc[i, j, 1] = d[1]
                        acc[i, j, 2] = d[2]
                        acc[i, j, 3] = d[3]
    else:
        cg.memcpy_async_wait(STAGES - 2)
        device.syncthreads()
        for i in device.static_range(4):
            r = mma.ldmatrix(sm, 0 + fa_off[0] + i * 16 * BK, 4)
            fa[0, i, 0] = r[0]
            fa[0, i, 1] = r[1]
            fa[0, i, 2] = r[2]
            fa[0, i, 3] = r[3]
        for j in device.static_range(4):
            r = mma.ldmatrix(sm, 0 + fb[j], 4, trans=True)
            fbr[0, j, 0] = r[0]
            fbr[0, j, 1] = r[1]
            fbr[0, j, 2] = r[2]
            fbr[0, j, 3] = r[3]
        for kt in range(nk):
            nt = kt + STAGES - 1  # its stage was last read before the previous barrier
            if nt < nk:
                st = nt % STAGES * STAGE
                for i in device.static_range(BM * A_CH // THREADS):
                    cg.memcpy_async(sm, st + sa + i * A_ROWS * BK, av, ga + nt * BK + i * A_ROWS * k, 8)
                for i in device.static_range(BK * B_CH // THREADS):
                    cg.memcpy_async(sm, st + sb + i * B_ROWS * BN, bv, gb + nt * BK * n + i * B_ROWS * n, 8)
            cg.memcpy_async_commit()
            st = kt % STAGES * STAGE
            for s in device.static_range(SUB):
                if s + 1 < SUB:
                    for i in device.static_range(4):
                        r = mma.ldmatrix(sm, st + fa_off[s + 1] + i * 16 * BK, 4)
                        fa[(s + 1) % 2, i, 0] = r[0]
                        fa[(s + 1) % 2, i, 1] = r[1]
                        fa[(s + 1) % 2, i, 2] = r[2]
                        fa[(s + 1) % 2, i, 3] = r[3]
                    for j in device.static_range(4):
                        r = mma.ldmatrix(sm, st + fb[j] + s + 1 * 16 * BN, 4, trans=True)
                        fbr[(s + 1) % 2, j, 0] = r[0]
                        fbr[(s + 1) % 2, j, 1] = r[1]
                        fbr[(s + 1) % 2, j, 2] = r[2]
                        fbr[(s + 1) % 2, j, 3] = r[3]
                elif kt + 1 < nk:
                    cg.memcpy_async_wait(STAGES - 2)
                    device.syncthreads()  # tile kt + 1 is in
                    nxt = (kt + 1) % STAGES * STAGE
                    for i in device.static_range(4):
                        r = mma.ldmatrix(sm, nxt + fa_off[0] + i * 16 * BK, 4)
                        fa[(s + 1) % 2, i, 0] = r[0]
                        fa[(s + 1) % 2, i, 1] = r[1]
                        fa[(s + 1) % 2, i, 2] = r[2]
                        fa[(s + 1) % 2, i, 3] = r[3]
                    for j in device.static_range(4):
                        r = mma.ldmatrix(sm, nxt + fb[j], 4, trans=True)
                        fbr[(s + 1) % 2, j, 0] = r[0]
                        fbr[(s + 1) % 2, j, 1] = r[1]
                        fbr[(s + 1) % 2, j, 2] = r[2]
                        fbr[(s + 1) % 2, j, 3] = r[3]
                for i in device.static_range(4):
                    for j in device.static_range(8):
                        d = mma.mma_sync_m16n8k16(
                            (fa[s % 2, i, 0], fa[s % 2, i, 1], fa[s % 2, i, 2], fa[s % 2, i, 3]),
                            (fbr[s % 2, j // 2, j % 2 * 2], fbr[s % 2, j // 2, j % 2 * 2 + 1]),
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
