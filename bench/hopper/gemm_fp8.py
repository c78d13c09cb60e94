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
                j = 2 * i
                r = row + 8 * (i % 2)
                col2 = (n0 + 8 * (j // 4) + 2 * (lane % 4)) // 2
                c2[r, col2] = device.asm(
                    "cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (acc[j + 1] * scale, acc[j] * scale)
                )
