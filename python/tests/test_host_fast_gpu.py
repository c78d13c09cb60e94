"""The repeated-call fast paths on the GPU (session 16): every call of a signature after the
first takes the native path (ElementwiseKernel, ReductionKernel, fuse, device.launch), and
its results match NumPy on fresh random inputs each call, on CuPy's current stream and on a
given one, with scalars changing between calls. Without a GPU the calls run on the CPU back end
and the results are checked; the fast paths themselves are the native GPU launchers (the CPU
back end has none), checked only on a GPU."""

import numpy as np
import pytest

import pydevice
from cuda import device

rng = np.random.default_rng(16)

SQD = pydevice.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "sqd_fast_gpu")
AXPY = pydevice.ElementwiseKernel("T x, T y, T a", "T z", "z = a * x + y", "axpy_fast_gpu")
RSUM = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum_fast_gpu")


@pydevice.fuse(kernel_name="sqd_fused_fast_gpu")
def fused(x, y):
    return (x - y) * (x - y)


@device.kernel
def vec_add_fast(a, b, c):
    i = device.tid(1)
    if i < len(c):
        c[i] = a[i] + b[i]


def test_elementwise_fast_path_on_gpu(gpu, cupy):
    for shape, ys in (((4096,), (4096,)), ((64, 33), (33,)), ((3, 5, 7), (3, 5, 7))):
        for call in range(4):  # the first call remembers, the next ones take the fast path
            x, y = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(ys).astype(np.float32)
            got = SQD(cupy.asarray(x), cupy.asarray(y))
            np.testing.assert_allclose(cupy.asnumpy(got), (x - y) * (x - y), rtol=1e-6)
            # A strided view and a given output.
            xs = cupy.asarray(np.repeat(x[..., None], 2, axis=-1))[..., 0]
            out = cupy.empty(got.shape, np.float32)
            assert SQD(xs, cupy.asarray(y), out) is out
            np.testing.assert_allclose(cupy.asnumpy(out), (x - y) * (x - y), rtol=1e-6)
            a = float(rng.standard_normal())
            np.testing.assert_allclose(
                # The device may fuse a * x + y into one fma (semantics §3.13): where the sum
                # cancels, the two roundings of the reference differ from it by more than rtol.
                cupy.asnumpy(AXPY(cupy.asarray(x), cupy.asarray(y), a)), np.float32(a) * x + y, rtol=1e-5, atol=1e-6
            )
    if gpu != "cpu":  # the native fast paths are the GPU's
        assert SQD._k.fast_len() >= 3 and AXPY._k.fast_len() >= 1
    # On a given stream, then on CuPy's current one inside `with stream`.
    s = cupy.cuda.Stream(non_blocking=True)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    for _ in range(3):
        got = SQD(cupy.asarray(x), cupy.asarray(y), stream=s)
        s.synchronize()
        np.testing.assert_allclose(cupy.asnumpy(got), (x - y) ** 2, rtol=1e-6)
    with s:
        for _ in range(3):
            dx, dy = cupy.asarray(x), cupy.asarray(y)
            got = SQD(dx, dy)
        s.synchronize()
        np.testing.assert_allclose(cupy.asnumpy(got), (x - y) ** 2, rtol=1e-6)


def test_reduction_and_fuse_fast_paths_on_gpu(gpu, cupy):
    for shape, axis in (((1 << 16,), None), ((128, 300), 1), ((128, 300), 0), ((128, 300), (0, 1))):
        for _ in range(4):
            x = rng.standard_normal(shape).astype(np.float32)
            got = RSUM(cupy.asarray(x), axis=axis)
            np.testing.assert_allclose(cupy.asnumpy(got), x.sum(axis=axis), rtol=1e-4, atol=1e-3)
    if gpu != "cpu":
        assert RSUM._k.fast_len() == 4
    for _ in range(4):
        x, y = rng.standard_normal(5000).astype(np.float32), rng.standard_normal(5000).astype(np.float32)
        np.testing.assert_allclose(cupy.asnumpy(fused(cupy.asarray(x), cupy.asarray(y))), (x - y) ** 2, rtol=1e-6)
    if gpu != "cpu":
        assert fused._fast.call((cupy.asarray(x), cupy.asarray(y))) is not NotImplemented


def test_launch_fast_path_on_gpu(gpu, cupy):
    n = 10_000
    for _ in range(5):
        a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        da, db, dc = cupy.asarray(a), cupy.asarray(b), cupy.empty(n, np.float32)
        device.launch(vec_add_fast, da, db, dc, grid=(n + 255) // 256, block=256)
        np.testing.assert_allclose(cupy.asnumpy(dc), a + b, rtol=1e-6)
    if gpu != "cpu":
        assert len(vec_add_fast._dispatcher) == 1


@pytest.mark.gpu_only("CuPy's memory pool and the native GPU fast paths")
def test_fast_path_keywords_wide_columns_and_allocation_on_gpu(real_gpu, cupy):
    """The native `__call__` with keywords (`out=`, `keepdims=`, `stream=`) on the fast path,
    the narrowed column tiles of a (1024, n) sum over axis 0 (one kernel), and the outputs
    it allocates through CuPy's constructor in two steps: ordinary CuPy arrays of the pool
    (usable by CuPy, returned to the pool when dropped)."""
    s = cupy.cuda.Stream(non_blocking=True)
    for n in (16, 256, 4096):
        for dt in ("float32", "float64"):
            x = rng.standard_normal((1024, n)).astype(dt)
            d = cupy.asarray(x)
            assert RSUM.strategy(x, axis=0) == "Columns"
            want = x.astype(np.float64).sum(axis=0)
            for _ in range(3):
                np.testing.assert_allclose(cupy.asnumpy(RSUM(d, axis=0)), want, rtol=1e-5, atol=1e-3)
                got = RSUM(d, axis=0, keepdims=True, stream=s)
                s.synchronize()
                np.testing.assert_allclose(cupy.asnumpy(got)[0], want, rtol=1e-5, atol=1e-3)
                out = cupy.empty(n, dt)
                assert RSUM(d, axis=0, out=out) is out
                np.testing.assert_allclose(cupy.asnumpy(out), want, rtol=1e-5, atol=1e-3)
    x, y = rng.standard_normal(4096).astype(np.float32), rng.standard_normal(4096).astype(np.float32)
    dx, dy = cupy.asarray(x), cupy.asarray(y)
    SQD(dx, dy)  # remembered
    got = SQD(dx, dy)
    assert type(got) is cupy.ndarray and got.flags.c_contiguous and got.flags.owndata
    assert got.device.id == dx.device.id
    np.testing.assert_allclose(cupy.asnumpy(got * 2), 2 * (x - y) ** 2, rtol=1e-6)
    pool = cupy.get_default_memory_pool()
    del got
    cupy.cuda.Device().synchronize()
    before = pool.used_bytes()
    for _ in range(200):
        r = SQD(dx, dy)
        del r
    cupy.cuda.Device().synchronize()
    assert pool.used_bytes() == before
