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


def test_numba_suite_writes_structured_dtype_globals():
    """scripts/numba_suite.py writes a Record (or structured NumPy dtype) global as the
    `numpy.dtype([...])` the dialect reads; other structured dtypes stay uncapturable."""
    import importlib.util
    import os

    import pytest

    pytest.importorskip("numba", reason="numba-cuda is not installed")
    from numba.np import numpy_support

    path = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "numba_suite.py")
    spec = importlib.util.spec_from_file_location("numba_suite", path)
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    text = suite.record_dtype_text(numpy_support.from_dtype(R.rec))
    assert text == "numpy.dtype([('i', 'int32'), ('j', 'float32', (3, 2))])"
    assert eval(text, {"numpy": np}) == R.rec  # noqa: S307 - our own generated text
    text = suite.record_dtype_text(R.pair)
    assert text.endswith("align=True)") and eval(text, {"numpy": np}) == R.pair  # noqa: S307
    for bad in (np.dtype([("x", np.int32), ("y", "<U12")]),
                np.dtype({"names": ["a", "b"], "formats": ["i4", "i4"], "offsets": [0, 8]})):
        with pytest.raises(suite.Uncapturable):
            suite.record_dtype_text(bad)
