"""The GEMMs for Hopper in the cuda.device dialect (docs/semantics.md §18.4), bf16 and FP8:
C = scale · A·Bᵀ with A (M×K) and B (N×K) row-major and C (M×N) bfloat16, float32
accumulation. bf16 inputs (scale 1), or e4m3 inputs with a per-tensor scale as
`torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=bfloat16)` computes (`scale` =
scale_a · scale_b; the tensor maps are built over the fp8 arrays viewed as uint8).

Warp-specialized: warpgroup 0 is the producer (one thread issues TMA loads of 128×64 bf16 or
128×128 e4m3 A tiles and 256-row B tiles, 128 bytes per row, 128-byte swizzled, into a ring
of stages, each counted on its `full` mbarrier); warpgroups 1 and 2 are consumers, each
multiplying its 64 rows of the 128×256 block tile with `wgmma.mma_async.m64n256k16` (bf16)
or `m64n256k32` (e4m3), four per stage (32 bytes of K each: 2 in the descriptor's address
field), into 128 float32 registers, and releasing a stage on its `empty` mbarrier once the
MMAs that read it have retired. `setmaxnreg` moves registers from the producer to the
consumers. FP8 `wgmma` reads both operands K-major only, which is the layout of A and B here.

Both element types have the same bytes per tile, so each variant is written once, as a
`@device.func` taking `fp8: ConstExpr[bool]` (§5.6: the `if fp8:` choosing the `wgmma` types
and the scaling is decided at compile time), and instantiated by two kernels,
`gemm_bf16_<variant>` and `gemm_fp8_<variant>`; the machine code is the one each kernel had
as a separate copy (ptxas and nvdisasm: the same SASS). `gemm_bf16_tmastore` and
`gemm_fp8_tmastore` are the GEMMs: the others are the steps that led to them
(bench/hopper/README.md gives the figures).

Run through bench_all.py on an sm_90 GPU with PyTorch (scripts/hopper_bench_gpu.sh).
"""

from cuda import device
from cuda.device import hopper, is_device, target

BM = 128
BN = 256
BK = 64  # bf16 elements per 128-byte row of a stage
BK_FP8 = 128  # e4m3 elements per row
STAGES = 4
A_BYTES = BM * 128
B_BYTES = BN * 128
STAGE_BYTES = A_BYTES + B_BYTES
# The ring, the barriers (2 × STAGES × 8 bytes) and 1024 bytes to align the ring to the
# 128-byte swizzle's 1024-byte period.
SHARED_BYTES = STAGES * STAGE_BYTES + 1024 + 1024
# Persistent variants walk the tiles grouped GROUP_M tile rows at a time, so that the blocks
# running together share A and B tiles in L2.
GROUP_M = 8


@device.func
def scaled(x, scale, fp8: device.ConstExpr[bool]):
    """An accumulator element as stored: times the FP8 GEMM's scale, as is for bf16."""
    if fp8:
        return x * scale
    return x


# ---------------------------------------------------------------------------------------------
# The first kernel (bf16 only): one 128×256 tile per block, not persistent (78.8% of
# torch.matmul at 4096³, 80.6% at 8192³ on the H200, 06:11 UTC 2026-11-29).
@device.kernel(max_threads=384)
def gemm_bf16(amap, bmap, c, k_tiles):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = (1024 - base % 1024) % 1024
    bars = smem[pad + STAGES * STAGE_BYTES :].view(device.uint64)
    t = device.thread_idx.x
    wg = t // 128
    m0 = device.block_idx.y * BM
    n0 = device.block_idx.x * BN
    if t == 0:
        for s in range(STAGES):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[STAGES + s], 2)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if wg == 0:
        hopper.setmaxnreg(40, False)
        if t == 0:
            for kt in range(k_tiles):
                s = kt % STAGES
                if kt >= STAGES:
                    hopper.mbarrier_wait_parity(bars[STAGES + s], (kt // STAGES - 1) % 2)
                hopper.mbarrier_arrive_expect_tx(bars[s], STAGE_BYTES)
                at = pad + s * STAGE_BYTES
                hopper.tma_load(smem[at], amap, (kt * BK, m0), bars[s])
                hopper.tma_load(smem[at + A_BYTES], bmap, (kt * BK, n0), bars[s])
    else:
        hopper.setmaxnreg(232, True)
        cw = wg - 1
        acc = device.local_array(BN // 2, device.float32)
        for i in device.static_range(BN // 2):
            acc[i] = 0.0
        for kt in range(k_tiles):
            s = kt % STAGES
            hopper.mbarrier_wait_parity(bars[s], (kt // STAGES) % 2)
            at = pad + s * STAGE_BYTES
            da = hopper.wgmma_desc(smem, at + cw * 64 * 128, 16, 1024, 128)
            db = hopper.wgmma_desc(smem, at + A_BYTES, 16, 1024, 128)
            hopper.wgmma_fence()
            for kk in device.static_range(BK // 16):
                # 16 bf16 along K are 32 bytes: 2 in the descriptor's address field.
                hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "bf16", "bf16")
            hopper.wgmma_commit_group()
            hopper.wgmma_wait_group(1)
            if kt > 0 and t % 128 == 0:
                hopper.mbarrier_arrive(bars[STAGES + (kt - 1) % STAGES])
        hopper.wgmma_wait_group(0)
        w = (t % 128) // 32
        lane = t % 32
        row = m0 + cw * 64 + w * 16 + lane // 4
        for i in device.static_range(BN // 2):
            r = row + 8 * ((i // 2) % 2)
            col = n0 + 8 * (i // 4) + 2 * (lane % 4) + i % 2
            c[r, col] = device.bfloat16(acc[i])


# ---------------------------------------------------------------------------------------------
# Persistent variant: one block per SM walks the tiles (grouped GROUP_M tile rows at a time so
# that the blocks running together share A and B tiles in L2); the producer runs ahead into the
# next tile while the consumers store the last one, and the epilogue stores two bfloat16 per
# 32-bit store (`cvt.rn.bf16x2.f32`) into C viewed as int32 pairs.


@device.func
def _persistent(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale, fp8: device.ConstExpr[bool]):
    if target(is_device):
        if fp8:
            bk = BK_FP8
        else:
            bk = BK
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
                        hopper.tma_load(smem[at], amap, (kt * bk, m0), bars[s])
                        hopper.tma_load(smem[at + A_BYTES], bmap, (kt * bk, n0), bars[s])
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
                        if fp8:
                            hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                        else:
                            hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "bf16", "bf16", scale_d=(kt > 0 or kk > 0))
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
                        "cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (scaled(acc[2 * i + 1], scale, fp8), scaled(acc[2 * i], scale, fp8))
                    )


@device.kernel(max_threads=384)
def gemm_bf16_persistent(amap, bmap, c2, k_tiles, tiles_m, tiles_n):
    _persistent(amap, bmap, c2, k_tiles, tiles_m, tiles_n, device.float32(1.0), False)


@device.kernel(max_threads=384)
def gemm_fp8_persistent(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale):
    _persistent(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale, True)


# ---------------------------------------------------------------------------------------------
# Persistent, in clusters of two blocks that share B: the pair computes the 256×256 output of two
# vertically adjacent tiles; each block loads its own A tile and half (128 rows) of the common B
# tile, multicast into both blocks (`.multicast::cluster`, mask 0b11), so each B byte leaves L2
# once per pair. A stage may be refilled only when all four consumer warpgroups of the pair
# have released it: the `empty` barriers count 4 arrivals, each warpgroup arriving on its own
# block's and on the peer's (inline PTX: `mapa` maps the barrier's address into the cluster's
# shared window, then `mbarrier.arrive.shared::cluster` with the default .release.cta; with
# .release.cluster, a cluster-scope release on every stage, the H200 run of 03:45 gave only
# 70% of cuBLAS, and the suspect is that fence). B's tensor map has a 128×64 box.
@device.func
def _cluster(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale, fp8: device.ConstExpr[bool]):
    if target(is_device):
        if fp8:
            bk = BK_FP8
        else:
            bk = BK
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
                        hopper.tma_load(smem[at], amap, (kt * bk, m0), bars[s])
                        hopper.tma_load(
                            smem[at + A_BYTES + rank * (B_BYTES // 2)], bmap, (kt * bk, n0 + rank * (BN // 2)),
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
                    for kk in device.static_range(4):
                        if fp8:
                            hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                        else:
                            hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "bf16", "bf16", scale_d=(kt > 0 or kk > 0))
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
                        "cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (scaled(acc[2 * i + 1], scale, fp8), scaled(acc[2 * i], scale, fp8))
                    )
        # The peer may still arrive on this block's barriers: neither leaves before both are done.
        device.cluster_sync()


@device.kernel(max_threads=384, cluster=(2, 1, 1))
def gemm_bf16_cluster(amap, bmap, c2, k_tiles, tiles_m, tiles_n):
    _cluster(amap, bmap, c2, k_tiles, tiles_m, tiles_n, device.float32(1.0), False)


@device.kernel(max_threads=384, cluster=(2, 1, 1))
def gemm_fp8_cluster(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale):
    _cluster(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale, True)


# ---------------------------------------------------------------------------------------------
# Ping-pong: each consumer warpgroup owns whole 128×128 tiles (two m64n128 accumulators, 128
# float32 registers), the two taking this block's tiles in turn. Their main loops run one after
# the other (a named-barrier handshake, `bar.sync`/`bar.arrive 3 + warpgroup, 256`, passes the
# turn as soon as a warpgroup has waited for its last stage), so one warpgroup's epilogue runs
# while the other's MMAs keep the tensor cores busy. The handshake also keeps each `full`
# barrier at most one phase behind the warpgroup that waits on it, which the parity wait needs.
PP_BN = 128
PP_STAGES = 6
PP_B_BYTES = PP_BN * 128
PP_STAGE_BYTES = A_BYTES + PP_B_BYTES
PP_SHARED_BYTES = PP_STAGES * PP_STAGE_BYTES + 1024 + 1024


@device.func
def _pingpong(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale, fp8: device.ConstExpr[bool]):
    if target(is_device):
        if fp8:
            bk = BK_FP8
        else:
            bk = BK
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
                        hopper.tma_load(smem[at], amap, (kt * bk, m0), bars[s])
                        hopper.tma_load(smem[at + A_BYTES], bmap, (kt * bk, n0), bars[s])
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
                        for kk in device.static_range(4):
                            if fp8:
                                hopper.wgmma(acc0, da0 + kk * 2, db + kk * 2, PP_BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                                hopper.wgmma(acc1, da1 + kk * 2, db + kk * 2, PP_BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                            else:
                                hopper.wgmma(acc0, da0 + kk * 2, db + kk * 2, PP_BN, "bf16", "bf16", scale_d=(kt > 0 or kk > 0))
                                hopper.wgmma(acc1, da1 + kk * 2, db + kk * 2, PP_BN, "bf16", "bf16", scale_d=(kt > 0 or kk > 0))
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
                        c2[r, col2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (scaled(acc0[2 * i + 1], scale, fp8), scaled(acc0[2 * i], scale, fp8)))
                        c2[r + 64, col2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (scaled(acc1[2 * i + 1], scale, fp8), scaled(acc1[2 * i], scale, fp8)))
                lt += 1


@device.kernel(max_threads=384)
def gemm_bf16_pingpong(amap, bmap, c2, k_tiles, tiles_m, tiles_n):
    _pingpong(amap, bmap, c2, k_tiles, tiles_m, tiles_n, device.float32(1.0), False)


@device.kernel(max_threads=384)
def gemm_fp8_pingpong(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale):
    _pingpong(amap, bmap, c2, k_tiles, tiles_m, tiles_n, scale, True)


# ---------------------------------------------------------------------------------------------
# Persistent with a TMA-store epilogue: each consumer warpgroup writes its 64×256 bf16 result
# into its own shared tile (four 64×64 boxes, 128-byte swizzled, the layout a TMA store with
# a 64×64 box and 128-byte swizzle reads; 32-bit stores free of bank conflicts), publishes it
# (`fence.proxy.async`, a warpgroup named barrier) and one thread issues the four
# `tma_store`s, so the warpgroup goes on to the next tile's MMAs while the TMA unit writes
# C. The tile is reused once the previous stores have read it (`bulk_wait_group(0, read)`).
# 3 stages (the two C tiles take 64 KB).
TS_STAGES = 3
TS_C_OFF = TS_STAGES * STAGE_BYTES
TS_SHARED_BYTES = TS_C_OFF + 2 * 32768 + 1024 + 1024


@device.func
def _tmastore(amap, bmap, cmap, k_tiles, tiles_m, tiles_n, scale, fp8: device.ConstExpr[bool]):
    if target(is_device):
        if fp8:
            bk = BK_FP8
        else:
            bk = BK
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
                        hopper.tma_load(smem[at], amap, (kt * bk, m0), bars[s])
                        hopper.tma_load(smem[at + A_BYTES], bmap, (kt * bk, n0), bars[s])
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
                    for kk in device.static_range(4):
                        if fp8:
                            hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "e4m3", "e4m3", scale_d=(kt > 0 or kk > 0))
                        else:
                            hopper.wgmma(acc, da + kk * 2, db + kk * 2, BN, "bf16", "bf16", scale_d=(kt > 0 or kk > 0))
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
                        "cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (scaled(acc[2 * i + 1], scale, fp8), scaled(acc[2 * i], scale, fp8))
                    )
                hopper.fence_proxy_async()
                device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
                if t % 128 == 0:
                    for b in range(4):
                        hopper.tma_store(cmap, (n0 + b * 64, m0 + cw * 64), smem[cbase + b * 8192])
                    hopper.bulk_commit_group()
            if t % 128 == 0:
                hopper.bulk_wait_group(0)


@device.kernel(max_threads=384)
def gemm_bf16_tmastore(amap, bmap, cmap, k_tiles, tiles_m, tiles_n):
    _tmastore(amap, bmap, cmap, k_tiles, tiles_m, tiles_n, device.float32(1.0), False)


@device.kernel(max_threads=384)
def gemm_fp8_tmastore(amap, bmap, cmap, k_tiles, tiles_m, tiles_n, scale):
    _tmastore(amap, bmap, cmap, k_tiles, tiles_m, tiles_n, scale, True)
