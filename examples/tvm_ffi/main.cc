// A C++ host program calling a pydevice kernel exported as a TVM-FFI function
// (examples/tvm_ffi/build.py writes build/axpb.so): c = a * s + b on N float32 elements.
// It loads the library with tvm::ffi::Module::LoadFromFile, allocates device memory through
// the CUDA driver (opened with dlopen, so only libtvm_ffi is linked), passes DLTensor*s
// and a double, checks the result against a CPU reference and times repeated calls.
//
//   c++ -std=c++17 -O2 -I$(python3 -c 'import tvm_ffi.libinfo as i; print(i.find_include_path())') \
//       -I$(python3 -c 'import tvm_ffi.libinfo as i; print(i.find_dlpack_include_path())') \
//       main.cc -o build/main -L<dir of libtvm_ffi.so> -ltvm_ffi -ldl
//   build/main build/axpb.so
// Exit status 0: the result matched; 1: it did not; 2: no GPU (says so).
#include <dlfcn.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {
using CUresult = int;
using CUdeviceptr = unsigned long long;
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(int*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(void**, int);
  CUresult (*cuCtxSetCurrent)(void*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuCtxSynchronize)();
};

template <typename F>
bool Sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

DLTensor Vector(CUdeviceptr p, int64_t* shape) {
  DLTensor t{};
  t.data = reinterpret_cast<void*>(p);
  t.device = DLDevice{kDLCUDA, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  t.strides = nullptr;  // compact
  t.byte_offset = 0;
  return t;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s path/to/axpb.so [calls]\n", argv[0]);
    return 2;
  }
  int calls = argc > 2 ? std::atoi(argv[2]) : 2000;
  tvm::ffi::Module mod = tvm::ffi::Module::LoadFromFile(argv[1]);
  tvm::ffi::Function axpb = mod->GetFunction("axpb").value();
  auto doc = mod->GetFunctionDoc("axpb");
  std::printf("loaded axpb from %s\n  metadata: %s\n", argv[1], doc.has_value() ? doc.value().c_str() : "(none)");

  Driver d{};
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr || !Sym(lib, "cuInit", &d.cuInit) || !Sym(lib, "cuDeviceGet", &d.cuDeviceGet) ||
      !Sym(lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain) ||
      !Sym(lib, "cuCtxSetCurrent", &d.cuCtxSetCurrent) || !Sym(lib, "cuMemAlloc_v2", &d.cuMemAlloc) ||
      !Sym(lib, "cuMemcpyHtoD_v2", &d.cuMemcpyHtoD) || !Sym(lib, "cuMemcpyDtoH_v2", &d.cuMemcpyDtoH) ||
      !Sym(lib, "cuCtxSynchronize", &d.cuCtxSynchronize) || d.cuInit(0) != 0) {
    std::printf("{\"caller\": \"C++\", \"skipped\": \"no CUDA driver or GPU\"}\n");
    return 2;
  }
  int dev = 0;
  void* ctx = nullptr;
  if (d.cuDeviceGet(&dev, 0) != 0 || d.cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
      d.cuCtxSetCurrent(ctx) != 0) {
    std::printf("{\"caller\": \"C++\", \"skipped\": \"no GPU\"}\n");
    return 2;
  }
  const int64_t n = 1 << 20;
  std::vector<float> a(n), b(n), c(n);
  uint32_t x = 12345;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    a[i] = static_cast<float>(x >> 8) / 16777216.0f - 0.5f;
    x = x * 1664525u + 1013904223u;
    b[i] = static_cast<float>(x >> 8) / 16777216.0f - 0.5f;
  }
  CUdeviceptr da = 0, db = 0, dc = 0;
  size_t bytes = n * sizeof(float);
  if (d.cuMemAlloc(&da, bytes) || d.cuMemAlloc(&db, bytes) || d.cuMemAlloc(&dc, bytes) ||
      d.cuMemcpyHtoD(da, a.data(), bytes) || d.cuMemcpyHtoD(db, b.data(), bytes)) {
    std::printf("FAIL: device memory\n");
    return 1;
  }
  int64_t shape[1] = {n};
  DLTensor ta = Vector(da, shape), tb = Vector(db, shape), tc = Vector(dc, shape);
  const double s = 2.5;
  axpb(&ta, &tb, &tc, s);
  d.cuCtxSynchronize();
  d.cuMemcpyDtoH(c.data(), dc, bytes);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double want = static_cast<double>(a[i]) * s + b[i];
    worst = std::fmax(worst, std::fabs(c[i] - want));
  }
  // Timing: small tensors, so the host is what is measured.
  int64_t small[1] = {4096};
  DLTensor sa = Vector(da, small), sb = Vector(db, small), sc = Vector(dc, small);
  for (int i = 0; i < 200; ++i) axpb(&sa, &sb, &sc, s);
  d.cuCtxSynchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) axpb(&sa, &sb, &sc, s);
  auto t1 = std::chrono::steady_clock::now();
  d.cuCtxSynchronize();
  double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
  bool ok = worst <= 1e-6;
  std::printf("{\"caller\": \"C++\", \"ok\": %s, \"max_abs_err\": %.3g, \"us_per_call\": %.3f}\n",
              ok ? "true" : "false", worst, us);
  return ok ? 0 : 1;
}
