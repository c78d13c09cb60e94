"""Zero-dimensional array arguments from Python (docs/semantics.md §5.3): a 0-d NumPy array
(CPU back end, or copied to the GPU), CuPy array (CUDA Array Interface/DLPack) is passed as
a 0-d array, `dtype[()]`, whose parameter is the element's address, in the cupyx.jit
`rawkernel` and numba launch paths. CuPy's `TestRaw::test_raw_0dim_array` is the first test.

The launches take the `cupy`/`gpu` fixtures: on a GPU they run there, without one on the
CPU back end (`cupy` is then `host_cupy`, CuPy's API over NumPy)."""

import numpy as np
import pytest
import zero_dim_kernels as K

from pydevice.errors import CompileError


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_raw_0dim_array(cupy, dtype):
    rng = np.random.default_rng(3)
    v = dtype(rng.integers(-1000, 1000))
    x = cupy.array(dtype(0))
    y = cupy.array(v)
    assert x.ndim == 0 and y.ndim == 0
    K.raw_0dim((1,), (1,), (x, y))
    got = cupy.asnumpy(x)
    assert got.shape == () and got == v + 1
    assert cupy.asnumpy(y) == v  # not written
    # Again with new values: the second launch (the native fast path's turn, on a GPU, which
    # leaves 0-d arrays to the general path) reads the new arrays.
    w = dtype(rng.integers(-1000, 1000))
    x2, y2 = cupy.array(dtype(0)), cupy.array(w)
    K.raw_0dim((1,), (1,), (x2, y2))
    assert cupy.asnumpy(x2) == w + 1 and cupy.asnumpy(x) == v + 1


def test_raw_0dim_array_beside_1d_arrays(cupy):
    rng = np.random.default_rng(5)
    a_h = rng.random(300)
    s_h = rng.random()
    a = cupy.asarray(a_h)
    s = cupy.array(s_h)
    out = cupy.zeros(300)
    K.raw_0dim_mixed((3,), (128,), (s, a, out))
    np.testing.assert_allclose(cupy.asnumpy(out), a_h * s_h, rtol=1e-15)


def test_raw_0dim_then_1d_are_two_specializations(cupy):
    # A one-element 1-D array is not a 0-d one: each gets its own specialization.
    x0, y0 = cupy.array(np.int32(0)), cupy.array(np.int32(41))
    K.raw_0dim((1,), (1,), (x0, y0))
    assert int(cupy.asnumpy(x0)) == 42
    x1, y1 = cupy.zeros(1, dtype=np.int32), cupy.full(1, 9, dtype=np.int32)
    # `y[()]` of a 1-D array is the whole array (NumPy's rule), so `+ 1` is refused for it.
    with pytest.raises(CompileError, match=r"int32\[::1\]"):
        K.raw_0dim((1,), (1,), (x1, y1))


def test_numba_0dim_device_arrays(cupy):
    rng = np.random.default_rng(11)
    r = rng.random()
    lhs = cupy.array(np.float64(0))
    rhs = cupy.array(np.float64(r))
    out = cupy.zeros(100)
    K.numba_0dim[4, 32](lhs, rhs, out)
    assert float(cupy.asnumpy(lhs)) == r * 2.0
    np.testing.assert_array_equal(cupy.asnumpy(out), r * np.arange(100) + 0 + 1 + 0)


def test_numba_0dim_host_arrays(gpu):
    # Host NumPy arrays: in place on the CPU back end, copied to the GPU and back on a GPU.
    rng = np.random.default_rng(13)
    r = rng.random()
    lhs = np.array(0.0)
    rhs = np.array(r)
    out = np.zeros(50)
    K.numba_0dim[2, 32](lhs, rhs, out)
    assert lhs.shape == () and float(lhs) == r * 2.0
    assert float(rhs) == r
    np.testing.assert_array_equal(out, r * np.arange(50) + 1)


def test_0dim_into_1d_parameter_is_a_clear_error(gpu):
    out = np.zeros(1)
    with pytest.raises(CompileError) as e:
        K.numba_first[1, 1](np.array(2.0), out)
    msg = str(e.value)
    assert "E0203" in msg and "float64[()]" in msg and "a[0]" in msg, msg


def test_host_call_with_0dim_arrays():
    # A host `@func` call (no GPU): 0-d NumPy arrays are passed as 0-d arrays, in place.
    rng = np.random.default_rng(17)
    r = rng.random()
    x, y = np.array(0.0), np.array(r)
    assert K.host_bump(x, y) == (r + 1.0) * 2.0
    assert float(x) == r + 1.0 and float(y) == r
    # A strided view's element: still 0-d, written back.
    base = np.zeros(4)
    v = base[2:3].reshape(())
    K.host_bump(v, y)
    assert base[2] == r + 1.0


def test_annotations_and_0dim_arrays(gpu):
    # `float64[()]` takes a 0-d array; a `float64[:]` parameter refuses one before compiling.
    r = np.random.default_rng(19).random()
    out = np.zeros(8)
    K.annotated_0d[1, 8](np.array(r), out)
    np.testing.assert_array_equal(out, np.full(8, r))
    with pytest.raises(TypeError, match=r"float64\[\(\)\]"):
        K.annotated_1d[1, 1](np.array(r), out)
    with pytest.raises(TypeError):
        K.annotated_0d[1, 1](np.array([r]), out)
