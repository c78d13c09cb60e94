// hgemm_variants.cuh: shape experiments around suite::hgemm_mma, for choosing its tiles on
// the H100 (bench/NOTES.md, session 16). Not a peer of any dialect kernel: bench_cuda.cu
// times them after hgemm_mma and prints their lines with a "target" naming the shape, which
// report.py leaves out of its tables.
//
// hgemm_tile<BM, BN, BK, STAGES, EARLY>: suite::hgemm_body (hgemm_mma's algorithm) with other
// block tiles, k steps, pipeline depths and barrier places. Grid (m / BM) * (n / BN).
#pragma once

#include "suite.cuh"

namespace variants {

template <int BM, int BN, int BK, int STAGES>
constexpr int shared_bytes() {
  return STAGES * (BM * BK + BK * BN) * 2;
}

template <int BM, int BN, int BK, int STAGES, bool EARLY>
__global__ void __launch_bounds__((BM / 64) * (BN / 64) * 32, 1)
    hgemm_tile(const __half* a, const __half* b, float* c, int m, int n, int k) {
  suite::hgemm_body<BM, BN, BK, STAGES, EARLY>(a, b, c, m, n, k);
}

}  // namespace variants
