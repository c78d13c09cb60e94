// A C++ host program that launches a Python kernel the way CUDA C++ code launches any other:
// it loads the PTX that `pydevice compile` wrote for tests/interop/interop.py's `py_axpy`
// (an `interop=True` kernel), looks the kernel up by name, and passes its parameters with
// the types of the header `pydevice abi --header` wrote (cuda::interoperable_array_descriptor,
// the `pair` struct) through cuLaunchKernel. Prints PASS or FAIL (exit status 0 or 1).
//
//   pydevice abi tests/interop/interop.py --header > interop.h
//   pydevice compile tests/interop/interop.py --entry py_axpy -o py_axpy.ptx
//   nvcc -std=c++17 -I. scripts/interop_host.cpp -o interop_host -lcuda && ./interop_host py_axpy.ptx
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "interop.h"

#define CHECK(call)                                                      \
  do {                                                                   \
    CUresult r_ = (call);                                                \
    if (r_ != CUDA_SUCCESS) {                                            \
      const char* s_ = nullptr;                                          \
      cuGetErrorString(r_, &s_);                                         \
      std::printf("FAIL: %s: %s\n", #call, s_ ? s_ : "unknown error");   \
      return 1;                                                          \
    }                                                                    \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) {
    std::printf("usage: %s PY_AXPY.ptx\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  std::string ptx = text.str();
  if (ptx.empty()) {
    std::printf("FAIL: cannot read %s\n", argv[1]);
    return 1;
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction f;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&mod, ptx.c_str()));
  CHECK(cuModuleGetFunction(&f, mod, "py_axpy"));

  const unsigned n = 100003;
  std::vector<float> xs(n), ys(n), out(n);
  unsigned state = 12345u;
  auto next = [&state]() {
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) / (float)(1u << 24) * 20.0f - 10.0f;
  };
  for (unsigned i = 0; i < n; ++i) {
    xs[i] = next();
    ys[i] = next();
  }
  CUdeviceptr dxs, dys;
  CHECK(cuMemAlloc(&dxs, n * sizeof(float)));
  CHECK(cuMemAlloc(&dys, n * sizeof(float)));
  CHECK(cuMemcpyHtoD(dxs, xs.data(), n * sizeof(float)));
  CHECK(cuMemcpyHtoD(dys, ys.data(), n * sizeof(float)));

  float a = 1.25f;
  cuda::interoperable_array_descriptor<float, 1> x{(float*)dxs, {n}, {1}};
  cuda::interoperable_array_descriptor<float, 1> y{(float*)dys, {n}, {1}};
  pair p;
  p.a = 0.5f;
  p.b = 3;
  void* params[] = {&a, &x, &y, &p};
  CHECK(cuLaunchKernel(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(out.data(), dys, n * sizeof(float)));

  unsigned bad = 0;
  for (unsigned i = 0; i < n; ++i) {
    float want = a * xs[i] + ys[i] + p.a * (float)p.b;
    if (std::fabs(out[i] - want) > 1e-4f * std::fmax(1.0f, std::fabs(want))) {
      if (bad < 5) std::printf("index %u: %g, expected %g\n", i, out[i], want);
      ++bad;
    }
  }
  cuMemFree(dxs);
  cuMemFree(dys);
  cuModuleUnload(mod);
  cuDevicePrimaryCtxRelease(dev);
  std::printf("%s: C++ host launched the Python kernel py_axpy on %u elements (%u wrong)\n",
              bad ? "FAIL" : "PASS", n, bad);
  return bad ? 1 : 0;
}
