"""CuPy's array API as the GPU tests use it, over NumPy: what the `cupy` fixture gives when
there is no GPU, so that those tests' kernels run on the CPU back end (docs/semantics.md §22)
with the same assertions, as numba's ``NUMBA_ENABLE_CUDASIM=1`` runs numba programs on host
arrays.

Arrays are NumPy arrays in host memory: kernels launched on them with the CPU back end
selected (the fixture selects it) run whole on the CPU, and ElementwiseKernel and
ReductionKernel run their generated code on the host (§20.8). Streams and devices exist and
do nothing: every CPU launch is synchronous. Anything else CuPy has is NumPy's namesake
(``cupy.float32``, ``cupy.inf``, ``cupy.dtype``, ...)."""

import types

import numpy as np


class Stream:
    """A stream: CPU launches are synchronous, so there is nothing to wait for."""

    null = None

    def __init__(self, non_blocking: bool = False, null: bool = False, ptr: int = 0):
        self.ptr = 0

    def synchronize(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Device:
    """A device (there is one, the host): selecting it does nothing."""

    def __init__(self, ordinal: int = 0):
        self.id = int(ordinal)

    def synchronize(self) -> None:
        pass

    def use(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def get_current_stream() -> Stream:
    return Stream()


def _synchronize() -> None:
    pass


cuda = types.SimpleNamespace(
    Stream=Stream,
    Device=Device,
    get_current_stream=get_current_stream,
    runtime=types.SimpleNamespace(deviceSynchronize=_synchronize, getDeviceCount=lambda: 1),
)


def asnumpy(a, stream=None, order="C", out=None):
    """A copy in host memory (CuPy's `asnumpy` copies from the device)."""
    r = np.array(a, order=order, copy=True)
    if out is not None:
        out[...] = r
        return out
    return r


def asarray(a, dtype=None, order=None):
    """A host array (a copy, as CuPy's `asarray` of host data copies it to the device)."""
    return np.array(a, dtype=dtype, order=order or "K", copy=True)


array = asarray


def __getattr__(name):
    # Creation functions, dtypes and constants are NumPy's.
    return getattr(np, name)
