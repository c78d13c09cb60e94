"""The numba-cuda dialect: ``from pydevice.numba import cuda`` instead of
``from numba import cuda`` (or ``from pydevice.numba import cuda, float32, ...``).

A module written for numba-cuda runs with only that import changed: ``@cuda.jit``,
``@cuda.jit("void(float32[:])")``, ``@cuda.jit(device=True)`` and ``kernel[grid, block,
stream, shared](*args)``; ``cuda.to_device``, ``cuda.device_array(_like)``,
``copy_to_host`` and ``cuda.synchronize`` for memory. The compiler reads the module as
numba code (``int`` is int64, ``float`` float64, numba's typing), because pydevice rewrites
this import to ``from numba import cuda`` in the source it compiles. Host NumPy arrays passed
to a kernel are copied to the device and back around the launch, as numba does.
"""

from __future__ import annotations

import numpy as np

from . import _core, _native, _types

_JIT_OPTIONS = _core._NUMBA_OPTIONS


class DeviceNDArray:
    """Device memory with a NumPy shape and dtype (numba's ``DeviceNDArray``), offering the
    CUDA Array Interface."""

    def __init__(self, shape, dtype, buffer=None, device: int = 0):
        self.shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape)) if self.shape else 1
        self.nbytes = self.size * self.dtype.itemsize
        self._device = device
        self._buf = buffer or _native.Buffer.upload(device, bytes(max(self.nbytes, 1)))

    ndim = property(lambda self: len(self.shape))

    @property
    def __cuda_array_interface__(self):
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "descr": self.dtype.descr,
            "data": (self._buf.ptr, False),
            "strides": None,
            "version": 3,
        }

    def __len__(self):
        return self.shape[0]

    def copy_to_host(self, ary=None, stream=0):
        data = self._buf.download()[: self.nbytes]
        out = np.frombuffer(data, dtype=self.dtype).reshape(self.shape).copy()
        if ary is not None:
            ary[...] = out
            return ary
        return out


class HostDeviceArray(np.ndarray):
    """What ``cuda.to_device`` and ``cuda.device_array(_like)`` give when launches run on the
    CPU back end (``PYDEVICE_BACKEND=cpu``, docs/semantics.md §22): a NumPy array in host
    memory with a device array's ``copy_to_host``, as numba's simulator
    (``NUMBA_ENABLE_CUDASIM=1``) gives. Kernels launched on the CPU use it in place."""

    def copy_to_host(self, ary=None, stream=0):
        out = np.array(self, copy=True)
        if ary is not None:
            ary[...] = out
            return ary
        return out

    def copy_to_device(self, ary, stream=0):
        self[...] = ary


def _on_cpu() -> bool:
    return _core._BACKEND == "cpu"


def _to_device(ary, stream=0, copy=True, to=None):
    if _on_cpu():
        if to is not None:
            to[...] = ary
            return to
        return np.array(ary, copy=True).view(HostDeviceArray)
    a = np.ascontiguousarray(ary)
    buf = _native.Buffer.upload(_core._default_device(), a.tobytes() if a.nbytes else b"\0")
    return DeviceNDArray(a.shape, a.dtype, buf)


class _Cuda:
    """The ``cuda`` object of the numba dialect."""

    def jit(self, func_or_sig=None, device: bool = False, **options):
        _core._check_options("@cuda.jit", dict(options, device=device), _JIT_OPTIONS)

        def wrap(fn):
            if device:
                return _core.Func(fn, options, "numba")
            return _core.Kernel(fn, options, "numba")

        if callable(func_or_sig) and not isinstance(func_or_sig, (str, list, tuple)):
            return wrap(func_or_sig)
        return wrap

    to_device = staticmethod(_to_device)

    @staticmethod
    def device_array(shape, dtype=np.float64, stream=0, order="C"):
        if _on_cpu():
            return np.zeros(shape, dtype, order=order).view(HostDeviceArray)
        return DeviceNDArray(shape, dtype)

    @staticmethod
    def device_array_like(ary, stream=0):
        if _on_cpu():
            return np.zeros(ary.shape, ary.dtype).view(HostDeviceArray)
        return DeviceNDArray(ary.shape, ary.dtype)

    @staticmethod
    def synchronize():
        if _on_cpu():
            return  # CPU launches are synchronous
        _native.synchronize(_core._default_device(), None)

    @staticmethod
    def is_available() -> bool:
        return _native.driver_available()

    def __getattr__(self, name):
        import pydevice

        return getattr(pydevice, name)


cuda = _Cuda()


def to_fixed_tuple(array, length):
    """numba's ``to_fixed_tuple`` (``numba.np.unsafe.ndarray``): the first ``length``
    elements of a 1-D array as a tuple; ``length`` is a compile-time integer in device
    code. On the host, ``tuple(array[:length])``."""
    return tuple(array[:length])


globals().update(_types.SCALARS)


def vectorize(signatures=None, target: str = "cuda", **options):
    """numba's ``vectorize`` (``from pydevice.numba import vectorize``) for
    ``target='cuda'``: see ``pydevice.vectorize``."""
    from ._vectorize import vectorize as _vectorize

    return _vectorize(signatures, target, **options)


def guvectorize(signatures=None, layout=None, target: str = "cuda", **options):
    """numba's ``guvectorize`` (``from pydevice.numba import guvectorize``) for
    ``target='cuda'``: see ``pydevice.guvectorize``."""
    from ._guvectorize import guvectorize as _guvectorize

    return _guvectorize(signatures, layout, target, **options)
