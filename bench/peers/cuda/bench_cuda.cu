// bench_cuda.cu: the CUDA C++ peer of the pydevice kernel benchmark (see bench/README.md).
//
// For each kernel of suite.cuh: make inputs on the host, run once into poisoned (or zeroed)
// outputs and check them against a CPU reference, then 5 untimed launches and 50 launches
// queued back to back with a CUDA event between each two; print the median interval as
// one JSON line. Also a
// device-to-device cudaMemcpy (the bandwidth ceiling) and the host time of one asynchronous
// cuLaunchKernel of an empty kernel. Sizes and launch shapes match bench/cases.py.
//
// Build: nvcc -O3 -arch=sm_90 -o bench_cuda bench_cuda.cu -lcuda
// Run:   ./bench_cuda [kernel ...]     (no names: everything; progress goes to stderr)

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "hgemm_variants.cuh"
#include "suite.cuh"

namespace {

constexpr int kWarmup = 5;
constexpr int kRuns = 50;
constexpr int kN1 = 1 << 26;       // 1-D kernels
constexpr int kN2 = 8192;          // side of the 2-D grids
constexpr int kNmm = 2048;         // matmul side
constexpr int kNhist = 1 << 27;    // histogram bytes
constexpr int kGridStride = 1056;  // grid of the grid-stride kernels: 8 blocks x 132 SMs

void check_cuda(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "bench_cuda.cu:%d: %s: %s\n", line, what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void check_cu(CUresult e, const char* what, int line) {
  if (e != CUDA_SUCCESS) {
    const char* msg = nullptr;
    cuGetErrorString(e, &msg);
    std::fprintf(stderr, "bench_cuda.cu:%d: %s: %s\n", line, what, msg ? msg : "?");
    std::exit(1);
  }
}
#define CK(call) check_cuda((call), #call, __LINE__)
#define CKD(call) check_cu((call), #call, __LINE__)

// A device buffer of n elements of T.
template <class T>
struct DevBuf {
  T* p = nullptr;
  size_t n;
  explicit DevBuf(size_t count) : n(count) { CK(cudaMalloc(&p, n * sizeof(T))); }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  size_t bytes() const { return n * sizeof(T); }
  void upload(const std::vector<T>& h) {
    CK(cudaMemcpy(p, h.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    CK(cudaMemcpy(h.data(), p, bytes(), cudaMemcpyDeviceToHost));
    return h;
  }
  void poison() { CK(cudaMemset(p, 0xFF, bytes())); }  // NaN for floats, -1 for ints
  void zero() { CK(cudaMemset(p, 0, bytes())); }
};

// splitmix64: a small, fast, seeded generator for the inputs.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * 0x1p-24f; }  // [0, 1)
};

std::vector<float> uniform_f32(size_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = r.uniform();
  return v;
}

bool near(double got, double want, double rtol, double atol) {
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);  // false for NaN
}

struct Timing {
  double median_us, min_us;
};

// (median, min) us of kRuns launches. After kWarmup launches, left in flight, the timed
// launches are queued back to back with an event between each two, and each launch's time
// is the interval between its two events: the GPU never waits for the host, so the host's
// cost of launching stays out of the numbers.
Timing time_launches(const std::function<void()>& launch) {
  for (int i = 0; i < kWarmup; ++i) launch();
  std::vector<cudaEvent_t> events(kRuns + 1);
  for (auto& e : events) CK(cudaEventCreate(&e));
  CK(cudaEventRecord(events[0]));
  for (int i = 1; i <= kRuns; ++i) {
    launch();
    CK(cudaEventRecord(events[i]));
  }
  CK(cudaEventSynchronize(events[kRuns]));
  CK(cudaGetLastError());
  std::vector<double> us;
  for (int i = 1; i <= kRuns; ++i) {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, events[i - 1], events[i]));
    us.push_back(1e3 * ms);
  }
  for (auto& e : events) CK(cudaEventDestroy(e));
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front()};
}

// Launch once, synchronize, and surface any launch or execution error.
void run_once(const std::function<void()>& launch) {
  launch();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
}

void emit(const char* kernel, Timing t, double bytes, bool ok, double flops = 0) {
  std::printf("{\"impl\":\"nvcc\",\"kernel\":\"%s\",\"median_us\":%.2f,\"min_us\":%.2f,"
              "\"gbps\":%.1f,\"ok\":%s",
              kernel, t.median_us, t.min_us, bytes / (t.median_us * 1e3), ok ? "true" : "false");
  if (flops > 0) std::printf(",\"gflops\":%.1f", flops / (t.median_us * 1e3));
  std::printf("}\n");
  std::fflush(stdout);
}

// ---- the cases --------------------------------------------------------------------------

void bench_vector_add() {
  const int n = kN1;
  auto a = uniform_f32(n, 1), b = uniform_f32(n, 2);
  DevBuf<float> da(n), db(n), dout(n);
  da.upload(a);
  db.upload(b);
  dout.poison();
  auto launch = [&] { suite::vector_add<<<n / 256, 256>>>(da.p, db.p, dout.p, n); };
  run_once(launch);
  auto out = dout.download();
  bool ok = true;
  for (int i = 0; i < n && ok; ++i) ok = out[i] == a[i] + b[i];
  emit("vector_add", time_launches(launch), 12.0 * n, ok);
}

void bench_saxpy() {
  const int n = kN1;
  const float alpha = 2.5f;
  auto x = uniform_f32(n, 3), y = uniform_f32(n, 4);
  DevBuf<float> dx(n), dy(n), dout(n);
  dx.upload(x);
  dy.upload(y);
  dout.poison();
  auto launch = [&] { suite::saxpy<<<n / 256, 256>>>(alpha, dx.p, dy.p, dout.p, n); };
  run_once(launch);
  auto out = dout.download();
  bool ok = true;
  for (int i = 0; i < n && ok; ++i) ok = near(out[i], double(alpha) * x[i] + y[i], 1e-6, 1e-6);
  emit("saxpy", time_launches(launch), 12.0 * n, ok);
}

void bench_transpose(const char* name, bool tiled) {
  const int rows = kN2, cols = kN2;
  auto src = uniform_f32(size_t(rows) * cols, 5);
  DevBuf<float> dsrc(src.size()), ddst(src.size());
  dsrc.upload(src);
  ddst.poison();
  std::function<void()> launch;
  if (tiled)
    launch = [&] {
      suite::transpose_tiled<<<dim3(cols / 32, rows / 32), dim3(32, 8)>>>(dsrc.p, ddst.p, rows,
                                                                          cols);
    };
  else
    launch = [&] {
      suite::transpose_naive<<<dim3(cols / 32, rows / 8), dim3(32, 8)>>>(dsrc.p, ddst.p, rows,
                                                                         cols);
    };
  run_once(launch);
  auto dst = ddst.download();
  bool ok = true;
  for (size_t r = 0; r < size_t(rows) && ok; ++r)
    for (size_t c = 0; c < size_t(cols) && ok; ++c) ok = dst[c * rows + r] == src[r * cols + c];
  emit(name, time_launches(launch), 8.0 * rows * cols, ok);
}

void bench_reduce(const char* name, bool warp) {
  const int n = kN1;
  auto x = uniform_f32(n, 6);
  DevBuf<float> dx(n), dout(1);
  dx.upload(x);
  dout.zero();
  auto launch = [&] {
    if (warp)
      suite::reduce_warp<<<kGridStride, 256>>>(dx.p, dout.p, n);
    else
      suite::reduce_block<<<kGridStride, 256>>>(dx.p, dout.p, n);
  };
  run_once(launch);
  double want = 0;
  for (float v : x) want += v;
  bool ok = near(dout.download()[0], want, 1e-4, 0);
  emit(name, time_launches(launch), 4.0 * n, ok);  // later runs keep accumulating: harmless
}

void bench_histogram() {
  const int n = kNhist;
  std::vector<uint8_t> data(n);
  Rng r(7);
  for (auto& v : data) v = static_cast<uint8_t>(r.next() >> 56);
  DevBuf<uint8_t> ddata(n);
  DevBuf<int> dbins(256);
  ddata.upload(data);
  dbins.zero();
  auto launch = [&] { suite::histogram<<<kGridStride, 256>>>(ddata.p, dbins.p, n); };
  run_once(launch);
  std::vector<int> want(256, 0);
  for (uint8_t v : data) ++want[v];
  bool ok = dbins.download() == want;
  emit("histogram", time_launches(launch), 1.0 * n, ok);
}

void bench_stencil5() {
  const int rows = kN2, cols = kN2;
  auto u = uniform_f32(size_t(rows) * cols, 8);
  DevBuf<float> du(u.size()), dout(u.size());
  du.upload(u);
  dout.poison();
  auto launch = [&] {
    suite::stencil5<<<dim3(cols / 32, rows / 8), dim3(32, 8)>>>(du.p, dout.p, rows, cols);
  };
  run_once(launch);
  auto out = dout.download();
  bool ok = true;
  for (size_t i = 0; i < size_t(rows) && ok; ++i)
    for (size_t j = 0; j < size_t(cols) && ok; ++j) {
      size_t k = i * cols + j;
      bool interior = i > 0 && i < size_t(rows) - 1 && j > 0 && j < size_t(cols) - 1;
      double want = interior ? 0.5 * u[k] + 0.125 * (double(u[k - cols]) + u[k + cols] +
                                                     u[k - 1] + u[k + 1])
                             : u[k];
      ok = near(out[k], want, 1e-6, 1e-6);
    }
  emit("stencil5", time_launches(launch), 8.0 * rows * cols, ok);
}

void bench_matmul() {
  const int n = kNmm;
  auto a = uniform_f32(size_t(n) * n, 9), b = uniform_f32(size_t(n) * n, 10);
  DevBuf<float> da(a.size()), db(b.size()), dc(a.size());
  da.upload(a);
  db.upload(b);
  dc.poison();
  auto launch = [&] {
    suite::matmul_tiled<<<dim3(n / 16, n / 16), dim3(16, 16)>>>(da.p, db.p, dc.p, n);
  };
  run_once(launch);
  auto c = dc.download();
  bool ok = true;  // every element must be written; 32 spread rows are checked in full
  for (size_t k = 0; k < c.size() && ok; ++k) ok = !std::isnan(c[k]);
  for (int row = 0; row < n && ok; row += n / 32)
    for (int col = 0; col < n && ok; ++col) {
      double want = 0;
      for (int k = 0; k < n; ++k) want += double(a[size_t(row) * n + k]) * b[size_t(k) * n + col];
      ok = near(c[size_t(row) * n + col], want, 1e-4, 1e-4);
    }
  emit("matmul_tiled", time_launches(launch), 12.0 * n * n, ok, 2.0 * n * n * n);
}

void bench_scan() {
  const int n = kN1;
  std::vector<int> x(n);
  Rng r(11);
  for (auto& v : x) v = static_cast<int>(r.next() % 10);
  DevBuf<int> dx(n), dout(n);
  dx.upload(x);
  dout.poison();
  auto launch = [&] {
    suite::scan_block<<<n / suite::kScanBlock, suite::kScanBlock>>>(dx.p, dout.p);
  };
  run_once(launch);
  auto out = dout.download();
  bool ok = true;
  int sum = 0;
  for (int i = 0; i < n && ok; ++i) {
    sum = (i % suite::kScanBlock == 0 ? 0 : sum) + x[i];
    ok = out[i] == sum;
  }
  emit("scan_block", time_launches(launch), 8.0 * n, ok);
}

void bench_math_f64() {
  const int n = kN1;
  std::vector<double> x(n);
  Rng r(12);
  for (auto& v : x) v = -4.0 + 8.0 * static_cast<double>(r.next() >> 11) * 0x1p-53;
  DevBuf<double> dx(n), dout(n);
  dx.upload(x);
  dout.poison();
  auto launch = [&] { suite::math_f64<<<n / 256, 256>>>(dx.p, dout.p, n); };
  run_once(launch);
  auto out = dout.download();
  bool ok = true;
  for (int i = 0; i < n && ok; ++i)
    ok = near(out[i], std::exp(x[i]) * std::sin(x[i]) + std::sqrt(std::fabs(x[i])), 1e-12, 1e-12);
  emit("math_f64", time_launches(launch), 16.0 * n, ok);
}

uint32_t brev32(uint32_t v) {
  uint32_t r = 0;
  for (int b = 0; b < 32; ++b) r |= ((v >> b) & 1u) << (31 - b);
  return r;
}

void bench_bits_u32() {
  const int n = kN1;
  std::vector<uint32_t> x(n);
  Rng r(13);
  for (auto& v : x) v = static_cast<uint32_t>(r.next() >> 32);
  DevBuf<uint32_t> dx(n), dout(n);
  dx.upload(x);
  dout.poison();
  auto launch = [&] { suite::bits_u32<<<n / 256, 256>>>(dx.p, dout.p, n); };
  run_once(launch);
  auto out = dout.download();
  bool ok = true;
  for (int i = 0; i < n && ok; ++i) {
    uint32_t h = x[i];
    for (int k = 0; k < 4; ++k) {
      h ^= h << 13;
      h ^= h >> 17;
      h ^= h << 5;
    }
    ok = out[i] == (brev32(h) ^ static_cast<uint32_t>(__builtin_popcount(x[i])));
  }
  emit("bits_u32", time_launches(launch), 8.0 * n, ok);
}

// ---- the second set (issue 21); sizes as in bench/cases.py --------------------------------

std::vector<float> normal_f32(size_t n, uint64_t seed, float scale, float shift) {
  Rng r(seed);  // Box-Muller
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i += 2) {
    double u1 = (static_cast<double>(r.next() >> 11) + 1.0) * 0x1p-53;
    double u2 = static_cast<double>(r.next() >> 11) * 0x1p-53;
    double rad = std::sqrt(-2.0 * std::log(u1));
    v[i] = static_cast<float>(scale * rad * std::cos(2 * M_PI * u2) + shift);
    if (i + 1 < n) v[i + 1] = static_cast<float>(scale * rad * std::sin(2 * M_PI * u2) + shift);
  }
  return v;
}

// softmax_rows (llm.c's form) or softmax_1pass (one read of x): the same inputs and check.
void bench_softmax(const char* name, bool one_pass) {
  const int rows = 16384, cols = 2048;
  auto x = normal_f32(size_t(rows) * cols, 21, 2.0f, 0.0f);
  DevBuf<float> dx(x.size()), dout(x.size());
  dx.upload(x);
  dout.poison();
  auto launch = [&] {
    if (one_pass)
      suite::softmax_1pass<<<rows, suite::kSoftmaxBlock>>>(dx.p, dout.p, cols);
    else
      suite::softmax_rows<<<rows, suite::kSoftmaxBlock>>>(dx.p, dout.p, cols);
  };
  run_once(launch);
  auto out = dout.download();
  bool ok = true;
  for (int r = 0; r < rows && ok; ++r) {
    const float* xr = &x[size_t(r) * cols];
    double m = -INFINITY, s = 0;
    for (int j = 0; j < cols; ++j) m = std::max(m, double(xr[j]));
    for (int j = 0; j < cols; ++j) s += std::exp(xr[j] - m);
    for (int j = 0; j < cols && ok; ++j)
      ok = near(out[size_t(r) * cols + j], std::exp(xr[j] - m) / s, 1e-5, 1e-9);
  }
  emit(name, time_launches(launch), 8.0 * rows * cols, ok);
}

// layernorm (llm.c's kernel3) or layernorm_1pass (one read of x): the same inputs and check.
void bench_layernorm(const char* name, bool one_pass) {
  const int rows = 32768, cols = 1024;
  auto x = normal_f32(size_t(rows) * cols, 22, 1.0f, 0.5f);
  auto w = uniform_f32(cols, 23), b = uniform_f32(cols, 24);
  for (auto& v : w) v += 0.5f;
  for (auto& v : b) v -= 0.5f;
  DevBuf<float> dx(x.size()), dw(cols), db(cols), dout(x.size()), dmean(rows), drstd(rows);
  dx.upload(x);
  dw.upload(w);
  db.upload(b);
  dout.poison();
  dmean.poison();
  drstd.poison();
  auto launch = [&] {
    if (one_pass)
      suite::layernorm_1pass<<<rows / 8, 256>>>(dx.p, dw.p, db.p, dout.p, dmean.p, drstd.p, rows,
                                                cols);
    else
      suite::layernorm<<<rows / 8, 256>>>(dx.p, dw.p, db.p, dout.p, dmean.p, drstd.p, rows, cols);
  };
  run_once(launch);
  auto out = dout.download(), mean = dmean.download(), rstd = drstd.download();
  bool ok = true;
  for (int r = 0; r < rows && ok; ++r) {
    const float* xr = &x[size_t(r) * cols];
    double m = 0, v = 0;
    for (int j = 0; j < cols; ++j) m += xr[j];
    m /= cols;
    for (int j = 0; j < cols; ++j) v += (xr[j] - m) * (xr[j] - m);
    double rs = 1.0 / std::sqrt(v / cols + 1e-5);
    ok = near(mean[r], m, 1e-4, 1e-5) && near(rstd[r], rs, 1e-4, 1e-5);
    for (int j = 0; j < cols && ok; ++j)
      ok = near(out[size_t(r) * cols + j], (xr[j] - m) * rs * w[j] + b[j], 1e-4, 1e-5);
  }
  emit(name, time_launches(launch), 8.0 * rows * cols + 8.0 * cols + 8.0 * rows, ok);
}

void bench_nbody() {
  const int n = 32768, checked = 128;
  std::vector<float4> pos(n);
  Rng r(25);
  for (auto& p : pos) {
    p.x = 2 * r.uniform() - 1;
    p.y = 2 * r.uniform() - 1;
    p.z = 2 * r.uniform() - 1;
    p.w = (0.5f + 0.5f * r.uniform()) / n;
  }
  DevBuf<float4> dpos(n);
  DevBuf<float> dacc(3 * size_t(n));
  dpos.upload(pos);
  dacc.poison();
  auto launch = [&] {
    suite::nbody<<<n / suite::kNbodyBlock, suite::kNbodyBlock>>>(dpos.p, dacc.p, n);
  };
  run_once(launch);
  auto acc = dacc.download();
  bool ok = true;
  for (size_t k = 0; k < acc.size() && ok; ++k) ok = !std::isnan(acc[k]);
  for (int i = 0; i < checked && ok; ++i) {
    double a[3] = {0, 0, 0};
    for (int j = 0; j < n; ++j) {
      double d[3] = {double(pos[j].x) - pos[i].x, double(pos[j].y) - pos[i].y,
                     double(pos[j].z) - pos[i].z};
      double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 0.01;
      double s = pos[j].w / (d2 * std::sqrt(d2));
      for (int c = 0; c < 3; ++c) a[c] += d[c] * s;
    }
    for (int c = 0; c < 3 && ok; ++c) ok = near(acc[3 * i + c], a[c], 1e-3, 1e-3);
  }
  emit("nbody", time_launches(launch), 28.0 * n, ok, 20.0 * n * n);
}

// The rows of a @ b that hgemm_mma results are checked on: 16 spread rows, in float64
// (float16 products are exact, the tensor cores accumulate in float32).
struct HgemmReference {
  std::vector<int> rows;
  std::vector<std::vector<double>> want;
  HgemmReference(const std::vector<__half>& a, const std::vector<__half>& b, int n) {
    std::vector<double> bd(b.size());
    for (size_t i = 0; i < b.size(); ++i) bd[i] = __half2float(b[i]);
    for (int row = 0; row < n; row += n / 16 + 1) {
      std::vector<double> w(n, 0.0);
      for (int k = 0; k < n; ++k) {
        double x = __half2float(a[size_t(row) * n + k]);
        for (int col = 0; col < n; ++col) w[col] += x * bd[size_t(k) * n + col];
      }
      rows.push_back(row);
      want.push_back(std::move(w));
    }
  }
  // Every element written, and the reference rows matched.
  bool ok(const std::vector<float>& c, int n) const {
    bool ok = true;
    for (size_t i = 0; i < c.size() && ok; ++i) ok = !std::isnan(c[i]);
    for (size_t r = 0; r < rows.size() && ok; ++r)
      for (int col = 0; col < n && ok; ++col)
        ok = near(c[size_t(rows[r]) * n + col], want[r][col], 1e-3, 5e-3);
    return ok;
  }
};

// One shape of variants::hgemm_tile, timed and checked like hgemm_mma; its line has
// "target":"BMxBNxBK/STAGES" (with "e" for the EARLY barrier order; report.py leaves such
// lines out of its tables).
template <int BM, int BN, int BK, int STAGES, bool EARLY = false>
void hgemm_variant(const HgemmReference& ref, DevBuf<__half>& da, DevBuf<__half>& db,
                   DevBuf<float>& dc, int n) {
  constexpr int shared = variants::shared_bytes<BM, BN, BK, STAGES>();
  constexpr int threads = (BM / 64) * (BN / 64) * 32;
  auto kernel = variants::hgemm_tile<BM, BN, BK, STAGES, EARLY>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  auto launch = [&] {
    kernel<<<(n / BM) * (n / BN), threads, shared>>>(da.p, db.p, dc.p, n, n, n);
  };
  dc.poison();
  run_once(launch);
  bool ok = ref.ok(dc.download(), n);
  Timing t = time_launches(launch);
  std::printf("{\"impl\":\"nvcc\",\"kernel\":\"hgemm_mma\",\"target\":\"%dx%dx%d/%d%s\","
              "\"median_us\":%.2f,\"min_us\":%.2f,\"ok\":%s,\"gflops\":%.1f}\n",
              BM, BN, BK, STAGES, EARLY ? "e" : "", t.median_us, t.min_us, ok ? "true" : "false",
              2.0 * n * n * double(n) / (t.median_us * 1e3));
  std::fflush(stdout);
}

void bench_hgemm_mma() {
  const int n = 4096;  // m = n = k
  std::vector<__half> a(size_t(n) * n), b(size_t(n) * n);
  Rng r(41);
  for (auto& v : a) v = __float2half_rn(2 * r.uniform() - 1);
  for (auto& v : b) v = __float2half_rn(2 * r.uniform() - 1);
  DevBuf<__half> da(a.size()), db(b.size());
  DevBuf<float> dc(a.size());
  da.upload(a);
  db.upload(b);
  dc.poison();
  CK(cudaFuncSetAttribute(suite::hgemm_mma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          suite::kHgShared));
  auto launch = [&] {
    suite::hgemm_mma<<<(n / suite::kHgBm) * (n / suite::kHgBn), suite::kHgThreads,
                       suite::kHgShared>>>(da.p, db.p, dc.p, n, n, n);
  };
  run_once(launch);
  HgemmReference ref(a, b, n);
  bool ok = ref.ok(dc.download(), n);
  emit("hgemm_mma", time_launches(launch), 8.0 * n * n, ok, 2.0 * n * n * n);
  // The shape experiments of session 16 (hgemm_variants.cuh, bench/NOTES.md); 128x128x32/4
  // is hgemm_mma's own shape.
  hgemm_variant<128, 256, 32, 4>(ref, da, db, dc, n);
  hgemm_variant<128, 256, 32, 3>(ref, da, db, dc, n);
  hgemm_variant<128, 256, 64, 3>(ref, da, db, dc, n);
  hgemm_variant<128, 256, 64, 4>(ref, da, db, dc, n);
  hgemm_variant<128, 128, 32, 4>(ref, da, db, dc, n);
  hgemm_variant<128, 128, 64, 3>(ref, da, db, dc, n);
  hgemm_variant<128, 256, 32, 4, true>(ref, da, db, dc, n);
  hgemm_variant<128, 256, 64, 3, true>(ref, da, db, dc, n);
  hgemm_variant<128, 256, 64, 4, true>(ref, da, db, dc, n);
  hgemm_variant<128, 128, 32, 4, true>(ref, da, db, dc, n);
  hgemm_variant<128, 128, 64, 3, true>(ref, da, db, dc, n);
  hgemm_variant<128, 256, 32, 6>(ref, da, db, dc, n);
  hgemm_variant<128, 256, 32, 6, true>(ref, da, db, dc, n);
  hgemm_variant<256, 128, 32, 4, true>(ref, da, db, dc, n);
  hgemm_variant<256, 128, 64, 3, true>(ref, da, db, dc, n);
}

void bench_sgemm_reg() {
  const int n = 2048;
  auto a = uniform_f32(size_t(n) * n, 26), b = uniform_f32(size_t(n) * n, 27);
  DevBuf<float> da(a.size()), db(b.size()), dc(a.size());
  da.upload(a);
  db.upload(b);
  dc.poison();
  auto launch = [&] {
    suite::sgemm_reg<<<dim3(n / suite::kGemmBm, n / suite::kGemmBm), dim3(16, 16)>>>(da.p, db.p,
                                                                                   dc.p, n);
  };
  run_once(launch);
  auto c = dc.download();
  bool ok = true;  // every element written; 32 spread rows checked in full
  for (size_t k = 0; k < c.size() && ok; ++k) ok = !std::isnan(c[k]);
  for (int row = 0; row < n && ok; row += n / 32 + 1)
    for (int col = 0; col < n && ok; ++col) {
      double want = 0;
      for (int k = 0; k < n; ++k) want += double(a[size_t(row) * n + k]) * b[size_t(k) * n + col];
      ok = near(c[size_t(row) * n + col], want, 1e-4, 1e-4);
    }
  emit("sgemm_reg", time_launches(launch), 12.0 * n * n, ok, 2.0 * n * n * n);
}

void bench_spmv_csr() {
  const int rows = 1 << 20;
  Rng r(28);
  std::vector<int> indptr(rows + 1, 0);
  for (int i = 0; i < rows; ++i) indptr[i + 1] = indptr[i] + 16 + int(r.next() % 32);
  const int nnz = indptr[rows];
  std::vector<int> indices(nnz);
  std::vector<float> data(nnz);
  for (int i = 0; i < rows; ++i) {  // sorted distinct columns: random gaps from a random start
    long col = long(r.next() % (rows - 48 * 16384)) - 1;
    for (int k = indptr[i]; k < indptr[i + 1]; ++k) {
      col += 1 + long(r.next() % 16384);
      indices[k] = int(col);
      data[k] = 2 * r.uniform() - 1;
    }
  }
  std::vector<float> x(rows);
  for (auto& v : x) v = 2 * r.uniform() - 1;
  DevBuf<int> dptr(rows + 1), didx(nnz);
  DevBuf<float> ddata(nnz), dx(rows), dy(rows);
  dptr.upload(indptr);
  didx.upload(indices);
  ddata.upload(data);
  dx.upload(x);
  dy.poison();
  auto launch = [&] {
    suite::spmv_csr<<<rows / 8, 256>>>(dptr.p, didx.p, ddata.p, dx.p, dy.p, rows);
  };
  run_once(launch);
  auto y = dy.download();
  bool ok = true;
  for (int i = 0; i < rows && ok; ++i) {
    double want = 0;
    for (int k = indptr[i]; k < indptr[i + 1]; ++k) want += double(data[k]) * x[indices[k]];
    ok = near(y[i], want, 1e-4, 1e-5);
  }
  emit("spmv_csr", time_launches(launch), 8.0 * nnz + 4.0 * (rows + 1) + 8.0 * rows, ok);
}

void bench_mandelbrot() {
  const int h = 4096, w = 4096;
  DevBuf<int> dout(size_t(h) * w);
  dout.poison();
  auto launch = [&] { suite::mandelbrot<<<dim3(w / 32, h / 8), dim3(32, 8)>>>(dout.p, h, w); };
  run_once(launch);
  auto out = dout.download();
  long differ = 0, checked = 0;  // every 64th row, in float32 without contraction
  for (int i = 0; i < h; i += 64)
    for (int j = 0; j < w; ++j) {
      volatile float cx = suite::kMandelX0 + float(j) * suite::kMandelDx;
      volatile float cy = suite::kMandelY0 + float(i) * suite::kMandelDy;
      float x = 0, y = 0;
      int it = 0;
      while (it < suite::kMandelMaxit) {
        volatile float x2 = x * x, y2 = y * y;
        if (x2 + y2 > 4.0f) break;
        volatile float xy = 2.0f * x * y;
        y = xy + cy;
        volatile float d = x2 - y2;
        x = d + cx;
        ++it;
      }
      differ += out[size_t(i) * w + j] != it;
      ++checked;
    }
  bool ok = differ <= checked / 100;  // boundary points depend on the last bit (FMA contraction)
  emit("mandelbrot", time_launches(launch), 4.0 * h * w, ok);
}

void bench_conv2d() {
  const int n = 8192, K = 5;
  auto img = uniform_f32(size_t(n) * n, 29);
  auto w = uniform_f32(K * K, 30);
  for (auto& v : w) v = (2 * v - 1) / K;
  DevBuf<float> dimg(img.size()), dw(K * K), dout(img.size());
  dimg.upload(img);
  dw.upload(w);
  dout.poison();
  auto launch = [&] {
    suite::conv2d<<<dim3(n / 32, n / 32), dim3(32, 8)>>>(dimg.p, dw.p, dout.p, n, n);
  };
  run_once(launch);
  auto out = dout.download();
  bool ok = true;
  auto check_row = [&](int i) {
    for (int j = 0; j < n && ok; ++j) {
      double want = 0;
      for (int ky = 0; ky < K; ++ky)
        for (int kx = 0; kx < K; ++kx) {
          int y = i + ky - 2, x = j + kx - 2;
          if (y >= 0 && y < n && x >= 0 && x < n)
            want += double(w[ky * K + kx]) * img[size_t(y) * n + x];
        }
      ok = near(out[size_t(i) * n + j], want, 1e-5, 1e-5);
    }
  };
  for (int i = 0; i < n && ok; i += 37) check_row(i);
  check_row(n - 1);
  emit("conv2d", time_launches(launch), 8.0 * n * n, ok, 2.0 * K * K * n * n);
}

void bench_bitonic_sort() {
  const int n = 1 << 24, seg = suite::kSortSeg;
  std::vector<uint32_t> keys(n);
  Rng r(31);
  for (auto& v : keys) v = static_cast<uint32_t>(r.next() >> 32);
  DevBuf<uint32_t> dkeys(n), dout(n);
  dkeys.upload(keys);
  dout.poison();
  auto launch = [&] { suite::bitonic_sort<<<n / seg, suite::kSortHalf>>>(dkeys.p, dout.p); };
  run_once(launch);
  auto out = dout.download();
  for (int b = 0; b < n; b += seg) std::sort(keys.begin() + b, keys.begin() + b + seg);
  emit("bitonic_sort", time_launches(launch), 8.0 * n, out == keys);
}

void bench_fft_radix4() {
  using C = cuda::std::complex<float>;
  const int n = 1 << 24, ns = 64, q = n / 4;
  std::vector<C> x(n);
  Rng r(32);
  for (auto& v : x) v = C(2 * r.uniform() - 1, 2 * r.uniform() - 1);
  DevBuf<C> dx(n), dy(n);
  dx.upload(x);
  dy.poison();
  auto launch = [&] { suite::fft_radix4<<<q / 256, 256>>>(dx.p, dy.p, n, ns); };
  run_once(launch);
  auto y = dy.download();
  bool ok = true;
  for (int j = 0; j < q && ok; ++j) {
    int k = j % ns;
    double ang = -2.0 * M_PI * k / (4.0 * ns);
    std::complex<double> v[4];
    for (int rr = 0; rr < 4; ++rr)
      v[rr] = std::complex<double>(x[j + rr * q].real(), x[j + rr * q].imag()) *
              std::polar(1.0, rr * ang);
    std::complex<double> a0 = v[0] + v[2], a1 = v[0] - v[2], a2 = v[1] + v[3];
    std::complex<double> a3 = (v[1] - v[3]) * std::complex<double>(0, -1);
    std::complex<double> want[4] = {a0 + a2, a1 + a3, a0 - a2, a1 - a3};
    int o = (j / ns) * ns * 4 + k;
    for (int rr = 0; rr < 4 && ok; ++rr) {
      C g = y[o + rr * ns];
      ok = near(g.real(), want[rr].real(), 1e-5, 1e-5) &&
           near(g.imag(), want[rr].imag(), 1e-5, 1e-5);
    }
  }
  emit("fft_radix4", time_launches(launch), 16.0 * n, ok);
}

void bench_half2_poly() {
  const int n = 1 << 26, n2 = n / 2;
  std::vector<__half> x(n);
  Rng r(33);
  for (auto& v : x) v = __float2half_rn(2 * r.uniform() - 1);
  DevBuf<__half> dx(n), dout(n);
  dx.upload(x);
  dout.poison();
  auto launch = [&] {
    suite::half2_poly<<<n2 / 256, 256>>>(reinterpret_cast<const __half2*>(dx.p),
                                         reinterpret_cast<__half2*>(dout.p), n2);
  };
  run_once(launch);
  auto out = dout.download();
  // Reference: one rounding to float16 per FMA (a float16 product is exact in double),
  // for every float16 bit pattern once; then a table look-up per element.
  static const float coeffs[] = {1.0f / 40320, 1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24,
                                 1.0f / 6,     0.5f,        1.0f,        1.0f};
  std::vector<float> table(1 << 16);
  for (int bits = 0; bits < (1 << 16); ++bits) {
    double v = __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
    double acc = __half2float(__float2half_rn(coeffs[0]));
    for (int c = 1; c < 9; ++c)
      acc = __half2float(__double2half(acc * v + __half2float(__float2half_rn(coeffs[c]))));
    table[bits] = static_cast<float>(acc);
  }
  bool ok = true;
  for (int i = 0; i < n && ok; ++i)
    ok = near(__half2float(out[i]), table[__half_as_ushort(x[i])], 1e-3, 0);
  emit("half2_poly", time_launches(launch), 4.0 * n, ok);
}

void bench_scan_lookback() {
  const int n = 1 << 26, tiles = n / suite::kScanTile;
  std::vector<int> x(n);
  Rng r(34);
  for (auto& v : x) v = static_cast<int>(r.next() % 10);
  DevBuf<int> dx(n), dout(n);
  DevBuf<unsigned long long> dstatus(tiles);
  DevBuf<unsigned> dstate(2);
  dx.upload(x);
  dout.poison();
  dstatus.zero();  // once: the kernel's launch counter (state[0]) tags each launch's flags
  dstate.zero();
  auto launch = [&] {
    suite::scan_lookback<<<tiles, suite::kScanBlock2>>>(dx.p, dout.p, dstatus.p, dstate.p);
  };
  bool ok = true;
  for (int round = 0; round < 2 && ok; ++round) {  // the second launch checks the epoch logic
    dout.poison();
    run_once(launch);
    auto out = dout.download();
    int sum = 0;
    for (int i = 0; i < n && ok; ++i) {
      sum += x[i];
      ok = out[i] == sum;
    }
  }
  emit("scan_lookback", time_launches(launch), 8.0 * n, ok);
}

// The bandwidth ceiling: a device-to-device copy of 1 GiB, counting bytes read + written.
void bench_d2d_copy() {
  const size_t n = size_t(1) << 28;
  DevBuf<float> src(n), dst(n);
  src.zero();
  auto launch = [&] {
    CK(cudaMemcpyAsync(dst.p, src.p, src.bytes(), cudaMemcpyDeviceToDevice));
  };
  emit("d2d_copy", time_launches(launch), 2.0 * src.bytes(), true);
}

// Host time of one asynchronous cuLaunchKernel of an empty kernel: 100 batches of 100
// launches, each batch timed on the host clock without waiting for the GPU, then drained.
void bench_launch_overhead() {
  cudaFunction_t rt_fn;
  CK(cudaGetFuncBySymbol(&rt_fn, reinterpret_cast<const void*>(&suite::empty_kernel)));
  CUfunction fn = reinterpret_cast<CUfunction>(rt_fn);
  DevBuf<float> arg(1);
  void* params[] = {&arg.p};
  auto launch = [&] { CKD(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr)); };
  for (int i = 0; i < 1000; ++i) launch();
  CK(cudaDeviceSynchronize());
  constexpr int kBatch = 100;
  std::vector<double> per_launch;
  for (int b = 0; b < 100; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) launch();
    auto t1 = std::chrono::steady_clock::now();
    CK(cudaDeviceSynchronize());
    per_launch.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBatch);
  }
  std::sort(per_launch.begin(), per_launch.end());
  std::printf("{\"impl\":\"cuLaunchKernel\",\"kernel\":\"launch_overhead\",\"host_us\":%.3f,"
              "\"host_us_min\":%.3f}\n",
              per_launch[per_launch.size() / 2], per_launch.front());
  std::fflush(stdout);
}

struct Entry {
  const char* name;
  std::function<void()> run;
};

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Entry> entries = {
      {"d2d_copy", bench_d2d_copy},
      {"launch_overhead", bench_launch_overhead},
      {"vector_add", bench_vector_add},
      {"saxpy", bench_saxpy},
      {"transpose_naive", [] { bench_transpose("transpose_naive", false); }},
      {"transpose_tiled", [] { bench_transpose("transpose_tiled", true); }},
      {"reduce_block", [] { bench_reduce("reduce_block", false); }},
      {"reduce_warp", [] { bench_reduce("reduce_warp", true); }},
      {"histogram", bench_histogram},
      {"stencil5", bench_stencil5},
      {"matmul_tiled", bench_matmul},
      {"scan_block", bench_scan},
      {"math_f64", bench_math_f64},
      {"bits_u32", bench_bits_u32},
      {"softmax_rows", [] { bench_softmax("softmax_rows", false); }},
      {"layernorm", [] { bench_layernorm("layernorm", false); }},
      {"softmax_1pass", [] { bench_softmax("softmax_1pass", true); }},
      {"layernorm_1pass", [] { bench_layernorm("layernorm_1pass", true); }},
      {"nbody", bench_nbody},
      {"sgemm_reg", bench_sgemm_reg},
      {"hgemm_mma", bench_hgemm_mma},
      {"spmv_csr", bench_spmv_csr},
      {"mandelbrot", bench_mandelbrot},
      {"conv2d", bench_conv2d},
      {"bitonic_sort", bench_bitonic_sort},
      {"fft_radix4", bench_fft_radix4},
      {"half2_poly", bench_half2_poly},
      {"scan_lookback", bench_scan_lookback},
  };
  for (int i = 1; i < argc; ++i) {
    bool known = std::any_of(entries.begin(), entries.end(),
                             [&](const Entry& e) { return std::strcmp(e.name, argv[i]) == 0; });
    if (!known) {
      std::fprintf(stderr, "bench_cuda: unknown kernel %s\n", argv[i]);
      return 2;
    }
  }
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));  // create the context before anything is timed
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::fprintf(stderr, "bench_cuda: %s, %d SMs, %.0f MB L2\n", prop.name,
               prop.multiProcessorCount, prop.l2CacheSize / 1e6);
  for (const auto& e : entries) {
    bool wanted = argc == 1;
    for (int i = 1; i < argc; ++i) wanted |= std::strcmp(e.name, argv[i]) == 0;
    if (!wanted) continue;
    std::fprintf(stderr, "bench_cuda: %s\n", e.name);
    e.run();
  }
  return 0;
}
