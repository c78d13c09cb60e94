"""A structured dtype bound to a module global used as the dtype of shared and local arrays
(docs/semantics.md §5.16), as numba-cuda's test_sm writes it: random records round-trip
through shared memory, and a local record is updated, against NumPy. On the GPU where there
is one, on the CPU back end otherwise (conftest.py)."""

import numpy as np

import numba_record_kernels as R


def test_structured_dtype_globals_as_array_dtypes(gpu):
    rng = np.random.default_rng(11)
    n = 8 * R.NTHREADS
    x = np.zeros(n, R.rec)
    x["i"] = rng.integers(-1000, 1000, n)
    x["j"] = rng.random((n, 3, 2), dtype=np.float32)
    y = np.zeros(n, R.rec)
    R.chunk_copy[n // R.NTHREADS, R.NTHREADS](x, y)
    np.testing.assert_array_equal(y, x)

    z = np.zeros(50, R.pair)
    z["a"] = rng.integers(0, 255, 50)
    z["b"] = rng.random(50)
    want = z.copy()
    want["b"] = want["b"] * 2.0 + want["a"]
    R.bump[2, 32](z)
    np.testing.assert_array_equal(z["a"], want["a"])
    np.testing.assert_allclose(z["b"], want["b"], rtol=1e-15)
