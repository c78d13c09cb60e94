// hgemm_variants.cuh: shape experiments around suite::hgemm_mma, for choosing its tiles on
// the H100 (bench/NOTES.md, session 16). Not a peer of any dialect kernel: bench_cuda.cu
// times them after hgemm_mma and prints their lines with a "target" naming the shape, which
// report.py leaves out of its tables.
//
// hgemm_tile<BM, BN, BK, STAGES>: suite::hgemm_mma's algorithm with the block tile, the k step
// and the pipeline depth as parameters. (BM / 64) x (BN / 64) warps of 64 x 64; shared a rows
// of BK halves put 16-byte chunk c at c ^ ((row >> 1) & 3) (BK 32) or c ^ (row & 7) (BK 64),
// b rows at c ^ (row & 7); blocks in groups of 16 block rows. Grid (m / BM) * (n / BN).
#pragma once

#include "suite.cuh"

namespace variants {

template <int BM, int BN, int BK>
__device__ __forceinline__ int swz_a(int row, int c) {
  if constexpr (BK == 32) {
    return c ^ ((row >> 1) & 3);
  } else {
    static_assert(BK == 64, "BK is 32 or 64");
    return c ^ (row & 7);
  }
}

template <int BM, int BN, int BK, int STAGES>
constexpr int shared_bytes() {
  return STAGES * (BM * BK + BK * BN) * 2;
}

template <int BM, int BN, int BK, int STAGES>
__global__ void __launch_bounds__((BM / 64) * (BN / 64) * 32, 1)
    hgemm_tile(const __half* a, const __half* b, float* c, int m, int n, int k) {
  constexpr int kWarpsN = BN / 64, kThreads = (BM / 64) * kWarpsN * 32;
  constexpr int kStageA = BM * BK * 2, kStage = kStageA + BK * BN * 2;  // bytes
  constexpr int kACh = BK / 8, kBCh = BN / 8;  // 16-byte chunks a row
  constexpr int kAPieces = BM * kACh / kThreads, kBPieces = BK * kBCh / kThreads;
  constexpr int kSub = BK / 16, kGroup = 16;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned s0 = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  float acc[4][8][4];
  int t = threadIdx.x, lane = t % 32, warp = t / 32;
  int wm = warp / kWarpsN * 64, wn = warp % kWarpsN * 64;
  int gn = n / BN, gm = m / BM;
  int per_group = kGroup * gn;
  int first = blockIdx.x / per_group * kGroup;
  int rows = min(gm - first, kGroup);
  int inner = blockIdx.x % per_group;
  int row0 = (first + inner % rows) * BM, col0 = inner / rows * BN;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
  int ar = t / kACh, ac = t % kACh, br = t / kBCh, bc = t % kBCh;
  int sa = ar * BK * 2 + swz_a<BM, BN, BK>(ar, ac) * 16;
  int sb = kStageA + br * BN * 2 + (bc ^ (br & 7)) * 16;
  int ga = (row0 + ar) * k + ac * 8, gb = br * n + col0 + bc * 8;
  int lr = lane % 16, lh = lane / 16;
  int fa_off[kSub], fb_off[4];
#pragma unroll
  for (int s = 0; s < kSub; ++s) fa_off[s] = (wm + lr) * BK * 2 + swz_a<BM, BN, BK>(lr, 2 * s + lh) * 16;
#pragma unroll
  for (int j = 0; j < 4; ++j) fb_off[j] = kStageA + lr * BN * 2 + (wn / 8 + ((2 * j + lh) ^ (lr & 7))) * 16;
  int nk = k / BK;
  auto load_tile = [&](int kt) {
    unsigned st = s0 + (kt % STAGES) * kStage;
    int pa = ga + kt * BK;
#pragma unroll
    for (int i = 0; i < kAPieces; ++i)
      suite::cp_async16(st + sa + i * (kThreads / kACh) * BK * 2, a + pa + i * (kThreads / kACh) * k);
    int pb = gb + kt * BK * n;
#pragma unroll
    for (int i = 0; i < kBPieces; ++i)
      suite::cp_async16(st + sb + i * (kThreads / kBCh) * BN * 2, b + pb + i * (kThreads / kBCh) * n);
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) load_tile(s);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  for (int kt = 0; kt < nk; ++kt) {
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
    __syncthreads();
    if (kt + STAGES - 1 < nk) load_tile(kt + STAGES - 1);
    asm volatile("cp.async.commit_group;" ::: "memory");
    unsigned st = s0 + (kt % STAGES) * kStage;
    unsigned fa[2][4][4], fb[2][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) suite::ldmatrix_x4(fa[0][i], st + fa_off[0] + i * 16 * BK * 2);
#pragma unroll
    for (int j = 0; j < 4; ++j) suite::ldmatrix_x4_trans(fb[0][j], st + fb_off[j]);
#pragma unroll
    for (int s = 0; s < kSub; ++s) {
      if (s + 1 < kSub) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          suite::ldmatrix_x4(fa[(s + 1) % 2][i], st + fa_off[s + 1] + i * 16 * BK * 2);
#pragma unroll
        for (int j = 0; j < 4; ++j)
          suite::ldmatrix_x4_trans(fb[(s + 1) % 2][j], st + fb_off[j] + (s + 1) * 16 * BN * 2);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
          suite::mma_16816(acc[i][j], fa[s % 2][i], fb[s % 2][j / 2][j % 2 * 2],
                           fb[s % 2][j / 2][j % 2 * 2 + 1]);
    }
  }
  int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      int r = row0 + wm + i * 16 + g, col = col0 + wn + j * 8 + 2 * q;
      *reinterpret_cast<float2*>(c + r * n + col) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(c + (r + 8) * n + col) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
}

}  // namespace variants
