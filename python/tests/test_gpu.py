"""The GPU part of the Python tests. Every test takes the `gpu` fixture (or `cupy`/`torch`,
which take it), so without a CUDA driver, a GPU, CuPy or PyTorch it is skipped with the reason.
On the H100: the spec's example on CuPy arrays with a cuda.core stream, the same kernels on
PyTorch tensors and streams, from 8 threads, and the error classes (a fault in a child)."""

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from cuda import device

import kernels as K


def test_spec_vec_add_on_cupy_with_a_cuda_core_stream(cupy):
    pytest.importorskip("cuda.core", reason="cuda-python's cuda.core is not installed")
    import cuda.bindings  # noqa: F401 (the namespace package keeps working beside cuda.device)
    import spec_examples

    a, b, c = spec_examples.run_vec_add()
    np.testing.assert_array_equal(cupy.asnumpy(c), cupy.asnumpy(a) + cupy.asnumpy(b))


def test_vec_add_on_cupy_streams_and_dim3like_shapes(cupy):
    n = 1000
    for dt in ("float32", "float64", "int32"):
        a = cupy.arange(n, dtype=dt)
        b = cupy.arange(n, dtype=dt) * 2
        c = cupy.zeros(n, dtype=dt)
        s = cupy.cuda.Stream(non_blocking=True)
        device.launch(K.vec_add, a, b, c, grid=(4,), block=(256, 1, 1), stream=s)
        s.synchronize()
        np.testing.assert_array_equal(cupy.asnumpy(c), np.arange(n, dtype=dt) * 3)
    # numba's form, with a raw stream handle
    c[:] = 0
    K.vec_add[4, 256, s.ptr, 0](a, b, c)
    s.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(c), np.arange(n, dtype="int32") * 3)
    assert len(K.vec_add.specializations) >= 3


def test_same_kernels_on_pytorch_tensors_and_streams(torch):
    n = 4096
    a = torch.arange(n, device="cuda", dtype=torch.float32)
    b = torch.ones(n, device="cuda", dtype=torch.float32)
    c = torch.empty_like(a)
    s = torch.cuda.Stream()
    device.launch(K.vec_add, a, b, c, grid=n // 256, block=256, stream=s)
    s.synchronize()
    assert torch.equal(c, a + b)
    m = torch.arange(64 * 32, device="cuda", dtype=torch.float32).reshape(64, 32)
    t = m.t()  # Fortran-ordered view: its own specialization
    device.launch(K.scale2d, t, 2.0, grid=(4, 4), block=(16, 16), stream=s)
    s.synchronize()
    expect = torch.arange(64 * 32, dtype=torch.float32).reshape(64, 32) * 2
    assert torch.equal(m.cpu(), expect)


def test_every_kind_of_argument(cupy):
    out = cupy.zeros(8, dtype="float32")
    args = (out, 1, 2.0, (3, np.float32(4.0)), device.float32x3(5, 6, 7), K.Particle(8.0, 9.0),
            K.point(10, 11, 12), K.complex(2.0, 0.0))
    device.launch(K.all_kinds, *args, grid=1, block=8, stream=None)
    cupy.cuda.Device().synchronize()
    expect = 1 + 2 + 3 + 4 + 5 + 7 + 8 + 9 + 10 + 11 + 12 + 2.0 * K.SCALE + 0.5
    np.testing.assert_allclose(cupy.asnumpy(out), np.full(8, expect, "float32"))


def test_device_functions_in_a_kernel(cupy):
    x = cupy.asarray([0.5, 2.0, 4.0], dtype="float32")
    out = cupy.zeros(3, dtype="float32")
    device.launch(K.uses_funcs, x, out, grid=1, block=32, stream=None)
    xh = cupy.asnumpy(x)
    np.testing.assert_allclose(cupy.asnumpy(out), 1 / xh + abs(xh - 1), rtol=1e-6)


def test_host_numpy_arrays_are_copied_in_and_out(gpu):
    a = np.arange(300, dtype=np.float32)
    b = np.ones(300, dtype=np.float32)
    c = np.zeros(300, dtype=np.float32)
    device.launch(K.vec_add, a, b, c, grid=2, block=256)
    np.testing.assert_array_equal(c, a + 1)


def test_numba_dialect_module(cupy):
    import numba_dialect as N
    from pydevice.numba import cuda

    x = np.arange(100, dtype=np.float64)
    y = np.full(100, 3.0)
    r = cuda.device_array_like(x)
    N.axpy[1, 128](r, 2.0, cuda.to_device(x), cuda.to_device(y))
    cuda.synchronize()
    np.testing.assert_allclose(r.copy_to_host(), 2.0 * x + 9.0 + 2.0)
    dst = cupy.zeros(100)
    N.copy[1, 128](dst, cupy.asarray(x))
    cupy.cuda.Device().synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(dst), x)


def test_cupyx_dialect_module(cupy):
    import cupyx_dialect as C

    size = cupy.uint32(5000)
    x = cupy.arange(5000, dtype=cupy.float32)
    y = cupy.zeros(5000, dtype=cupy.float32)
    C.elementwise_copy((8,), (128,), (x, y, size))
    cupy.cuda.get_current_stream().synchronize()
    assert bool((x == y).all())


def test_from_eight_python_threads(cupy):
    """Odd threads launch on CuPy arrays and streams, even ones on PyTorch's (CuPy's too
    where PyTorch is missing), each with its own dtype, 50 launches each, all at once."""
    try:
        import torch

        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None
    errors = []

    def work(n):
        try:
            with cupy.cuda.Device(0):
                s = cupy.cuda.Stream(non_blocking=True)
                dt = ("float32", "float64", "int32", "int64")[n % 4]
                for it in range(50):
                    if n % 2 or torch is None:
                        a = cupy.full(777, n, dtype=dt)
                        c = cupy.zeros(777, dtype=dt)
                        device.launch(K.vec_add, a, a, c, grid=4, block=256, stream=s)
                        s.synchronize()
                        assert int(c[776]) == 2 * n
                    else:
                        ts = torch.cuda.Stream()
                        a = torch.full((777,), n, device="cuda", dtype=getattr(torch, dt))
                        c = torch.zeros_like(a)
                        K.vec_add[4, 256, ts](a, a, c)
                        ts.synchronize()
                        assert int(c[776]) == 2 * n
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append((n, repr(e)))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


class _Both:
    """Offers DLPack (the real array) and a CUDA Array Interface that points elsewhere."""

    def __init__(self, real, decoy):
        self.real = real
        self.__cuda_array_interface__ = decoy.__cuda_array_interface__

    def __dlpack__(self, stream=None):
        return self.real.__dlpack__()

    def __dlpack_device__(self):
        return self.real.__dlpack_device__()


class _CaiOnly:
    def __init__(self, a):
        self.__cuda_array_interface__ = a.__cuda_array_interface__


@pytest.mark.gpu_only("device arrays' DLPack and CUDA Array Interface")
def test_dlpack_wins_over_the_cuda_array_interface(real_gpu, cupy):
    # Which device-array protocol wins: host arrays on the CPU back end have neither.
    a = cupy.ones(256, dtype="float32")
    c = cupy.zeros(256, dtype="float32")
    decoy = cupy.zeros(256, dtype="float32")
    device.launch(K.vec_add, _CaiOnly(a), a, _Both(c, decoy), grid=1, block=256)
    cupy.cuda.Device().synchronize()
    assert float(c.sum()) == 512.0 and float(decoy.sum()) == 0.0


def test_rejected_launch_leaves_the_context_usable(cupy):
    a = cupy.ones(64, dtype="float32")
    c = cupy.zeros(64, dtype="float32")
    with pytest.raises(device.LaunchError):
        device.launch(K.vec_add, a, a, c, grid=1, block=4096)
    with pytest.raises(ValueError):
        device.launch(K.vec_add, a, a, c, grid=(1, 2, 3, 4), block=64)
    device.launch(K.vec_add, a, a, c, grid=1, block=64)
    cupy.cuda.Device().synchronize()
    assert float(c.sum()) == 128.0


def test_bounds_check_failure_is_a_bounds_error(cupy):
    a = cupy.zeros(32, dtype="float32")
    with pytest.raises(device.BoundsError) as info:
        device.launch(K.checked, a, 1, grid=1, block=32)
    assert info.value.kernel == "checked" and info.value.line > 0
    device.launch(K.checked, a, 0, grid=1, block=32)  # in range: passes
    assert float(a.sum()) == 32.0


@pytest.mark.gpu_only('the driver (a device fault loses the context)')
def test_device_fault_raises_device_fault_in_a_child_process(real_gpu, tmp_path):
    # A fault of the driver's context (on the CPU back end an out-of-range access is a
    # BoundsError: test_cpu_backend.py).
    script = tmp_path / "fault.py"
    script.write_text(textwrap.dedent("""
        import sys
        from cuda import device
        import numpy as np

        @device.kernel
        def wild(a, n):
            a[n] = 1.0

        buf = np.zeros(4, np.float32)
        try:
            device.launch(wild, buf, np.int64(1 << 40), grid=1, block=1)
            device.synchronize()
        except device.DeviceFault as e:
            print("DeviceFault", e.kernel, e.context_usable)
            sys.exit(0)
        except Exception as e:
            print("wrong", type(e).__name__, e)
            sys.exit(2)
        print("no error")
        sys.exit(3)
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["DeviceFault", "wild", "False"]


@pytest.mark.gpu_only('the driver (attributes and occupancy of loaded PTX)')
def test_reflection_with_a_gpu(real_gpu, cupy):
    # Registers, occupancy and block sizes are the driver's facts about loaded PTX.
    a = cupy.ones(1024, dtype="float32")
    attrs = K.heavy_regs.attributes(a)
    assert attrs["registers"] > 0 and attrs["max_threads_per_block"] > 0
    assert attrs["binary_version"] >= 70
    occ = K.heavy_regs.occupancy(a, block=256)
    assert occ["active_blocks_per_sm"] > 0 and 0 < occ["fraction"] <= 1
    block, grid = K.heavy_regs.suggested_block_size(a)
    assert block % 32 == 0 and grid > 0
    assert K.with_shared.attributes(types=["float32[::1]"])["shared_bytes"] == 0


def test_dynamic_shared_memory(cupy):
    out = cupy.zeros(64, dtype="uint8")
    device.launch(K.with_shared, out, grid=2, block=32, shared=32)
    cupy.cuda.Device().synchronize()
    assert bool((out == 2).all())


def test_repeated_launches_reuse_one_specialization(cupy):
    a = cupy.ones(256, dtype="float32")
    c = cupy.zeros(256, dtype="float32")
    before = len(K.vec_add.specializations)
    for _ in range(1000):
        device.launch(K.vec_add, a, a, c, grid=1, block=256)
    cupy.cuda.Device().synchronize()
    assert len(K.vec_add.specializations) - before <= 1


RANDOM_KERNEL = """
from cuda import device
from cuda.device import random


@device.kernel
def draws(u, z):
    i = device.tid(1)
    if i < len(u):
        u[i] = random.rand()
        z[i] = random.randn(device.float64)
"""


def test_kernel_random_numbers_match_an_independent_python_reference(gpu, tmp_path):
    import importlib.util
    import textwrap

    import philox_ref as R

    path = tmp_path / "rnd_kernel.py"
    path.write_text(textwrap.dedent(RANDOM_KERNEL))
    spec = importlib.util.spec_from_file_location("rnd_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    n = 1000
    u = np.zeros(n, dtype=np.float32)
    z = np.zeros(n, dtype=np.float64)
    device.launch(mod.draws, u, z, grid=8, block=128, seed=1234)
    assert [float(x) for x in u] == [R.rand32(1234, t, 0) for t in range(n)]
    assert [float(x) for x in z] == [R.randn64(1234, t, 1) for t in range(n)]
    # Without a seed each launch draws its own.
    u2 = np.zeros(n, dtype=np.float32)
    device.launch(mod.draws, u2, z, grid=8, block=128)
    assert not np.array_equal(u, u2)


def test_constexpr_arguments_specialize_per_value(gpu):
    # docs/semantics.md §5.6: the values of ConstExpr parameters are part of the
    # specialization, and are not launch arguments.
    rng = np.random.default_rng(5)
    n = 4096
    a = rng.uniform(-1, 1, n + 8).astype(np.float32)
    before = len(K.window_scale.specializations)
    for width, scale in [(3, 2), (5, 2), (3, 0.25), (8, True)]:
        out = np.zeros(n, dtype=np.float32)
        device.launch(K.window_scale, a, out, width, scale, grid=n // 128, block=128)
        want = sum(a[j : j + n] for j in range(width)) * np.float32(scale)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    assert len(K.window_scale.specializations) == before + 4
    out = np.zeros(n, dtype=np.float32)
    device.launch(K.window_scale, a, out, 3, 2, grid=n // 128, block=128)
    assert len(K.window_scale.specializations) == before + 4
    with pytest.raises(TypeError, match="ConstExpr"):
        device.launch(K.window_scale, a, out, "3", 2, grid=n // 128, block=128)


def test_atomic_objects_histogram_and_block_counter(gpu, tmp_path):
    # Issue 17: a shared array of Atomic(float32) as a per-block histogram, a shared
    # Atomic(int32) counter per block and a thread's own Atomic(int32), against NumPy.
    import importlib.util

    path = tmp_path / "atomic_objects_py.py"
    path.write_text(textwrap.dedent("""
        from cuda import device
        from cuda.device import float32, int32


        @device.kernel
        def hist(data, bins_out, counts, per_thread):
            t = device.thread_idx.x
            bins = device.shared_array(16, device.Atomic(float32))
            count = device.shared_array(1, device.Atomic(int32))
            if t < 16:
                bins[t].store(0.0, memory='relaxed', scope='block')
            if t == 0:
                count[0].store(0, memory='relaxed', scope='block')
            device.syncthreads()
            i = device.tid(1)
            mine = device.Atomic(int32)
            if i < len(data):
                v = data[i]
                bins[v % 16].add(float32(v), memory='relaxed', scope='block')
                count[0].add(1, memory='relaxed', scope='block')
                mine.add(v)
                mine.add(v)
                per_thread[i] = mine.load()
            device.syncthreads()
            if t < 16:
                device.atomic_ref(bins_out, t).add(bins[t].load(memory='relaxed', scope='block'), memory='relaxed', scope='device')
            if t == 0:
                counts[device.block_idx.x] = count[0].load(memory='relaxed', scope='block')
    """))
    spec = importlib.util.spec_from_file_location("atomic_objects_py", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(17)
    n, block = 50_001, 256
    nblocks = (n + block - 1) // block
    data = rng.integers(0, 100, n, dtype=np.int32)
    bins = np.zeros(16, np.float32)
    counts = np.full(nblocks, -1, np.int32)
    per = np.zeros(n, np.int32)
    device.launch(mod.hist, data, bins, counts, per, grid=nblocks, block=block)
    want = np.bincount(data % 16, weights=data, minlength=16)  # integers below 2**24: exact
    np.testing.assert_array_equal(bins, want.astype(np.float32))
    np.testing.assert_array_equal(counts, np.minimum(block, n - np.arange(nblocks) * block))
    np.testing.assert_array_equal(per, 2 * data)


def test_atomic_b128_complex128_load_store(gpu, tmp_path):
    # Issue 37: 16-byte atomic load/store (PTX ld/st .b128, sm_90) on complex128 elements in
    # global and shared memory: a copy of random values through them equals NumPy's, and
    # concurrent stores of (k, -k) are never seen torn (a half of one store with a half of
    # another) by concurrent loads. Without a GPU, on the CPU back end (its 16-byte atomics
    # take a lock per address, docs/semantics.md §22.1).
    import importlib.util

    path = tmp_path / "atomic_b128_py.py"
    path.write_text(textwrap.dedent("""
        from cuda import device
        from cuda.device import complex128, float64


        @device.kernel
        def b128(src, dst, cell, torn):
            i = device.tid(1)
            t = device.thread_idx.x
            if i < len(src):
                v = device.atomic_ref(src, i).load(memory='acquire', scope='device')
                device.atomic_ref(dst, i).store(v, memory='release', scope='device')
            s = device.shared_array(1, complex128)
            if t == 0:
                device.atomic_ref(s, 0).store(complex128(0, 0), memory='relaxed', scope='block')
            device.syncthreads()
            g = device.atomic_ref(cell, 0)
            b = device.atomic_ref(s, 0)
            bad = 0
            for r in range(64):
                k = float64(i * 64 + r + 1)
                g.store(complex128(k, -k), memory='relaxed', scope='device')
                b.store(complex128(-k, k), memory='relaxed', scope='block')
                w = g.load(memory='relaxed', scope='device')
                u = b.load(memory='relaxed', scope='block')
                if w.real != -w.imag or u.real != -u.imag:
                    bad += 1
            if bad != 0:
                device.atomic_ref(torn, 0).add(bad)
    """))
    spec = importlib.util.spec_from_file_location("atomic_b128_py", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(37)
    n, block = 20_001, 256
    src = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex128)
    dst = np.zeros(n, np.complex128)
    cell = np.zeros(1, np.complex128)
    torn = np.zeros(1, np.int32)
    grid = (n + block - 1) // block
    device.launch(mod.b128, src, dst, cell, torn, grid=grid, block=block)
    np.testing.assert_array_equal(dst, src)
    assert torn[0] == 0
    # Every thread of the grid stores into `cell`, those past `n` too: k <= grid·block·64.
    assert cell[0].real == -cell[0].imag and 1 <= cell[0].real <= grid * block * 64


@pytest.mark.gpu_only("atomic_ref on struct elements, which the CPU back end does not provide (E0502)")
def test_atomic_ref_on_struct_elements(gpu, real_gpu, tmp_path):
    # Issue 37: atomic_ref on elements of an 8-byte and a 16-byte @struct (aligned to their
    # size) in shared memory: store, load and exch move whole structs (ld/st/atom .b64,
    # ld/st .b128), checked against NumPy with each thread reading its neighbour's element,
    # and concurrent 16-byte stores and loads of one element are never seen torn.
    import importlib.util

    path = tmp_path / "atomic_struct_py.py"
    path.write_text(textwrap.dedent("""
        from cuda import device
        from cuda.device import float32, float64


        @device.struct(align=8)
        class pair:
            x: float32
            y: float32


        @device.struct(align=16)
        class quad:
            lo: float64
            hi: float64


        @device.kernel
        def stk(src, qdst, pdst, torn):
            t = device.thread_idx.x
            i = device.tid(1)
            n = len(src) // 2
            qs = device.shared_array(256, quad)
            ps = device.shared_array(256, pair)
            cell = device.shared_array(1, quad)
            if i < n:
                device.atomic_ref(qs, t).store(quad(src[2 * i], src[2 * i + 1]), memory='relaxed', scope='block')
                device.atomic_ref(ps, t).store(pair(float32(src[2 * i]), float32(src[2 * i + 1])))
            if t == 0:
                device.atomic_ref(cell, 0).store(quad(0.0, 0.0))
            device.syncthreads()
            j = (t + 1) % 256
            if i < n and i - t + j < n:
                q = device.atomic_ref(qs, j).load(memory='relaxed', scope='block')
                qdst[2 * i] = q.hi
                qdst[2 * i + 1] = q.lo
                p = device.atomic_ref(ps, j).exch(pair(float32(0), float32(0)))
                pdst[2 * i] = p.y
                pdst[2 * i + 1] = p.x
            c = device.atomic_ref(cell, 0)
            bad = 0
            for r in range(64):
                k = float64(i * 64 + r + 1)
                c.store(quad(k, -k), memory='relaxed', scope='block')
                w = c.load(memory='relaxed', scope='block')
                if w.lo != -w.hi:
                    bad += 1
            if bad != 0:
                device.atomic_ref(torn, 0).add(bad)
    """))
    spec = importlib.util.spec_from_file_location("atomic_struct_py", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(137)
    n, block = 10_001, 256
    src = rng.standard_normal(2 * n)
    qdst = np.zeros(2 * n, np.float64)
    pdst = np.zeros(2 * n, np.float32)
    torn = np.zeros(1, np.int32)
    device.launch(mod.stk, src, qdst, pdst, torn, grid=(n + block - 1) // block, block=block)
    i = np.arange(n)
    k = i - i % block + (i % block + 1) % block
    ok = k < n
    want_q = np.zeros(2 * n, np.float64)
    want_q[2 * i[ok]] = src[2 * k[ok] + 1]
    want_q[2 * i[ok] + 1] = src[2 * k[ok]]
    want_p = np.zeros(2 * n, np.float32)
    want_p[2 * i[ok]] = src[2 * k[ok] + 1].astype(np.float32)
    want_p[2 * i[ok] + 1] = src[2 * k[ok]].astype(np.float32)
    np.testing.assert_array_equal(qdst, want_q)
    np.testing.assert_array_equal(pdst, want_p)
    assert torn[0] == 0


# --- issue 31: per-thread arrays in registers, restrict=True, NumPy scalar and struct launches


_HD = 64
_TILE = 32


@device.kernel
def _attention(q, k, v, out):
    # One thread per query row; the row and its accumulator in per-thread arrays indexed by
    # constant-trip loops (kept in registers: the loops are unrolled), K/V tiles in shared
    # memory, causal online softmax in base 2 (scores pre-scaled by 1/8).
    sk = device.shared_array((_TILE, _HD), device.float32)
    sv = device.shared_array((_TILE, _HD), device.float32)
    qr = device.local_array(_HD, device.float32)
    acc = device.local_array(_HD, device.float32)
    row = device.block_idx.x * _TILE + device.thread_idx.x
    tid = device.thread_idx.x
    for d in range(_HD):
        qr[d] = q[row, d] * 0.125
        acc[d] = 0.0
    m = -1e30
    l = 0.0
    for t in range(device.block_idx.x + 1):
        for d in range(_HD):
            sk[tid, d] = k[t * _TILE + tid, d]
            sv[tid, d] = v[t * _TILE + tid, d]
        device.syncthreads()
        for j in range(_TILE):
            if t * _TILE + j <= row:
                s = 0.0
                for d in range(_HD):
                    s += qr[d] * sk[j, d]
                mn = max(m, s)
                corr = 2.0 ** (m - mn)
                p = 2.0 ** (s - mn)
                l = l * corr + p
                for d in range(_HD):
                    acc[d] = acc[d] * corr + p * sv[j, d]
                m = mn
        device.syncthreads()
    for d in range(_HD):
        out[row, d] = acc[d] / l


def test_attention_with_per_thread_accumulator_arrays(cupy):
    t = 4 * _TILE
    rng = np.random.default_rng(31)
    q, k, v = (rng.standard_normal((t, _HD)).astype(np.float32) for _ in range(3))
    out = cupy.zeros((t, _HD), dtype=np.float32)
    device.launch(_attention, cupy.asarray(q), cupy.asarray(k), cupy.asarray(v), out, grid=t // _TILE, block=_TILE)
    s = (q.astype(np.float64) * 0.125) @ k.astype(np.float64).T
    s[np.triu_indices(t, 1)] = -np.inf
    w = np.exp2(s - s.max(axis=1, keepdims=True))
    ref = (w / w.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(cupy.asnumpy(out), ref, rtol=1e-4, atol=1e-5)


@device.kernel(restrict=True)
def _axpy_restrict(x, y, out, alpha):
    i = device.tid(1)
    if i < len(out):
        out[i] = alpha * x[i] + y[i]
        out[i] += x[i] * y[i]


def test_restrict_kernel_reads_through_the_non_coherent_cache_correctly(cupy):
    n = 100_000
    x = cupy.arange(n, dtype=np.float32) / n
    y = cupy.ones(n, dtype=np.float32)
    out = cupy.zeros(n, dtype=np.float32)
    device.launch(_axpy_restrict, x, y, out, 2.0, grid=(n + 255) // 256, block=256)
    xs, ys = cupy.asnumpy(x), cupy.asnumpy(y)
    np.testing.assert_allclose(cupy.asnumpy(out), 2.0 * xs + ys + xs * ys, rtol=1e-6)


@device.struct
class _Affine:
    s: device.float32
    t: device.float32


@device.kernel
def _affine_scalars(a, out, s, t):
    i = device.tid(1)
    if i < len(out):
        out[i] = a[i] * s + t


@device.kernel
def _affine_struct(a, out, p):
    i = device.tid(1)
    if i < len(out):
        out[i] = a[i] * p.s + p.t


def test_numpy_scalar_and_struct_launches_take_the_fast_path(gpu, cupy):
    n = 1000
    a = cupy.arange(n, dtype=np.float32)
    out = cupy.zeros(n, dtype=np.float32)
    for kernel, extra in [
        (_affine_scalars, (np.float32(2.0), np.float32(1.0))),
        (_affine_scalars, (np.float64(2.0), np.float64(1.0))),
        (_affine_struct, (_Affine(2.0, 1.0),)),
    ]:
        for trial in range(3):
            out[:] = 0
            before = kernel._dispatcher.fast_launches
            device.launch(kernel, a, out, *extra, grid=4, block=256)
            cupy.cuda.runtime.deviceSynchronize()
            np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(n, dtype=np.float32) * 2 + 1)
            # The first launch of these kinds takes the Python path; the later ones do not
            # (the native GPU fast path; CPU launches are all synchronous Python calls).
            if gpu != "cpu":
                assert kernel._dispatcher.fast_launches == before + (trial > 0)
