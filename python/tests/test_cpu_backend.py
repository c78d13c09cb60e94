"""Kernels run whole on the CPU back end (docs/semantics.md, "CPU back end"): the kernels of
the GPU tests (`kernels.py`, the numba-cuda and cupyx.jit dialect modules) on NumPy arrays
with ``backend="cpu"`` or ``PYDEVICE_BACKEND=cpu``, checked against NumPy. No GPU needed."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cuda import device

import kernels as K

HERE = os.path.dirname(__file__)


def test_vec_add_and_funcs_on_numpy():
    rng = np.random.default_rng(1)
    for dt in ("float32", "float64", "int32"):
        a = (rng.random(1000) * 100).astype(dt)
        b = (rng.random(1000) * 100).astype(dt)
        c = np.zeros(1000, dtype=dt)
        device.launch(K.vec_add, a, b, c, grid=(4,), block=(256, 1, 1), backend="cpu")
        np.testing.assert_array_equal(c, a + b)
    x = (rng.random(500) + 0.5).astype(np.float32)
    out = np.zeros(500, np.float32)
    device.launch(K.uses_funcs, x, out, grid=2, block=256, backend="cpu")
    np.testing.assert_allclose(out, 1 / x + abs(x - 1), rtol=1e-6)


def test_two_dimensional_grid_and_dynamic_shared_memory():
    m = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    device.launch(K.scale2d, m, np.float32(2.0), grid=(4, 2), block=(16, 16), backend="cpu")
    np.testing.assert_array_equal(m, np.arange(64 * 32, dtype=np.float32).reshape(64, 32) * 2)
    out = np.zeros(512, np.uint8)
    device.launch(K.with_shared, out, grid=2, block=256, shared=256, backend="cpu")
    np.testing.assert_array_equal(out, np.full(512, 2, np.uint8))


def test_constexpr_and_local_arrays():
    a = np.arange(40, dtype=np.float32)
    out = np.zeros(30, np.float32)
    device.launch(K.window_scale, a, out, 4, 2.0, grid=1, block=32, backend="cpu")
    want = np.array([sum(a[i : i + 4]) * 2 for i in range(30)], np.float32)
    np.testing.assert_allclose(out, want)


SHUFFLE = textwrap.dedent(
    """
    from cuda import device
    from cuda.device import float32

    @device.kernel
    def block_sum(x, out):
        part = device.shared_array(32, float32)
        i = device.tid(1)
        v = x[i] if i < len(x) else float32(0)
        d = 16
        while d > 0:
            v += device.shfl_down_sync(0xFFFFFFFF, v, d)
            d //= 2
        if device.lane_id == 0:
            part[device.thread_idx.x // 32] = v
        device.syncthreads()
        if device.thread_idx.x == 0:
            s = float32(0)
            for w in range(device.block_dim.x // 32):
                s += part[w]
            out[device.block_idx.x] = s

    @device.kernel
    def fails(x):
        i = device.tid(1)
        assert i != 70, "not seventy"
        x[i] = 1

    @device.kernel
    def stuck(x):
        if device.thread_idx.x < 16:
            x[0] = device.shfl_sync(0xFFFFFFFF, x[0], 0)
        else:
            x[1] = device.ballot_sync(0xFFFFFFFF, lambda: x[1] > 0)
    """
)


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    d = tmp_path_factory.mktemp("cpu_backend")
    (d / "cpu_kernels.py").write_text(SHUFFLE)
    sys.path.insert(0, str(d))
    try:
        import cpu_kernels

        yield cpu_kernels
    finally:
        sys.path.remove(str(d))


def test_warp_shuffle_block_sums_bit_exact(mod):
    rng = np.random.default_rng(7)
    x = rng.random(256 * 20, dtype=np.float32)
    out = np.zeros(20, np.float32)
    device.launch(mod.block_sum, x, out, grid=20, block=256, backend="cpu")
    # The same tree of additions, in float32.
    for b in range(20):
        lanes = x[b * 256 : (b + 1) * 256].reshape(8, 32).copy()
        d = 16
        while d > 0:
            shifted = np.concatenate([lanes[:, d:], lanes[:, 32 - d :]], axis=1)
            lanes = (lanes + shifted).astype(np.float32)
            d //= 2
        s = np.float32(0)
        for w in range(8):
            s = np.float32(s + lanes[w, 0])
        assert out[b] == s, (b, out[b], s)


def test_errors_name_the_thread_and_deadlocks_are_reported(mod):
    x = np.zeros(128, np.int32)
    with pytest.raises(device.KernelRaised) as info:
        device.launch(mod.fails, x, grid=2, block=64, backend="cpu")
    e = info.value
    assert e.thread == (6, 0, 0) and e.block == (1, 0, 0)
    assert e.exception == "AssertionError: not seventy"
    # As with host arrays on a GPU, a failed launch does not copy the arrays back.
    assert not x.any()
    with pytest.raises(device.DeadlockError, match="waits at a warp collective"):
        device.launch(mod.stuck, np.ones(2, np.int32), grid=1, block=32, backend="cpu")


def test_bounds_checked_kernel_reports_a_bounds_error():
    a = np.zeros(32, np.float32)
    with pytest.raises(device.BoundsError) as info:
        device.launch(K.checked, a, 1, grid=1, block=32, backend="cpu")
    assert info.value.line == 88 and info.value.column == 5
    assert "thread (31, 0, 0) of block (0, 0, 0)" in str(info.value)


def test_unknown_backend_is_refused():
    a = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="expected 'cpu' or 'gpu'"):
        device.launch(K.vec_add, a, a, a, grid=1, block=4, backend="tpu")


def test_environment_variable_runs_unchanged_numba_and_cupyx_programs_on_the_cpu():
    code = textwrap.dedent(
        """
        import numpy as np
        import numba_dialect as N
        import cupyx_dialect as C
        import kernels as K

        x = np.arange(100, dtype=np.float64)
        y = np.full(100, 3.0)
        r = np.zeros(100)
        N.axpy[1, 128](r, 2.0, x, y)
        np.testing.assert_allclose(r, 2.0 * x + 9.0 + 2.0)
        dst = np.zeros(100)
        N.copy[1, 128](dst, x)
        np.testing.assert_array_equal(dst, x)
        xs = np.arange(5000, dtype=np.float32)
        ys = np.zeros(5000, dtype=np.float32)
        C.elementwise_copy((8,), (128,), (xs, ys, np.uint32(5000)))
        np.testing.assert_array_equal(xs, ys)
        a = np.arange(300, dtype=np.float32)
        c = np.zeros(300, np.float32)
        K.vec_add[2, 256](a, a, c)
        np.testing.assert_array_equal(c, 2 * a)
        print("ok")
        """
    )
    env = dict(os.environ, PYDEVICE_BACKEND="cpu")
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_copy_between_arrays_of_the_cpu_device(monkeypatch):
    """`device.copy` with the CPU back end selected: its device's memory is host memory, so
    two NumPy arrays are copied byte for byte there; the checks of a device copy still hold."""
    from pydevice import _core

    rng = np.random.default_rng(33)
    src = rng.standard_normal((37, 11)).astype(np.float64)
    dst = np.zeros(37 * 11 * 2, np.float32)  # the same bytes, another type and shape
    monkeypatch.setattr(_core, "_BACKEND", None)
    with pytest.raises(TypeError, match="device array"):  # GPUs: host memory is not theirs
        device.copy(dst, src)
    monkeypatch.setattr(_core, "_BACKEND", "cpu")
    assert device.copy(dst, src) == "same_device"
    np.testing.assert_array_equal(dst.view(np.float64).reshape(37, 11), src)
    again = np.zeros_like(src)
    assert device.copy(again, src, via_host=True, stream=0) == "host"
    np.testing.assert_array_equal(again, src)
    with pytest.raises(ValueError, match="bytes"):
        device.copy(dst[:10], src)
    with pytest.raises(ValueError, match="C-contiguous"):
        device.copy(np.zeros(37, np.float64), src[:, 0])
    ro = np.zeros_like(src)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        device.copy(ro, src)
    assert not ro.any()
    v = np.arange(100, dtype=np.int32)  # overlapping: as if through a temporary
    assert device.copy(v[10:60], v[:50]) == "same_device"
    np.testing.assert_array_equal(v, np.r_[np.arange(10), np.arange(50), np.arange(60, 100)])
