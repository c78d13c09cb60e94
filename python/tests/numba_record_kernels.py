# numba-cuda code that binds a structured dtype to a module global and uses it as the dtype
# of shared and local arrays (numba-cuda's test_sm: `dt = numba.from_dtype(arr.dtype)`;
# docs/semantics.md §5.16); only the import differs from numba-cuda.
import numpy as np

from pydevice.numba import cuda

rec = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])
pair = np.dtype([("a", np.uint8), ("b", np.float64)], align=True)
NTHREADS = 16


@cuda.jit
def chunk_copy(x, y):
    # All threads load a chunk of records into shared memory; thread 0 writes it back.
    sm = cuda.shared.array(NTHREADS, dtype=rec)
    tx = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tx
    if i < len(x):
        sm[tx] = x[i]
    cuda.syncthreads()
    if tx == 0:
        for j in range(NTHREADS):
            k = cuda.blockIdx.x * cuda.blockDim.x + j
            if k < len(y):
                y[k] = sm[j]


@cuda.jit
def bump(z):
    # A local array of aligned records: a whole record in, a field updated, the record out.
    tmp = cuda.local.array(1, dtype=pair)
    i = cuda.grid(1)
    if i < len(z):
        tmp[0] = z[i]
        tmp[0].b = tmp[0].b * 2.0 + tmp[0].a
        z[i] = tmp[0]
