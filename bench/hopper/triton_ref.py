"""Triton baselines for the Hopper kernels of this folder (issue 32 asks for Triton's tutorial
kernels beside PyTorch's in the same run). Written here after the algorithms of three Triton
tutorials (triton-lang/triton, python/tutorials), not copied from them:

- `matmul_tma_persistent`: 09-persistent-matmul.py's TMA persistent kernel: one program per
  SM walking the output tiles in groups of GROUP_M tile rows, A and B loaded through host
  tensor descriptors (TMA), `tl.dot` into a float32 accumulator, C stored through a
  descriptor (in two halves with EPILOGUE_SUBTILE). bf16, or e4m3 with a per-tensor scale
  applied to the accumulator (as `torch._scaled_mm`, bf16 out). C = A·Bᵀ, B given N×K.
- `matmul`: 03-matrix-multiplication.py's kernel: one program per tile in the same grouped
  order, pointer loads (`tl.load` of A and B blocks), `tl.dot`. bf16 only.
- `attention`: 06-fused-attention.py's forward: 128 query rows per program, K and V tiles
  through descriptors, online softmax in base 2; causal runs the off-diagonal tiles
  unmasked, then the diagonal tile masked.

Each kernel is autotuned over a few Hopper configurations (the tutorials' own search spaces
are larger; these hold the configurations those searches pick on an H100, and a neighbour).
Importing this module needs Triton (3.6 on the GPU machine); bench_all.py turns its absence
into a skipped row.
"""

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

# ---------------------------------------------------------------------------------------------
# GEMM


def _gemm_configs(bk):
    out = []
    for bm, bn, stages, subtile in ((128, 256, 3, True), (128, 256, 4, True), (128, 128, 4, False)):
        out.append(triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8, "EPILOGUE_SUBTILE": subtile},
                                 num_stages=stages, num_warps=8, pre_hook=_set_gemm_boxes))
    return out


def _set_gemm_boxes(nargs):
    """The descriptors' boxes follow the configuration being tried."""
    bm, bn, bk = nargs["BM"], nargs["BN"], nargs["BK"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bn, bk]
    nargs["c_desc"].block_shape = [bm, bn // 2] if nargs["EPILOGUE_SUBTILE"] else [bm, bn]


@triton.jit
def _tile_coords(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    per_group = GROUP_M * tiles_n
    first = (tile // per_group) * GROUP_M
    rows = min(tiles_m - first, GROUP_M)
    return first + (tile % per_group) % rows, (tile % per_group) // rows


def _tma_persistent_kernel(bk):
    @triton.autotune(configs=_gemm_configs(bk), key=["M", "N", "K"])
    @triton.jit
    def kernel(a_desc, b_desc, c_desc, M, N, K, scale, NUM_SMS: tl.constexpr, SCALED: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
               EPILOGUE_SUBTILE: tl.constexpr):
        tiles_m = tl.cdiv(M, BM)
        tiles_n = tl.cdiv(N, BN)
        k_tiles = tl.cdiv(K, BK)
        for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):
            pm, pn = _tile_coords(tile, tiles_m, tiles_n, GROUP_M)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for kt in range(k_tiles):
                a = a_desc.load([pm * BM, kt * BK])
                b = b_desc.load([pn * BN, kt * BK])
                acc = tl.dot(a, b.T, acc)
            if SCALED:
                acc = acc * scale
            if EPILOGUE_SUBTILE:
                halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
                left, right = tl.split(halves)
                c_desc.store([pm * BM, pn * BN], left.to(tl.bfloat16))
                c_desc.store([pm * BM, pn * BN + BN // 2], right.to(tl.bfloat16))
            else:
                c_desc.store([pm * BM, pn * BN], acc.to(tl.bfloat16))

    return kernel


_TMA_BF16 = _tma_persistent_kernel(64)
_TMA_FP8 = _tma_persistent_kernel(128)


def matmul_tma_persistent(a, b, c, scale=None):
    """c (M×N, bf16) = a·bᵀ (× scale for e4m3 inputs); a M×K, b N×K, both bf16 or both e4m3."""
    import torch

    m, k = a.shape
    n = b.shape[0]
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    dummy = [1, 1]  # the pre-hook sets each box before every launch
    ad = TensorDescriptor.from_tensor(a, dummy)
    bd = TensorDescriptor.from_tensor(b, dummy)
    cd = TensorDescriptor.from_tensor(c, dummy)
    kern = _TMA_FP8 if a.dtype == torch.float8_e4m3fn else _TMA_BF16

    def grid(meta):
        return (min(sms, triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"])),)

    kern[grid](ad, bd, cd, m, n, k, 1.0 if scale is None else float(scale), NUM_SMS=sms, SCALED=scale is not None)


@triton.autotune(
    configs=[triton.Config({"BM": bm, "BN": bn, "BK": 64, "GROUP_M": 8}, num_stages=s, num_warps=8)
             for bm, bn, s in ((128, 256, 3), (128, 128, 4), (128, 256, 4))],
    key=["M", "N", "K"],
)
@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   GROUP_M: tl.constexpr):
    """One program per BM×BN tile of C = A·Bᵀ (row-major A M×K, B N×K, C M×N); M, N, K are
    multiples of the blocks (bench sizes), so no masks."""
    pm, pn = _tile_coords(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    rm = (pm * BM + tl.arange(0, BM)) % M
    rn = (pn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rn[None, :] * K + rk[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(tl.cdiv(K, BK)):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK
    cm = pm * BM + tl.arange(0, BM)
    cn = pn * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * N + cn[None, :], acc.to(tl.bfloat16))


def matmul(a, b, c):
    """c = a·bᵀ in bf16 (a M×K, b N×K), tutorial 03's kernel."""
    m, k = a.shape
    n = b.shape[0]

    def grid(meta):
        return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

    _matmul_kernel[grid](a, b, c, m, n, k)


# ---------------------------------------------------------------------------------------------
# Flash attention forward


def _set_attn_boxes(nargs):
    bm, bn, d = nargs["BM"], nargs["BN"], nargs["D"]
    nargs["q_desc"].block_shape = [bm, d]
    nargs["o_desc"].block_shape = [bm, d]
    nargs["k_desc"].block_shape = [bn, d]
    nargs["v_desc"].block_shape = [bn, d]


@triton.jit
def _attn_tiles(acc, l_i, m_i, q, k_desc, v_desc, row0, start_m, qk_scale, lo, hi,
                BM: tl.constexpr, BN: tl.constexpr, MASKED: tl.constexpr):
    """Online softmax over key tiles lo..hi (base 2: qk_scale holds log2(e))."""
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    for start_n in tl.range(lo, hi, BN):
        k = k_desc.load([row0 + start_n, 0])
        s = tl.dot(q, k.T)
        if MASKED:
            keep = offs_m[:, None] >= (start_n + offs_n[None, :])
            s = s * qk_scale + tl.where(keep, 0.0, -1.0e6)
            m_new = tl.maximum(m_i, tl.max(s, 1))
            s = s - m_new[:, None]
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            s = s * qk_scale - m_new[:, None]
        p = tl.math.exp2(s)
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([row0 + start_n, 0])
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(
    configs=[triton.Config({"BM": bm, "BN": bn}, num_stages=s, num_warps=w, pre_hook=_set_attn_boxes)
             for bm, bn, s, w in ((128, 128, 2, 8), (128, 64, 3, 4), (128, 128, 3, 8))],
    key=["SEQ", "D", "CAUSAL"],
)
@triton.jit
def _attn_fwd_kernel(q_desc, k_desc, v_desc, o_desc, sm_scale, SEQ, D: tl.constexpr, CAUSAL: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr):
    start_m = tl.program_id(0)
    row0 = tl.program_id(1) * SEQ  # this (batch, head)'s first row in the (B·H·S)×D views
    m_i = tl.full([BM], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = q_desc.load([row0 + start_m * BM, 0])
    if CAUSAL:
        acc, l_i, m_i = _attn_tiles(acc, l_i, m_i, q, k_desc, v_desc, row0, start_m, qk_scale,
                                    0, start_m * BM, BM, BN, False)
        acc, l_i, m_i = _attn_tiles(acc, l_i, m_i, q, k_desc, v_desc, row0, start_m, qk_scale,
                                    start_m * BM, (start_m + 1) * BM, BM, BN, True)
    else:
        acc, l_i, m_i = _attn_tiles(acc, l_i, m_i, q, k_desc, v_desc, row0, start_m, qk_scale,
                                    0, SEQ, BM, BN, False)
    o_desc.store([row0 + start_m * BM, 0], (acc / l_i[:, None]).to(tl.bfloat16))


def attention(q, k, v, o, causal, sm_scale):
    """o = softmax(q·kᵀ·sm_scale [causal]) · v for (B, H, S, D) bf16 tensors, S a multiple of 128."""
    bsz, heads, seq, d = q.shape
    dummy = [1, 1]
    descs = [TensorDescriptor.from_tensor(x.view(-1, d), dummy) for x in (q, k, v, o)]

    def grid(meta):
        return (triton.cdiv(seq, meta["BM"]), bsz * heads)

    _attn_fwd_kernel[grid](*descs, sm_scale, seq, D=d, CAUSAL=causal)
