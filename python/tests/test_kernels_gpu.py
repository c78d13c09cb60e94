"""ElementwiseKernel and ReductionKernel on the GPU, against NumPy: the seed's examples
(squared_diff typed, generic and super-generic, add_reverse with raw, l2norm along every
axis) on CuPy arrays and PyTorch tensors, NumPy arrays (on the host) against the GPU; broadcasting of 0-d through 4-d
inputs, non-contiguous views, float16/float64/complex/int dtypes, empty arrays. Skipped
without a GPU (and per framework without CuPy or PyTorch)."""

import numpy as np
import pytest

import pydevice

rng = np.random.default_rng(20)

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
    return rng.standard_normal(shape).astype(dt)


def test_seed_squared_diff_on_cupy(cupy):
    x = cupy.arange(10, dtype=np.float32).reshape(2, 5)
    y = cupy.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(cupy.asnumpy(SQD(x, y)), [[0] * 5, [25] * 5])
    np.testing.assert_array_equal(cupy.asnumpy(SQD(x, 5)), [[25, 16, 9, 4, 1], [0, 1, 4, 9, 16]])
    z = cupy.empty((2, 5), dtype=np.float32)
    assert SQD(x, y, z) is z
    np.testing.assert_array_equal(cupy.asnumpy(z), [[0] * 5, [25] * 5])
    # Generic and super-generic forms.
    for dt in ("float32", "float64", "int32", "int64"):
        a, b = rand((300, 7), dt), rand((7,), dt)
        got = SQD_GENERIC(cupy.asarray(a), cupy.asarray(b))
        assert got.dtype == np.dtype(dt)
        np.testing.assert_allclose(cupy.asnumpy(got), (a - b) * (a - b), rtol=1e-6)
    a, b = rand(100, "float32"), rand(100, "int32")
    out = cupy.empty(100, dtype=np.float64)
    SQD_SUPER(cupy.asarray(a), cupy.asarray(b), out)
    np.testing.assert_allclose(cupy.asnumpy(out), (a.astype(np.float64) - b) ** 2, rtol=1e-12)
    with pytest.raises(pydevice.CompileError, match="placeholder `Z`"):
        SQD_SUPER(cupy.asarray(a), cupy.asarray(b))


def test_seed_add_reverse_with_raw(cupy):
    for n in (1, 10, 100_001):
        a, b = rand(n, "float32"), rand(n, "float32")
        got = ADD_REVERSE(cupy.asarray(a), cupy.asarray(b))
        np.testing.assert_allclose(cupy.asnumpy(got), a + b[::-1], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_seed_l2norm_every_axis(cupy, dtype):
    x = cupy.arange(10, dtype=dtype).reshape(2, 5)
    np.testing.assert_allclose(cupy.asnumpy(L2NORM(x, axis=1)), [5.477226, 15.9687195], rtol=1e-6)
    for shape in ((2, 5), (3, 4, 5), (64, 4096), (4096, 300), (5000, 200), (1 << 20,)):
        a = rand(shape, dtype)
        ca = cupy.asarray(a)
        axes = [None] + list(range(a.ndim)) + [-1]
        if a.ndim == 3:
            axes += [(0, 2), (0, 1), (1, 2)]
        for axis in axes:
            for keepdims in (False, True):
                want = np.sqrt(np.sum(a.astype(np.float64) ** 2, axis=axis, keepdims=keepdims))
                got = cupy.asnumpy(L2NORM(ca, axis=axis, keepdims=keepdims))
                assert got.shape == want.shape, (shape, axis, keepdims)
                np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("ndims", [(0, 0), (0, 1), (1, 2), (2, 3), (3, 4), (4, 1), (4, 4), (0, 4)])
def test_broadcasting_0d_to_4d(cupy, ndims):
    full = (3, 4, 5, 6)
    sa = full[4 - ndims[0]:]
    sb = tuple(1 if k % 2 else d for k, d in enumerate(full[4 - ndims[1]:]))
    a, b = rand(sa, "float64"), rand(sb, "float64")
    got = cupy.asnumpy(SQD_GENERIC(cupy.asarray(a), cupy.asarray(b)))
    np.testing.assert_allclose(got, (a - b) ** 2, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_flat_and_inner_views(cupy, dtype):
    """Operands C-contiguous over the whole shape are indexed flat and a trailing block
    broadcast along the leading axes by `i` modulo its length (docs/semantics.md §20.3), next
    to unravelled operands: bit-identical to NumPy's (x - y) * (x - y) at odd extents (many
    threads per row, rows across blocks), 1-d to 4-d, backwards and strided views, a strided
    output."""
    x4 = rand((3, 5, 7, 9), dtype)
    for xs, ys in (
        ((1027, 1023), (1023,)),
        ((3, 5, 7, 9), (9,)),
        ((3, 5, 7, 9), (7, 9)),
        ((3, 5, 7, 9), (5, 7, 9)),
        ((3, 5, 7, 9), (1, 7, 9)),
        ((3, 5, 7, 9), (5, 1, 9)),
        ((3, 5, 7, 9), ()),
        ((333, 3), (3,)),
        ((2, 1 << 20), (1 << 20,)),
    ):
        a, b = rand(xs, dtype), rand(ys, dtype)
        got = cupy.asnumpy(SQD_GENERIC(cupy.asarray(a), cupy.asarray(b)))
        np.testing.assert_array_equal(got, (a - b) * (a - b), err_msg=str((xs, ys)))
        got = cupy.asnumpy(SQD_GENERIC(cupy.asarray(b), cupy.asarray(a)))
        np.testing.assert_array_equal(got, (b - a) * (b - a), err_msg=str((ys, xs)))
    cx = cupy.asarray(x4)
    row = rand((9,), dtype)
    for view in (lambda v: v[::-1], lambda v: v[:, :, :, ::-1], lambda v: v[:, ::2]):
        got = cupy.asnumpy(SQD_GENERIC(view(cx), cupy.asarray(row)))
        np.testing.assert_array_equal(got, (view(x4) - row) * (view(x4) - row))
    out = cupy.zeros((3, 5, 7, 18), dtype=dtype)
    SQD_GENERIC(cx, cupy.asarray(row), out[..., ::2])
    np.testing.assert_array_equal(cupy.asnumpy(out)[..., ::2], (x4 - row) * (x4 - row))
    assert (cupy.asnumpy(out)[..., 1::2] == 0).all()


def test_non_contiguous_views(cupy):
    a = rand((40, 60), "float32")
    b = rand((60, 40), "float32")
    ca, cb = cupy.asarray(a), cupy.asarray(b)
    for x, y, nx, ny in (
        (ca[:, ::2], cb.T[:, 1::2], a[:, ::2], b.T[:, 1::2]),
        (ca[::-1], cb.T, a[::-1], b.T),
        (ca[3:17:3, ::-5], ca[5:10, 2:14:1][:, ::1][:, :12], a[3:17:3, ::-5], a[5:10, 2:14]),
    ):
        np.testing.assert_allclose(cupy.asnumpy(SQD(x, y)), (nx - ny) ** 2, rtol=1e-6)
    # A strided output.
    out = cupy.zeros((40, 120), dtype=np.float32)
    SQD(ca, ca[:, ::-1], out[:, ::2])
    np.testing.assert_allclose(cupy.asnumpy(out)[:, ::2], (a - a[:, ::-1]) ** 2, rtol=1e-6)
    assert (cupy.asnumpy(out)[:, 1::2] == 0).all()


@pytest.mark.parametrize("dtype", ["float16", "float64", "complex64", "complex128", "int8", "int32", "uint16"])
def test_dtypes(cupy, dtype):
    a, b = rand((33, 17), dtype), rand((17,), dtype)
    got = cupy.asnumpy(SQD_GENERIC(cupy.asarray(a), cupy.asarray(b)))
    want = (a - b) * (a - b)
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        # float16: NumPy rounds (a - b) to float16 before squaring; the device may not.
        tol = dict(rtol=4e-3, atol=1e-3) if dtype == "float16" else dict(rtol=1e-5)
        np.testing.assert_allclose(got, want, **tol)
    if np.dtype(dtype).kind != "u":
        s = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum_" + dtype)
        m = rand((50, 70), dtype)
        for axis in (None, 0, 1):
            got = cupy.asnumpy(s(cupy.asarray(m), axis=axis))
            if m.dtype.kind in "iu":
                # Integer sums wrap in the integer type, as NumPy's do.
                np.testing.assert_array_equal(got, m.astype(np.int64).sum(axis=axis).astype(dtype))
                continue
            want = m.astype(np.complex128 if m.dtype.kind == "c" else np.float64).sum(axis=axis)
            tol = 1.0 if dtype == "float16" else 1e-3
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=tol)


def test_empty_arrays(cupy):
    e = cupy.zeros((0, 5), dtype=np.float32)
    assert SQD(e, cupy.zeros(5, dtype=np.float32)).shape == (0, 5)
    got = L2NORM(e, axis=0)
    np.testing.assert_array_equal(cupy.asnumpy(got), np.zeros(5, np.float32))
    assert L2NORM(e, axis=1).shape == (0,)
    np.testing.assert_array_equal(cupy.asnumpy(L2NORM(e)), 0)


def test_all_raw_needs_size(cupy):
    k = pydevice.ElementwiseKernel("raw T x", "raw T y", "y[i] = x[i] * 2", "double_raw")
    x = cupy.arange(10, dtype=np.int64)
    y = cupy.zeros(10, dtype=np.int64)
    with pytest.raises(ValueError, match=r"^Loop size is undecided\..*size="):
        k(x, y)
    k(x, y, size=10)
    np.testing.assert_array_equal(cupy.asnumpy(y), np.arange(10) * 2)


def test_torch_tensors(torch):
    a = torch.randn(300, 70, device="cuda")
    b = torch.randn(70, device="cuda")
    z = SQD(a, b)
    assert isinstance(z, torch.Tensor) and z.device.type == "cuda"
    torch.testing.assert_close(z, (a - b) ** 2)
    n = L2NORM(a, axis=1)
    assert isinstance(n, torch.Tensor)
    torch.testing.assert_close(n, torch.linalg.vector_norm(a, dim=1), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(L2NORM(a), torch.linalg.vector_norm(a), rtol=1e-4, atol=1e-4)


def test_numpy_arrays_run_on_the_host_as_on_the_gpu(cupy):
    # NumPy arrays run the host function (Cranelift, §20.8); the same call on CuPy arrays
    # runs the kernel. Both agree with each other and with NumPy.
    for dt in ("float32", "float64", "int32", "float16"):
        a, b = rand((200, 37), dt), rand(37, dt)
        host = SQD_GENERIC(a, b)
        dev = cupy.asnumpy(SQD_GENERIC(cupy.asarray(a), cupy.asarray(b)))
        assert isinstance(host, np.ndarray) and host.dtype == dev.dtype
        if dt in ("int32", "float16"):
            np.testing.assert_array_equal(host, dev)
        else:
            np.testing.assert_allclose(host, dev, rtol=1e-6)
    a = rand((300, 500), "float64")
    for axis in (None, 0, 1):
        host = L2NORM(a, axis=axis)
        dev = cupy.asnumpy(L2NORM(cupy.asarray(a), axis=axis))
        np.testing.assert_allclose(host, dev, rtol=1e-12)
    # fuse and vectorize too.
    @pydevice.fuse()
    def f(x, y):
        return np.sum(np.sqrt(np.abs(x * y)) + 1, axis=0)

    x, y = rand((1000, 30), "float32"), rand(30, "float32")
    np.testing.assert_allclose(f(x, y), cupy.asnumpy(f(cupy.asarray(x), cupy.asarray(y))), rtol=1e-5)


def test_fuse_elementwise_and_reductions(cupy):
    @pydevice.fuse(kernel_name="squared_diff")
    def squared_diff(x, y):
        return (x - y) * (x - y)

    @pydevice.fuse()
    def pick(x, y):
        return np.where(x > y, np.sqrt(np.abs(x)), np.maximum(y, 0.5) * 2)

    @pydevice.fuse()
    def sum_of_products(x, y):
        return np.sum(x * y, axis=-1)

    for dt in ("float32", "float64", "int32"):
        a, b = rand((64, 33), dt), rand((33,), dt)
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        np.testing.assert_allclose(cupy.asnumpy(squared_diff(ca, cb)), (a - b) * (a - b), rtol=1e-6)
        np.testing.assert_allclose(cupy.asnumpy(sum_of_products(ca, cb)), np.sum(a * b, axis=-1), rtol=1e-4)
        if dt != "int32":
            want = np.where(a > b, np.sqrt(np.abs(a)), np.maximum(b, 0.5) * 2)
            np.testing.assert_allclose(cupy.asnumpy(pick(ca, cb)), want, rtol=1e-6)
    # One kernel per (dtypes, ranks), reused.
    assert len(squared_diff._plans) == 3

    @pydevice.fuse()
    def amax(x):
        return np.max(x, axis=0)

    @pydevice.fuse()
    def prod(x):
        return np.prod(x)

    m = rand((1000, 17), "float64")
    np.testing.assert_array_equal(cupy.asnumpy(amax(cupy.asarray(m))), m.max(axis=0))
    v = rng.uniform(0.99, 1.01, 5000)
    np.testing.assert_allclose(cupy.asnumpy(prod(cupy.asarray(v))), np.prod(v), rtol=1e-10)
    # On PyTorch tensors too (outputs are tensors).
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        t = torch.randn(100, 10, device="cuda")
        torch.testing.assert_close(squared_diff(t, t[0]), (t - t[0]) ** 2)


def test_vectorize_on_cupy_and_numpy(cupy):
    import math

    @pydevice.vectorize(["float32(float32, float32)", "float64(float64, float64)"], target="cuda")
    def hyp(a, b):
        return math.sqrt(a * a + b * b)

    for dt in ("float32", "float64"):
        a, b = rand(1000, dt), rand(1000, dt)
        got = hyp(cupy.asarray(a), cupy.asarray(b))
        assert got.dtype == np.dtype(dt)
        np.testing.assert_allclose(cupy.asnumpy(got), np.hypot(a, b), rtol=1e-6)
    # int32 arguments cast safely to float64 (numba's rule); NumPy arguments run on the host.
    i = np.arange(10, dtype=np.int32)
    np.testing.assert_allclose(hyp(i, i), np.hypot(i, i), rtol=1e-12)


def test_an_output_assigned_on_one_branch_keeps_its_value(cupy):
    relu = pydevice.ElementwiseKernel("T x", "T y", "if x > 0:\n    y = x", "relu_keep")
    a = rand(1000, "float32")
    y = cupy.full(1000, -7, dtype=np.float32)
    relu(cupy.asarray(a), y)
    np.testing.assert_array_equal(cupy.asnumpy(y), np.where(a > 0, a, -7))


def test_multiple_outputs_dot_and_a_scalar_in_post_map(cupy):
    two = pydevice.ElementwiseKernel("T x", "T y, T z", "y = x * 2\nz = x + 1", "two_outputs")
    a = rand(100, "float64")
    y, z = two(cupy.asarray(a))
    np.testing.assert_allclose(cupy.asnumpy(y), a * 2)
    np.testing.assert_allclose(cupy.asnumpy(z), a + 1)
    dot = pydevice.ReductionKernel("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "dot")
    u, v = rand(100_000, "float64"), rand(100_000, "float64")
    np.testing.assert_allclose(float(dot(cupy.asarray(u), cupy.asarray(v))), u @ v, rtol=1e-10)
    mean = pydevice.ReductionKernel("T x, int64 count", "float64 m", "x", "a + b", "m = a / count", "0", "mean", "float64")
    m = rand((30, 40), "float32")
    np.testing.assert_allclose(cupy.asnumpy(mean(cupy.asarray(m), 40, axis=1)), m.astype(np.float64).mean(axis=1), rtol=1e-6)


# ---- guvectorize (§20.9) on the GPU ----

from pydevice.numba import guvectorize  # noqa: E402


@guvectorize(["void(float32[:], float32[:], float32[:])", "void(float64[:], float64[:], float64[:])"], "(n),(n)->()", target="cuda")
def gpu_dot(a, b, out):
    s = a[0] * 0
    for k in range(len(a)):
        s += a[k] * b[k]
    out[0] = s


@pydevice.guvectorize(["void(float64[:,:], float64[:], float64[:])"], "(m,n),(n)->(m)", target="cuda")
def gpu_matvec(m, v, out):
    for r in range(m.shape[0]):
        s = m[r, 0] * 0
        for c in range(m.shape[1]):
            s += m[r, c] * v[c]
        out[r] = s


@pydevice.guvectorize(["void(float32[:], float32, float32[:], float32[:])"], "(n),()->(n),()", target="cuda")
def gpu_scale_and_max(x, k, y, mx):
    best = x[0] * k
    for j in range(len(x)):
        y[j] = x[j] * k
        best = max(best, y[j])
    mx[0] = best


def test_guvectorize_on_cupy_against_numpy_and_the_host(cupy):
    for dt in ("float32", "float64"):
        a, b = rand((300, 7, 64), dt), rand((7, 64), dt)
        got = gpu_dot(cupy.asarray(a), cupy.asarray(b))
        assert isinstance(got, cupy.ndarray) and got.shape == (300, 7) and got.dtype == np.dtype(dt)
        want = np.einsum("...n,...n->...", a.astype(np.float64), b.astype(np.float64))
        tol = dict(rtol=1e-5, atol=1e-4) if dt == "float32" else dict(rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cupy.asnumpy(got), want, **tol)
        np.testing.assert_allclose(cupy.asnumpy(got), gpu_dot(a, b), **tol)
    for ms, vs in (((3, 4), (4,)), ((2, 1, 30, 40), (5, 40)), ((1, 2, 1, 3, 4), (2, 1, 7, 4))):
        m, v = rand(ms, "float64"), rand(vs, "float64")
        got = cupy.asnumpy(gpu_matvec(cupy.asarray(m), cupy.asarray(v)))
        np.testing.assert_allclose(got, np.einsum("...mn,...n->...m", m, v), rtol=1e-12, atol=1e-12)
    # Strided views, a given output, int32 arguments cast to float64.
    big = cupy.asarray(rand((6, 10, 8), "float64"))
    m = big[::-2, ::3, 1::2].transpose(0, 2, 1)[:, :3, :]
    v = cupy.asarray(rand(4, "float64"))[::-1]
    out = cupy.zeros((3, 3))
    assert gpu_matvec(m, v, out) is out
    np.testing.assert_allclose(cupy.asnumpy(out), np.einsum("...mn,...n->...m", cupy.asnumpy(m), cupy.asnumpy(v)), rtol=1e-12)
    i = cupy.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_allclose(cupy.asnumpy(gpu_matvec(i, cupy.ones(4, dtype=np.int32))), np.arange(12).reshape(3, 4).sum(1))
    # Scalars and two outputs.
    x = rand((500, 33), "float32")
    y, mx = gpu_scale_and_max(cupy.asarray(x), 1.5)
    np.testing.assert_allclose(cupy.asnumpy(y), x * np.float32(1.5), rtol=1e-6)
    np.testing.assert_allclose(cupy.asnumpy(mx), (x * np.float32(1.5)).max(axis=1), rtol=1e-6)
    # Empty loop dimensions launch nothing.
    assert gpu_dot(cupy.zeros((0, 3), np.float32), cupy.zeros(3, np.float32)).shape == (0,)


def test_guvectorize_on_torch(torch):
    a = torch.randn(100, 50, device="cuda")
    b = torch.randn(50, device="cuda")
    got = gpu_dot(a, b)
    assert isinstance(got, torch.Tensor) and got.device.type == "cuda"
    torch.testing.assert_close(got, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(__import__("fuse_cases").CASES))
def test_fuse_cases_on_cupy(cupy, name):
    """The host cases of fuse (fuse_cases.py) on CuPy arrays: values, dtypes and in-place
    writes equal NumPy's."""
    from fuse_cases import CASES, check

    fn, make = CASES[name]
    check(fn, make(), xp=cupy, rtol=1e-5)


def test_fuse_operators_on_cupy(cupy):
    from fuse_cases import OPERATORS, SIDES, _arg, check

    for op in sorted(OPERATORS):
        for sides in SIDES:
            for d1, d2 in [("int8", "uint8"), ("int32", "float32"), ("float16", "float64"),
                           ("complex64", "int64"), ("uint64", "uint64")]:
                check(OPERATORS[op], [_arg(sides[0], d1, 0), _arg(sides[1], d2, 1)], xp=cupy, rtol=1e-5)


def test_fuse_reaches_cupy_routines_through_cupys_fusion_hook(cupy):
    """cupy.sum, cupy.where, cupy.sqrt, cupy.clip inside a fused function are recorded (CuPy's
    routines hand their work to the tracer through cupy._core._fusion_thread_local)."""

    def f(x, y):
        s = cupy.sum(x, axis=0)
        return cupy.where(x > y, cupy.sqrt(x), cupy.clip(y, 1, 3)) + s, cupy.prod(y), cupy.amax(x, 1)

    x = np.random.default_rng(1).random((5, 7)) * 4
    y = np.random.default_rng(2).random((5, 7)) * 4
    got = pydevice.fuse(f)(cupy.asarray(x), cupy.asarray(y))
    want = (np.where(x > y, np.sqrt(x), np.clip(y, 1, 3)) + x.sum(axis=0), np.prod(y), x.max(1))
    for g, w in zip(got, want):
        np.testing.assert_allclose(cupy.asnumpy(g), w, rtol=1e-10)
    # The hook is removed after the trace: CuPy's routines work as usual again.
    assert float(cupy.sum(cupy.asarray(x))) == pytest.approx(x.sum())
