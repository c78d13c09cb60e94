# A module written for numba-cuda; only the import is changed
# (`from numba import cuda` -> `from pydevice.numba import cuda`).
from pydevice.numba import cuda
import math


@cuda.jit(device=True)
def sq(x):
    return x * x


@cuda.jit
def axpy(r, a, x, y):
    i = cuda.grid(1)
    if i < r.size:
        r[i] = a * x[i] + sq(y[i]) + math.sqrt(4.0)


@cuda.jit("void(float64[:], float64[:])")
def copy(dst, src):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]
