# Kernels on zero-dimensional array arguments (docs/semantics.md §5.3), written as CuPy's
# jit tests (`TestRaw::test_raw_0dim_array`) and numba-cuda write them; only the imports
# differ from theirs.
from pydevice.cupyx import jit
from pydevice.numba import cuda

from cuda import device


@jit.rawkernel()
def raw_0dim(x, y):
    x[()] = y[()] + 1


@jit.rawkernel()
def raw_0dim_mixed(s, a, out):
    # A 0-d scale read by every thread beside 1-D arrays.
    i = jit.threadIdx.x + jit.blockIdx.x * jit.blockDim.x
    if i < a.size:
        out[i] = a[i] * s[()]


@cuda.jit
def numba_0dim(lhs, rhs, out):
    i = cuda.grid(1)
    if i == 0:
        lhs[()] = rhs[()] * 2.0
    if i < len(out):
        out[i] = rhs[()] * i + rhs.ndim + rhs.size + len(rhs.shape)


@cuda.jit
def numba_first(a, out):
    # `a` is used as a 1-D array: a 0-d argument is refused when compiling.
    out[0] = a[0]


@device.func
def host_bump(x, y):
    # Called on the host from Python (`Func.__call__`) with 0-d NumPy arrays.
    x[()] = y[()] + 1.0
    return x[()] * 2.0


@device.kernel
def annotated_1d(a: "float64[:]", out: "float64[:]"):
    # Annotated 1-D: a 0-d argument does not fit the annotation.
    out[0] = a[0]


@device.kernel
def annotated_0d(a: "float64[()]", out: "float64[:]"):
    out[device.thread_idx.x] = a[()]
