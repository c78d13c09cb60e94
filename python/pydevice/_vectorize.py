"""numba's ``@vectorize([...], target='cuda')`` over ``ElementwiseKernel``
(docs/semantics.md §20.7).

The decorated scalar function becomes a ``@device.func`` in the generated module (the
``preamble`` of an ``ElementwiseKernel``), and each signature one kernel whose body is
``out0 = f(x0, x1, ...)``. A call picks the first signature whose input types equal the
arguments' dtypes, else the first the arguments cast to safely (NumPy's rule, as numba's
ufuncs); arrays broadcast as in any ``ElementwiseKernel``. On NumPy arrays the kernel runs on
the host, compiled through Cranelift (docs/semantics.md §20.8).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from typing import List, Tuple

import numpy as np

from ._kernels import ElementwiseKernel

__all__ = ["vectorize"]

_SIG = re.compile(r"^\s*(\w+)\s*\((.*)\)\s*$")


def _parse_signature(sig) -> Tuple[str, List[str]]:
    m = _SIG.match(str(sig))
    if not m:
        raise TypeError(f"vectorize: signature {sig!r} is not `ret(arg, ...)`")
    args = [a.strip() for a in m.group(2).split(",") if a.strip()]
    return m.group(1), args


def _function_source(fn) -> str:
    try:
        lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    except (OSError, TypeError):
        raise TypeError(
            f"vectorize: the source of {fn.__name__} cannot be read (define it in a file or a notebook cell)"
        ) from None
    k = next(i for i, l in enumerate(lines) if l.lstrip().startswith("def "))
    return "\n".join(["@device.func"] + lines[k:]) + "\n"


class _Vectorized:
    def __init__(self, fn, signatures, kernel_name=None):
        self.__name__ = fn.__name__
        self._fn = fn
        src = _function_source(fn)
        self._kernels = []
        for sig in signatures:
            ret, args = _parse_signature(sig)
            ins = ", ".join(f"{t} x{i}" for i, t in enumerate(args))
            call = f"out0 = {fn.__name__}({', '.join(f'x{i}' for i in range(len(args)))})"
            k = ElementwiseKernel(ins, f"{ret} out0", call, kernel_name or f"{fn.__name__}_ufunc", preamble_python=src)
            self._kernels.append((tuple(np.dtype(t) for t in args), k))
        if not self._kernels:
            raise TypeError("vectorize needs at least one signature (lazy compilation is not supported)")

    def __repr__(self) -> str:
        return f"<pydevice.vectorize {self.__name__}>"

    def _pick(self, args):
        dts = []
        for a in args:
            if hasattr(a, "dtype") and not isinstance(a, np.generic):
                d = a.dtype
                dts.append(np.dtype(d) if isinstance(d, np.dtype) else np.dtype(str(d).replace("torch.", "")))
            else:
                dts.append(np.asarray(a).dtype)
        for types, k in self._kernels:
            if len(types) == len(dts) and all(a == b for a, b in zip(dts, types)):
                return k
        for types, k in self._kernels:
            if len(types) == len(dts) and all(np.can_cast(a, b, "safe") for a, b in zip(dts, types)):
                return k
        raise TypeError(
            f"{self.__name__}: no signature takes ({', '.join(str(d) for d in dts)}); "
            f"declared: {[tuple(str(t) for t in ts) for ts, _ in self._kernels]}"
        )

    def __call__(self, *args, out=None, stream=None):
        k = self._pick(args)
        if out is not None:
            return k(*args, out, stream=stream)
        return k(*args, stream=stream)

    def source(self, *args) -> str:
        """The generated kernel for arguments like ``args``; no GPU needed."""
        return self._pick(args).source(*args)

    def host_source(self, *args) -> str:
        """The generated host function a call on NumPy arrays like ``args`` runs."""
        return self._pick(args).host_source(*args)


def vectorize(signatures=None, target: str = "cuda", **options):
    """numba's ``vectorize`` for ``target='cuda'``: ``@vectorize(['float32(float32, float32)'],
    target='cuda')`` over a scalar function."""
    if callable(signatures):
        raise TypeError("vectorize needs its signatures: @vectorize(['float32(float32)'], target='cuda')")
    if target != "cuda":
        raise ValueError(f"pydevice.vectorize compiles for target='cuda' only, not {target!r}")
    unknown = set(options) - {"kernel_name"}
    if unknown:
        raise TypeError(f"unknown options: {', '.join(sorted(unknown))}")

    def deco(fn):
        return _Vectorized(fn, list(signatures or ()), options.get("kernel_name"))

    return deco

