"""pydevice: the ``cuda.device`` host side, compiled by the pydevice Rust crate.

``from cuda import device`` (or ``import pydevice as device``) gives the decorators
(``kernel``, ``func``, ``struct``), ``launch``, the number and vector types, ``Dim3``,
``Atomic``, ``align``, ``ConstExpr`` and reflection (``compile_ptx``, ``header``,
``Kernel.ptx``/``llvm_ir``/``typed_ir``/``abi``/``attributes``/``occupancy``/
``suggested_block_size``). Names that only device code uses (``tid``, ``syncthreads``,
``atomic_ref``, ...) exist on the host as placeholders that raise when called there.

Dialects: ``from pydevice.numba import cuda`` and ``from pydevice.cupyx import jit`` stand
in for ``from numba import cuda`` and ``from cupyx import jit``.
"""

from __future__ import annotations

from . import errors
from . import hopper
from . import random
from ._core import (
    Func,
    Kernel,
    cache_stats,
    can_access_peer,
    compile_ptx,
    copy,
    device_count,
    func,
    header,
    kernel,
    launch,
    machine_representation,
    set_cache_dir,
    struct,
    synchronize,
)
from ._fuse import fuse
from ._guvectorize import guvectorize
from ._kernels import ElementwiseKernel, ReductionKernel
from ._vectorize import vectorize
from ._types import SCALARS as _SCALARS
from ._types import VECTORS as _VECTORS
from ._types import Atomic, ConstExpr, Dim3, Vector, align
from .errors import (
    ArgumentError,
    ArgumentRangeError,
    BoundsError,
    CompileError,
    DeadlockError,
    DeviceFault,
    DeviceMismatchError,
    Diagnostic,
    DriverError,
    HostError,
    HostRecursionError,
    KernelRaised,
    LaunchError,
    NoDriverError,
    PydeviceError,
    RaceError,
    ShapeMismatchError,
)
from ._native import compiler_version, driver_available

globals().update(_SCALARS)
globals().update(_VECTORS)

__version__ = "0.1.0"


class _DeviceOnly:
    """A name of ``cuda.device`` that only device code can use."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise TypeError(f"cuda.device.{self._name} can only be used in device code")

    def __getattr__(self, attr):
        return _DeviceOnly(f"{self._name}.{attr}")

    def __getitem__(self, item):
        return self

    def __repr__(self) -> str:
        return f"<device-only cuda.device.{self._name}>"


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return _DeviceOnly(name)
