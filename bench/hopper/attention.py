"""Flash-attention forward for Hopper in the cuda.device dialect (docs/semantics.md §18.4):
O = softmax(Q·Kᵀ · scale [+ causal mask]) · V for bfloat16 Q, K, V, O of shape (B, H, S, 128)
(float32 scores and accumulation), with the online softmax of FlashAttention.

One block computes 128 query rows of one (batch, head) with three warpgroups: the producer
(one thread) loads the block's Q once and streams 128-row K and V tiles through a 2-stage ring
with TMA (128-byte swizzle, each 128×128 tile as two 64-column boxes); each of the two
consumer warpgroups owns 64 query rows: S = Q·Kᵀ by eight `wgmma m64n128k16` into 64 float32
registers, the running max and sum in base 2 (`ex2.approx`), P rounded to bfloat16 and written
into its own shared tile in the 128-byte-swizzled K-major layout `wgmma` reads (32-bit stores,
conflict-free), then O += P·V by eight more `wgmma m64n128k16`. A named barrier
(`bar.sync 1 + warpgroup, 128`, inline PTX) after `fence.proxy.async` publishes P to the
async proxy before the warpgroup's `wgmma` reads it.

Two ways to read V: `attn_fwd` reads Vᵀ (a (B, H, 128, S) copy made by the caller, K-major
like K); `attn_fwd_vn` reads V as it is, through an N-major descriptor (`trans_b=True`) whose
two byte offsets are kernel parameters (`vl`, `vs`), so that one GPU run can try both orders.

`attn_fwd_pp` (Vᵀ) schedules the two consumer warpgroups in turns, as FlashAttention-3 does:
each turn issues O += P_{j-1}·V_{j-1} and S_j = Q·K_jᵀ back to back, then the warpgroup's
softmax of S_j overlaps the other warpgroup's turn (named barriers 3 and 4 pass the turn).
`attn_fwd_ov` (Vᵀ) overlaps within each warpgroup instead: S_{j+1} = Q·K_{j+1}ᵀ runs during
the softmax of S_j, in a second S accumulator. ptxas allocates each region within the count
`setmaxnreg` gives it, so the consumers (240 registers; the producer keeps 24) hold both S
tiles and O without spilling (at 232 it spills 8 bytes).
"""

from cuda import device
from cuda.device import hopper

BM = 128
BN = 128
D = 128
Q_OFF = 0
TILE_BYTES = 128 * D * 2
STAGE_OFF = TILE_BYTES
STAGE_BYTES = 2 * TILE_BYTES
P_OFF = STAGE_OFF + 2 * STAGE_BYTES
P_BYTES = 64 * BN * 2
BAR_OFF = P_OFF + 2 * P_BYTES
SHARED_BYTES = BAR_OFF + 64 + 1024
NEG = -1.0e30
FULL = 0xFFFFFFFF


@device.kernel(max_threads=384)
def attn_fwd(qmap, kmap, vmap, o2, seq, scale_log2, causal):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = (1024 - base % 1024) % 1024
    sm32 = smem.view(device.uint32)
    bars = smem[pad + BAR_OFF :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    nq = seq // BM
    qb = nq - 1 - device.int32(device.block_idx.x)
    bh = device.int32(device.block_idx.y)
    row0 = bh * seq
    n_kv = qb + 1 if causal else seq // BN
    # bars: 0, 1 K full; 2, 3 V full; 4, 5 empty; 6 Q.
    if t == 0:
        for s in range(2):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[2 + s], 1)
            hopper.mbarrier_init(bars[4 + s], 2)
        hopper.mbarrier_init(bars[6], 1)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if wg == 0:
        hopper.setmaxnreg(24, False)
        if t == 0:
            hopper.mbarrier_arrive_expect_tx(bars[6], TILE_BYTES)
            for ch in range(2):
                hopper.tma_load(smem[pad + Q_OFF + ch * 16384], qmap, (ch * 64, row0 + qb * BM), bars[6])
            for j in range(n_kv):
                s = j % 2
                if j >= 2:
                    hopper.mbarrier_wait_parity(bars[4 + s], (j // 2 - 1) % 2)
                at = pad + STAGE_OFF + s * STAGE_BYTES
                hopper.mbarrier_arrive_expect_tx(bars[s], TILE_BYTES)
                for ch in range(2):
                    hopper.tma_load(smem[at + ch * 16384], kmap, (ch * 64, row0 + j * BN), bars[s])
                hopper.mbarrier_arrive_expect_tx(bars[2 + s], TILE_BYTES)
                for ch in range(2):
                    # Vᵀ is (B·H·128, S): rows are the head dimension, columns the keys.
                    hopper.tma_load(smem[at + TILE_BYTES + ch * 16384], vmap, (j * BN + ch * 64, bh * D), bars[2 + s])
    else:
        hopper.setmaxnreg(240, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        g = lane // 4
        tq = lane % 4
        sacc = device.local_array(64, device.float32)
        o = device.local_array(64, device.float32)
        for i in device.static_range(64):
            o[i] = 0.0
        m0 = NEG
        m1 = NEG
        l0 = device.float32(0.0)
        l1 = device.float32(0.0)
        # This thread's two rows within the block's 128 (and within the warpgroup's 64).
        r_wg0 = w * 16 + g
        r_blk0 = cw * 64 + r_wg0
        p_base = pad + P_OFF + cw * P_BYTES
        # This thread's first word of P: row r_wg0, column 2 tq.
        p_word = device.int32(p_base // 4) + r_wg0 * 32 + tq
        hopper.mbarrier_wait_parity(bars[6], 0)
        dq = hopper.wgmma_desc(smem, pad + Q_OFF + cw * 64 * 128, 16, 1024, 128)
        dp = hopper.wgmma_desc(smem, p_base, 16, 1024, 128)
        for j in range(n_kv):
            s = j % 2
            ph = (j // 2) % 2
            at = pad + STAGE_OFF + s * STAGE_BYTES
            hopper.mbarrier_wait_parity(bars[s], ph)
            dk = hopper.wgmma_desc(smem, at, 16, 1024, 128)
            hopper.wgmma_fence()
            for kk in device.static_range(8):
                hopper.wgmma(sacc, dq + ((kk // 4) * 1024 + (kk % 4) * 2), dk + ((kk // 4) * 1024 + (kk % 4) * 2), BN, "bf16", "bf16", scale_d=(kk > 0))
            hopper.wgmma_commit_group()
            hopper.wgmma_wait_group(0)
            if causal and j == qb:
                for i in device.static_range(64):
                    col = 8 * (i // 4) + 2 * tq + i % 2
                    if col > r_blk0 + 8 * ((i // 2) % 2):
                        sacc[i] = NEG
            mx0 = NEG
            mx1 = NEG
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    mx0 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx0, sacc[i]))
                else:
                    mx1 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx1, sacc[i]))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 1))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 2))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 1))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 2))
            n0 = max(m0, mx0 * scale_log2)
            n1 = max(m1, mx1 * scale_log2)
            a0 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m0 - n0,))
            a1 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m1 - n1,))
            m0 = n0
            m1 = n1
            l0 = l0 * a0
            l1 = l1 * a1
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n0,))
                    sacc[i] = p
                    l0 = l0 + p
                    o[i] = o[i] * a0
                else:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n1,))
                    sacc[i] = p
                    l1 = l1 + p
                    o[i] = o[i] * a1
            # P (bfloat16) into the warpgroup's tile: row r, column c at byte (c // 64) · 8192 +
            # 128 r + 16 · ((c % 64) // 8 xor r % 8) (the 128-byte swizzle) + 2 (c % 8). Elements
            # 2i, 2i + 1 are row r_wg0 + 8 (i % 2) (so r % 8 = g), columns 8 (i // 2) + 2 tq + {0, 1}:
            # one 32-bit word, at p_word + the constant part + 4 (unit xor g).
            for i in device.static_range(32):
                word = p_word + (i % 2) * 256 + (i // 16) * 2048 + (((i // 2) % 8) ^ g) * 4
                sm32[word] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (sacc[2 * i + 1], sacc[2 * i]))
            hopper.fence_proxy_async()
            device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
            hopper.mbarrier_wait_parity(bars[2 + s], ph)
            dv = hopper.wgmma_desc(smem, at + TILE_BYTES, 16, 1024, 128)
            hopper.wgmma_fence()
            for kk in device.static_range(8):
                # P's 64-key chunks are 8192 bytes apart (512 in the descriptor), Vᵀ's 16384.
                hopper.wgmma(o, dp + ((kk // 4) * 512 + (kk % 4) * 2), dv + ((kk // 4) * 1024 + (kk % 4) * 2), D, "bf16", "bf16")
            hopper.wgmma_commit_group()
            hopper.wgmma_wait_group(0)
            if t % 128 == 0:
                hopper.mbarrier_arrive(bars[4 + s])
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 1)
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 2)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 1)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 2)
        inv0 = 1.0 / l0
        inv1 = 1.0 / l1
        orow = row0 + qb * BM + r_blk0
        for i in device.static_range(32):
            if i % 2 == 0:
                v0 = o[2 * i] * inv0
                v1 = o[2 * i + 1] * inv0
            else:
                v0 = o[2 * i] * inv1
                v1 = o[2 * i + 1] * inv1
            c = 8 * (i // 2) + 2 * tq
            o2[orow + 8 * (i % 2), c // 2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (v1, v0))


@device.kernel(max_threads=384)
def attn_fwd_vn(qmap, kmap, vmap, o2, seq, scale_log2, causal, vl, vs):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = (1024 - base % 1024) % 1024
    sm32 = smem.view(device.uint32)
    bars = smem[pad + BAR_OFF :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    nq = seq // BM
    qb = nq - 1 - device.int32(device.block_idx.x)
    bh = device.int32(device.block_idx.y)
    row0 = bh * seq
    n_kv = qb + 1 if causal else seq // BN
    # bars: 0, 1 K full; 2, 3 V full; 4, 5 empty; 6 Q.
    if t == 0:
        for s in range(2):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[2 + s], 1)
            hopper.mbarrier_init(bars[4 + s], 2)
        hopper.mbarrier_init(bars[6], 1)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if wg == 0:
        hopper.setmaxnreg(24, False)
        if t == 0:
            hopper.mbarrier_arrive_expect_tx(bars[6], TILE_BYTES)
            for ch in range(2):
                hopper.tma_load(smem[pad + Q_OFF + ch * 16384], qmap, (ch * 64, row0 + qb * BM), bars[6])
            for j in range(n_kv):
                s = j % 2
                if j >= 2:
                    hopper.mbarrier_wait_parity(bars[4 + s], (j // 2 - 1) % 2)
                at = pad + STAGE_OFF + s * STAGE_BYTES
                hopper.mbarrier_arrive_expect_tx(bars[s], TILE_BYTES)
                for ch in range(2):
                    hopper.tma_load(smem[at + ch * 16384], kmap, (ch * 64, row0 + j * BN), bars[s])
                hopper.mbarrier_arrive_expect_tx(bars[2 + s], TILE_BYTES)
                for ch in range(2):
                    # V is (B·H·S, 128): box ch holds the tile's 128 keys × head dims 64ch..64ch+63.
                    hopper.tma_load(smem[at + TILE_BYTES + ch * 16384], vmap, (ch * 64, row0 + j * BN), bars[2 + s])
    else:
        hopper.setmaxnreg(240, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        g = lane // 4
        tq = lane % 4
        sacc = device.local_array(64, device.float32)
        o = device.local_array(64, device.float32)
        for i in device.static_range(64):
            o[i] = 0.0
        m0 = NEG
        m1 = NEG
        l0 = device.float32(0.0)
        l1 = device.float32(0.0)
        # This thread's two rows within the block's 128 (and within the warpgroup's 64).
        r_wg0 = w * 16 + g
        r_blk0 = cw * 64 + r_wg0
        p_base = pad + P_OFF + cw * P_BYTES
        # This thread's first word of P: row r_wg0, column 2 tq.
        p_word = device.int32(p_base // 4) + r_wg0 * 32 + tq
        hopper.mbarrier_wait_parity(bars[6], 0)
        dq = hopper.wgmma_desc(smem, pad + Q_OFF + cw * 64 * 128, 16, 1024, 128)
        dp = hopper.wgmma_desc(smem, p_base, 16, 1024, 128)
        for j in range(n_kv):
            s = j % 2
            ph = (j // 2) % 2
            at = pad + STAGE_OFF + s * STAGE_BYTES
            hopper.mbarrier_wait_parity(bars[s], ph)
            dk = hopper.wgmma_desc(smem, at, 16, 1024, 128)
            hopper.wgmma_fence()
            for kk in device.static_range(8):
                hopper.wgmma(sacc, dq + ((kk // 4) * 1024 + (kk % 4) * 2), dk + ((kk // 4) * 1024 + (kk % 4) * 2), BN, "bf16", "bf16", scale_d=(kk > 0))
            hopper.wgmma_commit_group()
            hopper.wgmma_wait_group(0)
            if causal and j == qb:
                for i in device.static_range(64):
                    col = 8 * (i // 4) + 2 * tq + i % 2
                    if col > r_blk0 + 8 * ((i // 2) % 2):
                        sacc[i] = NEG
            mx0 = NEG
            mx1 = NEG
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    mx0 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx0, sacc[i]))
                else:
                    mx1 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx1, sacc[i]))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 1))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 2))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 1))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 2))
            n0 = max(m0, mx0 * scale_log2)
            n1 = max(m1, mx1 * scale_log2)
            a0 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m0 - n0,))
            a1 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m1 - n1,))
            m0 = n0
            m1 = n1
            l0 = l0 * a0
            l1 = l1 * a1
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n0,))
                    sacc[i] = p
                    l0 = l0 + p
                    o[i] = o[i] * a0
                else:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n1,))
                    sacc[i] = p
                    l1 = l1 + p
                    o[i] = o[i] * a1
            # P (bfloat16) into the warpgroup's tile: row r, column c at byte (c // 64) · 8192 +
            # 128 r + 16 · ((c % 64) // 8 xor r % 8) (the 128-byte swizzle) + 2 (c % 8). Elements
            # 2i, 2i + 1 are row r_wg0 + 8 (i % 2) (so r % 8 = g), columns 8 (i // 2) + 2 tq + {0, 1}:
            # one 32-bit word, at p_word + the constant part + 4 (unit xor g).
            for i in device.static_range(32):
                word = p_word + (i % 2) * 256 + (i // 16) * 2048 + (((i // 2) % 8) ^ g) * 4
                sm32[word] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (sacc[2 * i + 1], sacc[2 * i]))
            hopper.fence_proxy_async()
            device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
            hopper.mbarrier_wait_parity(bars[2 + s], ph)
            # N-major B: 16 keys (rows of 128 bytes) per instruction, 2048 bytes apart.
            dv = hopper.wgmma_desc(smem, at + TILE_BYTES, vl, vs, 128)
            hopper.wgmma_fence()
            for kk in device.static_range(8):
                # P's 64-key chunks are 8192 bytes apart (512 in the descriptor).
                hopper.wgmma(o, dp + ((kk // 4) * 512 + (kk % 4) * 2), dv + kk * 128, D, "bf16", "bf16", trans_b=True)
            hopper.wgmma_commit_group()
            hopper.wgmma_wait_group(0)
            if t % 128 == 0:
                hopper.mbarrier_arrive(bars[4 + s])
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 1)
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 2)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 1)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 2)
        inv0 = 1.0 / l0
        inv1 = 1.0 / l1
        orow = row0 + qb * BM + r_blk0
        for i in device.static_range(32):
            if i % 2 == 0:
                v0 = o[2 * i] * inv0
                v1 = o[2 * i + 1] * inv0
            else:
                v0 = o[2 * i] * inv1
                v1 = o[2 * i + 1] * inv1
            c = 8 * (i // 2) + 2 * tq
            o2[orow + 8 * (i % 2), c // 2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (v1, v0))


@device.kernel(max_threads=384)
def attn_fwd_pp(qmap, kmap, vmap, o2, seq, scale_log2, causal):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = (1024 - base % 1024) % 1024
    sm32 = smem.view(device.uint32)
    bars = smem[pad + BAR_OFF :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    nq = seq // BM
    qb = nq - 1 - device.int32(device.block_idx.x)
    bh = device.int32(device.block_idx.y)
    row0 = bh * seq
    n_kv = qb + 1 if causal else seq // BN
    # bars: 0, 1 K full; 2, 3 V full; 4, 5 empty; 6 Q.
    if t == 0:
        for s in range(2):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[2 + s], 1)
            hopper.mbarrier_init(bars[4 + s], 2)
        hopper.mbarrier_init(bars[6], 1)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if wg == 0:
        hopper.setmaxnreg(24, False)
        if t == 0:
            hopper.mbarrier_arrive_expect_tx(bars[6], TILE_BYTES)
            for ch in range(2):
                hopper.tma_load(smem[pad + Q_OFF + ch * 16384], qmap, (ch * 64, row0 + qb * BM), bars[6])
            for j in range(n_kv):
                s = j % 2
                if j >= 2:
                    hopper.mbarrier_wait_parity(bars[4 + s], (j // 2 - 1) % 2)
                at = pad + STAGE_OFF + s * STAGE_BYTES
                hopper.mbarrier_arrive_expect_tx(bars[s], TILE_BYTES)
                for ch in range(2):
                    hopper.tma_load(smem[at + ch * 16384], kmap, (ch * 64, row0 + j * BN), bars[s])
                hopper.mbarrier_arrive_expect_tx(bars[2 + s], TILE_BYTES)
                for ch in range(2):
                    # Vᵀ is (B·H·128, S): rows are the head dimension, columns the keys.
                    hopper.tma_load(smem[at + TILE_BYTES + ch * 16384], vmap, (j * BN + ch * 64, bh * D), bars[2 + s])
    else:
        hopper.setmaxnreg(240, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        g = lane // 4
        tq = lane % 4
        sacc = device.local_array(64, device.float32)
        o = device.local_array(64, device.float32)
        for i in device.static_range(64):
            o[i] = 0.0
        m0 = NEG
        m1 = NEG
        l0 = device.float32(0.0)
        l1 = device.float32(0.0)
        # This thread's two rows within the block's 128 (and within the warpgroup's 64).
        r_wg0 = w * 16 + g
        r_blk0 = cw * 64 + r_wg0
        p_base = pad + P_OFF + cw * P_BYTES
        # This thread's first word of P: row r_wg0, column 2 tq.
        p_word = device.int32(p_base // 4) + r_wg0 * 32 + tq
        hopper.mbarrier_wait_parity(bars[6], 0)
        dq = hopper.wgmma_desc(smem, pad + Q_OFF + cw * 64 * 128, 16, 1024, 128)
        dp = hopper.wgmma_desc(smem, p_base, 16, 1024, 128)
        if cw == 1:
            # The first turn is warpgroup 0's.
            device.asm("bar.arrive 3, 256;", None, memory=True)
        # The warpgroups take turns at the tensor cores: turn j issues O += P_{j-1}·V_{j-1} and
        # S_j = Q·K_jᵀ together, then this warpgroup runs the softmax of S_j while the other's
        # turn runs. Warpgroup w waits for its turn on named barrier 3 + w and passes the turn
        # on once its MMAs are issued (arrivals match waits: warpgroup 1 gives warpgroup 0 its
        # first turn and passes none after its last). Turns 0 and n_kv are peeled so that no
        # `wgmma` sits under a branch (ptxas serializes them there).
        j = 0
        hopper.mbarrier_wait_parity(bars[0], 0)
        device.asm("bar.sync $0, 256;", None, (device.int32(3 + cw),), memory=True)
        hopper.wgmma_fence()
        dk = hopper.wgmma_desc(smem, pad + STAGE_OFF + (0 % 2) * STAGE_BYTES, 16, 1024, 128)
        for kk in device.static_range(8):
            hopper.wgmma(sacc, dq + ((kk // 4) * 1024 + (kk % 4) * 2), dk + ((kk // 4) * 1024 + (kk % 4) * 2), BN, "bf16", "bf16", scale_d=(kk > 0))
        hopper.wgmma_commit_group()
        device.asm("bar.arrive $0, 256;", None, (device.int32(4 - cw),), memory=True)
        hopper.wgmma_wait_group(0)
        if causal and j == qb:
            for i in device.static_range(64):
                col = 8 * (i // 4) + 2 * tq + i % 2
                if col > r_blk0 + 8 * ((i // 2) % 2):
                    sacc[i] = NEG
        mx0 = NEG
        mx1 = NEG
        for i in device.static_range(64):
            if (i // 2) % 2 == 0:
                mx0 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx0, sacc[i]))
            else:
                mx1 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx1, sacc[i]))
        mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 1))
        mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 2))
        mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 1))
        mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 2))
        n0 = max(m0, mx0 * scale_log2)
        n1 = max(m1, mx1 * scale_log2)
        a0 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m0 - n0,))
        a1 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m1 - n1,))
        m0 = n0
        m1 = n1
        l0 = l0 * a0
        l1 = l1 * a1
        for i in device.static_range(64):
            if (i // 2) % 2 == 0:
                p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n0,))
                sacc[i] = p
                l0 = l0 + p
                o[i] = o[i] * a0
            else:
                p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n1,))
                sacc[i] = p
                l1 = l1 + p
                o[i] = o[i] * a1
        # P (bfloat16) into the warpgroup's tile: row r, column c at byte (c // 64) · 8192 +
        # 128 r + 16 · ((c % 64) // 8 xor r % 8) (the 128-byte swizzle) + 2 (c % 8). Elements
        # 2i, 2i + 1 are row r_wg0 + 8 (i % 2) (so r % 8 = g), columns 8 (i // 2) + 2 tq + {0, 1}:
        # one 32-bit word, at p_word + the constant part + 4 (unit xor g).
        for i in device.static_range(32):
            word = p_word + (i % 2) * 256 + (i // 16) * 2048 + (((i // 2) % 8) ^ g) * 4
            sm32[word] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (sacc[2 * i + 1], sacc[2 * i]))
        hopper.fence_proxy_async()
        device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
        for j in range(1, n_kv):
            hopper.mbarrier_wait_parity(bars[j % 2], (j // 2) % 2)
            hopper.mbarrier_wait_parity(bars[2 + (j - 1) % 2], ((j - 1) // 2) % 2)
            device.asm("bar.sync $0, 256;", None, (device.int32(3 + cw),), memory=True)
            hopper.wgmma_fence()
            dv = hopper.wgmma_desc(smem, pad + STAGE_OFF + ((j - 1) % 2) * STAGE_BYTES + TILE_BYTES, 16, 1024, 128)
            for kk in device.static_range(8):
                # P's 64-key chunks are 8192 bytes apart (512 in the descriptor), Vᵀ's 16384.
                hopper.wgmma(o, dp + ((kk // 4) * 512 + (kk % 4) * 2), dv + ((kk // 4) * 1024 + (kk % 4) * 2), D, "bf16", "bf16")
            dk = hopper.wgmma_desc(smem, pad + STAGE_OFF + (j % 2) * STAGE_BYTES, 16, 1024, 128)
            for kk in device.static_range(8):
                hopper.wgmma(sacc, dq + ((kk // 4) * 1024 + (kk % 4) * 2), dk + ((kk // 4) * 1024 + (kk % 4) * 2), BN, "bf16", "bf16", scale_d=(kk > 0))
            hopper.wgmma_commit_group()
            device.asm("bar.arrive $0, 256;", None, (device.int32(4 - cw),), memory=True)
            hopper.wgmma_wait_group(0)
            if t % 128 == 0:
                hopper.mbarrier_arrive(bars[4 + (j - 1) % 2])
            if causal and j == qb:
                for i in device.static_range(64):
                    col = 8 * (i // 4) + 2 * tq + i % 2
                    if col > r_blk0 + 8 * ((i // 2) % 2):
                        sacc[i] = NEG
            mx0 = NEG
            mx1 = NEG
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    mx0 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx0, sacc[i]))
                else:
                    mx1 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx1, sacc[i]))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 1))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 2))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 1))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 2))
            n0 = max(m0, mx0 * scale_log2)
            n1 = max(m1, mx1 * scale_log2)
            a0 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m0 - n0,))
            a1 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m1 - n1,))
            m0 = n0
            m1 = n1
            l0 = l0 * a0
            l1 = l1 * a1
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n0,))
                    sacc[i] = p
                    l0 = l0 + p
                    o[i] = o[i] * a0
                else:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n1,))
                    sacc[i] = p
                    l1 = l1 + p
                    o[i] = o[i] * a1
            # P (bfloat16) into the warpgroup's tile: row r, column c at byte (c // 64) · 8192 +
            # 128 r + 16 · ((c % 64) // 8 xor r % 8) (the 128-byte swizzle) + 2 (c % 8). Elements
            # 2i, 2i + 1 are row r_wg0 + 8 (i % 2) (so r % 8 = g), columns 8 (i // 2) + 2 tq + {0, 1}:
            # one 32-bit word, at p_word + the constant part + 4 (unit xor g).
            for i in device.static_range(32):
                word = p_word + (i % 2) * 256 + (i // 16) * 2048 + (((i // 2) % 8) ^ g) * 4
                sm32[word] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (sacc[2 * i + 1], sacc[2 * i]))
            hopper.fence_proxy_async()
            device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
        hopper.mbarrier_wait_parity(bars[2 + (n_kv - 1) % 2], ((n_kv - 1) // 2) % 2)
        device.asm("bar.sync $0, 256;", None, (device.int32(3 + cw),), memory=True)
        hopper.wgmma_fence()
        dv = hopper.wgmma_desc(smem, pad + STAGE_OFF + ((n_kv - 1) % 2) * STAGE_BYTES + TILE_BYTES, 16, 1024, 128)
        for kk in device.static_range(8):
            # P's 64-key chunks are 8192 bytes apart (512 in the descriptor), Vᵀ's 16384.
            hopper.wgmma(o, dp + ((kk // 4) * 512 + (kk % 4) * 2), dv + ((kk // 4) * 1024 + (kk % 4) * 2), D, "bf16", "bf16")
        hopper.wgmma_commit_group()
        if cw == 0:
            device.asm("bar.arrive 4, 256;", None, memory=True)
        hopper.wgmma_wait_group(0)
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 1)
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 2)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 1)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 2)
        inv0 = 1.0 / l0
        inv1 = 1.0 / l1
        orow = row0 + qb * BM + r_blk0
        for i in device.static_range(32):
            if i % 2 == 0:
                v0 = o[2 * i] * inv0
                v1 = o[2 * i + 1] * inv0
            else:
                v0 = o[2 * i] * inv1
                v1 = o[2 * i + 1] * inv1
            c = 8 * (i // 2) + 2 * tq
            o2[orow + 8 * (i % 2), c // 2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (v1, v0))


@device.kernel(max_threads=384)
def attn_fwd_ov(qmap, kmap, vmap, o2, seq, scale_log2, causal):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = (1024 - base % 1024) % 1024
    sm32 = smem.view(device.uint32)
    bars = smem[pad + BAR_OFF :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    nq = seq // BM
    qb = nq - 1 - device.int32(device.block_idx.x)
    bh = device.int32(device.block_idx.y)
    row0 = bh * seq
    n_kv = qb + 1 if causal else seq // BN
    # bars: 0, 1 K full; 2, 3 V full; 4, 5 empty; 6 Q.
    if t == 0:
        for s in range(2):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[2 + s], 1)
            hopper.mbarrier_init(bars[4 + s], 2)
        hopper.mbarrier_init(bars[6], 1)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if wg == 0:
        hopper.setmaxnreg(24, False)
        if t == 0:
            hopper.mbarrier_arrive_expect_tx(bars[6], TILE_BYTES)
            for ch in range(2):
                hopper.tma_load(smem[pad + Q_OFF + ch * 16384], qmap, (ch * 64, row0 + qb * BM), bars[6])
            for j in range(n_kv):
                s = j % 2
                if j >= 2:
                    hopper.mbarrier_wait_parity(bars[4 + s], (j // 2 - 1) % 2)
                at = pad + STAGE_OFF + s * STAGE_BYTES
                hopper.mbarrier_arrive_expect_tx(bars[s], TILE_BYTES)
                for ch in range(2):
                    hopper.tma_load(smem[at + ch * 16384], kmap, (ch * 64, row0 + j * BN), bars[s])
                hopper.mbarrier_arrive_expect_tx(bars[2 + s], TILE_BYTES)
                for ch in range(2):
                    # Vᵀ is (B·H·128, S): rows are the head dimension, columns the keys.
                    hopper.tma_load(smem[at + TILE_BYTES + ch * 16384], vmap, (j * BN + ch * 64, bh * D), bars[2 + s])
    else:
        hopper.setmaxnreg(240, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        g = lane // 4
        tq = lane % 4
        sacc = device.local_array(64, device.float32)
        o = device.local_array(64, device.float32)
        for i in device.static_range(64):
            o[i] = 0.0
        m0 = NEG
        m1 = NEG
        l0 = device.float32(0.0)
        l1 = device.float32(0.0)
        # This thread's two rows within the block's 128 (and within the warpgroup's 64).
        r_wg0 = w * 16 + g
        r_blk0 = cw * 64 + r_wg0
        p_base = pad + P_OFF + cw * P_BYTES
        # This thread's first word of P: row r_wg0, column 2 tq.
        p_word = device.int32(p_base // 4) + r_wg0 * 32 + tq
        hopper.mbarrier_wait_parity(bars[6], 0)
        dq = hopper.wgmma_desc(smem, pad + Q_OFF + cw * 64 * 128, 16, 1024, 128)
        dp = hopper.wgmma_desc(smem, p_base, 16, 1024, 128)
        snext = device.local_array(64, device.float32)
        # S_{j+1} = Q·K_{j+1}ᵀ runs on the tensor cores during the softmax of S_j (a second S
        # accumulator; the consumers' 240 registers hold both and O). The last tile is peeled
        # (it has no next S, and it is the only one the causal mask touches), so that no
        # `wgmma` sits under a branch.
        hopper.mbarrier_wait_parity(bars[0], 0)
        hopper.wgmma_fence()
        dk = hopper.wgmma_desc(smem, pad + STAGE_OFF + (0 % 2) * STAGE_BYTES, 16, 1024, 128)
        for kk in device.static_range(8):
            hopper.wgmma(sacc, dq + ((kk // 4) * 1024 + (kk % 4) * 2), dk + ((kk // 4) * 1024 + (kk % 4) * 2), BN, "bf16", "bf16", scale_d=(kk > 0))
        hopper.wgmma_commit_group()
        hopper.wgmma_wait_group(0)
        for j in range(n_kv - 1):
            hopper.mbarrier_wait_parity(bars[(j + 1) % 2], ((j + 1) // 2) % 2)
            hopper.wgmma_fence()
            dk = hopper.wgmma_desc(smem, pad + STAGE_OFF + ((j + 1) % 2) * STAGE_BYTES, 16, 1024, 128)
            for kk in device.static_range(8):
                hopper.wgmma(snext, dq + ((kk // 4) * 1024 + (kk % 4) * 2), dk + ((kk // 4) * 1024 + (kk % 4) * 2), BN, "bf16", "bf16", scale_d=(kk > 0))
            hopper.wgmma_commit_group()
            mx0 = NEG
            mx1 = NEG
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    mx0 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx0, sacc[i]))
                else:
                    mx1 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx1, sacc[i]))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 1))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 2))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 1))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 2))
            n0 = max(m0, mx0 * scale_log2)
            n1 = max(m1, mx1 * scale_log2)
            a0 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m0 - n0,))
            a1 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m1 - n1,))
            m0 = n0
            m1 = n1
            l0 = l0 * a0
            l1 = l1 * a1
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n0,))
                    sacc[i] = p
                    l0 = l0 + p
                    o[i] = o[i] * a0
                else:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n1,))
                    sacc[i] = p
                    l1 = l1 + p
                    o[i] = o[i] * a1
            # P (bfloat16) into the warpgroup's tile: row r, column c at byte (c // 64) · 8192 +
            # 128 r + 16 · ((c % 64) // 8 xor r % 8) (the 128-byte swizzle) + 2 (c % 8). Elements
            # 2i, 2i + 1 are row r_wg0 + 8 (i % 2) (so r % 8 = g), columns 8 (i // 2) + 2 tq + {0, 1}:
            # one 32-bit word, at p_word + the constant part + 4 (unit xor g).
            for i in device.static_range(32):
                word = p_word + (i % 2) * 256 + (i // 16) * 2048 + (((i // 2) % 8) ^ g) * 4
                sm32[word] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (sacc[2 * i + 1], sacc[2 * i]))
            hopper.fence_proxy_async()
            device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
            hopper.mbarrier_wait_parity(bars[2 + (j) % 2], ((j) // 2) % 2)
            dv = hopper.wgmma_desc(smem, pad + STAGE_OFF + ((j) % 2) * STAGE_BYTES + TILE_BYTES, 16, 1024, 128)
            hopper.wgmma_fence()
            for kk in device.static_range(8):
                # P's 64-key chunks are 8192 bytes apart (512 in the descriptor), Vᵀ's 16384.
                hopper.wgmma(o, dp + ((kk // 4) * 512 + (kk % 4) * 2), dv + ((kk // 4) * 1024 + (kk % 4) * 2), D, "bf16", "bf16")
            hopper.wgmma_commit_group()
            hopper.wgmma_wait_group(0)
            if t % 128 == 0:
                hopper.mbarrier_arrive(bars[4 + j % 2])
            for i in device.static_range(64):
                sacc[i] = snext[i]
        j = n_kv - 1
        if causal and j == qb:
            for i in device.static_range(64):
                col = 8 * (i // 4) + 2 * tq + i % 2
                if col > r_blk0 + 8 * ((i // 2) % 2):
                    sacc[i] = NEG
        mx0 = NEG
        mx1 = NEG
        for i in device.static_range(64):
            if (i // 2) % 2 == 0:
                mx0 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx0, sacc[i]))
            else:
                mx1 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx1, sacc[i]))
        mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 1))
        mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 2))
        mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 1))
        mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 2))
        n0 = max(m0, mx0 * scale_log2)
        n1 = max(m1, mx1 * scale_log2)
        a0 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m0 - n0,))
        a1 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m1 - n1,))
        m0 = n0
        m1 = n1
        l0 = l0 * a0
        l1 = l1 * a1
        for i in device.static_range(64):
            if (i // 2) % 2 == 0:
                p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n0,))
                sacc[i] = p
                l0 = l0 + p
                o[i] = o[i] * a0
            else:
                p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n1,))
                sacc[i] = p
                l1 = l1 + p
                o[i] = o[i] * a1
        # P (bfloat16) into the warpgroup's tile: row r, column c at byte (c // 64) · 8192 +
        # 128 r + 16 · ((c % 64) // 8 xor r % 8) (the 128-byte swizzle) + 2 (c % 8). Elements
        # 2i, 2i + 1 are row r_wg0 + 8 (i % 2) (so r % 8 = g), columns 8 (i // 2) + 2 tq + {0, 1}:
        # one 32-bit word, at p_word + the constant part + 4 (unit xor g).
        for i in device.static_range(32):
            word = p_word + (i % 2) * 256 + (i // 16) * 2048 + (((i // 2) % 8) ^ g) * 4
            sm32[word] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (sacc[2 * i + 1], sacc[2 * i]))
        hopper.fence_proxy_async()
        device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
        hopper.mbarrier_wait_parity(bars[2 + (j) % 2], ((j) // 2) % 2)
        dv = hopper.wgmma_desc(smem, pad + STAGE_OFF + ((j) % 2) * STAGE_BYTES + TILE_BYTES, 16, 1024, 128)
        hopper.wgmma_fence()
        for kk in device.static_range(8):
            # P's 64-key chunks are 8192 bytes apart (512 in the descriptor), Vᵀ's 16384.
            hopper.wgmma(o, dp + ((kk // 4) * 512 + (kk % 4) * 2), dv + ((kk // 4) * 1024 + (kk % 4) * 2), D, "bf16", "bf16")
        hopper.wgmma_commit_group()
        hopper.wgmma_wait_group(0)
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 1)
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 2)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 1)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 2)
        inv0 = 1.0 / l0
        inv1 = 1.0 / l1
        orow = row0 + qb * BM + r_blk0
        for i in device.static_range(32):
            if i % 2 == 0:
                v0 = o[2 * i] * inv0
                v1 = o[2 * i + 1] * inv0
            else:
                v0 = o[2 * i] * inv1
                v1 = o[2 * i + 1] * inv1
            c = 8 * (i // 2) + 2 * tq
            o2[orow + 8 * (i % 2), c // 2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (v1, v0))


@device.kernel(max_threads=384)
def attn_fwd_ov_vn(qmap, kmap, vmap, o2, seq, scale_log2, causal, vl, vs):
    smem = device.dynamic_shared_array()
    base = hopper.shared_address(smem[0])
    pad = (1024 - base % 1024) % 1024
    sm32 = smem.view(device.uint32)
    bars = smem[pad + BAR_OFF :].view(device.uint64)
    t = device.int32(device.thread_idx.x)
    wg = t // 128
    nq = seq // BM
    qb = nq - 1 - device.int32(device.block_idx.x)
    bh = device.int32(device.block_idx.y)
    row0 = bh * seq
    n_kv = qb + 1 if causal else seq // BN
    # bars: 0, 1 K full; 2, 3 V full; 4, 5 empty; 6 Q.
    if t == 0:
        for s in range(2):
            hopper.mbarrier_init(bars[s], 1)
            hopper.mbarrier_init(bars[2 + s], 1)
            hopper.mbarrier_init(bars[4 + s], 2)
        hopper.mbarrier_init(bars[6], 1)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if wg == 0:
        hopper.setmaxnreg(24, False)
        if t == 0:
            hopper.mbarrier_arrive_expect_tx(bars[6], TILE_BYTES)
            for ch in range(2):
                hopper.tma_load(smem[pad + Q_OFF + ch * 16384], qmap, (ch * 64, row0 + qb * BM), bars[6])
            for j in range(n_kv):
                s = j % 2
                if j >= 2:
                    hopper.mbarrier_wait_parity(bars[4 + s], (j // 2 - 1) % 2)
                at = pad + STAGE_OFF + s * STAGE_BYTES
                hopper.mbarrier_arrive_expect_tx(bars[s], TILE_BYTES)
                for ch in range(2):
                    hopper.tma_load(smem[at + ch * 16384], kmap, (ch * 64, row0 + j * BN), bars[s])
                hopper.mbarrier_arrive_expect_tx(bars[2 + s], TILE_BYTES)
                for ch in range(2):
                    # V is (B·H·S, 128): box ch holds the tile's 128 keys × head dims 64ch..64ch+63.
                    hopper.tma_load(smem[at + TILE_BYTES + ch * 16384], vmap, (ch * 64, row0 + j * BN), bars[2 + s])
    else:
        hopper.setmaxnreg(240, True)
        cw = wg - 1
        w = (t % 128) // 32
        lane = t % 32
        g = lane // 4
        tq = lane % 4
        sacc = device.local_array(64, device.float32)
        o = device.local_array(64, device.float32)
        for i in device.static_range(64):
            o[i] = 0.0
        m0 = NEG
        m1 = NEG
        l0 = device.float32(0.0)
        l1 = device.float32(0.0)
        # This thread's two rows within the block's 128 (and within the warpgroup's 64).
        r_wg0 = w * 16 + g
        r_blk0 = cw * 64 + r_wg0
        p_base = pad + P_OFF + cw * P_BYTES
        # This thread's first word of P: row r_wg0, column 2 tq.
        p_word = device.int32(p_base // 4) + r_wg0 * 32 + tq
        hopper.mbarrier_wait_parity(bars[6], 0)
        dq = hopper.wgmma_desc(smem, pad + Q_OFF + cw * 64 * 128, 16, 1024, 128)
        dp = hopper.wgmma_desc(smem, p_base, 16, 1024, 128)
        snext = device.local_array(64, device.float32)
        # S_{j+1} = Q·K_{j+1}ᵀ runs on the tensor cores during the softmax of S_j (a second S
        # accumulator; the consumers' 240 registers hold both and O). The last tile is peeled
        # (it has no next S, and it is the only one the causal mask touches), so that no
        # `wgmma` sits under a branch.
        hopper.mbarrier_wait_parity(bars[0], 0)
        hopper.wgmma_fence()
        dk = hopper.wgmma_desc(smem, pad + STAGE_OFF + (0 % 2) * STAGE_BYTES, 16, 1024, 128)
        for kk in device.static_range(8):
            hopper.wgmma(sacc, dq + ((kk // 4) * 1024 + (kk % 4) * 2), dk + ((kk // 4) * 1024 + (kk % 4) * 2), BN, "bf16", "bf16", scale_d=(kk > 0))
        hopper.wgmma_commit_group()
        hopper.wgmma_wait_group(0)
        for j in range(n_kv - 1):
            hopper.mbarrier_wait_parity(bars[(j + 1) % 2], ((j + 1) // 2) % 2)
            hopper.wgmma_fence()
            dk = hopper.wgmma_desc(smem, pad + STAGE_OFF + ((j + 1) % 2) * STAGE_BYTES, 16, 1024, 128)
            for kk in device.static_range(8):
                hopper.wgmma(snext, dq + ((kk // 4) * 1024 + (kk % 4) * 2), dk + ((kk // 4) * 1024 + (kk % 4) * 2), BN, "bf16", "bf16", scale_d=(kk > 0))
            hopper.wgmma_commit_group()
            mx0 = NEG
            mx1 = NEG
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    mx0 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx0, sacc[i]))
                else:
                    mx1 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx1, sacc[i]))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 1))
            mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 2))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 1))
            mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 2))
            n0 = max(m0, mx0 * scale_log2)
            n1 = max(m1, mx1 * scale_log2)
            a0 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m0 - n0,))
            a1 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m1 - n1,))
            m0 = n0
            m1 = n1
            l0 = l0 * a0
            l1 = l1 * a1
            for i in device.static_range(64):
                if (i // 2) % 2 == 0:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n0,))
                    sacc[i] = p
                    l0 = l0 + p
                    o[i] = o[i] * a0
                else:
                    p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n1,))
                    sacc[i] = p
                    l1 = l1 + p
                    o[i] = o[i] * a1
            # P (bfloat16) into the warpgroup's tile: row r, column c at byte (c // 64) · 8192 +
            # 128 r + 16 · ((c % 64) // 8 xor r % 8) (the 128-byte swizzle) + 2 (c % 8). Elements
            # 2i, 2i + 1 are row r_wg0 + 8 (i % 2) (so r % 8 = g), columns 8 (i // 2) + 2 tq + {0, 1}:
            # one 32-bit word, at p_word + the constant part + 4 (unit xor g).
            for i in device.static_range(32):
                word = p_word + (i % 2) * 256 + (i // 16) * 2048 + (((i // 2) % 8) ^ g) * 4
                sm32[word] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (sacc[2 * i + 1], sacc[2 * i]))
            hopper.fence_proxy_async()
            device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
            hopper.mbarrier_wait_parity(bars[2 + (j) % 2], ((j) // 2) % 2)
            dv = hopper.wgmma_desc(smem, pad + STAGE_OFF + ((j) % 2) * STAGE_BYTES + TILE_BYTES, vl, vs, 128)
            hopper.wgmma_fence()
            for kk in device.static_range(8):
                # P's 64-key chunks are 8192 bytes apart (512 in the descriptor); V N-major, 16 keys = 2048 bytes.
                hopper.wgmma(o, dp + ((kk // 4) * 512 + (kk % 4) * 2), dv + kk * 128, D, "bf16", "bf16", trans_b=True)
            hopper.wgmma_commit_group()
            hopper.wgmma_wait_group(0)
            if t % 128 == 0:
                hopper.mbarrier_arrive(bars[4 + j % 2])
            for i in device.static_range(64):
                sacc[i] = snext[i]
        j = n_kv - 1
        if causal and j == qb:
            for i in device.static_range(64):
                col = 8 * (i // 4) + 2 * tq + i % 2
                if col > r_blk0 + 8 * ((i // 2) % 2):
                    sacc[i] = NEG
        mx0 = NEG
        mx1 = NEG
        for i in device.static_range(64):
            if (i // 2) % 2 == 0:
                mx0 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx0, sacc[i]))
            else:
                mx1 = device.asm("max.f32 $0, $1, $2;", device.float32, (mx1, sacc[i]))
        mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 1))
        mx0 = max(mx0, device.shfl_xor_sync(FULL, mx0, 2))
        mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 1))
        mx1 = max(mx1, device.shfl_xor_sync(FULL, mx1, 2))
        n0 = max(m0, mx0 * scale_log2)
        n1 = max(m1, mx1 * scale_log2)
        a0 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m0 - n0,))
        a1 = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (m1 - n1,))
        m0 = n0
        m1 = n1
        l0 = l0 * a0
        l1 = l1 * a1
        for i in device.static_range(64):
            if (i // 2) % 2 == 0:
                p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n0,))
                sacc[i] = p
                l0 = l0 + p
                o[i] = o[i] * a0
            else:
                p = device.asm("ex2.approx.ftz.f32 $0, $1;", device.float32, (sacc[i] * scale_log2 - n1,))
                sacc[i] = p
                l1 = l1 + p
                o[i] = o[i] * a1
        # P (bfloat16) into the warpgroup's tile: row r, column c at byte (c // 64) · 8192 +
        # 128 r + 16 · ((c % 64) // 8 xor r % 8) (the 128-byte swizzle) + 2 (c % 8). Elements
        # 2i, 2i + 1 are row r_wg0 + 8 (i % 2) (so r % 8 = g), columns 8 (i // 2) + 2 tq + {0, 1}:
        # one 32-bit word, at p_word + the constant part + 4 (unit xor g).
        for i in device.static_range(32):
            word = p_word + (i % 2) * 256 + (i // 16) * 2048 + (((i // 2) % 8) ^ g) * 4
            sm32[word] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.uint32, (sacc[2 * i + 1], sacc[2 * i]))
        hopper.fence_proxy_async()
        device.asm("bar.sync $0, 128;", None, (device.int32(1 + cw),), memory=True)
        hopper.mbarrier_wait_parity(bars[2 + (j) % 2], ((j) // 2) % 2)
        dv = hopper.wgmma_desc(smem, pad + STAGE_OFF + ((j) % 2) * STAGE_BYTES + TILE_BYTES, vl, vs, 128)
        hopper.wgmma_fence()
        for kk in device.static_range(8):
            # P's 64-key chunks are 8192 bytes apart (512 in the descriptor); V N-major, 16 keys = 2048 bytes.
            hopper.wgmma(o, dp + ((kk // 4) * 512 + (kk % 4) * 2), dv + kk * 128, D, "bf16", "bf16", trans_b=True)
        hopper.wgmma_commit_group()
        hopper.wgmma_wait_group(0)
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 1)
        l0 = l0 + device.shfl_xor_sync(FULL, l0, 2)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 1)
        l1 = l1 + device.shfl_xor_sync(FULL, l1, 2)
        inv0 = 1.0 / l0
        inv1 = 1.0 / l1
        orow = row0 + qb * BM + r_blk0
        for i in device.static_range(32):
            if i % 2 == 0:
                v0 = o[2 * i] * inv0
                v1 = o[2 * i + 1] * inv0
            else:
                v0 = o[2 * i] * inv1
                v1 = o[2 * i + 1] * inv1
            c = 8 * (i // 2) + 2 * tq
            o2[orow + 8 * (i % 2), c // 2] = device.asm("cvt.rn.bf16x2.f32 $0, $1, $2;", device.int32, (v1, v0))
