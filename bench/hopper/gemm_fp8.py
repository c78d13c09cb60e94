"""An FP8 (e4m3) GEMM for Hopper in the cuda.device dialect (docs/semantics.md §18.4):
C = scale · A·Bᵀ with A (M×K) and B (N×K) row-major float8 e4m3 and C (M×N) bfloat16,
float32 accumulation: what `torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=bfloat16)`
computes with per-tensor scales (`scale` = scale_a · scale_b).

The structure is the persistent bf16 GEMM's (gemm_bf16.py): a producer warpgroup issues TMA
loads of 128×128 A and 256×128 B tiles (128 bytes per row, 128-byte swizzle) into a ring of
STAGES stages; two consumer warpgroups run `wgmma.mma_async.m64n256k32.f32.e4m3.e4m3` (four
per stage, 32 bytes of K each) into 128 float32 registers. FP8 `wgmma` reads both operands
K-major only, which is the layout of A and B here. The tensor maps are built over the fp8
arrays viewed as uint8 (the same bytes).
"""

from cuda import device
from cuda.device import hopper

BM = 128
BN = 256
BK = 128
STAGES = 4
A_BYTES = BM * BK
B_BYTES = BN * BK
STAGE_BYTES = A_BYTES + B_BYTES
SHARED_BYTES = STAGES * STAGE_BYTES + 1024 + 1024
GROUP_M = 8


@device.kernel(max_threads=384)
def gemm_fp8(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = (1024 - base % 1024) % 1024
    bars = smem[pad + STAGES * STAGE_BYTES :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    nblocks = device.int32(device.grid_dim.x)
    tiles = tiles_m * tiles_n
    if t == 0:
        for s in range(STAGES):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[STAGES + s], 2)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if wg == 0:
        hopper.setmaxnreg(40, False)
        if t == 0:
            it = 0
            for tile in range(device.int32(device.block_idx.x), tiles, nblocks):
                group = tile // (GROUP_M * tiles_n)
                first = group * GROUP_M
                gm = min(tiles_m - first, GROUP_M)
                m0 = (first + (tile % (GROUP_M * tiles_n)) % gm) * BM
                n0 = ((tile % (GROUP_M * tiles_n)) // gm) * BN
                for kt in range(k_tiles):
                    s = it % STAGES
                    if it >= STAGES:
                        hopper.mbarrier_wait_parity(bars[STAGES + s], (it // STAGES - 1) % 2)
                    hopper.mbarrier_arrive_expect_tx(bars[s], STAGE_BYTES)
                    at = pad + s * STAGE_BYTES
                    hopper.tma_load(smem[at], amap, (kt * BK, m0), bars[s])
                    hopper.tma_load(smem[at + A_BYTES], bmap, (kt * BK, n0), bars[s])
                    it += 1
    else:
        hopper.setmaxnreg(232, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        acc = device.local_array(BN // 2, device.float32)
        it = 0
        for tile in range(device.int32(device.block_idx.x), tiles, nblocks):
            group = tile // (GROUP_M * tiles_n)
            first = group * GROUP_M
            gm = min(tiles_m - first, GROUP_M)
            m0 = (first + (tile % (GROUP_M * tiles_n)) % gm) * BM
            n0 = ((tile % (GROUP_M * tiles_n)) // gm) * BN
            for kt in range(k_tiles):
                s = it % STAGES
                hopper.mbarrier_wait_parity(bars[s], (it // STAGES) % 2)
                at = pad + s * STAGE_BYTES
                da = hopper.wgmma_desc(smem, at + cw * 64 * 128, 16, 1024, 128)
                db = hopper.wgmma_desc(smem, at + A_BYTES, 16, 1024, 128)
                hopper.wgmma_fence()
                for kk in device.static_range(4):
                    # 32 e4m3 along K are 32 bytes: 2 in the descriptor's address field.
                    hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                hopper.wgmma_commit_group()
                hopper.wgmma_wait_group(1)
                if kt > 0 and t % 128 == 0:
                    hopper.mbarrier_arrive(bars[STAGES + (it - 1) % STAGES])
                it += 1
            hopper.wgmma_wait_group(0)
            if t % 128 == 0:
                hopper.mbarrier_arrive(bars[STAGES + (it - 1) % STAGES])
            row = m0 + cw * 64 + w * 16 + lane // 4
            for i in device.static_range(BN // 4):
                r = row + 8 * (i % 2)
                col2 = (n0 + 8 * (i // 2) + 2 * (lane % 4)) // 2
                c2[r, col2] = device.asm(
                    "cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (acc[2 * i + 1] * scale, acc[2 * i] * scale)
                )


# The cluster, ping-pong, ping-pong-in-clusters and 2×2-cluster variants of gemm_bf16.py, for e4m3 (generated from their text:
# the types, 32-byte K steps of 32 elements, and the scale in the epilogue differ).
PP_BN = 128
PP_STAGES = 6
PP_B_BYTES = PP_BN * BK
PP_STAGE_BYTES = A_BYTES + PP_B_BYTES
PP_SHARED_BYTES = PP_STAGES * PP_STAGE_BYTES + 1024 + 1024


@device.kernel(max_threads=384, cluster=(2, 1, 1))
def gemm_fp8_cluster(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = (1024 - base % 1024) % 1024
    bars = smem[pad + STAGES * STAGE_BYTES :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    rank = device.block_rank_in_cluster
    peer = device.uint32(1 - rank)
    nclusters = device.int32(device.grid_dim.x) // 2
    cid = device.int32(device.block_idx.x) // 2
    pairs_m = tiles_m // 2
    pairs = pairs_m * tiles_n
    group_m = GROUP_M // 2
    if t == 0:
        for s in range(STAGES):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[STAGES + s], 4)
        hopper.fence_mbarrier_init()
    device.cluster_sync()
    if wg == 0:
        hopper.setmaxnreg(40, False)
        if t == 0:
            it = 0
            for pair in range(cid, pairs, nclusters):
                group = pair // (group_m * tiles_n)
                first = group * group_m
                gm = min(pairs_m - first, group_m)
                m0 = ((first + (pair % (group_m * tiles_n)) % gm) * 2 + rank) * BM
                n0 = ((pair % (group_m * tiles_n)) // gm) * BN
                for kt in range(k_tiles):
                    s = it % STAGES
                    if it >= STAGES:
                        hopper.mbarrier_wait_parity(bars[STAGES + s], (it // STAGES - 1) % 2)
                    hopper.mbarrier_arrive_expect_tx(bars[s], STAGE_BYTES)
                    at = pad + s * STAGE_BYTES
                    hopper.tma_load(smem[at], amap, (kt * BK, m0), bars[s])
                    hopper.tma_load(
                        smem[at + A_BYTES + rank * (B_BYTES // 2)], bmap, (kt * BK, n0 + rank * (BN // 2)),
                        bars[s], multicast=device.uint16(3),
                    )
                    it += 1
    else:
        hopper.setmaxnreg(232, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        acc = device.local_array(BN // 2, device.float32)
        it = 0
        for pair in range(cid, pairs, nclusters):
            group = pair // (group_m * tiles_n)
            first = group * group_m
            gm = min(pairs_m - first, group_m)
            m0 = ((first + (pair % (group_m * tiles_n)) % gm) * 2 + rank) * BM
            n0 = ((pair % (group_m * tiles_n)) // gm) * BN
            for kt in range(k_tiles):
                s = it % STAGES
                hopper.mbarrier_wait_parity(bars[s], (it // STAGES) % 2)
                at = pad + s * STAGE_BYTES
                da = hopper.wgmma_desc(smem, at + cw * 64 * 128, 16, 1024, 128)
                db = hopper.wgmma_desc(smem, at + A_BYTES, 16, 1024, 128)
                hopper.wgmma_fence()
                for kk in device.static_range(BK // 32):
                    hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                hopper.wgmma_commit_group()
                hopper.wgmma_wait_group(1)
                if kt > 0 and t % 128 == 0:
                    e = STAGES + (it - 1) % STAGES
                    hopper.mbarrier_arrive(bars[e])
                    device.asm(
                        "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $0, $1; mbarrier.arrive.shared::cluster.b64 _, [ra]; }",
                        None, (hopper.shared_address(bars[e]), peer), memory=True,
                    )
                it += 1
            hopper.wgmma_wait_group(0)
            if t % 128 == 0:
                e = STAGES + (it - 1) % STAGES
                hopper.mbarrier_arrive(bars[e])
                device.asm(
                    "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $0, $1; mbarrier.arrive.shared::cluster.b64 _, [ra]; }",
                    None, (hopper.shared_address(bars[e]), peer), memory=True,
                )
            row = m0 + cw * 64 + w * 16 + lane // 4
            for i in device.static_range(BN // 4):
                r = row + 8 * (i % 2)
                col2 = (n0 + 8 * (i // 2) + 2 * (lane % 4)) // 2
                c2[r, col2] = device.asm(
                    "cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (acc[2 * i + 1] * scale, acc[2 * i] * scale)
                )
    # The peer may still arrive on this block's barriers: neither leaves before both are done.
    device.cluster_sync()


@device.kernel(max_threads=384)
def gemm_fp8_pingpong(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = device.int32((1024 - base % 1024) % 1024)
    bars = smem[pad + PP_STAGES * PP_STAGE_BYTES :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    bid = device.int32(device.block_idx.x)
    nblocks = device.int32(device.grid_dim.x)
    tiles = tiles_m * tiles_n
    if t == 0:
        for s in range(PP_STAGES):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[PP_STAGES + s], 1)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if wg == 0:
        hopper.setmaxnreg(40, False)
        if t == 0:
            it = 0
            for tile in range(bid, tiles, nblocks):
                group = tile // (GROUP_M * tiles_n)
                first = group * GROUP_M
                gm = min(tiles_m - first, GROUP_M)
                m0 = (first + (tile % (GROUP_M * tiles_n)) % gm) * BM
                n0 = ((tile % (GROUP_M * tiles_n)) // gm) * PP_BN
                for kt in range(k_tiles):
                    s = it % PP_STAGES
                    if it >= PP_STAGES:
                        hopper.mbarrier_wait_parity(bars[PP_STAGES + s], (it // PP_STAGES - 1) % 2)
                    hopper.mbarrier_arrive_expect_tx(bars[s], PP_STAGE_BYTES)
                    at = pad + s * PP_STAGE_BYTES
                    hopper.tma_load(smem[at], amap, (kt * BK, m0), bars[s])
                    hopper.tma_load(smem[at + A_BYTES], bmap, (kt * BK, n0), bars[s])
                    it += 1
    else:
        hopper.setmaxnreg(232, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        acc0 = device.local_array(PP_BN // 2, device.float32)
        acc1 = device.local_array(PP_BN // 2, device.float32)
        count = (tiles - bid + nblocks - 1) // nblocks
        lt = device.int32(0)
        for tile in range(bid, tiles, nblocks):
            if lt % 2 == cw:
                if lt > 0:
                    device.asm("bar.sync $0, 256;", None, (device.int32(3 + cw),), memory=True)
                group = tile // (GROUP_M * tiles_n)
                first = group * GROUP_M
                gm = min(tiles_m - first, GROUP_M)
                m0 = (first + (tile % (GROUP_M * tiles_n)) % gm) * BM
                n0 = ((tile % (GROUP_M * tiles_n)) // gm) * PP_BN
                ci = lt * k_tiles
                for kt in range(k_tiles):
                    s = ci % PP_STAGES
                    hopper.mbarrier_wait_parity(bars[s], (ci // PP_STAGES) % 2)
                    cat = pad + s * PP_STAGE_BYTES
                    da0 = hopper.wgmma_desc(smem, cat, 16, 1024, 128)
                    da1 = hopper.wgmma_desc(smem, cat + 64 * 128, 16, 1024, 128)
                    db = hopper.wgmma_desc(smem, cat + A_BYTES, 16, 1024, 128)
                    hopper.wgmma_fence()
                    for kk in device.static_range(BK // 32):
                        hopper.wgmma(acc0, da0 + kk * 2, db + kk * 2, PP_BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                        hopper.wgmma(acc1, da1 + kk * 2, db + kk * 2, PP_BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                    hopper.wgmma_commit_group()
                    hopper.wgmma_wait_group(1)
                    if kt > 0 and t % 128 == 0:
                        hopper.mbarrier_arrive(bars[PP_STAGES + (ci - 1) % PP_STAGES])
                    ci += 1
                if lt + 1 < count:
                    device.asm("bar.arrive $0, 256;", None, (device.int32(4 - cw),), memory=True)
                hopper.wgmma_wait_group(0)
                if t % 128 == 0:
                    hopper.mbarrier_arrive(bars[PP_STAGES + (ci - 1) % PP_STAGES])
                row = m0 + w * 16 + lane // 4
                for i in device.static_range(PP_BN // 4):
                    r = row + 8 * (i % 2)
                    col2 = (n0 + 8 * (i // 2) + 2 * (lane % 4)) // 2
                    c2[r, col2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (acc0[2 * i + 1] * scale, acc0[2 * i] * scale))
                    c2[r + 64, col2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (acc1[2 * i + 1] * scale, acc1[2 * i] * scale))
            lt += 1


@device.kernel(max_threads=384, cluster=(2, 1, 1))
def gemm_fp8_ppcluster(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = device.int32((1024 - base % 1024) % 1024)
    bars = smem[pad + PP_STAGES * PP_STAGE_BYTES :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    rank = device.block_rank_in_cluster
    peer = device.uint32(1 - rank)
    nclusters = device.int32(device.grid_dim.x) // 2
    cid = device.int32(device.block_idx.x) // 2
    pairs_m = tiles_m // 2
    pairs = pairs_m * tiles_n
    group_m = GROUP_M // 2
    if t == 0:
        for s in range(PP_STAGES):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[PP_STAGES + s], 2)
        hopper.fence_mbarrier_init()
    device.cluster_sync()
    if wg == 0:
        hopper.setmaxnreg(40, False)
        if t == 0:
            it = 0
            for pair in range(cid, pairs, nclusters):
                group = pair // (group_m * tiles_n)
                first = group * group_m
                gm = min(pairs_m - first, group_m)
                m0 = ((first + (pair % (group_m * tiles_n)) % gm) * 2 + rank) * BM
                n0 = ((pair % (group_m * tiles_n)) // gm) * PP_BN
                for kt in range(k_tiles):
                    s = it % PP_STAGES
                    if it >= PP_STAGES:
                        hopper.mbarrier_wait_parity(bars[PP_STAGES + s], (it // PP_STAGES - 1) % 2)
                    hopper.mbarrier_arrive_expect_tx(bars[s], PP_STAGE_BYTES)
                    at = pad + s * PP_STAGE_BYTES
                    hopper.tma_load(smem[at], amap, (kt * BK, m0), bars[s])
                    hopper.tma_load(
                        smem[at + A_BYTES + rank * (PP_B_BYTES // 2)], bmap, (kt * BK, n0 + rank * (PP_BN // 2)),
                        bars[s], multicast=device.uint16(3),
                    )
                    it += 1
    else:
        hopper.setmaxnreg(232, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        acc0 = device.local_array(PP_BN // 2, device.float32)
        acc1 = device.local_array(PP_BN // 2, device.float32)
        count = (pairs - cid + nclusters - 1) // nclusters
        lt = device.int32(0)
        for pair in range(cid, pairs, nclusters):
            if lt % 2 == cw:
                if lt > 0:
                    device.asm("bar.sync $0, 256;", None, (device.int32(3 + cw),), memory=True)
                group = pair // (group_m * tiles_n)
                first = group * group_m
                gm = min(pairs_m - first, group_m)
                m0 = ((first + (pair % (group_m * tiles_n)) % gm) * 2 + rank) * BM
                n0 = ((pair % (group_m * tiles_n)) // gm) * PP_BN
                ci = lt * k_tiles
                for kt in range(k_tiles):
                    s = ci % PP_STAGES
                    hopper.mbarrier_wait_parity(bars[s], (ci // PP_STAGES) % 2)
                    cat = pad + s * PP_STAGE_BYTES
                    da0 = hopper.wgmma_desc(smem, cat, 16, 1024, 128)
                    da1 = hopper.wgmma_desc(smem, cat + 64 * 128, 16, 1024, 128)
                    db = hopper.wgmma_desc(smem, cat + A_BYTES, 16, 1024, 128)
                    hopper.wgmma_fence()
                    for kk in device.static_range(BK // 32):
                        hopper.wgmma(acc0, da0 + kk * 2, db + kk * 2, PP_BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                        hopper.wgmma(acc1, da1 + kk * 2, db + kk * 2, PP_BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                    hopper.wgmma_commit_group()
                    hopper.wgmma_wait_group(1)
                    if kt > 0 and t % 128 == 0:
                        e = PP_STAGES + (ci - 1) % PP_STAGES
                        hopper.mbarrier_arrive(bars[e])
                        device.asm(
                            "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $0, $1; mbarrier.arrive.shared::cluster.b64 _, [ra]; }",
                            None, (hopper.shared_address(bars[e]), peer), memory=True,
                        )
                    ci += 1
                if lt + 1 < count:
                    device.asm("bar.arrive $0, 256;", None, (device.int32(4 - cw),), memory=True)
                hopper.wgmma_wait_group(0)
                if t % 128 == 0:
                    e = PP_STAGES + (ci - 1) % PP_STAGES
                    hopper.mbarrier_arrive(bars[e])
                    device.asm(
                        "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $0, $1; mbarrier.arrive.shared::cluster.b64 _, [ra]; }",
                        None, (hopper.shared_address(bars[e]), peer), memory=True,
                    )
                row = m0 + w * 16 + lane // 4
                for i in device.static_range(PP_BN // 4):
                    r = row + 8 * (i % 2)
                    col2 = (n0 + 8 * (i // 2) + 2 * (lane % 4)) // 2
                    c2[r, col2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (acc0[2 * i + 1] * scale, acc0[2 * i] * scale))
                    c2[r + 64, col2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (acc1[2 * i + 1] * scale, acc1[2 * i] * scale))
            lt += 1
    device.cluster_sync()


@device.kernel(max_threads=384, cluster=(4, 1, 1))
def gemm_fp8_cluster4(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = device.int32((1024 - base % 1024) % 1024)
    bars = smem[pad + STAGES * STAGE_BYTES :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    rank = device.block_rank_in_cluster
    mi = rank % 2
    ni = rank // 2
    row_nbr = device.uint32(mi + 2 * (1 - ni))
    col_nbr = device.uint32((1 - mi) + 2 * ni)
    a_mask = device.uint16((1 << mi) | (1 << (mi + 2)))
    b_mask = device.uint16((1 << (2 * ni)) | (1 << (1 + 2 * ni)))
    nclusters = device.int32(device.grid_dim.x) // 4
    cid = device.int32(device.block_idx.x) // 4
    quads_m = tiles_m // 2
    quads_n = tiles_n // 2
    quads = quads_m * quads_n
    group_m = GROUP_M // 2
    if t == 0:
        for s in range(STAGES):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[STAGES + s], 6)
        hopper.fence_mbarrier_init()
    device.cluster_sync()
    if wg == 0:
        hopper.setmaxnreg(40, False)
        if t == 0:
            it = 0
            for quad in range(cid, quads, nclusters):
                group = quad // (group_m * quads_n)
                first = group * group_m
                gm = min(quads_m - first, group_m)
                m0 = ((first + (quad % (group_m * quads_n)) % gm) * 2 + mi) * BM
                n0 = (((quad % (group_m * quads_n)) // gm) * 2 + ni) * BN
                for kt in range(k_tiles):
                    s = it % STAGES
                    if it >= STAGES:
                        hopper.mbarrier_wait_parity(bars[STAGES + s], (it // STAGES - 1) % 2)
                    hopper.mbarrier_arrive_expect_tx(bars[s], STAGE_BYTES)
                    at = pad + s * STAGE_BYTES
                    hopper.tma_load(smem[at + ni * (A_BYTES // 2)], amap, (kt * BK, m0 + ni * (BM // 2)), bars[s],
                                    multicast=a_mask)
                    hopper.tma_load(smem[at + A_BYTES + mi * (B_BYTES // 2)], bmap, (kt * BK, n0 + mi * (BN // 2)),
                                    bars[s], multicast=b_mask)
                    it += 1
    else:
        hopper.setmaxnreg(232, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        acc = device.local_array(BN // 2, device.float32)
        ci = 0
        for quad in range(cid, quads, nclusters):
            group = quad // (group_m * quads_n)
            first = group * group_m
            gm = min(quads_m - first, group_m)
            m0 = ((first + (quad % (group_m * quads_n)) % gm) * 2 + mi) * BM
            n0 = (((quad % (group_m * quads_n)) // gm) * 2 + ni) * BN
            for kt in range(k_tiles):
                s = ci % STAGES
                hopper.mbarrier_wait_parity(bars[s], (ci // STAGES) % 2)
                cat = pad + s * STAGE_BYTES
                da = hopper.wgmma_desc(smem, cat + cw * 64 * 128, 16, 1024, 128)
                db = hopper.wgmma_desc(smem, cat + A_BYTES, 16, 1024, 128)
                hopper.wgmma_fence()
                for kk in device.static_range(BK // 32):
                    hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                hopper.wgmma_commit_group()
                hopper.wgmma_wait_group(1)
                if kt > 0 and t % 128 == 0:
                    e = STAGES + (ci - 1) % STAGES
                    hopper.mbarrier_arrive(bars[e])
                    ea = hopper.shared_address(bars[e])
                    device.asm(
                        "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $0, $1; mbarrier.arrive.shared::cluster.b64 _, [ra]; mapa.shared::cluster.u32 ra, $0, $2; mbarrier.arrive.shared::cluster.b64 _, [ra]; }",
                        None, (ea, row_nbr, col_nbr), memory=True,
                    )
                ci += 1
            hopper.wgmma_wait_group(0)
            if t % 128 == 0:
                e = STAGES + (ci - 1) % STAGES
                hopper.mbarrier_arrive(bars[e])
                ea = hopper.shared_address(bars[e])
                device.asm(
                    "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $0, $1; mbarrier.arrive.shared::cluster.b64 _, [ra]; mapa.shared::cluster.u32 ra, $0, $2; mbarrier.arrive.shared::cluster.b64 _, [ra]; }",
                    None, (ea, row_nbr, col_nbr), memory=True,
                )
            row = m0 + cw * 64 + w * 16 + lane // 4
            for i in device.static_range(BN // 4):
                r = row + 8 * (i % 2)
                col2 = (n0 + 8 * (i // 2) + 2 * (lane % 4)) // 2
                c2[r, col2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (acc[2 * i + 1] * scale, acc[2 * i] * scale))
    device.cluster_sync()


# The TMA-store-epilogue variant of gemm_bf16.py (gemm_bf16_tmastore), for e4m3.
TS_STAGES = 3
TS_C_OFF = TS_STAGES * STAGE_BYTES
TS_SHARED_BYTES = TS_C_OFF + 2 * 32768 + 1024 + 1024


@device.kernel(max_threads=384)
def gemm_fp8_tmastore(amap, bmap, cmap, k_tiles, tiles_m, tiles_n, scale):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = device.int32((1024 - base % 1024) % 1024)
    sm32 = smem.view(device.uint32)
    bars = smem[pad + TS_C_OFF + 2 * 32768 :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    nblocks = device.int32(device.grid_dim.x)
    tiles = tiles_m * tiles_n
    if t == 0:
        for s in range(TS_STAGES):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[TS_STAGES + s], 2)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if wg == 0:
        hopper.setmaxnreg(40, False)
        if t == 0:
            it = 0
            for tile in range(device.int32(device.block_idx.x), tiles, nblocks):
                group = tile // (GROUP_M * tiles_n)
                first = group * GROUP_M
                gm = min(tiles_m - first, GROUP_M)
                m0 = (first + (tile % (GROUP_M * tiles_n)) % gm) * BM
                n0 = ((tile % (GROUP_M * tiles_n)) // gm) * BN
                for kt in range(k_tiles):
                    s = it % TS_STAGES
                    if it >= TS_STAGES:
                        hopper.mbarrier_wait_parity(bars[TS_STAGES + s], (it // TS_STAGES - 1) % 2)
                    hopper.mbarrier_arrive_expect_tx(bars[s], STAGE_BYTES)
                    at = pad + s * STAGE_BYTES
                    hopper.tma_load(smem[at], amap, (kt * BK, m0), bars[s])
                    hopper.tma_load(smem[at + A_BYTES], bmap, (kt * BK, n0), bars[s])
                    it += 1
    else:
        hopper.setmaxnreg(232, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        g = lane // 4
        tq = lane % 4
        cbase = pad + TS_C_OFF + cw * 32768
        # This thread's first word of the C tile: row 16 w + g, columns 2 tq, 2 tq + 1.
        c_word = cbase // 4 + (w * 16 + g) * 32 + tq
        acc = device.local_array(BN // 2, device.float32)
        ci = 0
        for tile in range(device.int32(device.block_idx.x), tiles, nblocks):
            group = tile // (GROUP_M * tiles_n)
            first = group * GROUP_M
            gm = min(tiles_m - first, GROUP_M)
            m0 = (first + (tile % (GROUP_M * tiles_n)) % gm) * BM
            n0 = ((tile % (GROUP_M * tiles_n)) // gm) * BN
            for kt in range(k_tiles):
                s = ci % TS_STAGES
                hopper.mbarrier_wait_parity(bars[s], (ci // TS_STAGES) % 2)
                cat = pad + s * STAGE_BYTES
                da = hopper.wgmma_desc(smem, cat + cw * 64 * 128, 16, 1024, 128)
                db = hopper.wgmma_desc(smem, cat + A_BYTES, 16, 1024, 128)
                hopper.wgmma_fence()
                for kk in device.static_range(BK // 32):
                    hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                hopper.wgmma_commit_group()
                hopper.wgmma_wait_group(1)
                if kt > 0 and t % 128 == 0:
                    hopper.mbarrier_arrive(bars[TS_STAGES + (ci - 1) % TS_STAGES])
                ci += 1
            hopper.wgmma_wait_group(0)
            if t % 128 == 0:
                hopper.mbarrier_arrive(bars[TS_STAGES + (ci - 1) % TS_STAGES])
                # The previous tile's stores have read the C tile.
                hopper.bulk_wait_group(0, True)
            device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
            # Element pair i: row 16 w + g + 8 (i % 2), columns 8 (i // 2) + 2 tq + {0, 1}: box
            # i // 16, 16-byte unit (i // 2) % 8 xor g (the swizzle), word tq of the unit.
            for i in device.static_range(BN // 4):
                sm32[c_word + (i // 16) * 2048 + (i % 2) * 256 + ((((i // 2) % 8) ^ g) * 4)] = device.asm(
                    "cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (acc[2 * i + 1] * scale, acc[2 * i] * scale)
                )
            hopper.fence_proxy_async()
            device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
            if t % 128 == 0:
                for b in range(4):
                    hopper.tma_store(cmap, (n0 + b * 64, m0 + cw * 64), smem[cbase + b * 8192])
                hopper.bulk_commit_group()
        if t % 128 == 0:
            hopper.bulk_wait_group(0)
