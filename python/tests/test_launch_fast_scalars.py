"""device.launch's native fast path for NumPy scalars and @struct instances (issue 31), without
a GPU: a recording dry-run launcher (everything but the driver call) shows that the fast path
is taken (the dispatcher's `fast_launches` counter) and that it packs exactly the bytes the
Python path packs for the same arguments."""

import numpy as np
import pytest

import pydevice._core as _core
import pydevice.errors as errors
from cuda import device
from cuda.device import float16, float32, float64, int8, int32, int64, uint32


@device.struct
class Params:
    scale: float32
    count: int32


@device.struct
class Outer:
    inner: Params
    bias: float64


@device.kernel
def _scalars(a, b, c, d, e):
    if a != a:  # never: the kernel only receives its arguments
        print(b, c, d, e)


@device.kernel
def _with_struct(p, q, s):
    if p.scale > 1e30:
        print(p.count, q.bias, q.inner.count, s)


def _dry(kernel, args):
    """A recording dry-run launcher for `args`' kinds, known to both paths."""
    keys = tuple(_core._describe(a)[0] for a in args)
    if (keys, 0) in kernel._specs:
        return kernel._specs[(keys, 0)].launcher
    m = kernel._mod()
    launcher = m.compile(kernel.__name__, kernel._types_of_keys(keys, args, m), "sm_90", 3).dry_run_launcher(0, True)
    kernel._specs[(keys, 0)] = _core._Specialization(None, launcher, ())
    return launcher


def _check(kernel, args, other):
    """The Python path, then the fast path with the same and with other values of the same
    kinds: each packs what the Python path packs, and each is counted as fast."""
    launcher = _dry(kernel, args)
    kernel._launch(args, 1, 32, None, 0)  # the Python path; it remembers the launcher
    general = launcher.last_packed()
    assert general is not None
    before = kernel._dispatcher.fast_launches
    device.launch(kernel, *args, grid=1, block=32)
    assert kernel._dispatcher.fast_launches == before + 1, "the fast path was not taken"
    assert launcher.last_packed() == general
    kernel._launch(other, 1, 32, None, 0)
    general_other = launcher.last_packed()
    assert general_other != general
    device.launch(kernel, *other, grid=1, block=32)
    assert kernel._dispatcher.fast_launches == before + 2
    assert launcher.last_packed() == general_other


def test_numpy_scalars_take_the_fast_path():
    _check(
        _scalars,
        (np.float64(2.5), np.int32(-7), np.uint32(4_000_000_000), np.float32(0.1), np.bool_(True)),
        (np.float64(-1e-300), np.int32(2**31 - 1), np.uint32(1), np.float32(3e38), np.bool_(False)),
    )
    _check(
        _scalars,
        (np.float16(1.5), np.int64(-(2**62)), np.uint8(255), np.int16(-3), 1.0),
        (np.float16(-0.25), np.int64(5), np.uint8(0), np.int16(300), 2.0),
    )


def test_structs_take_the_fast_path():
    _check(
        _with_struct,
        (Params(1.5, 3), Outer(Params(2.0, -4), 0.125), np.int64(9)),
        (Params(-1.5, 30), Outer(Params(0.5, 7), -8.0), np.int64(-9)),
    )
    # Fields given as NumPy scalars: another key, packed the same way.
    _check(
        _with_struct,
        (Params(np.float32(1.5), np.int32(3)), Outer(Params(2.0, -4), np.float64(0.125)), 9),
        (Params(np.float32(0.5), np.int32(4)), Outer(Params(1.0, 4), np.float64(1.0)), 10),
    )


def test_other_kinds_keep_the_python_path():
    args = (np.float64(2.5), np.int32(-7), np.uint32(4), np.float32(0.1), np.bool_(True))
    _dry(_scalars, args)
    _scalars._launch(args, 1, 32, None, 0)
    assert _scalars._dispatcher.try_launch(args, 1, 32, None)
    for why, other in {
        "float for a NumPy float64": (2.5,) + args[1:],
        "another NumPy type": (np.float32(2.5),) + args[1:],
        "complex": (np.complex64(1j),) + args[1:],
        "uint64 kind for uint32": args[:2] + (np.uint64(4),) + args[3:],
    }.items():
        assert not _scalars._dispatcher.try_launch(other, 1, 32, None), why


# ---------------------------------------------------------------------------------------
# Conversion rules: a NumPy scalar given for an annotated parameter of another number type
# converts as the Python path converts it (its `item()` then the parameter's type), on the
# fast path too; out-of-range integers raise the same error on both paths.


@device.kernel
def _annotated(x: float64, y: float32, n: uint32, m: int64, h: float16):
    if x != x:  # never: the kernel only receives its arguments
        print(y, n, m)
    if h > 1e4:
        print(x)


def test_numpy_scalars_convert_to_annotated_types_as_before():
    _check(
        _annotated,
        (np.float32(0.1), np.float64(1e-3), np.int64(7), np.uint32(4_000_000_000), np.float32(0.1)),
        (np.float32(-2.5), np.float64(3e38), np.int64(2**32 - 1), np.uint32(1), np.float32(65504.0)),
    )
    _check(
        _annotated,
        (np.int32(-3), np.int8(-128), np.uint8(255), np.int16(-300), np.float64(1e-3)),
        (np.int32(2**31 - 1), np.int8(127), np.uint8(0), np.int16(300), np.float64(-7e4)),
    )
    # The bytes: np.float32(0.1) into `x: float64` is float32's 0.1 widened, not 0.1; the
    # float64 1e-3 into `y: float32` is rounded to float32; the float32 0.1 into `h: float16`
    # is rounded to float16.
    launcher = _dry(_annotated, (np.float32(0.1), np.float64(1e-3), np.int64(7), np.uint32(4_000_000_000), np.float32(0.1)))
    device.launch(_annotated, np.float32(0.1), np.float64(1e-3), np.int64(7), np.uint32(4_000_000_000),
                  np.float32(0.1), grid=1, block=32)
    b = launcher.last_packed()
    assert np.frombuffer(b[0:8], np.float64)[0] == np.float64(np.float32(0.1)) != 0.1
    assert np.frombuffer(b[8:12], np.float32)[0] == np.float32(1e-3)
    assert np.frombuffer(b[12:16], np.uint32)[0] == 7
    assert np.frombuffer(b[16:24], np.int64)[0] == 4_000_000_000
    assert np.frombuffer(b[24:26], np.float16)[0] == np.float16(0.1)


def _raises_same(kernel, args, bad):
    """`bad` raises the same error type and text on the fast path as on the Python path."""
    _dry(kernel, args)
    kernel._launch(args, 1, 32, None, 0)
    device.launch(kernel, *args, grid=1, block=32)
    with pytest.raises(Exception) as slow:
        kernel._launch(bad, 1, 32, None, 0)
    before = kernel._dispatcher.fast_launches
    with pytest.raises(Exception) as fast:
        device.launch(kernel, *bad, grid=1, block=32)
    assert kernel._dispatcher.fast_launches == before
    assert type(fast.value) is type(slow.value)
    assert str(fast.value) == str(slow.value)
    return fast.value


def test_out_of_range_integers_raise_as_before():
    good = (np.float32(0.1), np.float64(1e-3), np.int64(7), np.uint32(4), np.float32(0.1))
    for i, v in ((2, np.int64(-1)), (2, np.int64(2**32)), (3, np.uint64(2**64 - 1))):
        bad = good[:i] + (v,) + good[i + 1 :]
        kind = type(v)
        same = good[:i] + (kind(1),) + good[i + 1 :]  # the same kinds, a value in range
        e = _raises_same(_annotated, same, bad)
        assert isinstance(e, errors.ArgumentRangeError), (kind, e)


def test_scalar_types_are_read_from_memory():
    """Every plain NumPy number type registered on the fast path reads its value from the
    object (the layout checked at registration), and reads it right, extremes included."""
    kinds = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
             np.float16, np.float32, np.float64, np.bool_]
    for t in kinds:
        _core._handler_for(t(1))
        assert _core._native.scalar_read(t) == "memory", t
    assert _core._native.scalar_read(int) is None
    # Extremes through the kernel: each packs what the Python path packs.
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
        info = np.iinfo(t)
        _check(_scalars, (t(info.min), t(info.max), t(0), t(1), t(info.max)),
               (t(info.max), t(info.min), t(1), t(0), t(info.min)))
    for t in (np.float16, np.float32, np.float64):
        info = np.finfo(t)
        tiny = np.nextafter(t(0), t(1))  # the smallest subnormal
        _check(_scalars, (t(info.max), t(-info.max), tiny, t(np.inf), t(-0.0)),
               (t(info.min), t(np.nan), -tiny, t(-np.inf), t(1.5)))


# A struct whose fields are given as NumPy scalars of other number types: converted as the
# Python path converts them.
@device.struct
class Mixed:
    a: float32
    b: float64
    c: uint32
    d: int8


@device.kernel
def _mixed(p, q: int64):
    if p.a > 1e30:
        print(p.b, p.c, p.d, q)


def test_struct_fields_convert_as_before():
    _check(
        _mixed,
        (Mixed(np.float64(0.1), np.float32(0.1), np.int64(7), np.uint8(5)), np.int32(-3)),
        (Mixed(np.float64(-1e-3), np.float32(2.5), np.int64(2**32 - 1), np.uint8(127)), np.int32(4)),
    )
    _check(
        _mixed,
        (Mixed(0.1, 0.1, 7, -5), 3),
        (Mixed(-2.0, 3.0, 9, 100), -3),
    )
    good = (Mixed(np.float64(0.1), np.float32(0.1), np.int64(7), np.uint8(5)), np.int32(-3))
    bad = (Mixed(np.float64(0.1), np.float32(0.1), np.int64(-7), np.uint8(5)), np.int32(-3))
    e = _raises_same(_mixed, good, bad)
    assert isinstance(e, errors.ArgumentRangeError), e


# ---------------------------------------------------------------------------------------
# Real launches: on the GPU (the second and later launches on the fast path, counted), and
# without one on the CPU back end (the conftest's `cupy` fixture), with the same assertions
# on the values the kernel stores: NumPy scalars converted to annotated parameter types and
# @struct fields, against NumPy's conversions.


@device.kernel
def _store(out, x: float64, y: float32, n: uint32, m: int64, h: float16, p):
    out[0] = x
    out[1] = y
    out[2] = n
    out[3] = m
    out[4] = h
    out[5] = p.a
    out[6] = p.b
    out[7] = p.c
    out[8] = p.d


def _want(x, y, n, m, h, p):
    f = [np.float64(x), np.float32(y), np.uint32(n), np.int64(m), np.float16(h),
         np.float32(p.a), np.float64(p.b), np.uint32(p.c), np.int8(p.d)]
    return np.array([np.float64(v) for v in f])


def test_launches_store_converted_values(cupy, gpu):
    rng = np.random.default_rng(31)
    out = cupy.zeros(9, dtype=np.float64)
    fast = _store._dispatcher.fast_launches
    for k in range(6):
        args = (
            np.float32(rng.standard_normal()), np.float64(rng.standard_normal() * 1e3),
            np.int64(rng.integers(0, 2**32)), np.int32(rng.integers(-(2**31), 2**31)),
            np.float32(rng.standard_normal()),
            Mixed(np.float64(rng.standard_normal()), np.float32(rng.standard_normal()),
                  np.uint16(rng.integers(0, 2**16)), np.int8(rng.integers(-128, 128))),
        )
        device.launch(_store, out, *args, grid=1, block=1)
        got = cupy.asnumpy(out) if hasattr(cupy, "asnumpy") else np.asarray(out)
        np.testing.assert_array_equal(got, _want(*args), err_msg=f"launch {k}")
    if gpu != "cpu":  # the CPU back end launches through the Python path
        assert _store._dispatcher.fast_launches - fast == 5, "the fast path was not taken"
