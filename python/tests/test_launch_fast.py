"""device.launch's native fast path (python/src/fast.rs) without a GPU (issue 16): it packs
exactly the bytes the Python path packs for the same arguments, and declines (the Python
path runs) whenever it is not sure. Real CuPy arrays over memory never touched
(UnownedMemory at made-up addresses) and recording dry-run launchers (everything but the
driver call)."""

import numpy as np
import pytest

from cuda import device

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
from cupy.cuda import memory  # noqa: E402

BASE = 0x7F30_0000_0000


def _array(shape, dtype=np.float32, base=BASE, device=0):
    n = int(np.prod(shape)) if shape else 1
    mem = memory.UnownedMemory(base, max(n, 1) * np.dtype(dtype).itemsize, None, device_id=device)
    return cupy.ndarray(shape, dtype=dtype, memptr=memory.MemoryPointer(mem, 0))


class _CaiOnly:
    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (ptr, False), "version": 3}


class _BothProtocols(_CaiOnly):
    def __dlpack__(self, stream=None):
        raise AssertionError("not called by the fast path")

    def __dlpack_device__(self):
        return (2, 0)


@device.kernel
def _axpy2(a, b, c, alpha, n, flag):
    i = device.tid(1)
    if i < n and flag:
        c[i] = alpha * a[i] + b[i]


@device.kernel
def _copy2d(a, b):
    i, j = device.tid(2)
    if i < a.shape[0] and j < a.shape[1]:
        b[i, j] = a[i, j]


def _dry(kernel, args):
    """A recording dry-run launcher for `args`' kinds, in both paths."""
    import pydevice._core as _core

    keys = tuple(_core._describe(a)[0] for a in args)
    if (keys, 0) in kernel._specs:  # one launcher per kinds, as the fast path holds one
        return kernel._specs[(keys, 0)].launcher
    m = kernel._mod()
    launcher = m.compile(kernel.__name__, kernel._types_of_keys(keys, args, m), "sm_90", 3).dry_run_launcher(0, True)
    kernel._specs[(keys, 0)] = _core._Specialization(None, launcher, ())
    return launcher


def test_launch_fast_path_packs_what_the_python_path_packs():
    x = _array((64,))
    y = _array((64,), base=BASE + 0x10000)
    z = _array((64,), base=BASE + 0x20000)
    cases = [
        (_axpy2, (x, y, z, 2.5, 64, True)),
        (_axpy2, (x, y, z, -1.0, 7, False)),
        (_axpy2, (_array((128,))[::2], y[::-1], z, 1.0, 64, True)),
        (_copy2d, (_array((8, 16)), _array((8, 16), base=BASE + 0x30000))),
        (_copy2d, (_array((16, 8)).T, _array((8, 16), base=BASE + 0x30000))),
        (_copy2d, (_array((8, 32))[:, ::2], _array((16, 8), base=BASE + 0x30000).T)),
        (_copy2d, (_array((1, 16)), _array((1, 16), base=BASE + 0x30000))),
    ]
    launchers = []
    for kernel, args in cases:
        launcher = _dry(kernel, args)
        launchers.append(launcher)
        # The Python path (it then remembers the launcher for the fast path).
        kernel._launch(args, 1, 64, None, 0)
        general = launcher.last_packed()
        assert general is not None
        assert kernel._dispatcher.try_launch(args, 1, 64, None)
        assert launcher.last_packed() == general, (kernel.__name__, [getattr(a, "strides", a) for a in args])
        device.launch(kernel, *args, grid=1, block=64)
        assert launcher.last_packed() == general
    # Other values of the same kinds: the new values are packed, as the Python path packs them.
    args = (x, y, z, 0.5, 33, True)
    launcher = _dry(_axpy2, args)
    _axpy2._launch(args, 1, 64, None, 0)
    general = launcher.last_packed()
    device.launch(_axpy2, x, y, z, 4.0, 12, True, grid=1, block=64)
    assert launcher.last_packed() != general
    device.launch(_axpy2, *args, grid=1, block=64)
    assert launcher.last_packed() == general


def test_launch_fast_path_falls_back():
    x = _array((64,))
    y = _array((64,), base=BASE + 0x10000)
    z = _array((64,), base=BASE + 0x20000)
    args = (x, y, z, 2.5, 64, True)
    _dry(_axpy2, args)
    _axpy2._launch(args, 1, 64, None, 0)
    assert _axpy2._dispatcher.try_launch(args, 1, 64, None)
    for why, other in {
        "0-d": (_array(()), y, z, 2.5, 64, True),
        "another dtype": (_array((64,), np.float64), y, z, 2.5, 64, True),
        "non-contiguous": (_array((128,))[::2], y, z, 2.5, 64, True),
        "int for float": (x, y, z, 2, 64, True),
        "big int": (x, y, z, 2.5, 1 << 70, True),
        "NumPy scalar": (x, y, z, np.float32(2.5), 64, True),
        "CAI only": (_CaiOnly(BASE, 64), y, z, 2.5, 64, True),
        "DLPack and CAI": (_BothProtocols(BASE, 64), y, z, 2.5, 64, True),
        "another GPU": (_array((64,), device=1), y, z, 2.5, 64, True),
        "NumPy": (np.zeros(64, np.float32), y, z, 2.5, 64, True),
    }.items():
        assert not _axpy2._dispatcher.try_launch(other, 1, 64, None), why
