// pydevice's launch runtime for kernels exported as Apache TVM-FFI functions
// (`pydevice.tvm_ffi`). The generated source of an exported kernel includes this header,
// defines the kernel's `KernelSpec` (its PTX, symbol, parameters and launch shape) and one
// typed function exported with TVM_FFI_DLL_EXPORT_TYPED_FUNC whose arguments are the
// kernel's: `DLTensor*` for an array, `int64_t`, `double` or `bool` for a scalar.
//
// A call checks each tensor against its parameter (CUDA memory, all on one GPU, dtype, rank,
// the contiguity the parameter's type promises), writes pydevice's launch buffer (an array
// is its data address, then `ndim` extents, then `ndim` strides counted in elements; a
// scalar is its C value; each parameter at an 8-byte-aligned offset, the kernel's ABI) and
// launches with `cuLaunchKernel` on the stream TVM-FFI's environment names for that GPU
// (`TVMFFIEnvGetStream`: PyTorch's current stream through the DLPack C exchange API, XLA's
// stream under JAX, the caller's in C++). The module is loaded from the PTX in the GPU's
// primary context at its first call there. The CUDA driver is opened with dlopen, so the
// library links only libtvm_ffi and loads on a machine without a GPU.
#pragma once

#include <dlfcn.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <string>

namespace pydevice_tvm_ffi {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;

/// The driver entry points a launch uses, opened once.
struct Driver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  std::string error;  // why the driver could not be opened ("" when it was)
};

template <typename F>
inline bool Sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

inline const Driver& GetDriver() {
  static const Driver driver = [] {
    Driver d;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) {
      d.error = "no CUDA driver (libcuda.so.1 could not be opened)";
      return d;
    }
    bool ok = Sym(lib, "cuInit", &d.cuInit) && Sym(lib, "cuDeviceGet", &d.cuDeviceGet) &&
              Sym(lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain) &&
              Sym(lib, "cuCtxGetCurrent", &d.cuCtxGetCurrent) &&
              Sym(lib, "cuCtxSetCurrent", &d.cuCtxSetCurrent) &&
              Sym(lib, "cuModuleLoadDataEx", &d.cuModuleLoadDataEx) &&
              Sym(lib, "cuModuleGetFunction", &d.cuModuleGetFunction) &&
              Sym(lib, "cuLaunchKernel", &d.cuLaunchKernel) &&
              Sym(lib, "cuGetErrorString", &d.cuGetErrorString);
    if (!ok) {
      d.error = "the CUDA driver lacks an entry point pydevice needs";
    } else if (CUresult r = d.cuInit(0); r != 0) {
      d.error = "cuInit failed with CUDA error " + std::to_string(r);
    }
    return d;
  }();
  return driver;
}

/// Throws a RuntimeError naming the kernel, the step and the driver's message.
inline void Check(const Driver& d, CUresult r, const char* kernel, const char* what) {
  if (r == 0) return;
  const char* msg = nullptr;
  if (d.cuGetErrorString == nullptr || d.cuGetErrorString(r, &msg) != 0 || msg == nullptr) {
    msg = "unknown error";
  }
  TVM_FFI_THROW(RuntimeError) << kernel << ": " << what << " failed: " << msg << " (CUDA error "
                              << r << ")";
}

/// What a parameter is.
enum class Kind : uint8_t { kArray, kInt, kUInt, kFloat, kBool };

/// One kernel parameter: its name, kind, element type (DLPack code and bits) for an array or
/// C type (kind and bytes) for a scalar, rank, layout promise ('C' row-major contiguous, 'F'
/// column-major contiguous, 'A' any strides), and offset and size in the launch buffer.
struct ParamSpec {
  const char* name;
  const char* type_name;
  Kind kind;
  uint8_t dl_code;
  uint8_t bits;
  int32_t ndim;
  char layout;
  uint32_t offset;
  uint32_t size;
};

/// An exported kernel: the function's name, the PTX symbol and text, the parameters and
/// the launch shape. `grid[0] == 0` covers parameter `cover`'s elements with 1-D blocks.
struct KernelSpec {
  const char* name;
  const char* symbol;
  const char* ptx;
  const ParamSpec* params;
  int32_t num_params;
  uint32_t args_size;
  uint32_t block[3];
  uint32_t grid[3];
  int32_t cover;
  uint32_t shared_bytes;
};

/// One argument as the typed function received it.
struct Arg {
  const DLTensor* tensor = nullptr;
  int64_t i = 0;
  double f = 0.0;
  bool is_float = false;
  Arg(DLTensor* t) : tensor(t) {}                // NOLINT(*)
  Arg(int64_t v) : i(v) {}                       // NOLINT(*)
  Arg(double v) : f(v), is_float(true) {}        // NOLINT(*)
  Arg(bool v) : i(v ? 1 : 0) {}                  // NOLINT(*)
};

inline const char* DTypeName(uint8_t code, uint8_t bits) {
  switch (code) {
    case kDLInt:
      return bits == 8 ? "int8" : bits == 16 ? "int16" : bits == 32 ? "int32" : "int64";
    case kDLUInt:
      return bits == 8 ? "uint8" : bits == 16 ? "uint16" : bits == 32 ? "uint32" : "uint64";
    case kDLFloat:
      return bits == 16 ? "float16" : bits == 32 ? "float32" : "float64";
    case kDLBool:
      return "bool";
    default:
      return "an unsupported dtype";
  }
}

/// Element count of a tensor.
inline int64_t Numel(const DLTensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

/// Writes an array parameter's descriptor; checks the tensor against it. Returns the GPU.
inline int32_t PutArray(const KernelSpec& k, const ParamSpec& p, const DLTensor* t,
                        unsigned char* out) {
  if (t->device.device_type != kDLCUDA) {
    TVM_FFI_THROW(ValueError) << k.name << "(): parameter `" << p.name << "` (" << p.type_name
                              << ") needs a CUDA tensor, given one on DLPack device type "
                              << static_cast<int>(t->device.device_type);
  }
  bool bool_ok = p.dl_code == kDLBool && t->dtype.code == kDLUInt && t->dtype.bits == 8;
  if (!bool_ok && (t->dtype.code != p.dl_code || t->dtype.bits != p.bits || t->dtype.lanes != 1)) {
    TVM_FFI_THROW(TypeError) << k.name << "(): parameter `" << p.name << "` is " << p.type_name
                             << ", given a tensor of "
                             << DTypeName(t->dtype.code, t->dtype.bits);
  }
  if (t->ndim != p.ndim) {
    TVM_FFI_THROW(ValueError) << k.name << "(): parameter `" << p.name << "` is " << p.type_name
                              << " (rank " << p.ndim << "), given a tensor of rank " << t->ndim;
  }
  uint64_t data = reinterpret_cast<uint64_t>(t->data) + t->byte_offset;
  std::memcpy(out, &data, 8);
  int64_t strides[64];
  int64_t acc = 1;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    strides[d] = t->strides != nullptr ? t->strides[d] : acc;
    acc *= t->shape[d];
  }
  int32_t n = t->ndim;
  // A contiguous dimension promised by the type must have stride 1 (extent-1 dims excepted).
  if (n > 0 && p.layout == 'C' && t->shape[n - 1] != 1 && strides[n - 1] != 1) {
    TVM_FFI_THROW(ValueError) << k.name << "(): parameter `" << p.name << "` is " << p.type_name
                              << " (C-contiguous), given a tensor whose last stride is "
                              << strides[n - 1];
  }
  if (n > 0 && p.layout == 'F' && t->shape[0] != 1 && strides[0] != 1) {
    TVM_FFI_THROW(ValueError) << k.name << "(): parameter `" << p.name << "` is " << p.type_name
                              << " (F-contiguous), given a tensor whose first stride is "
                              << strides[0];
  }
  for (int32_t d = 0; d < n; ++d) {
    uint64_t extent = static_cast<uint64_t>(t->shape[d]);
    std::memcpy(out + 8 + 8 * d, &extent, 8);
    std::memcpy(out + 8 + 8 * n + 8 * d, &strides[d], 8);
  }
  return t->device.device_id;
}

/// Writes a scalar parameter's C value; checks that the value fits its type.
inline void PutScalar(const KernelSpec& k, const ParamSpec& p, const Arg& a, unsigned char* out) {
  if (a.tensor != nullptr) {
    TVM_FFI_THROW(TypeError) << k.name << "(): parameter `" << p.name << "` is " << p.type_name
                             << ", given a tensor";
  }
  switch (p.kind) {
    case Kind::kFloat: {
      double v = a.is_float ? a.f : static_cast<double>(a.i);
      if (p.bits == 32) {
        float f = static_cast<float>(v);
        std::memcpy(out, &f, 4);
      } else {
        std::memcpy(out, &v, 8);
      }
      return;
    }
    case Kind::kBool: {
      unsigned char b = a.i != 0;
      *out = b;
      return;
    }
    case Kind::kInt:
    case Kind::kUInt: {
      if (a.is_float) {
        TVM_FFI_THROW(TypeError) << k.name << "(): parameter `" << p.name << "` is "
                                 << p.type_name << ", given a float";
      }
      int64_t v = a.i;
      bool fits = true;
      if (p.kind == Kind::kUInt) {
        fits = v >= 0 && (p.bits == 64 || v < (int64_t{1} << p.bits));
      } else if (p.bits < 64) {
        fits = v >= -(int64_t{1} << (p.bits - 1)) && v < (int64_t{1} << (p.bits - 1));
      }
      if (!fits) {
        TVM_FFI_THROW(ValueError) << k.name << "(): " << v << " is out of range for parameter `"
                                  << p.name << "` (" << p.type_name << ")";
      }
      std::memcpy(out, &v, p.bits / 8);  // little-endian: the low bytes
      return;
    }
    default:
      TVM_FFI_THROW(InternalError) << "unreachable parameter kind";
  }
}

/// The kernel loaded on GPU `device` (its primary context made current), loading it at the
/// first call there.
inline CUfunction Function(const Driver& d, const KernelSpec& k, int32_t device) {
  constexpr int kMaxDevices = 64;
  static std::mutex mu;
  static CUfunction functions[kMaxDevices] = {};
  static CUcontext contexts[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) {
    TVM_FFI_THROW(ValueError) << k.name << "(): GPU " << device << " is out of range";
  }
  std::lock_guard<std::mutex> lock(mu);
  if (contexts[device] == nullptr) {
    CUdevice dev = 0;
    Check(d, d.cuDeviceGet(&dev, device), k.name, "cuDeviceGet");
    Check(d, d.cuDevicePrimaryCtxRetain(&contexts[device], dev), k.name,
          "cuDevicePrimaryCtxRetain");
  }
  CUcontext current = nullptr;
  Check(d, d.cuCtxGetCurrent(&current), k.name, "cuCtxGetCurrent");
  if (current != contexts[device]) {
    Check(d, d.cuCtxSetCurrent(contexts[device]), k.name, "cuCtxSetCurrent");
  }
  if (functions[device] == nullptr) {
    CUmodule module = nullptr;
    Check(d, d.cuModuleLoadDataEx(&module, k.ptx, 0, nullptr, nullptr), k.name,
          "loading the PTX (cuModuleLoadDataEx)");
    Check(d, d.cuModuleGetFunction(&functions[device], module, k.symbol), k.name,
          "cuModuleGetFunction");
  }
  return functions[device];
}

/// Checks and packs the arguments and launches the kernel.
inline void Launch(const KernelSpec& k, std::initializer_list<Arg> args) {
  if (static_cast<int32_t>(args.size()) != k.num_params) {
    TVM_FFI_THROW(TypeError) << k.name << "() takes " << k.num_params << " arguments, "
                             << args.size() << " given";
  }
  alignas(16) unsigned char buffer[4096];
  void* pointers[256];
  if (k.args_size > sizeof(buffer) || k.num_params > 256) {
    TVM_FFI_THROW(ValueError) << k.name << "(): too many parameters for the exported launcher";
  }
  std::memset(buffer, 0, k.args_size);
  int32_t device = -1;
  const Arg* a = args.begin();
  for (int32_t i = 0; i < k.num_params; ++i) {
    const ParamSpec& p = k.params[i];
    unsigned char* out = buffer + p.offset;
    pointers[i] = out;
    if (p.kind == Kind::kArray) {
      if (a[i].tensor == nullptr) {
        TVM_FFI_THROW(TypeError) << k.name << "(): parameter `" << p.name << "` is "
                                 << p.type_name << ", given a scalar";
      }
      int32_t dev = PutArray(k, p, a[i].tensor, out);
      if (device >= 0 && dev != device) {
        TVM_FFI_THROW(ValueError) << k.name << "(): parameter `" << p.name << "` is on GPU "
                                  << dev << ", an earlier one on GPU " << device;
      }
      device = dev;
    } else {
      PutScalar(k, p, a[i], out);
    }
  }
  if (device < 0) device = 0;
  uint32_t grid[3] = {k.grid[0], k.grid[1], k.grid[2]};
  if (grid[0] == 0) {
    int64_t n = Numel(a[k.cover].tensor);
    int64_t per = static_cast<int64_t>(k.block[0]) * k.block[1] * k.block[2];
    int64_t blocks = (n + per - 1) / per;
    if (blocks == 0) return;  // nothing to cover
    if (blocks > 0x7fffffff) {
      TVM_FFI_THROW(ValueError) << k.name << "(): " << n << " elements need more blocks than a "
                                << "grid holds";
    }
    grid[0] = static_cast<uint32_t>(blocks);
    grid[1] = grid[2] = 1;
  }
  const Driver& d = GetDriver();
  if (!d.error.empty()) {
    TVM_FFI_THROW(RuntimeError) << k.name << "(): " << d.error;
  }
  CUfunction f = Function(d, k, device);
  auto stream = static_cast<CUstream>(TVMFFIEnvGetStream(kDLCUDA, device));
  Check(d,
        d.cuLaunchKernel(f, grid[0], grid[1], grid[2], k.block[0], k.block[1], k.block[2],
                         k.shared_bytes, stream, pointers, nullptr),
        k.name, "cuLaunchKernel");
}

}  // namespace pydevice_tvm_ffi
