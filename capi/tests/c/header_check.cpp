// pydevice.h from C++: it compiles pedantically beside cuda.h's declaration of the stream
// type (spelled out here, as cuda.h writes it), and a NULL kernel is an error value, not a
// crash. Built and run by capi/tests/c_api.rs.
typedef struct CUstream_st *CUstream;
#include "pydevice.h"

#include <cstring>

int main() {
  CUstream stream = nullptr;
  PydeviceParam p{};
  uint32_t dims[3] = {1, 1, 1};
  if (pydevice_kernel_launch(nullptr, stream, dims, dims, 0, nullptr, 0) !=
      PYDEVICE_STATUS_INVALID_ARGUMENT)
    return 1;
  if (std::strstr(pydevice_last_error(), "`kernel` is NULL") == nullptr) return 2;
  if (pydevice_kernel_param(nullptr, 0, &p) != PYDEVICE_STATUS_INVALID_ARGUMENT) return 3;
  return 0;
}
