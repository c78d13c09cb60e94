"""device.launch's native fast path for NumPy scalars and @struct instances (issue 31), without
a GPU: a recording dry-run launcher (everything but the driver call) shows that the fast path
is taken (the dispatcher's `fast_launches` counter) and that it packs exactly the bytes the
Python path packs for the same arguments."""

import numpy as np

import pydevice._core as _core
from cuda import device
from cuda.device import float32, float64, int32, int64, uint32


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
