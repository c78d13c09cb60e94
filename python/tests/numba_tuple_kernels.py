# numba-cuda's broadcasting `setitem` kernel (numba-cuda's cudadrv/devicearray.py): only the
# import differs (numba has `to_fixed_tuple` in numba.np.unsafe.ndarray).
from pydevice.numba import cuda, int64, to_fixed_tuple

ndim = 2


@cuda.jit
def broadcast_setitem(lhs, rhs):
    location = cuda.grid(1)

    n_elements = 1
    for i in range(lhs.ndim):
        n_elements *= lhs.shape[i]  # a run-time index into the shape tuple
    if location >= n_elements:
        return

    idx = cuda.local.array(shape=(2, ndim), dtype=int64)

    for i in range(ndim - 1, -1, -1):
        idx[0, i] = location % lhs.shape[i]
        idx[1, i] = (location % lhs.shape[i]) * (rhs.shape[i] > 1)
        location //= lhs.shape[i]

    lhs[to_fixed_tuple(idx[0], ndim)] = rhs[to_fixed_tuple(idx[1], ndim)]
