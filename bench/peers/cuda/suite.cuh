// suite.cuh: the benchmark kernels in CUDA C++, one for one with bench/kernels/*.py.
//
// Each kernel is the plain translation of its Python source: same launch shape, same
// algorithm, int indices (the dialect's int is 32-bit), no __restrict__ (the Python source
// carries no aliasing facts either). bench_cuda.cu includes this file and drives it.
#pragma once

#include <cuda/atomic>
#include <cuda/std/complex>
#include <cuda_fp16.h>

#include <cstdint>

namespace suite {

constexpr int kTransposeTile = 32;  // transpose_tiled: tile side
constexpr int kTransposeRows = 8;   // transpose_tiled: block_dim.y
constexpr int kReduceBlock = 256;   // reduce_block, reduce_warp: block_dim.x
constexpr int kMatmulTile = 16;     // matmul_tiled: tile side = block_dim.x = block_dim.y
constexpr int kScanBlock = 1024;    // scan_block: elements scanned per block = block_dim.x

__global__ void vector_add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

__global__ void saxpy(float alpha, const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}

// src is rows x cols, dst is cols x rows, both row-major.
__global__ void transpose_naive(const float* src, float* dst, int rows, int cols) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < rows && col < cols) dst[col * rows + row] = src[row * cols + col];
}

// Block (32, 8); rows and cols multiples of 32.
__global__ void transpose_tiled(const float* src, float* dst, int rows, int cols) {
  __shared__ float tile[kTransposeTile][kTransposeTile + 1];
  int tx = threadIdx.x, ty = threadIdx.y;

  int col = blockIdx.x * kTransposeTile + tx;
  int row0 = blockIdx.y * kTransposeTile;
  for (int k = 0; k < kTransposeTile; k += kTransposeRows)
    tile[ty + k][tx] = src[(row0 + ty + k) * cols + col];
  __syncthreads();

  col = blockIdx.y * kTransposeTile + tx;
  row0 = blockIdx.x * kTransposeTile;
  for (int k = 0; k < kTransposeTile; k += kTransposeRows)
    dst[(row0 + ty + k) * rows + col] = tile[tx][ty + k];
}

// Block kReduceBlock; *out must be 0 before the launch.
__global__ void reduce_block(const float* x, float* out, int n) {
  __shared__ float partial[kReduceBlock];
  int t = threadIdx.x;

  float acc = 0.0f;
  for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) acc += x[i];
  partial[t] = acc;
  __syncthreads();

  for (int stride = kReduceBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) atomicAdd(out, partial[0]);
}

// Block kReduceBlock; *out must be 0 before the launch.
__global__ void reduce_warp(const float* x, float* out, int n) {
  constexpr int kWarps = kReduceBlock / 32;
  __shared__ float warp_sums[kWarps];
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;

  float acc = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    acc += x[i];
  for (int delta = 16; delta > 0; delta /= 2) acc += __shfl_down_sync(0xFFFFFFFFu, acc, delta);
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();

  if (warp == 0) {
    acc = lane < kWarps ? warp_sums[lane] : 0.0f;
    for (int delta = kWarps / 2; delta > 0; delta /= 2)
      acc += __shfl_down_sync(0xFFFFFFFFu, acc, delta);
    if (lane == 0) atomicAdd(out, acc);
  }
}

// 256 bins; bins must be 0 before the launch.
__global__ void histogram(const uint8_t* data, int* bins, int n) {
  __shared__ int local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();

  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i]], 1);
  __syncthreads();

  for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

__global__ void stencil5(const float* u, float* out, int rows, int cols) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < rows && j < cols) {
    if (i > 0 && i < rows - 1 && j > 0 && j < cols - 1)
      out[i * cols + j] = 0.5f * u[i * cols + j] + 0.125f * (u[(i - 1) * cols + j] +
                                                             u[(i + 1) * cols + j] +
                                                             u[i * cols + j - 1] +
                                                             u[i * cols + j + 1]);
    else
      out[i * cols + j] = u[i * cols + j];
  }
}

// Square n x n matrices, n a multiple of kMatmulTile; block (16, 16).
__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float sa[kMatmulTile][kMatmulTile];
  __shared__ float sb[kMatmulTile][kMatmulTile];
  int tx = threadIdx.x, ty = threadIdx.y;
  int col = blockIdx.x * kMatmulTile + tx;
  int row = blockIdx.y * kMatmulTile + ty;

  float acc = 0.0f;
  for (int t = 0; t < n; t += kMatmulTile) {
    sa[ty][tx] = a[row * n + t + tx];
    sb[ty][tx] = b[(t + ty) * n + col];
    __syncthreads();
    for (int k = 0; k < kMatmulTile; ++k) acc += sa[ty][k] * sb[k][tx];
    __syncthreads();
  }
  c[row * n + col] = acc;
}

// Inclusive scan of each run of kScanBlock elements (no carry between blocks);
// block kScanBlock, n a multiple of kScanBlock.
__global__ void scan_block(const int* x, int* out) {
  __shared__ int buf[kScanBlock];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;

  int v = x[i];
  buf[t] = v;
  __syncthreads();
  for (int offset = 1; offset < kScanBlock; offset *= 2) {
    if (t >= offset) v += buf[t - offset];
    __syncthreads();
    buf[t] = v;
    __syncthreads();
  }
  out[i] = v;
}

__global__ void math_f64(const double* x, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double v = x[i];
    out[i] = exp(v) * sin(v) + sqrt(fabs(v));
  }
}

__global__ void bits_u32(const uint32_t* x, uint32_t* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    uint32_t h = x[i];
    for (int r = 0; r < 4; ++r) {
      h ^= h << 13;
      h ^= h >> 17;
      h ^= h << 5;
    }
    out[i] = __brev(h) ^ static_cast<uint32_t>(__popc(x[i]));
  }
}

// ---- the second set (issue 21) ----------------------------------------------------------

constexpr int kSoftmaxBlock = 256;  // softmax_rows: threads a row
constexpr float kLayernormEps = 1e-5f;
constexpr int kNbodyBlock = 128;  // nbody: block_dim.x = shared tile of positions
constexpr float kNbodyEps2 = 0.01f;
constexpr int kGemmBm = 128, kGemmBk = 8, kGemmTm = 8;  // sgemm_reg tiles
constexpr int kMandelMaxit = 256;
constexpr float kMandelX0 = -2.0f, kMandelY0 = -1.25f;
constexpr float kMandelDx = 2.5f / 4096, kMandelDy = 2.5f / 4096;
constexpr int kConvK = 5, kConvR = 2, kConvTile = 32, kConvRows = 8, kConvSide = 36;
constexpr int kSortSeg = 2048, kSortHalf = 1024;
constexpr float kFftAngle = -1.5707963267948966f;  // -2*pi/4
constexpr int kScanBlock2 = 256, kScanItems = 8, kScanTile = 2048, kScanPadded = 2112;

// One block of 256 a row: row max, then sum of exponentials, each by xor shuffles and
// across the 8 warps through shared memory (llm.c's softmax_forward form).
__global__ void softmax_rows(const float* x, float* out, int cols) {
  constexpr int kWarps = kSoftmaxBlock / 32;
  __shared__ float partial[kWarps];
  int row = blockIdx.x, t = threadIdx.x, lane = t % 32, warp = t / 32;
  const float* xr = x + size_t(row) * cols;
  float m = -INFINITY;
  for (int j = t; j < cols; j += kSoftmaxBlock) m = fmaxf(m, xr[j]);
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
  if (lane == 0) partial[warp] = m;
  __syncthreads();
  m = partial[0];
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, partial[w]);
  __syncthreads();
  float s = 0.0f;
  for (int j = t; j < cols; j += kSoftmaxBlock) s += expf(xr[j] - m);
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, off);
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  s = partial[0];
  for (int w = 1; w < kWarps; ++w) s += partial[w];
  float inv = 1.0f / s;
  for (int j = t; j < cols; j += kSoftmaxBlock) out[size_t(row) * cols + j] = expf(xr[j] - m) * inv;
}

// One warp a row (llm.c's layernorm_forward_kernel3, without cooperative groups).
__global__ void layernorm(const float* x, const float* w, const float* b, float* out,
                          float* mean, float* rstd, int rows, int cols) {
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + size_t(row) * cols;
  float s = 0.0f;
  for (int j = lane; j < cols; j += 32) s += xr[j];
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, off);
  float m = s / float(cols);
  float v = 0.0f;
  for (int j = lane; j < cols; j += 32) {
    float d = xr[j] - m;
    v += d * d;
  }
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
  float r = 1.0f / sqrtf(v / float(cols) + kLayernormEps);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
  for (int j = lane; j < cols; j += 32) out[size_t(row) * cols + j] = (xr[j] - m) * r * w[j] + b[j];
}

// softmax_1pass: softmax_rows's result reading x once (bench/kernels/softmax_1pass.py):
// one block of 256 a row, each thread's kSoftmaxChunks float4 of the row (t + 256 * c) held
// in registers; the maximum and then the sum of the exponentials, computed once and kept,
// folded by xor shuffles and across the warps through two shared arrays (two barriers).
// cols a multiple of 4, at most 256 * 4 * kSoftmaxChunks.
constexpr int kSoftmaxChunks = 2;
__global__ void softmax_1pass(const float* x, float* out, int cols) {
  constexpr int kWarps = kSoftmaxBlock / 32;
  __shared__ float maxima[kWarps], sums[kWarps];
  int row = blockIdx.x, t = threadIdx.x, lane = t % 32, warp = t / 32;
  const float4* xr = reinterpret_cast<const float4*>(x + size_t(row) * cols);
  float4* yr = reinterpret_cast<float4*>(out + size_t(row) * cols);
  int n4 = cols / 4;
  float4 v[kSoftmaxChunks];
#pragma unroll
  for (int c = 0; c < kSoftmaxChunks; ++c) {
    int j = t + kSoftmaxBlock * c;
    v[c] = j < n4 ? xr[j] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
  }
  float m = -INFINITY;
#pragma unroll
  for (int c = 0; c < kSoftmaxChunks; ++c)
    m = fmaxf(m, fmaxf(fmaxf(v[c].x, v[c].y), fmaxf(v[c].z, v[c].w)));
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
  if (lane == 0) maxima[warp] = m;
  __syncthreads();
  m = maxima[0];
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, maxima[w]);
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kSoftmaxChunks; ++c) {  // expf(-inf - m) = 0 past the end of the row
    float4 p = make_float4(expf(v[c].x - m), expf(v[c].y - m), expf(v[c].z - m),
                           expf(v[c].w - m));
    v[c] = p;
    s += (p.x + p.y) + (p.z + p.w);
  }
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, off);
  if (lane == 0) sums[warp] = s;
  __syncthreads();
  s = sums[0];
  for (int w = 1; w < kWarps; ++w) s += sums[w];
  float inv = 1.0f / s;
#pragma unroll
  for (int c = 0; c < kSoftmaxChunks; ++c) {
    int j = t + kSoftmaxBlock * c;
    if (j < n4) yr[j] = make_float4(v[c].x * inv, v[c].y * inv, v[c].z * inv, v[c].w * inv);
  }
}

// layernorm_1pass: layernorm's outputs reading x once (bench/kernels/layernorm_1pass.py):
// one warp a row, each lane's kLayernormChunks float4 of the row (lane + 32 * c) held in
// registers; sum, then squared differences from the mean over the registers, each folded by
// xor shuffles; w, b and out as float4. cols a multiple of 4, at most 32 * 4 * kLayernormChunks.
constexpr int kLayernormChunks = 8;
__global__ void layernorm_1pass(const float* x, const float* w, const float* b, float* out,
                                float* mean, float* rstd, int rows, int cols) {
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float4* xr = reinterpret_cast<const float4*>(x + size_t(row) * cols);
  float4* yr = reinterpret_cast<float4*>(out + size_t(row) * cols);
  const float4* w4 = reinterpret_cast<const float4*>(w);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  int n4 = cols / 4;
  float4 v[kLayernormChunks];
#pragma unroll
  for (int c = 0; c < kLayernormChunks; ++c) {
    int j = lane + 32 * c;
    v[c] = j < n4 ? xr[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kLayernormChunks; ++c) s += (v[c].x + v[c].y) + (v[c].z + v[c].w);
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, off);
  float m = s / float(cols);
  float q = 0.0f;
#pragma unroll
  for (int c = 0; c < kLayernormChunks; ++c) {
    if (lane + 32 * c < n4) {
      float dx = v[c].x - m, dy = v[c].y - m, dz = v[c].z - m, dw = v[c].w - m;
      q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
    }
  }
  for (int off = 16; off > 0; off /= 2) q += __shfl_xor_sync(0xFFFFFFFFu, q, off);
  float r = 1.0f / sqrtf(q / float(cols) + kLayernormEps);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
#pragma unroll
  for (int c = 0; c < kLayernormChunks; ++c) {
    int j = lane + 32 * c;
    if (j < n4) {
      float4 e = v[c], g = w4[j], h = b4[j];
      yr[j] = make_float4((e.x - m) * r * g.x + h.x, (e.y - m) * r * g.y + h.y,
                          (e.z - m) * r * g.z + h.z, (e.w - m) * r * g.w + h.w);
    }
  }
}

// All pairs, positions staged in a shared tile of float4; rsqrtf. n a multiple of kNbodyBlock.
__global__ void nbody(const float4* pos, float* acc, int n) {
  __shared__ float4 tile[kNbodyBlock];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  float4 me = pos[i];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (int base = 0; base < n; base += kNbodyBlock) {
    tile[t] = pos[base + t];
    __syncthreads();
    for (int k = 0; k < kNbodyBlock; ++k) {
      float4 p = tile[k];
      float dx = p.x - me.x, dy = p.y - me.y, dz = p.z - me.z;
      float d2 = dx * dx + dy * dy + dz * dz + kNbodyEps2;
      float inv = rsqrtf(d2);
      float s = p.w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    __syncthreads();
  }
  acc[3 * i] = ax;
  acc[3 * i + 1] = ay;
  acc[3 * i + 2] = az;
}

// hgemm_mma: c = a @ b, a and b __half row-major (m x k, k x n), c float; the algorithm of
// bench/kernels/hgemm_mma.py, hgemm_body with the kHg* constants. Each block of
// (BM / 64) x (BN / 64) warps computes a BM x BN tile of c in steps of BK along k; each warp
// a 64 x 64 sub-tile, 4 x 8 mma.sync m16n8k16 tiles in registers. The a (BM x BK) and b
// (BK x BN) tiles of STAGES - 1 k steps ahead are in flight: a cp.async pipeline (one commit
// group and one barrier a k step) in dynamic shared memory. Shared rows are XOR-swizzled by
// 16-byte chunk so that both the cp.async stores and the ldmatrix.x4 reads are free of bank
// conflicts: a rows put chunk c at c ^ ((row >> 1) & 3) (BK 32: 64-byte rows) or c ^ (row & 7)
// (BK 64), b rows at c ^ (row & 7). The fragments of the next 16-wide k sub-step load while
// the current one multiplies. EARLY places the wait and barrier before the last sub-step's
// multiplies, so that the next k step's first fragments load while they run (CUTLASS's
// multistage order); else they open each k step. Blocks are numbered in groups of 16 block
// rows (column by column inside a group) so that the blocks resident at once share their a
// and b tiles in L2. The epilogue stores float2 pairs. Block (kHgThreads), grid
// ((m / BM) * (n / BN)), kHgShared bytes; m, n and k multiples of BM, BN and BK.
constexpr int kHgBm = 128, kHgBn = 128, kHgBk = 32, kHgStages = 4;  // H100: 323 us (session 16)
constexpr bool kHgEarly = false;  // the barrier's place in the k loop (hgemm_body)
constexpr int kHgThreads = (kHgBm / 64) * (kHgBn / 64) * 32;
constexpr int kHgShared = kHgStages * (kHgBm * kHgBk + kHgBk * kHgBn) * 2;  // bytes

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}

template <int BM, int BN, int BK>
__device__ __forceinline__ int swz_a(int row, int c) {
  if constexpr (BK == 32) {
    return c ^ ((row >> 1) & 3);
  } else {
    static_assert(BK == 64, "BK is 32 or 64");
    return c ^ (row & 7);
  }
}

template <int BM, int BN, int BK, int STAGES, bool EARLY>
__device__ __forceinline__ void hgemm_body(const __half* a, const __half* b, float* c, int m,
                                           int n, int k) {
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
      cp_async16(st + sa + i * (kThreads / kACh) * BK * 2, a + pa + i * (kThreads / kACh) * k);
    int pb = gb + kt * BK * n;
#pragma unroll
    for (int i = 0; i < kBPieces; ++i)
      cp_async16(st + sb + i * (kThreads / kBCh) * BN * 2, b + pb + i * (kThreads / kBCh) * n);
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) load_tile(s);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  unsigned fa[2][4][4], fb[2][4][4];
  auto load_frags = [&](int buf, unsigned st, int s) {
#pragma unroll
    for (int i = 0; i < 4; ++i) ldmatrix_x4(fa[buf][i], st + fa_off[s] + i * 16 * BK * 2);
#pragma unroll
    for (int j = 0; j < 4; ++j) ldmatrix_x4_trans(fb[buf][j], st + fb_off[j] + s * 16 * BN * 2);
  };
  auto mma_all = [&](int buf) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
        mma_16816(acc[i][j], fa[buf][i], fb[buf][j / 2][j % 2 * 2], fb[buf][j / 2][j % 2 * 2 + 1]);
  };
  if constexpr (!EARLY) {
    // hgemm_mma's order: wait and barrier at the top of each k step, then its fragments.
    for (int kt = 0; kt < nk; ++kt) {
      asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
      __syncthreads();
      if (kt + STAGES - 1 < nk) load_tile(kt + STAGES - 1);
      asm volatile("cp.async.commit_group;" ::: "memory");
      unsigned st = s0 + (kt % STAGES) * kStage;
      load_frags(0, st, 0);
#pragma unroll
      for (int s = 0; s < kSub; ++s) {
        if (s + 1 < kSub) load_frags((s + 1) % 2, st, s + 1);
        mma_all(s % 2);
      }
    }
  } else {
    // CUTLASS's multistage order: the wait and barrier come before the last sub-step's
    // multiplies, whose fragments are already in registers, and the next k step's first
    // fragments load while they run; the copies of a k step are issued at its start (the
    // stage they fill was last read before the previous barrier).
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
    __syncthreads();
    load_frags(0, s0, 0);
    for (int kt = 0; kt < nk; ++kt) {
      if (kt + STAGES - 1 < nk) load_tile(kt + STAGES - 1);
      asm volatile("cp.async.commit_group;" ::: "memory");
      unsigned st = s0 + (kt % STAGES) * kStage;
#pragma unroll
      for (int s = 0; s < kSub; ++s) {
        if (s + 1 < kSub) {
          load_frags((s + 1) % 2, st, s + 1);
        } else if (kt + 1 < nk) {
          asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
          __syncthreads();
          load_frags((s + 1) % 2, s0 + ((kt + 1) % STAGES) * kStage, 0);
        }
        mma_all(s % 2);
      }
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


__global__ void __launch_bounds__(kHgThreads, 1) hgemm_mma(const __half* a, const __half* b,
                                                           float* c, int m, int n, int k) {
  hgemm_body<kHgBm, kHgBn, kHgBk, kHgStages, kHgEarly>(a, b, c, m, n, k);
}

// 128 x 128 tile a block, 8 x 8 a thread in registers; block (16, 16); n a multiple of 128.
__global__ void sgemm_reg(const float* a, const float* b, float* c, int n) {
  __shared__ __align__(16) float sa[kGemmBk][kGemmBm];
  __shared__ __align__(16) float sb[kGemmBk][kGemmBm];
  float acc[kGemmTm][kGemmTm], ra[kGemmTm], rb[kGemmTm];
  int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
  int row0 = blockIdx.y * kGemmBm, col0 = blockIdx.x * kGemmBm;
  for (int m = 0; m < kGemmTm; ++m)
    for (int q = 0; q < kGemmTm; ++q) acc[m][q] = 0.0f;
  for (int k0 = 0; k0 < n; k0 += kGemmBk) {
    for (int l = 0; l < 4; ++l) {
      int e = t + l * 256;
      sa[e % kGemmBk][e / kGemmBk] = a[(row0 + e / kGemmBk) * n + k0 + e % kGemmBk];
      sb[e / kGemmBm][e % kGemmBm] = b[(k0 + e / kGemmBm) * n + col0 + e % kGemmBm];
    }
    __syncthreads();
    for (int k = 0; k < kGemmBk; ++k) {
      for (int m = 0; m < kGemmTm; ++m) ra[m] = sa[k][ty * kGemmTm + m];
      for (int q = 0; q < kGemmTm; ++q) rb[q] = sb[k][tx * kGemmTm + q];
      for (int m = 0; m < kGemmTm; ++m)
        for (int q = 0; q < kGemmTm; ++q) acc[m][q] += ra[m] * rb[q];
    }
    __syncthreads();
  }
  for (int m = 0; m < kGemmTm; ++m)
    for (int q = 0; q < kGemmTm; ++q)
      c[(row0 + ty * kGemmTm + m) * n + col0 + tx * kGemmTm + q] = acc[m][q];
}

// One warp a row ("vector CSR").
__global__ void spmv_csr(const int* indptr, const int* indices, const float* data, const float* x,
                         float* y, int rows) {
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0.0f;
  for (int k = indptr[row] + lane; k < indptr[row + 1]; k += 32) s += data[k] * x[indices[k]];
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, off);
  if (lane == 0) y[row] = s;
}

__global__ void mandelbrot(int* out, int h, int w) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < h && j < w) {
    float cx = kMandelX0 + float(j) * kMandelDx, cy = kMandelY0 + float(i) * kMandelDy;
    float x = 0.0f, y = 0.0f;
    int it = 0;
    while (it < kMandelMaxit) {
      float x2 = x * x, y2 = y * y;
      if (x2 + y2 > 4.0f) break;
      y = 2.0f * x * y + cy;
      x = x2 - y2 + cx;
      ++it;
    }
    out[i * w + j] = it;
  }
}

// 32 x 32 outputs a block from a 36 x 36 shared tile with halo; block (32, 8).
__global__ void conv2d(const float* img, const float* w, float* out, int h, int wd) {
  __shared__ float tile[kConvSide][kConvSide];
  __shared__ float ws[kConvK][kConvK];
  int tx = threadIdx.x, ty = threadIdx.y;
  int x0 = blockIdx.x * kConvTile, y0 = blockIdx.y * kConvTile;
  int t = ty * kConvTile + tx;
  if (t < kConvK * kConvK) ws[t / kConvK][t % kConvK] = w[t];
  for (int yy = ty; yy < kConvSide; yy += kConvRows)
    for (int xx = tx; xx < kConvSide; xx += kConvTile) {
      int gy = y0 + yy - kConvR, gx = x0 + xx - kConvR;
      float v = 0.0f;
      if (gy >= 0 && gy < h && gx >= 0 && gx < wd) v = img[gy * wd + gx];
      tile[yy][xx] = v;
    }
  __syncthreads();
  for (int r = 0; r < kConvTile; r += kConvRows) {
    float acc = 0.0f;
    for (int ky = 0; ky < kConvK; ++ky)
      for (int kx = 0; kx < kConvK; ++kx) acc += ws[ky][kx] * tile[ty + r + ky][tx + kx];
    out[(y0 + ty + r) * wd + x0 + tx] = acc;
  }
}

// Sorts each run of 2048 keys; block 1024.
__global__ void bitonic_sort(const uint32_t* keys, uint32_t* out) {
  __shared__ uint32_t s[kSortSeg];
  int t = threadIdx.x, base = blockIdx.x * kSortSeg;
  s[t] = keys[base + t];
  s[t + kSortHalf] = keys[base + t + kSortHalf];
  __syncthreads();
  for (int k = 2; k <= kSortSeg; k *= 2)
    for (int j = k / 2; j > 0; j /= 2) {
      int i = 2 * t - (t & (j - 1));
      uint32_t a = s[i], b = s[i + j];
      bool up = (i & k) == 0;
      if ((a > b) == up) {
        s[i] = b;
        s[i + j] = a;
      }
      __syncthreads();
    }
  out[base + t] = s[t];
  out[base + t + kSortHalf] = s[t + kSortHalf];
}

// One radix-4 Stockham stage; n/4 threads.
__global__ void fft_radix4(const cuda::std::complex<float>* x, cuda::std::complex<float>* y, int n,
                           int ns) {
  using C = cuda::std::complex<float>;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int q = n / 4;
  if (j < q) {
    int k = j % ns;
    float ang = kFftAngle * float(k) / float(ns);
    C v0 = x[j];
    C v1 = x[j + q] * C(cosf(ang), sinf(ang));
    C v2 = x[j + 2 * q] * C(cosf(2.0f * ang), sinf(2.0f * ang));
    C v3 = x[j + 3 * q] * C(cosf(3.0f * ang), sinf(3.0f * ang));
    C a0 = v0 + v2, a1 = v0 - v2, a2 = v1 + v3, d = v1 - v3;
    C a3(d.imag(), -d.real());
    int o = (j / ns) * ns * 4 + k;
    y[o] = a0 + a2;
    y[o + ns] = a1 + a3;
    y[o + 2 * ns] = a0 - a2;
    y[o + 3 * ns] = a1 - a3;
  }
}

// exp's degree-8 Taylor polynomial by Horner, two elements a thread as one __half2.
__global__ void half2_poly(const __half2* x, __half2* out, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) {
    __half2 v = x[i];
    __half2 r = __float2half2_rn(1.0f / 40320);
    r = __hfma2(r, v, __float2half2_rn(1.0f / 5040));
    r = __hfma2(r, v, __float2half2_rn(1.0f / 720));
    r = __hfma2(r, v, __float2half2_rn(1.0f / 120));
    r = __hfma2(r, v, __float2half2_rn(1.0f / 24));
    r = __hfma2(r, v, __float2half2_rn(1.0f / 6));
    r = __hfma2(r, v, __float2half2_rn(0.5f));
    r = __hfma2(r, v, __float2half2_rn(1.0f));
    r = __hfma2(r, v, __float2half2_rn(1.0f));
    out[i] = r;
  }
}

// Single-pass inclusive scan with decoupled look-back (see bench/kernels/scan_lookback.py).
__global__ void scan_lookback(const int* x, int* out, unsigned long long* status, unsigned* state) {
  using Ref = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;
  constexpr int kWarps = kScanBlock2 / 32;
  __shared__ int buf[kScanPadded];
  __shared__ int sums[kWarps];
  __shared__ int carry;
  int t = threadIdx.x, lane = t % 32, warp = t / 32, tile = blockIdx.x;
  int base = tile * kScanTile;
  for (int k = 0; k < kScanItems; ++k) {
    int e = k * kScanBlock2 + t;
    buf[e + e / 32] = x[base + e];
  }
  __syncthreads();
  int own = 0;
  for (int k = 0; k < kScanItems; ++k) {
    int e = t * kScanItems + k;
    own += buf[e + e / 32];
  }
  int v = own;
  for (int d = 1; d < 32; d *= 2) {
    int up = __shfl_up_sync(0xFFFFFFFFu, v, d);
    if (lane >= d) v += up;
  }
  if (lane == 31) sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int w = lane < kWarps ? sums[lane] : 0;
    for (int d = 1; d < kWarps; d *= 2) {
      int up = __shfl_up_sync(0xFFFFFFFFu, w, d);
      if (lane >= d) w += up;
    }
    if (lane < kWarps) sums[lane] = w;
  }
  __syncthreads();
  int before = v - own;
  if (warp > 0) before += sums[warp - 1];
  unsigned epoch = 0;
  if (t == 0) {
    int total = sums[kWarps - 1];
    epoch = state[0];
    unsigned long long aggregate = 2ull * epoch + 1, inclusive = 2ull * epoch + 2;
    int prefix = 0;
    if (tile > 0) {
      Ref(status[tile]).store((aggregate << 32) | unsigned(total), cuda::memory_order_relaxed);
      for (int j = tile - 1;;) {
        unsigned long long word = Ref(status[j]).load(cuda::memory_order_relaxed);
        unsigned long long flag = word >> 32;
        if (flag == inclusive) {
          prefix += int(word & 0xFFFFFFFFull);
          break;
        }
        if (flag == aggregate) {
          prefix += int(word & 0xFFFFFFFFull);
          --j;
        }
      }
    }
    Ref(status[tile]).store((inclusive << 32) | unsigned(prefix + total),
                            cuda::memory_order_relaxed);
    carry = prefix;
  }
  __syncthreads();
  int run = carry + before;
  for (int k = 0; k < kScanItems; ++k) {
    int e = t * kScanItems + k;
    run += buf[e + e / 32];
    buf[e + e / 32] = run;
  }
  __syncthreads();
  for (int k = 0; k < kScanItems; ++k) {
    int e = k * kScanBlock2 + t;
    out[base + e] = buf[e + e / 32];
  }
  if (t == 0) {
    unsigned done = atomicAdd(&state[1], 1u);
    if (done == gridDim.x - 1) {
      state[1] = 0;
      state[0] = epoch + 1;
    }
  }
}

// For the launch-overhead measurement: one pointer argument, no work.
__global__ void empty_kernel(float*) {}

}  // namespace suite
