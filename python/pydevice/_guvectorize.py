"""numba's ``@guvectorize([...], layout, target='cuda')`` (docs/semantics.md §20.9).

The decorated function takes arrays (and scalars) and writes its outputs, which are its last
arguments; the layout (``'(m,n),(n)->(m)'``) names each argument's core dimensions. Each
signature becomes a ``pydevice._native.GuVectorize``: the crate checks the signature against
the layout (diagnostics with spans), broadcasts the loop dimensions, sizes the outputs and
generates an all-``raw`` ``ElementwiseKernel`` that calls the function once per element of
the loop dimensions with views of the arguments. NumPy arguments run on the host (compiled
through Cranelift); CuPy arrays and PyTorch tensors on their GPU, with outputs of their
framework.
"""

from __future__ import annotations

import numpy as np

from . import _native
from ._kernels import _Args, _host_desc
from ._vectorize import _function_source

__all__ = ["guvectorize"]


def _framework(args) -> str:
    for a in args:
        if isinstance(a, np.ndarray):
            return "numpy"
    for a in args:
        mod = type(a).__module__
        if mod.startswith("torch"):
            return "torch"
        if not isinstance(a, np.generic) and (hasattr(a, "__cuda_array_interface__") or hasattr(a, "__dlpack__")):
            return "cupy"
    return "numpy"


def _dtype_of(a) -> np.dtype:
    if hasattr(a, "dtype") and not isinstance(a, np.generic):
        d = a.dtype
        return np.dtype(d) if isinstance(d, np.dtype) else np.dtype(str(d).replace("torch.", ""))
    return np.asarray(a).dtype


def _as_array(a, dtype: np.dtype, framework: str, like):
    """``a`` as an array of ``dtype`` of ``framework`` (scalars become 0-d arrays; an array of
    another dtype is converted, as numba converts arguments that cast safely)."""
    if framework == "numpy":
        if isinstance(a, np.ndarray) and a.dtype == dtype:
            return a
        return np.asarray(a).astype(dtype)
    if framework == "torch":
        import torch

        tdt = getattr(torch, dtype.name)
        if isinstance(a, torch.Tensor):
            return a if a.dtype == tdt else a.to(tdt)
        return torch.as_tensor(a, dtype=tdt, device=like.device)
    import cupy

    if isinstance(a, cupy.ndarray):
        return a if a.dtype == dtype else a.astype(dtype)
    if not isinstance(a, np.generic) and (hasattr(a, "__cuda_array_interface__") or hasattr(a, "__dlpack__")):
        return a if _dtype_of(a) == dtype else cupy.asarray(a).astype(dtype)
    return cupy.asarray(np.asarray(a, dtype=dtype))


class _GUFunc:
    def __init__(self, fn, signatures, layout: str, kernel_name=None):
        self.__name__ = fn.__name__
        self._fn = fn
        self.layout = layout
        src = _function_source(fn)
        self._sigs = []
        for sig in signatures:
            g = _native.GuVectorize(str(sig), layout, src, fn.__name__, kernel_name or f"{fn.__name__}_gufunc")
            ins = tuple(np.dtype(d) for d, _ in g.args[: g.nin])
            self._sigs.append((ins, g))
        if not self._sigs:
            raise TypeError("guvectorize needs at least one signature (lazy compilation is not supported)")
        g = self._sigs[0][1]
        self.nin = g.nin
        self.nout = len(g.args) - g.nin

    def __repr__(self) -> str:
        return f"<pydevice.guvectorize {self.__name__} {self.layout}>"

    def _pick(self, ins):
        dts = [_dtype_of(a) for a in ins]
        # Python numbers are weak (NEP 50, as in the kernels' bodies): one fits any type of
        # its kind or a later one.
        weak = [isinstance(a, (bool, int, float, complex)) for a in ins]

        def fits(a, b, w):
            if w:
                return "biufc".index(b.kind) >= "biufc".index(a.kind) if b.kind in "biufc" else False
            return np.can_cast(a, b, "safe")

        for types, g in self._sigs:
            if all(a == b for a, b in zip(dts, types)):
                return g
        for types, g in self._sigs:
            if all(fits(a, b, w) for a, b, w in zip(dts, types, weak)):
                return g
        raise TypeError(
            f"{self.__name__}: no signature takes ({', '.join(str(d) for d in dts)}); "
            f"declared: {[tuple(str(t) for t in ts) for ts, _ in self._sigs]}"
        )

    def _prepare(self, args, out):
        if out is not None:
            args = tuple(args) + (tuple(out) if isinstance(out, (tuple, list)) else (out,))
        if len(args) not in (self.nin, self.nin + self.nout):
            raise TypeError(
                f"{self.__name__} takes {self.nin} input{'s' if self.nin != 1 else ''} and optionally "
                f"{self.nout} output{'s' if self.nout != 1 else ''}; {len(args)} arguments were given"
            )
        ins, outs = args[: self.nin], args[self.nin:]
        g = self._pick(ins)
        fw = _framework(args)
        like = next((a for a in args if hasattr(a, "device") and not isinstance(a, np.generic)), None)
        conv = [_as_array(a, np.dtype(d), fw, like) for a, (d, _) in zip(ins, g.args)]
        return g, conv, list(outs)

    def __call__(self, *args, out=None, stream=None):
        g, ins, outs = self._prepare(args, out)
        a = _Args(tuple(ins) + tuple(outs), self.nin, frozenset(range(self.nin)))
        call = g.resolve(tuple(a.descs))
        allocated, descs = [], []
        for m in call.missing:
            shape, dt = call.shapes[m], call.out_dtypes[m]
            if a.on_host:
                arr = np.zeros(tuple(int(s) for s in shape), dtype=dt)
                d = _host_desc(arr)
            else:
                arr, d = a.empty(shape, dt)
            allocated.append(arr)
            descs.append(d)
        if a.on_host:
            g.run_host(call, tuple(descs))
        else:
            g.launch(call, tuple(descs), a.ordinal, a.stream(stream))
        results, k = [], 0
        for j in range(self.nout):
            if j in call.missing:
                results.append(allocated[k])
                k += 1
            else:
                results.append(outs[j])
        return results[0] if self.nout == 1 else tuple(results)

    def _call_for(self, args):
        g, ins, outs = self._prepare(args, None)
        a = _Args(tuple(ins) + tuple(outs), self.nin, frozenset(range(self.nin)))
        call = g.resolve(tuple(a.descs))
        descs = tuple(
            ("A", call.out_dtypes[m], 1 << 33, tuple(call.shapes[m]), _c(call.shapes[m])) for m in call.missing
        )
        return g, call, descs

    def source(self, *args) -> str:
        """The generated kernel for arguments like ``args`` (NumPy arrays); no GPU needed."""
        g, call, descs = self._call_for(args)
        return g.source(call, descs)

    def host_source(self, *args) -> str:
        """The generated host function a call on NumPy arrays like ``args`` runs."""
        g, call, descs = self._call_for(args)
        return g.host_source(call, descs)

    def ptx(self, *args) -> str:
        """The PTX of the generated kernel for arguments like ``args``; no GPU needed."""
        g, call, descs = self._call_for(args)
        return g.ptx(call, descs)


def _c(shape) -> tuple:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= int(n)
    return tuple(reversed(out))


def guvectorize(signatures=None, layout=None, target: str = "cuda", **options):
    """numba's ``guvectorize`` for ``target='cuda'``: ``@guvectorize(['void(float32[:],
    float32[:], float32[:])'], '(n),(n)->()', target='cuda')`` over a function that writes its
    outputs (a ``()`` output as ``out[0] = ...``)."""
    if callable(signatures):
        raise TypeError("guvectorize needs its signatures and layout: @guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', target='cuda')")
    if not isinstance(layout, str):
        raise TypeError("guvectorize needs a layout string such as '(n),(n)->()'")
    if target != "cuda":
        raise ValueError(f"pydevice.guvectorize compiles for target='cuda' only, not {target!r}")
    unknown = set(options) - {"kernel_name", "nopython"}
    if unknown:
        raise TypeError(f"unknown options: {', '.join(sorted(unknown))}")
    if isinstance(signatures, str):
        signatures = [signatures]

    def deco(fn):
        return _GUFunc(fn, list(signatures or ()), layout, options.get("kernel_name"))

    return deco
