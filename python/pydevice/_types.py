"""Host-side objects for the names of ``cuda.device`` that host code can use: number types,
vector types, ``Dim3``, ``Atomic``, ``align`` and ``ConstExpr``.

Device code is compiled from source, so these only need to exist on the host for what runs
there: annotations (evaluated when a function or class is defined), building arguments
(``float32x4(1, 2, 3, 4)``, ``float32(2.5)``) and host calls of ``@func``. Names that only
device code may use (``tid``, ``syncthreads``, ...) are placeholders that raise when called on
the host (see ``pydevice.__getattr__``).
"""

from __future__ import annotations

import numpy as np

SCALAR_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "float8e4m3", "float8e5m2",
)
VECTOR_ELEMS = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float8e4m3", "float8e5m2", "float16", "bfloat16", "float32", "float64",
)


class ArrayTypeHint:
    """What ``float32[:, ::1]`` means in an annotation: an array type, written in numba's
    notation (``str()`` gives it)."""

    def __init__(self, dtype: str, dims: str):
        self.dtype = dtype
        self.dims = dims

    def __str__(self) -> str:
        return f"{self.dtype}[{self.dims}]"

    __repr__ = __str__


def _dims_text(item) -> str:
    if not isinstance(item, tuple):
        item = (item,)
    parts = []
    for s in item:
        if not isinstance(s, slice):
            raise TypeError("array types are written with slices: float32[:], float32[:, ::1]")
        parts.append("::1" if s.step == 1 else ":")
    return ", ".join(parts)


class ScalarType:
    """A fixed-format number type (``float32``): calling it makes a NumPy scalar of that
    type; subscripting it (``float32[::1]``) names an array type."""

    def __init__(self, name: str):
        self.name = name
        try:
            self.dtype = np.dtype("bool" if name == "bool" else name)
        except TypeError:
            self.dtype = None  # bfloat16, float8: device-only storage formats

    def __call__(self, value=0):
        if self.dtype is None:
            raise TypeError(f"{self.name} numbers cannot be made on the host (NumPy has no such type)")
        return self.dtype.type(value)

    def __getitem__(self, item) -> ArrayTypeHint:
        return ArrayTypeHint(self.name, _dims_text(item))

    def __repr__(self) -> str:
        return f"cuda.device.{self.name}"

    __str__ = lambda self: self.name  # noqa: E731


class Vector(tuple):
    """Base of the vector types (``float32x4``): an immutable tuple with ``x/y/z/w``."""

    dtype: ScalarType
    size: int

    def __new__(cls, *args):
        if len(args) != cls.size:
            raise TypeError(f"{cls.__name__} takes {cls.size} elements, {len(args)} given")
        conv = cls.dtype.dtype.type if cls.dtype.dtype is not None else float
        return tuple.__new__(cls, (conv(a) for a in args))

    x = property(lambda self: self[0])
    y = property(lambda self: self[1])
    z = property(lambda self: self[2])
    w = property(lambda self: self[3])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(v.item() if hasattr(v, 'item') else v) for v in self)})"


def _make_vector(elem: str, n: int):
    cls = type(f"{elem}x{n}", (Vector,), {"dtype": SCALARS[elem], "size": n, "__slots__": ()})
    cls.__module__ = "cuda.device"
    return cls


SCALARS = {n: ScalarType(n) for n in SCALAR_NAMES}
VECTORS = {f"{e}x{n}": _make_vector(e, n) for e in VECTOR_ELEMS for n in (1, 2, 3, 4)}
Dim3 = VECTORS["uint32x3"]


class AtomicHint:
    """``Atomic(int32)``: an atomic object's type. In device code it is a struct field type
    (``Atomic(int, align=16)``), a thread's own object (``c = Atomic(int32)``) or the dtype of
    ``shared_array``/``local_array`` (docs/semantics.md §9.7)."""

    def __init__(self, dtype, align: int = 0):
        self.dtype = dtype
        self.align = align

    def __repr__(self) -> str:
        return f"Atomic({self.dtype!r}, align={self.align})"


def Atomic(dtype, align: int = 0) -> AtomicHint:  # noqa: N802 (the spec's name)
    """The spec's ``Atomic(T)`` class: a struct field type, an atomic object in device code,
    or an array's dtype (docs/semantics.md §7.3, §9.7)."""
    return AtomicHint(dtype, align)


class AlignedHint:
    """``align(t, n)``: ``t`` aligned to at least ``n`` bytes."""

    def __init__(self, t, n: int):
        self.type = t
        self.align = n


def align(t, n: int) -> AlignedHint:
    """The spec's ``align(t, n)``."""
    return AlignedHint(t, n)


class _ConstExpr:
    """The spec's ``ConstExpr`` type hint (``ConstExpr[int]``)."""

    def __getitem__(self, t):
        return self

    def __repr__(self) -> str:
        return "ConstExpr"


ConstExpr = _ConstExpr()
