/* The C API's test, in C: parse a module, compile a kernel, read its PTX and parameter
 * layout, check that errors come back as values with rendered diagnostics, and, where a GPU
 * is present, launch the kernel on a stream and check its results. Without a GPU the launch
 * must report PYDEVICE_STATUS_NO_DRIVER (or a driver error) and the test says it skipped.
 *
 * Built and run by capi/tests/c_api.rs (`cargo test -p pydevice-capi`). The CUDA driver is
 * opened with dlopen, so that the test builds on machines without CUDA. Exit status 0 means
 * every check passed; the last line says whether the launch ran ("launch: ok") or was
 * skipped ("launch: skipped, ..."). */
#include "pydevice.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static const char *last(void) {
  const char *e = pydevice_last_error();
  return e ? e : "(no error)";
}

static const char *AXPY =
    "from cuda import device\n"
    "\n"
    "\n"
    "@device.kernel\n"
    "def axpy(out, x, a):\n"
    "    i = device.tid(1)\n"
    "    if i < len(out):\n"
    "        out[i] = a * x[i] + out[i]\n";

static const char *BAD =
    "from cuda import device\n"
    "\n"
    "\n"
    "@device.kernel\n"
    "def bad(out):\n"
    "    i = device.tid(1)\n"
    "    out[i] = out + 1.5\n";

/* The descriptor of a 1-D float32 array, as PYDEVICE_PARAM_KIND_ARRAY describes it. */
typedef struct {
  uint64_t data;
  uint64_t shape[1];
  int64_t strides[1];
} Array1;

/* The CUDA driver entry points the launch test needs (cuda.h's types, spelled out). */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef struct CUstream_st *CUstream;
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamDestroy)(CUstream);
};

/* Opens the driver and GPU 0's primary context; returns 0 and says why when there is none. */
static int open_driver(struct Driver *d, const char **why) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    *why = "no CUDA driver (libcuda.so.1 not found)";
    return 0;
  }
#define SYM(field, name)                           \
  *(void **)(&d->field) = dlsym(lib, name);        \
  if (!d->field) {                                 \
    *why = "the CUDA driver lacks " name;          \
    return 0;                                      \
  }
  SYM(cuInit, "cuInit");
  SYM(cuDeviceGet, "cuDeviceGet");
  SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
  SYM(cuMemAlloc, "cuMemAlloc_v2");
  SYM(cuMemFree, "cuMemFree_v2");
  SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  SYM(cuStreamCreate, "cuStreamCreate");
  SYM(cuStreamSynchronize, "cuStreamSynchronize");
  SYM(cuStreamDestroy, "cuStreamDestroy_v2");
#undef SYM
  CUdevice dev;
  CUcontext ctx;
  if (d->cuInit(0) != 0 || d->cuDeviceGet(&dev, 0) != 0) {
    *why = "no GPU (cuInit or cuDeviceGet failed)";
    return 0;
  }
  if (d->cuDevicePrimaryCtxRetain(&ctx, dev) != 0 || d->cuCtxSetCurrent(ctx) != 0) {
    *why = "GPU 0's primary context could not be made current";
    return 0;
  }
  return 1;
}

/* Launches axpy on 1000 elements on a stream of its own and checks out = 2.5 * x + out. */
static void launch_axpy(const PydeviceKernel *k, const struct Driver *d) {
  enum { N = 1000 };
  static float x[N], out[N], back[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    out[i] = 1.0f;
  }
  CUdeviceptr dx = 0, dout = 0;
  CUstream stream = NULL;
  CHECK(d->cuMemAlloc(&dx, sizeof x) == 0, "cuMemAlloc");
  CHECK(d->cuMemAlloc(&dout, sizeof out) == 0, "cuMemAlloc");
  CHECK(d->cuMemcpyHtoD(dx, x, sizeof x) == 0, "cuMemcpyHtoD");
  CHECK(d->cuMemcpyHtoD(dout, out, sizeof out) == 0, "cuMemcpyHtoD");
  CHECK(d->cuStreamCreate(&stream, 0) == 0, "cuStreamCreate");

  unsigned char args[56] = {0};
  Array1 a_out = {dout, {N}, {1}}, a_x = {dx, {N}, {1}};
  float a = 2.5f;
  PydeviceParam p;
  pydevice_kernel_param(k, 0, &p);
  memcpy(args + p.offset, &a_out, sizeof a_out);
  pydevice_kernel_param(k, 1, &p);
  memcpy(args + p.offset, &a_x, sizeof a_x);
  pydevice_kernel_param(k, 2, &p);
  memcpy(args + p.offset, &a, sizeof a);
  uint32_t grid[3] = {(N + 127) / 128, 1, 1}, block[3] = {128, 1, 1};
  PydeviceStatus s = pydevice_kernel_launch(k, stream, grid, block, 0, args, sizeof args);
  CHECK(s == PYDEVICE_STATUS_OK, "launch: %d %s", (int)s, last());
  /* Launched twice: the second launch reuses the kernel loaded by the first. */
  s = pydevice_kernel_launch(k, stream, grid, block, 0, args, sizeof args);
  CHECK(s == PYDEVICE_STATUS_OK, "second launch: %d %s", (int)s, last());
  CHECK(d->cuStreamSynchronize(stream) == 0, "cuStreamSynchronize");
  CHECK(d->cuMemcpyDtoH(back, dout, sizeof back) == 0, "cuMemcpyDtoH");
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    float want = 2.5f * (float)i + (2.5f * (float)i + 1.0f);
    if (fabsf(back[i] - want) > 1e-3f * fabsf(want) + 1e-6f) {
      if (wrong++ < 5) fprintf(stderr, "out[%d] = %g, want %g\n", i, back[i], want);
    }
  }
  CHECK(wrong == 0, "%d wrong results", wrong);
  d->cuStreamDestroy(stream);
  d->cuMemFree(dx);
  d->cuMemFree(dout);
}

int main(void) {
  /* NULL arguments are errors as values, not crashes. */
  CHECK(pydevice_module_parse(NULL, AXPY) == NULL, "parse(NULL, ...)");
  CHECK(pydevice_last_status() == PYDEVICE_STATUS_INVALID_ARGUMENT, "status %d",
        (int)pydevice_last_status());
  CHECK(strstr(last(), "`filename` is NULL") != NULL, "message: %s", last());
  CHECK(pydevice_module_compile(NULL, "axpy", NULL, NULL) == NULL, "compile(NULL, ...)");
  CHECK(pydevice_kernel_param_count(NULL) == 0, "param_count(NULL)");
  CHECK(pydevice_kernel_ptx(NULL) == NULL, "ptx(NULL)");
  pydevice_module_free(NULL);
  pydevice_kernel_free(NULL);

  /* Parse and compile. */
  PydeviceModule *m = pydevice_module_parse("axpy.py", AXPY);
  CHECK(m != NULL, "parse: %s", last());
  CHECK(pydevice_last_error() == NULL, "an error after a success: %s", last());
  if (!m) return 1;
  CHECK(pydevice_module_compile(m, "axpy", "float32[::1], float32[::1], float32", "sm_1") == NULL,
        "a bad arch");
  CHECK(strstr(last(), "sm_1") != NULL, "message: %s", last());
  CHECK(pydevice_module_compile(m, "nothere", "float32", NULL) == NULL, "an unknown entry");
  CHECK(strstr(last(), "nothere") != NULL, "message: %s", last());
  PydeviceKernel *k =
      pydevice_module_compile(m, "axpy", "float32[::1], float32[::1], float32", "sm_90");
  CHECK(k != NULL, "compile: %s", last());
  /* The kernel does not borrow the module. */
  pydevice_module_free(m);
  if (!k) return 1;

  const char *ptx = pydevice_kernel_ptx(k);
  CHECK(ptx && strstr(ptx, ".entry") != NULL, "no .entry in the PTX");
  CHECK(ptx && strstr(ptx, ".target sm_90") != NULL, "not compiled for sm_90");
  const char *sym = pydevice_kernel_symbol(k);
  CHECK(sym && ptx && strstr(ptx, sym) != NULL, "the symbol is not in the PTX");

  /* The parameter layout: two 1-D array descriptors (8 + 16 bytes) and a float. */
  CHECK(pydevice_kernel_param_count(k) == 3, "param count %zu", pydevice_kernel_param_count(k));
  CHECK(pydevice_kernel_args_size(k) == 56, "args size %zu", pydevice_kernel_args_size(k));
  static const char *names[] = {"out", "x", "a"};
  static const size_t offsets[] = {0, 24, 48}, sizes[] = {24, 24, 4}, aligns[] = {8, 8, 4};
  static const PydeviceParamKind kinds[] = {PYDEVICE_PARAM_KIND_ARRAY, PYDEVICE_PARAM_KIND_ARRAY,
                                            PYDEVICE_PARAM_KIND_SCALAR};
  for (size_t i = 0; i < 3; i++) {
    PydeviceParam p;
    CHECK(pydevice_kernel_param(k, i, &p) == PYDEVICE_STATUS_OK, "param %zu: %s", i, last());
    CHECK(strcmp(p.name, names[i]) == 0, "param %zu is named %s", i, p.name);
    CHECK(p.offset == offsets[i], "param %zu at %zu", i, p.offset);
    CHECK(p.size == sizes[i], "param %zu has size %zu", i, p.size);
    CHECK(p.align == aligns[i], "param %zu has align %zu", i, p.align);
    CHECK(p.kind == kinds[i], "param %zu has kind %d", i, (int)p.kind);
    CHECK(p.ndim == (i < 2 ? 1u : 0u), "param %zu has ndim %u", i, p.ndim);
  }
  PydeviceParam p;
  CHECK(strcmp((pydevice_kernel_param(k, 2, &p), p.type_name), "float32") == 0, "type %s",
        p.type_name);
  CHECK(pydevice_kernel_param(k, 3, &p) == PYDEVICE_STATUS_INVALID_ARGUMENT, "param 3");
  CHECK(pydevice_kernel_param(k, 0, NULL) == PYDEVICE_STATUS_INVALID_ARGUMENT, "out NULL");

  /* A launch buffer of the wrong size is refused before anything is launched. */
  unsigned char small[8] = {0};
  uint32_t one[3] = {1, 1, 1};
  CHECK(pydevice_kernel_launch(k, NULL, one, one, 0, small, sizeof small) ==
            PYDEVICE_STATUS_INVALID_ARGUMENT,
        "a short buffer: %s", last());
  CHECK(strstr(last(), "56-byte buffer, got 8") != NULL, "message: %s", last());
  CHECK(pydevice_kernel_launch(k, NULL, NULL, one, 0, small, sizeof small) ==
            PYDEVICE_STATUS_INVALID_ARGUMENT,
        "grid NULL");

  /* A compile error: the rendered diagnostic names the file and shows the source line. */
  PydeviceModule *bad = pydevice_module_parse("bad.py", BAD);
  PydeviceKernel *bk = bad ? pydevice_module_compile(bad, "bad", "float32[::1]", NULL) : NULL;
  CHECK(bk == NULL, "the bad kernel compiled");
  CHECK(pydevice_last_status() == PYDEVICE_STATUS_PROGRAM, "status %d",
        (int)pydevice_last_status());
  CHECK(strstr(last(), "bad.py:7") != NULL, "no file:line in: %s", last());
  CHECK(strstr(last(), "out[i] = out + 1.5") != NULL, "no source line in: %s", last());
  printf("compile error, as rendered:\n%s\n", last());
  pydevice_kernel_free(bk);
  pydevice_module_free(bad);

  /* The launch. */
  struct Driver d;
  const char *why = NULL;
  if (open_driver(&d, &why)) {
    launch_axpy(k, &d);
    if (failures == 0) printf("launch: ok\n");
  } else {
    unsigned char args[56] = {0};
    PydeviceStatus s = pydevice_kernel_launch(k, NULL, one, one, 0, args, sizeof args);
    /* Without the driver library: NO_DRIVER; with it but no usable GPU: a driver error. */
    int no_driver = strncmp(why, "no CUDA driver", 14) == 0;
    CHECK(no_driver ? s == PYDEVICE_STATUS_NO_DRIVER
                    : (s == PYDEVICE_STATUS_NO_DRIVER || s == PYDEVICE_STATUS_RUNTIME),
          "a launch without a GPU: %d %s", (int)s, last());
    CHECK(pydevice_last_error() != NULL, "no message");
    printf("launch: skipped, %s (the API said: %s)\n", why, last());
  }
  pydevice_kernel_free(k);
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  return failures ? 1 : 0;
}
