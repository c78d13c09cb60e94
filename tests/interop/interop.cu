// CUDA C++ half of tests/interop/interop.py: defines the functions the Python kernel
// `py_calls_cpp` declares `extern`, and a kernel that calls the Python `interop=True`
// functions through the header `pydevice abi interop.py --header` writes. Compiled by nvcc
// (-rdc=true, tests/interop_link.rs) and by NVRTC at run time (tests/gpu/interop.rs).
#include "interop.h"

extern "C" __device__ float cpp_scale(float x, float k) { return x * k - 0.5f; }

extern "C" __device__ float cpp_l1(float3 v) { return fabsf(v.x) + fabsf(v.y) + fabsf(v.z); }

extern "C" __device__ double cpp_momentum(body b, float v) { return b.mass * v - b.id; }

extern "C" __device__ pair cpp_make_pair(float x, cuda::std::int32_t n) {
  pair p;
  p.a = x + 1.0f;
  p.b = n * 2;
  return p;
}

extern "C" __device__ float cpp_sum(cuda::interoperable_array_descriptor<float, 1> xs) {
  float s = 0.0f;
  for (cuda::std::uint64_t i = 0; i < xs.shape[0]; ++i) s += xs.data[i * xs.strides[0]];
  return s;
}

extern "C" __global__ void cxx_calls_py(const float* xs, const double* masses, double* out, int n,
                                        cuda::interoperable_array_descriptor<float, 1> ws) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = xs[i];
  body b;
  b.pos = make_float3(x, 1.0f, 2.0f);
  b.mass = masses[i];
  b.id = i;
  pair p = py_make_pair(x, i);
  out[i] = (double)py_scale(x, 3.0f) + (double)py_norm2(b.pos) + py_momentum(b, x) +
           (double)p.a + (double)p.b + (double)py_sum(ws) + (double)py_twice_scale(x);
}
