# numba-cuda code whose locals are reassigned values of other types (numba's SSA renaming,
# docs/semantics.md §2.5.1); only the import differs from numba-cuda.
from pydevice.numba import cuda, int8


@cuda.jit
def vectors_then_longer_vectors(a, res):
    # `v` is int8x2 in the first loop and int8x3 in the second (numba's test_vector_type).
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = int8(a[i])
        y = int8(a[i] + 1)
        z = int8(a[i] + 2)
        j = 0
        for v in tuple((cuda.int8x2(x, y), cuda.int8x2(y, z))):  # noqa: C409 (numba test form)
            res[i, j] = v.x * 3 + v.y
            j += 1
        for v in (cuda.int8x3(x, y, z), cuda.int8x3(z, y, x)):
            res[i, j] = v.x * 9 + v.y * 3 + v.z
            j += 1


@cuda.jit
def counter_rebound_to_array(res, m, data):
    # `t` is the int64 loop counter, then an array in the inner loop (numba's test_ssa).
    i = cuda.grid(1)
    if i < res.shape[0]:
        for t in range(1, m):
            res[i] += t
            for k in range(2):
                t = data
                res[i] += t[k] * i


@cuda.jit
def branches_still_unify(a, res):
    # Two assignments that reach one read stay one variable: 0 then float64 is float64.
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = 0
        if a[i] > 0.5:
            x = a[i]
        res[i] = x
