"""The native repeated-call fast path of ElementwiseKernel, ReductionKernel and fuse
(python/src/calls.rs), without a GPU: real CuPy arrays over memory that is never touched
(UnownedMemory at made-up addresses), CuPy's allocation and current-stream functions replaced
by stand-ins (`_native.set_cupy_hooks`), and dry-run launches (everything but the driver
call; the parameter bytes are kept).

What is checked: the fast path packs exactly the bytes the general path packs for the same
call (contiguous, broadcast, strided, reversed, raw, Python numbers, given outputs, full and
partial reductions); every case it does not know goes to the general path (another shape,
dtype, layout or GPU, unknown types, NumPy arrays, 0-d arrays, objects with both DLPack and
the CUDA array interface, big ints, odd `size=`/`axis=`, no hooks); the kernel objects'
own `__call__` takes it; and it is safe from many threads at once.
"""

import threading

import numpy as np
import pytest

import pydevice
from pydevice import _native
from pydevice._kernels import _Args, _c_strides

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
from cupy.cuda import memory  # noqa: E402

BASE = 0x7F10_0000_0000


def _array(shape, dtype=np.float32, base=BASE, device=0):
    n = int(np.prod(shape)) if shape else 1
    mem = memory.UnownedMemory(base, max(n, 1) * np.dtype(dtype).itemsize, None, device_id=device)
    return cupy.ndarray(shape, dtype=dtype, memptr=memory.MemoryPointer(mem, 0))


class _Stream:
    ptr = 0


class _Hooks:
    """Stand-ins for `cupy.ndarray(shape, dtype)` (arrays at fresh made-up addresses, on GPU
    `device`) and `cupy.cuda.get_current_stream`."""

    def __init__(self, device=0):
        self.next = BASE + (1 << 32)
        self.device = device
        self.made = []
        self.lock = threading.Lock()

    def empty(self, shape, dtype):
        with self.lock:
            base = self.next
            self.next += 1 << 20
        a = _array(tuple(shape), dtype, base, self.device)
        self.made.append(a)
        return a

    def stream(self):
        return _Stream()


@pytest.fixture
def hooks():
    from pydevice import _core

    _core._describe(_array((1,)))  # CuPy's own hooks are registered at the first CuPy array
    h = _Hooks()
    _native.set_cupy_hooks(h.empty, h.stream)
    yield h
    _core._register_cupy_hooks(cupy.ndarray)  # CuPy's own again


def _describe_outputs(call, addresses):
    shape = tuple(call.shape)
    return tuple(
        ("A", call.out_dtypes[m], p, shape, _c_strides(shape)) for m, p in zip(call.missing, addresses)
    )


def _remember_ew(k, args, size=None):
    """The general path's description of a call, remembered with a dry run."""
    a = _Args(args, k.nin)
    call = k._k.resolve(tuple(a.descs), size)
    outs = _describe_outputs(call, [BASE + (1 << 40) + (j << 24) for j in range(len(call.missing))])
    return k._k.remember_dry_run(args, call, outs, 0, size, True)


def _ew_equivalent(k, args, size=None):
    """Calls through the fast path and compares its bytes with the general path's for the
    same arguments and outputs."""
    r = k._k.call_fast(args, size, None)
    assert r is not NotImplemented
    outs = r if isinstance(r, tuple) else (r,)
    a = _Args(args, k.nin)
    call = k._k.resolve(tuple(a.descs), size)
    allocated = [o for j, o in enumerate(outs) if j in call.missing]
    descs = _describe_outputs(call, [o.data.ptr for o in allocated])
    assert k._k.last_packed(args, size) == k._k.general_packed(call, descs)
    return r


SQD = pydevice.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "sqd_fast")


def test_elementwise_fast_path_packs_what_the_general_path_packs(hooks):
    x = _array((64,))
    y = _array((64,), base=BASE + 0x10000)
    x2 = _array((4, 16), base=BASE + 0x20000)
    y16 = _array((16,), base=BASE + 0x30000)
    xs = _array((128,), base=BASE + 0x40000)[::2]
    xr = _array((64,), base=BASE + 0x50000)[::-1]
    xf = _array((8, 8), base=BASE + 0x60000).T
    z = _array((64,), base=BASE + 0x70000)
    cases = [(x, y), (x2, y16), (xs, y), (xr, y), (xf, x2.reshape(8, 8)), (x, 2.5), (x, y, z)]
    for args in cases:
        assert SQD._k.call_fast(args) is NotImplemented  # not yet remembered
        assert _remember_ew(SQD, args)
        r = _ew_equivalent(SQD, args)
        if len(args) == 3:
            assert r is z  # a given output is returned, nothing allocated
        else:
            assert r.shape == np.broadcast_shapes(*(getattr(a, "shape", ()) for a in args))
            assert r.dtype == np.float32
    # Other addresses, same signature: the new addresses are packed.
    x_other = _array((64,), base=BASE + 0x80000)
    _ew_equivalent(SQD, (x_other, y))
    # The kernel's own __call__ takes the fast path (without a GPU the general path fails).
    n = len(hooks.made)
    out = SQD(x, y)
    assert out.shape == (64,) and len(hooks.made) == n + 1
    assert SQD(x, y, z) is z


def test_elementwise_scalars_and_modes(hooks):
    k = pydevice.ElementwiseKernel("T x, T a", "T z, T w", "z = x * a\nw = x + a", "two_out")
    x = _array((32,), dtype=np.float64)
    for a in (3, 2.5, True):
        assert _remember_ew(k, (x, a))
        r = _ew_equivalent(k, (x, a))
        assert isinstance(r, tuple) and len(r) == 2
    # A new value of a remembered kind: the same entry, the new value packed.
    _ew_equivalent(k, (x, 7))
    _ew_equivalent(k, (x, -1.25))
    # An int past int64 has no fast reading.
    assert k._k.call_fast((x, 1 << 70)) is NotImplemented
    nr = pydevice.ElementwiseKernel("T x", "T z", "z = x", "copy_nr", no_return=True)
    assert _remember_ew(nr, (x,))
    assert nr._k.call_fast((x,)) is None
    rt = pydevice.ElementwiseKernel("T x", "T z", "z = x", "copy_rt", return_tuple=True)
    assert _remember_ew(rt, (x,))
    r = rt._k.call_fast((x,))
    assert isinstance(r, tuple) and len(r) == 1


def test_elementwise_raw_and_size(hooks):
    k = pydevice.ElementwiseKernel("raw T x", "raw T z", "z[i] = x[i] * 2", "raw_twice")
    x = _array((100,))
    z = _array((100,), base=BASE + 0x90000)
    assert _remember_ew(k, (x, z), size=50)
    _ew_equivalent(k, (x, z), size=50)
    assert k._k.call_fast((x, z), 51, None) is NotImplemented  # another size
    assert k._k.call_fast((x, z), None, None) is NotImplemented
    for odd in (-1, 2.0, np.int64(50)):
        assert k._k.call_fast((x, z), odd, None) is NotImplemented


class _CaiOnly:
    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (ptr, False), "version": 3}


class _BothProtocols(_CaiOnly):
    def __dlpack__(self, stream=None):
        raise AssertionError("not called by the fast path")

    def __dlpack_device__(self):
        return (2, 0)


def test_elementwise_falls_back_whenever_unsure(hooks):
    sqd = pydevice.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "sqd_fallbacks")
    x = _array((64,))
    y = _array((64,), base=BASE + 0x10000)
    assert _remember_ew(sqd, (x, y))
    assert sqd._k.call_fast((x, y)) is not NotImplemented
    fallbacks = {
        "another shape": (_array((65,)), _array((65,), base=BASE + 0x10000)),
        "another dtype": (_array((64,), np.float64), _array((64,), np.float64, BASE + 0x10000)),
        "non-contiguous": (_array((128,))[::2], y),
        "another GPU": (_array((64,), device=1), _array((64,), base=BASE + 0x10000, device=1)),
        "0-d": (_array(()), _array((), base=BASE + 0x10000)),
        "NumPy": (np.zeros(64, np.float32), y),
        "CAI only": (_CaiOnly(BASE, 64), y),
        "DLPack and CAI": (_BothProtocols(BASE, 64), y),
        "a typed NumPy scalar": (x, np.float32(2)),
        "None": (x, None),
        "one argument": (x,),
    }
    for why, args in fallbacks.items():
        assert sqd._k.call_fast(args) is NotImplemented, why
    # Arguments without a fast reading are never remembered.
    for why in ("0-d", "NumPy", "CAI only", "DLPack and CAI", "a typed NumPy scalar"):
        args = fallbacks[why]
        try:
            ok = _remember_ew(sqd, args)
        except Exception:  # noqa: BLE001 (the general path may refuse it: also not remembered)
            ok = False
        assert not ok, why
    # Outputs allocated on another GPU than the arrays': the general path allocates there.
    hooks.device = 1
    assert sqd._k.call_fast((x, y)) is NotImplemented
    hooks.device = 0
    # No allocation hooks (CuPy never met): the general path.
    _native.set_cupy_hooks(None, None)
    assert sqd._k.call_fast((x, y)) is NotImplemented
    _native.set_cupy_hooks(hooks.empty, hooks.stream)
    # A stream the fast path cannot read: the general path (which says what is wrong).
    assert sqd._k.call_fast((x, y), None, object()) is NotImplemented
    assert sqd._k.call_fast((x, y), None, 0) is not NotImplemented


RSUM = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum_fast")


def _remember_red(k, args, axis=None, keepdims=False):
    a = _Args(args, k.nin)
    from pydevice._kernels import _axis

    call = k._k.resolve(tuple(a.descs), _axis(axis), keepdims)
    outs = _describe_outputs(call, [BASE + (1 << 40) + (j << 24) for j in range(len(call.missing))])
    return k._k.remember_dry_run(args, call, outs, BASE + (1 << 41), axis, keepdims, 0, True)


def test_reduction_fast_path_packs_what_the_general_path_packs(hooks):
    from pydevice._kernels import _axis

    x = _array((1 << 14,))
    x2 = _array((64, 256), base=BASE + 0x100000)
    for args, axis, keepdims in [((x,), None, False), ((x2,), 1, False), ((x2,), 0, True), ((x2,), (0, 1), False)]:
        assert RSUM._k.call_fast(args, axis, keepdims) is NotImplemented
        assert _remember_red(RSUM, args, axis, keepdims)
        n = len(hooks.made)
        r = RSUM._k.call_fast(args, axis, keepdims)
        assert r is not NotImplemented
        a = _Args(args, RSUM.nin)
        call = RSUM._k.resolve(tuple(a.descs), _axis(axis), keepdims)
        assert r.shape == tuple(call.shape)
        made = hooks.made[n:]
        # The output, then the partial results' scratch when the reduction uses them.
        scratch = made[1].data.ptr if len(made) > 1 else 0
        descs = _describe_outputs(call, [r.data.ptr])
        packed = RSUM._k.last_packed(args, axis, keepdims)
        assert packed == RSUM._k.general_packed(call, descs, scratch)
        assert len(packed) == (2 if axis is None or axis == (0, 1) else 1)
    # A list axis or a NumPy integer: the general path normalizes it.
    assert RSUM._k.call_fast((x2,), [1], False) is NotImplemented
    assert RSUM._k.call_fast((x2,), np.int64(1), False) is NotImplemented
    assert RSUM._k.call_fast((x2,), 1, True) is NotImplemented  # keepdims is in the key
    out = RSUM(x)  # __call__ takes it
    assert out.shape == ()


def test_fuse_fast_path(hooks):
    @pydevice.fuse(kernel_name="sqd_fused_fast")
    def f(x, y):
        return (x - y) * (x - y)

    x = _array((64,))
    y = _array((64,), base=BASE + 0x10000)
    assert f._fast.call((x, y)) is NotImplemented
    plan = f._build(f._key((x, y)), (x, y))
    entry = f._fast_entry(plan, (x, y))
    assert _remember_ew(plan.groups[0][0], tuple((x, y)[i] for i in entry[1]))
    assert f._fast.insert((x, y), *entry)
    r = f._fast.call((x, y))
    assert r is not NotImplemented and r.shape == (64,)
    assert f(x, y).shape == (64,)  # __call__ takes it

    @pydevice.fuse()
    def g(x, a):
        return x * a

    plan = g._build(g._key((x, 2.0)), (x, 2.0))
    entry = g._fast_entry(plan, (x, 2.0))
    assert entry[1] == [0]
    assert _remember_ew(plan.groups[0][0], (x,))
    assert g._fast.insert((x, 2.0), *entry)
    assert g._fast.call((x, 2.0)) is not NotImplemented
    # The scalar's value is in the traced body: another value is another kernel.
    assert g._fast.call((x, 3.0)) is NotImplemented
    assert g._fast.call((x, 2)) is NotImplemented
    assert g._fast.call((2.0, 3.0)) is NotImplemented  # numbers alone run in Python
    assert g._fast.call((np.ones(4, np.float32), 2.0)) is NotImplemented
    # A typed NumPy scalar is not remembered (the fast path keys numbers by value alone).
    assert g._fast_entry(g._build(g._key((x, np.float32(2))), (x, np.float32(2))), (x, np.float32(2))) is None

    @pydevice.fuse()
    def s(x):
        return np.sum(x * x)

    plan = s._build(s._key((x,)), (x,))
    entry = s._fast_entry(plan, (x,))
    assert _remember_red(plan.steps[0][1], (x,))
    assert s._fast.insert((x,), *entry)
    assert s._fast.call((x,)).shape == ()


def test_fast_paths_are_thread_safe(hooks):
    k = pydevice.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add_threads")
    arrays = [(_array((n,)), _array((n,), base=BASE + 0x10000)) for n in (16, 32, 48, 64)]
    errors = []

    def work(t):
        try:
            for i in range(200):
                args = arrays[(t + i) % len(arrays)]
                r = k._k.call_fast(args)
                if r is NotImplemented:
                    _remember_ew(k, args)
                else:
                    assert r.shape == args[0].shape
                    assert r.dtype == np.float32
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert k._k.fast_len() == len(arrays)
    for args in arrays:
        _ew_equivalent(k, args)



def test_the_signature_cache_is_bounded(hooks):
    k = pydevice.ElementwiseKernel("T x", "T z", "z = x", "copy_bounded")
    for n in range(1, 514):
        x = _array((n,))
        assert _remember_ew(k, (x,))
        assert 1 <= k._k.fast_len() <= 512
    # Past 512 signatures all were forgotten at once; the newest is remembered and right.
    assert k._k.fast_len() == 1
    _ew_equivalent(k, (_array((513,)),))
    assert k._k.call_fast((_array((1,)),)) is NotImplemented


def test_native_call_keywords(hooks):
    """The native `__call__` takes the fast path with the keywords it knows (`size=None`,
    `stream=`; `axis=`, `keepdims=` of type bool, `out=`) and sends the rest to `_call`,
    the general path, which raises for unknown ones."""
    x = _array((64,))
    y = _array((64,), base=BASE + 0x10000)
    k = pydevice.ElementwiseKernel("T x, T y", "T z", "z = x - y", "sub_kw")
    assert _remember_ew(k, (x, y))
    n = len(hooks.made)
    assert k(x, y, size=None, stream=None).shape == (64,)
    assert k(x, y, stream=0).shape == (64,)
    assert len(hooks.made) == n + 2  # both took the fast path (the general path needs a GPU)
    with pytest.raises(TypeError, match="unknown keyword arguments: bogus"):
        k(x, y, bogus=1)
    x2 = _array((64, 256), base=BASE + 0x100000)
    assert _remember_red(RSUM, (x2,), 1, False)
    assert _remember_red(RSUM, (x2,), (0, 1), True)
    n = len(hooks.made)
    assert RSUM(x2, axis=1).shape == (64,)
    assert RSUM(x2, axis=1, keepdims=False, stream=None).shape == (64,)
    assert RSUM(x2, axis=(0, 1), keepdims=True).shape == (1, 1)
    assert len(hooks.made) - n >= 3
    z = _array((64,), base=BASE + 0x200000)
    assert _remember_red(RSUM, (x2, z), 1, False)
    assert RSUM(x2, axis=1, out=z) is z
    with pytest.raises(TypeError, match="unknown keyword arguments: bogus"):
        RSUM(x2, axis=1, bogus=1)
    # Bound once, to a native half.
    with pytest.raises(TypeError):
        k._set_native(k._k)
    with pytest.raises(TypeError):
        _native.KernelCall()._set_native(object())


def test_cupy_construct_makes_what_cupy_ndarray_makes():
    """`_core._cupy_construct`: CuPy's `ndarray` in its two steps makes the same array as
    `cupy.ndarray(shape, dtype)` (checked through a stand-in allocator: no GPU needed), and
    the fast path allocates with it."""
    from pydevice import _core

    construct = _core._cupy_construct(cupy)
    if construct is None:
        pytest.skip(f"CuPy {cupy.__version__} has no _ndarray_base._init: the fast path calls cupy.ndarray")
    new, cls, init = construct
    assert cls is cupy.ndarray
    nxt = [BASE + (1 << 36)]

    def allocator(nbytes):
        nxt[0] += 1 << 20
        return memory.MemoryPointer(memory.UnownedMemory(nxt[0], max(nbytes, 1), None, device_id=0), 0)

    saved = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(allocator)
    try:
        for shape, dtype in [((1024,), np.float32), ((3, 5), np.float64), ((), np.int8), ((0, 4), np.complex64)]:
            dt = np.dtype(dtype)
            a = cupy.ndarray(shape, dt)
            b = new(cls, shape, dt)
            init(b, shape, dt)
            assert type(b) is cupy.ndarray
            assert (b.shape, b.strides, b.dtype, b.size, b.base) == (a.shape, a.strides, a.dtype, a.size, a.base)
            assert (b.flags.c_contiguous, b.flags.f_contiguous, b.flags.owndata) == (
                a.flags.c_contiguous, a.flags.f_contiguous, a.flags.owndata)
            assert b.data.ptr == a.data.ptr + (1 << 20) and b.data.device_id == 0
        # The fast path with CuPy's own constructor in two steps (and a stand-in stream);
        # the one-step `empty` is not called.
        _core._describe(_array((1,)))

        def unused(shape, dtype):
            raise AssertionError("the two-step construction is used")

        _native.set_cupy_hooks(unused, lambda: _Stream(), construct)
        x = _array((64,))
        y = _array((64,), base=BASE + 0x10000)
        k = pydevice.ElementwiseKernel("T x, T y", "T z", "z = x * y", "mul_construct")
        assert _remember_ew(k, (x, y))
        before = nxt[0]
        r = k(x, y)
        assert type(r) is cupy.ndarray and r.shape == (64,) and r.dtype == np.float32
        assert r.data.ptr == before + (1 << 20) and r.flags.c_contiguous and r.flags.owndata
        _ew_equivalent(k, (x, y))
    finally:
        cupy.cuda.set_allocator(saved)
        _core._register_cupy_hooks(cupy.ndarray)
