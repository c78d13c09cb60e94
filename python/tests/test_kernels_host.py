"""ElementwiseKernel, ReductionKernel, fuse and vectorize on NumPy arrays: the generated
kernel runs on the host, compiled through Cranelift (docs/semantics.md §20.8), with no GPU.
Results against NumPy with random inputs: the seed's examples, broadcasting of 0-d through
4-d inputs, non-contiguous and negative-stride views, strided and given outputs,
float16/float32/float64/int/bool dtypes, empty arrays, reductions along every axis with
keepdims. Complex numbers are refused with a clear error (the host does not compute on them
in this version)."""

import math

import numpy as np
import pytest

import pydevice

rng = np.random.default_rng(2020)

SQD = pydevice.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff")
SQD_GENERIC = pydevice.ElementwiseKernel(
    "T x, T y", "T z", "\n    diff = x - y\n    z = diff * diff\n", "squared_diff_generic"
)
SQD_SUPER = pydevice.ElementwiseKernel("X x, Y y", "Z z", "z = (x - y) * (x - y)", "squared_diff_super_generic")
ADD_REVERSE = pydevice.ElementwiseKernel("T x, raw T y", "T z", "z = x + y[_ind.size() - i - 1]", "add_reverse")
L2NORM = pydevice.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


def rand(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if dt.kind in "iu":
        return rng.integers(-50 if dt.kind == "i" else 0, 50, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.standard_normal(shape).astype(dt)


def test_seed_squared_diff_typed_generic_super_generic():
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    y = np.arange(5, dtype=np.float32)
    z = SQD(x, y)
    assert isinstance(z, np.ndarray) and z.dtype == np.float32
    np.testing.assert_array_equal(z, [[0] * 5, [25] * 5])
    np.testing.assert_array_equal(SQD(x, 5), [[25, 16, 9, 4, 1], [0, 1, 4, 9, 16]])
    out = np.empty((2, 5), dtype=np.float32)
    assert SQD(x, y, out) is out
    np.testing.assert_array_equal(out, [[0] * 5, [25] * 5])
    for dt in ("float32", "float64", "int32", "int64", "int8", "uint16"):
        a, b = rand((300, 7), dt), rand((7,), dt)
        got = SQD_GENERIC(a, b)
        assert got.dtype == np.dtype(dt)
        want = (a - b) * (a - b)
        if want.dtype.kind in "iu":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6)
    a, b = rand(100, "float32"), rand(100, "int32")
    out = np.empty(100, dtype=np.float64)
    SQD_SUPER(a, b, out)
    np.testing.assert_allclose(out, (a.astype(np.float64) - b) ** 2, rtol=1e-12)
    with pytest.raises(pydevice.CompileError, match="placeholder `Z`"):
        SQD_SUPER(a, b)


def test_seed_add_reverse_with_raw():
    for n in (1, 10, 100_001):
        a, b = rand(n, "float32"), rand(n, "float32")
        np.testing.assert_array_equal(ADD_REVERSE(a, b), a + b[::-1])
    # A raw argument may itself be a strided view.
    a, b = rand(50, "float64"), rand(100, "float64")
    np.testing.assert_array_equal(ADD_REVERSE(a, b[::2]), a + b[::2][::-1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_seed_l2norm_every_axis_and_keepdims(dtype):
    x = np.arange(10, dtype=dtype).reshape(2, 5)
    np.testing.assert_allclose(L2NORM(x, axis=1), [5.477226, 15.9687195], rtol=1e-6)
    for shape in ((2, 5), (3, 4, 5), (64, 300), (300, 64), (2, 3, 4, 5), (100_000,), ()):
        a = rand(shape, dtype)
        axes = [None] + list(range(a.ndim)) + ([-1] if a.ndim else [])
        if a.ndim >= 3:
            axes += [(0, 2), (0, 1), (1, 2)]
        if a.ndim == 4:
            axes += [(1, 3), (0, 2, 3)]
        for axis in axes:
            for keepdims in (False, True):
                want = np.sqrt(np.sum(a.astype(np.float64) ** 2, axis=axis, keepdims=keepdims))
                got = L2NORM(a, axis=axis, keepdims=keepdims)
                assert got.shape == want.shape, (shape, axis, keepdims)
                assert got.dtype == np.dtype(dtype)
                np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == "float32" else 1e-12)


def test_reductions_of_strided_and_broadcast_inputs_and_given_outputs():
    m = rand((40, 30, 6), "float64")
    v = m[::-2, 3:, ::3]
    s = pydevice.ReductionKernel("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "wsum")
    w = rand((1, 2), "float64")
    for axis in (None, 0, 1, 2, (0, 2)):
        np.testing.assert_allclose(s(v, w, axis=axis), np.sum(v * w, axis=axis), rtol=1e-12)
    # A given output with a negative stride.
    o = np.full(27, -1.0)
    s(v, w, o[::-1], axis=(0, 2))
    np.testing.assert_allclose(o[::-1], np.sum(v * w, axis=(0, 2)), rtol=1e-12)
    with pytest.raises(pydevice.ArgumentError, match="shape"):
        s(v, w, np.zeros(5), axis=(0, 2))


def test_integer_min_max_and_wrapping_sums():
    m = rand((50, 70), "int32")
    for op, red, ident in (("max", "max(a, b)", str(np.iinfo(np.int32).min)), ("min", "min(a, b)", str(np.iinfo(np.int32).max))):
        k = pydevice.ReductionKernel("T x", "T y", "x", red, "y = a", ident, "r" + op)
        for axis in (None, 0, 1):
            np.testing.assert_array_equal(k(m, axis=axis), getattr(m, op)(axis=axis))
    s8 = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum8")
    b = rand((64, 300), "int8")
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(s8(b, axis=axis), b.astype(np.int64).sum(axis=axis).astype(np.int8))


@pytest.mark.parametrize("ndims", [(0, 0), (0, 1), (1, 2), (2, 3), (3, 4), (4, 1), (4, 4), (0, 4)])
def test_broadcasting_0d_to_4d(ndims):
    full = (3, 4, 5, 6)
    sa = full[4 - ndims[0]:]
    sb = tuple(1 if k % 2 else d for k, d in enumerate(full[4 - ndims[1]:]))
    a, b = rand(sa, "float64"), rand(sb, "float64")
    got = SQD_GENERIC(a, b)
    want = (a - b) ** 2
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_non_contiguous_views_and_strided_outputs():
    a = rand((40, 60), "float32")
    b = rand((60, 40), "float32")
    for x, y in (
        (a[:, ::2], b.T[:, 1::2]),
        (a[::-1], b.T),
        (a[3:17:3, ::-5], a[5:10, 2:14]),
        (np.broadcast_to(a[0], (40, 60)), a),
    ):
        np.testing.assert_array_equal(SQD(x, y), (x - y) ** 2)
    out = np.zeros((40, 120), dtype=np.float32)
    SQD(a, a[:, ::-1], out[:, ::2])
    np.testing.assert_array_equal(out[:, ::2], (a - a[:, ::-1]) ** 2)
    assert (out[:, 1::2] == 0).all()
    # Fortran order and a transposed 4-d view.
    f = np.asfortranarray(rand((7, 9), "float64"))
    np.testing.assert_allclose(SQD_GENERIC(f, f.T.T[::-1]), (f - f[::-1]) ** 2)
    t = rand((2, 3, 4, 5), "float64").transpose(3, 1, 0, 2)
    np.testing.assert_allclose(SQD_GENERIC(t, t[:, :, :1, :]), (t - t[:, :, :1, :]) ** 2)
    # In place: the output is an input.
    c = rand(100, "float32")
    want = (c - 1) ** 2
    SQD(c, 1, c)
    np.testing.assert_array_equal(c, want)


def test_read_only_outputs_and_bad_calls_change_nothing():
    a = rand(10, "float32")
    ro = np.zeros(10, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        SQD(a, a, ro)
    with pytest.raises(pydevice.ArgumentError, match="do not broadcast"):
        SQD(a, rand(3, "float32"))
    out = np.full((4,), 7, np.float32)
    with pytest.raises(pydevice.ArgumentError):
        SQD(a, a, out)
    assert (out == 7).all()
    with pytest.raises(TypeError, match="mixed|cannot be mixed"):
        SQD(a, a, _FakeDeviceArray())


class _FakeDeviceArray:
    shape = (10,)
    dtype = np.dtype(np.float32)

    @property
    def __cuda_array_interface__(self):
        return {"shape": (10,), "typestr": "<f4", "data": (1 << 40, False), "strides": None, "version": 3}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "uint16", "int64", "bool"])
def test_dtypes(dtype):
    a, b = rand((33, 17), dtype), rand((17,), dtype)
    if dtype == "bool":
        k = pydevice.ElementwiseKernel("T x, T y", "T z", "z = x != y", "xor_bool")
        np.testing.assert_array_equal(k(a, b), a != b)
        return
    got = SQD_GENERIC(a, b)
    want = (a - b) * (a - b)
    assert got.dtype == np.dtype(dtype)
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, want)
    elif dtype == "float16":
        # Each float16 operation is computed in float32 and rounded once, as NumPy does.
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)
    if np.dtype(dtype).kind != "u":
        s = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum_" + dtype)
        m = rand((50, 70), dtype)
        for axis in (None, 0, 1):
            got = s(m, axis=axis)
            if m.dtype.kind in "iu":
                np.testing.assert_array_equal(got, m.astype(np.int64).sum(axis=axis).astype(dtype))
                continue
            want = m.astype(np.float64).sum(axis=axis)
            tol = dict(rtol=1e-2, atol=0.5) if dtype == "float16" else dict(rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got, want, **tol)


def test_mixed_dtypes_convert_as_on_the_device():
    k = pydevice.ElementwiseKernel("float64 x, float32 y", "int32 z", "z = x * y", "mixed")
    a, b = rand(100, "int16"), rand(100, "float32")
    # int16 converts to float64 on load (same_kind); the float64 product converts to int32
    # on store, truncating as item assignment does.
    np.testing.assert_array_equal(k(a, b), (a.astype(np.float64) * b).astype(np.int32))
    with pytest.raises(pydevice.ArgumentError, match="same_kind"):
        k(rand(3, "complex128"), rand(3, "float32"))


def test_math_functions_and_a_multi_statement_body():
    k = pydevice.ElementwiseKernel(
        "T x, T y", "T z, int32 k",
        "r = math.hypot(x, y)\nif r > 1:\n    z = math.log(r)\nelse:\n    z = exp(-r)\nk = i",
        "polar",
    )
    a, b = rand((20, 30), "float64"), rand((30,), "float64")
    z, idx = k(a, b)
    r = np.hypot(a, b)
    np.testing.assert_allclose(z, np.where(r > 1, np.log(r), np.exp(-r)), rtol=1e-14)
    np.testing.assert_array_equal(idx, np.arange(600).reshape(20, 30))


def test_empty_arrays():
    e = np.zeros((0, 5), dtype=np.float32)
    assert SQD(e, np.zeros(5, dtype=np.float32)).shape == (0, 5)
    np.testing.assert_array_equal(L2NORM(e, axis=0), np.zeros(5, np.float32))
    assert L2NORM(e, axis=1).shape == (0,)
    np.testing.assert_array_equal(L2NORM(e), 0)
    assert L2NORM(e, axis=0, keepdims=True).shape == (1, 5)


def test_all_raw_needs_size():
    k = pydevice.ElementwiseKernel("raw T x", "raw T y", "y[i] = x[i] * 2", "double_raw")
    x = np.arange(10, dtype=np.int64)
    y = np.zeros(10, dtype=np.int64)
    with pytest.raises(ValueError, match=r"^Loop size is undecided\..*size="):
        k(x, y)
    k(x, y, size=10)
    np.testing.assert_array_equal(y, np.arange(10) * 2)
    # A raw index out of range is reported, not a memory access.
    with pytest.raises(pydevice.BoundsError, match="out of range"):
        k(x, y, size=11)


def test_complex_numbers_run_on_the_host():
    # Complex arithmetic runs on the host as on the device (docs/semantics.md §16.1).
    rng = np.random.default_rng(7)
    for dtype, tol in (("complex64", 1e-5), ("complex128", 1e-13)):
        x = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(dtype)
        y = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(dtype)
        got = SQD_GENERIC(x, y)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, (x - y) * (x - y), rtol=tol, atol=tol)


def test_outputs_assigned_on_one_branch_and_scalars_in_post_map():
    relu = pydevice.ElementwiseKernel("T x", "T y", "if x > 0:\n    y = x", "relu_keep")
    a = rand(1000, "float32")
    y = np.full(1000, -7, dtype=np.float32)
    relu(a, y)
    np.testing.assert_array_equal(y, np.where(a > 0, a, -7))
    mean = pydevice.ReductionKernel("T x, int64 count", "float64 m", "x", "a + b", "m = a / count", "0", "mean", "float64")
    m = rand((30, 40), "float32")
    np.testing.assert_allclose(mean(m, 40, axis=1), m.astype(np.float64).mean(axis=1), rtol=1e-12)


def test_long_float32_sums_are_as_accurate_as_numpy():
    s = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum32")
    v = rng.uniform(0, 1, 1 << 22).astype(np.float32)
    exact = v.astype(np.float64).sum()
    assert abs(float(s(v)) - exact) / exact < 1e-6
    assert abs(float(np.sum(v)) - exact) / exact < 1e-6


@pydevice.fuse(kernel_name="fused_sd")
def fused_squared_diff(x, y):
    return (x - y) * (x - y)


@pydevice.fuse()
def fused_pick(x, y):
    return np.where(x > y, np.sqrt(np.abs(x)), np.maximum(y, 0.5) * 2)


@pydevice.fuse()
def fused_sum_of_products(x, y):
    return np.sum(x * y, axis=-1)


@pydevice.fuse()
def fused_two(x):
    return x * 2, x + 1


def test_fuse_on_numpy_runs_the_compiled_kernel_on_the_host():
    for dt in ("float32", "float64", "int32"):
        a, b = rand((64, 33), dt), rand((33,), dt)
        np.testing.assert_allclose(fused_squared_diff(a, b), (a - b) * (a - b), rtol=1e-6)
        np.testing.assert_allclose(fused_sum_of_products(a, b), np.sum(a * b, axis=-1), rtol=1e-5)
        if dt != "int32":
            want = np.where(a > b, np.sqrt(np.abs(a)), np.maximum(b, 0.5) * 2)
            np.testing.assert_allclose(fused_pick(a, b), want, rtol=1e-6)
    assert len(fused_squared_diff._plans) == 3
    # The call compiled the kernel (it did not run the Python function on NumPy).
    assert "def fused_sd(" in fused_squared_diff.host_source(a, b)
    y, z = fused_two(rand((3, 4, 5), "float32"))
    assert y.shape == z.shape == (3, 4, 5)
    m = rand((100, 17), "float64")

    @pydevice.fuse()
    def amax(x):
        return np.max(x, axis=0)

    np.testing.assert_array_equal(amax(m), m.max(axis=0))
    # Scalars only: the function runs as written.
    assert fused_squared_diff(3.0, 1.0) == 4.0


@pydevice.vectorize(["float32(float32, float32)", "float64(float64, float64)"], target="cuda")
def vec_hyp(a, b):
    return math.sqrt(a * a + b * b)


def test_vectorize_on_numpy_runs_on_the_host():
    for dt in ("float32", "float64"):
        a, b = rand((10, 100), dt), rand(100, dt)
        got = vec_hyp(a, b)
        assert got.dtype == np.dtype(dt)
        np.testing.assert_allclose(got, np.hypot(a, b), rtol=1e-6)
    i = np.arange(10, dtype=np.int32)
    np.testing.assert_allclose(vec_hyp(i, i), np.hypot(i, i), rtol=1e-12)
    out = np.zeros(10)
    vec_hyp(i, i, out=out)
    np.testing.assert_allclose(out, np.hypot(i, i), rtol=1e-12)
    assert "@device.func" in vec_hyp.host_source(a, b)


def test_host_source_goldens():
    x = np.zeros((2, 5), np.float32)
    src = SQD.host_source(x, np.zeros(5, np.float32))
    assert "@device.func\ndef squared_diff(_p_x, _p_y, _p_z, _ind_size):\n    for i in range(_ind_size):" in src
    src = L2NORM.host_source(x, axis=1)
    assert "for _c in range(0, _n_red, 1024):" in src


# ---- guvectorize (§20.9): on NumPy arrays, on the host ----

from pydevice.numba import guvectorize  # noqa: E402  (the numba dialect's import path)


@guvectorize(["void(float32[:], float32[:], float32[:])", "void(float64[:], float64[:], float64[:])"], "(n),(n)->()", target="cuda")
def gu_dot(a, b, out):
    s = a[0] * 0
    for k in range(len(a)):
        s += a[k] * b[k]
    out[0] = s


@pydevice.guvectorize(["void(float64[:,:], float64[:], float64[:])"], "(m,n),(n)->(m)", target="cuda")
def gu_matvec(m, v, out):
    for r in range(m.shape[0]):
        s = m[r, 0] * 0
        for c in range(m.shape[1]):
            s += m[r, c] * v[c]
        out[r] = s


@pydevice.guvectorize(["void(float32[:], float32, float32[:], float32[:])"], "(n),()->(n),()", target="cuda")
def gu_scale_and_max(x, k, y, mx):
    best = x[0] * k
    for j in range(len(x)):
        y[j] = x[j] * k
        best = max(best, y[j])
    mx[0] = best


def test_guvectorize_dot_and_matvec_against_numpy():
    for dt in ("float32", "float64"):
        a, b = rand((7, 5, 16), dt), rand((5, 16), dt)
        got = gu_dot(a, b)
        assert got.dtype == np.dtype(dt) and got.shape == (7, 5)
        want = np.einsum("...n,...n->...", a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 if dt == "float32" else 1e-12)
    # Loop dimensions broadcast (0-d through 4-d), the matrix strided and transposed.
    for ms, vs in (((3, 4), (4,)), ((2, 3, 4), (2, 4)), ((2, 1, 3, 4), (5, 4)), ((1, 2, 1, 3, 4), (2, 1, 7, 4)), ((3, 4), (2, 2, 2, 4))):
        m, v = rand(ms, "float64"), rand(vs, "float64")
        want = np.einsum("...mn,...n->...m", m, v)
        got = gu_matvec(m, v)
        assert got.shape == want.shape, (ms, vs)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    big = rand((6, 10, 8), "float64")
    m, v = big[::-2, ::3, 1::2].transpose(0, 2, 1)[:, :3, :], rand((3, 4), "float64")[:, ::-1]
    np.testing.assert_allclose(gu_matvec(m, v[0]), np.einsum("...mn,...n->...m", m, v[0]), rtol=1e-12)
    # int32 inputs cast safely to float64 (numba's rule); given outputs, positional or out=.
    i = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = np.zeros(3)
    assert gu_matvec(i.astype(np.float64), np.ones(4), out) is out
    np.testing.assert_allclose(out, i.sum(axis=1))
    out2 = np.zeros(3)
    gu_matvec(i, np.ones(4, np.int32), out=out2)
    np.testing.assert_allclose(out2, i.sum(axis=1))
    # Empty loop dimensions run nothing.
    assert gu_dot(np.zeros((0, 3), np.float32), np.zeros(3, np.float32)).shape == (0,)


def test_guvectorize_scalar_inputs_and_several_outputs():
    x = rand((4, 6), "float32")
    y, mx = gu_scale_and_max(x, 2.5)
    np.testing.assert_allclose(y, x * np.float32(2.5), rtol=1e-6)
    np.testing.assert_allclose(mx, (x * np.float32(2.5)).max(axis=1), rtol=1e-6)
    # A scalar given per loop element.
    k = rand(4, "float32")
    y, mx = gu_scale_and_max(x, k)
    np.testing.assert_allclose(y, x * k[:, None], rtol=1e-6)
    # No loop dimensions: one call.
    y, mx = gu_scale_and_max(x[0], np.float32(3))
    assert y.shape == (6,) and mx.shape == ()
    np.testing.assert_allclose(mx, (x[0] * 3).max(), rtol=1e-6)


def test_guvectorize_errors():
    with pytest.raises(pydevice.CompileError, match="E0711") as e:
        @pydevice.guvectorize(["void(float32[:], float32[:])"], "(n)->(m)", target="cuda")
        def bad_out_dim(a, out):
            out[0] = a[0]
    assert "output dimension `m`" in str(e.value) and "(n)->(m)" in str(e.value)
    with pytest.raises(pydevice.CompileError, match="E0712"):
        @pydevice.guvectorize(["float32(float32[:], float32[:])"], "(n)->(n)", target="cuda")
        def bad_ret(a, out):
            out[0] = a[0]
    with pytest.raises(pydevice.CompileError, match="E0713") as e:
        @pydevice.guvectorize(["void(float32[:,:], float32[:])"], "(n)->(n)", target="cuda")
        def bad_rank(a, out):
            out[0] = a[0]
    assert "2-dimensional" in str(e.value)
    with pytest.raises(pydevice.ArgumentError, match="core dimension `n`"):
        gu_dot(np.zeros(3, np.float32), np.zeros(4, np.float32))
    with pytest.raises(pydevice.ArgumentError, match="loop dimensions"):
        gu_dot(np.zeros((2, 3), np.float32), np.zeros((5, 3), np.float32))
    with pytest.raises(pydevice.ArgumentError, match="must be float32 of shape"):
        gu_dot(np.zeros((2, 3), np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="no signature"):
        gu_dot(np.zeros(3, np.complex64), np.zeros(3, np.complex64))
    with pytest.raises(ValueError, match="target='cuda'"):
        pydevice.guvectorize(["void(float32[:], float32[:])"], "(n)->(n)", target="cpu")


def test_guvectorize_generated_source():
    src = gu_matvec.source(np.zeros((2, 3, 4)), np.zeros(4))
    assert "@device.kernel\ndef gu_matvec_gufunc(x0, x1, x2, _ind_size):" in src
    assert "gu_matvec(x0[_gj0], x1[_gj0], x2[_gj0])" in src
    assert "@device.func" in gu_matvec.host_source(np.zeros((2, 3, 4)), np.zeros(4))
