"""``pydevice.fuse``: CuPy's ``cupy.fuse`` over ``ElementwiseKernel``/``ReductionKernel``
(docs/semantics.md §20.5).

The decorated function is traced once per argument signature (dtypes and ranks): it runs on
proxy objects that record the operations as Python text — arithmetic, comparisons, NumPy
ufuncs (``np.sqrt``, ``np.maximum``, ...), ``np.where`` — and the text becomes the body of an
``ElementwiseKernel``, or the ``map_expr`` of a ``ReductionKernel`` when the function returns
``np.sum``/``np.prod``/``np.max``/``np.min`` of an expression (with ``axis``). The result
dtype is NumPy's for the same function on one-element arrays of the argument dtypes. On
NumPy arrays the same kernel runs on the host, compiled through Cranelift (docs/semantics.md
§20.8); a call without arrays runs the function as written.
"""

from __future__ import annotations

import functools
from typing import Any, Dict

import numpy as np

from . import _native
from ._kernels import ElementwiseKernel, ReductionKernel, _dtype_name

__all__ = ["fuse"]

_UFUNCS = {
    "add": "({0} + {1})",
    "subtract": "({0} - {1})",
    "multiply": "({0} * {1})",
    "true_divide": "({0} / {1})",
    "divide": "({0} / {1})",
    "floor_divide": "({0} // {1})",
    "remainder": "({0} % {1})",
    "power": "({0} ** {1})",
    "negative": "(-{0})",
    "positive": "(+{0})",
    "absolute": "abs({0})",
    "square": "({0} * {0})",
    "maximum": "max({0}, {1})",
    "minimum": "min({0}, {1})",
    "less": "({0} < {1})",
    "less_equal": "({0} <= {1})",
    "greater": "({0} > {1})",
    "greater_equal": "({0} >= {1})",
    "equal": "({0} == {1})",
    "not_equal": "({0} != {1})",
    "logical_and": "({0} and {1})",
    "logical_or": "({0} or {1})",
    "logical_not": "(not {0})",
    "bitwise_and": "({0} & {1})",
    "bitwise_or": "({0} | {1})",
    "bitwise_xor": "({0} ^ {1})",
    "invert": "(~{0})",
    "arctan2": "atan2({0}, {1})",
    "hypot": "hypot({0}, {1})",
    "arcsin": "asin({0})",
    "arccos": "acos({0})",
    "arctan": "atan({0})",
    "arcsinh": "asinh({0})",
    "arccosh": "acosh({0})",
    "arctanh": "atanh({0})",
}
for _n in ("sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh",
           "cosh", "tanh", "floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "copysign", "fabs"):
    _UFUNCS.setdefault(_n, _n + "({0}" + (", {1})" if _n == "copysign" else ")"))

_REDUCTIONS = {
    np.sum: ("sum", "a + b"),
    np.prod: ("prod", "a * b"),
    np.max: ("max", "max(a, b)"),
    np.amax: ("max", "max(a, b)"),
    np.min: ("min", "min(a, b)"),
    np.amin: ("min", "min(a, b)"),
}


def _text(v) -> str:
    if isinstance(v, _Expr):
        return v.text
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (int, float, complex, np.number)):
        return repr(v.item() if isinstance(v, np.generic) else v)
    raise TypeError(f"fuse: {type(v).__name__} values cannot be used in a fused function")


class _Reduced:
    def __init__(self, kind: str, expr: "_Expr", axis, keepdims: bool):
        self.kind, self.expr, self.axis, self.keepdims = kind, expr, axis, keepdims


class _Expr:
    """A traced value: the Python text that computes it in the generated kernel."""

    __array_priority__ = 1000

    def __init__(self, text: str):
        self.text = text

    def _bin(self, other, fmt):
        return _Expr(fmt.format(_text(self), _text(other)))

    def _rbin(self, other, fmt):
        return _Expr(fmt.format(_text(other), _text(self)))

    __add__ = lambda s, o: s._bin(o, "({0} + {1})")  # noqa: E731
    __radd__ = lambda s, o: s._rbin(o, "({0} + {1})")  # noqa: E731
    __sub__ = lambda s, o: s._bin(o, "({0} - {1})")  # noqa: E731
    __rsub__ = lambda s, o: s._rbin(o, "({0} - {1})")  # noqa: E731
    __mul__ = lambda s, o: s._bin(o, "({0} * {1})")  # noqa: E731
    __rmul__ = lambda s, o: s._rbin(o, "({0} * {1})")  # noqa: E731
    __truediv__ = lambda s, o: s._bin(o, "({0} / {1})")  # noqa: E731
    __rtruediv__ = lambda s, o: s._rbin(o, "({0} / {1})")  # noqa: E731
    __floordiv__ = lambda s, o: s._bin(o, "({0} // {1})")  # noqa: E731
    __rfloordiv__ = lambda s, o: s._rbin(o, "({0} // {1})")  # noqa: E731
    __mod__ = lambda s, o: s._bin(o, "({0} % {1})")  # noqa: E731
    __rmod__ = lambda s, o: s._rbin(o, "({0} % {1})")  # noqa: E731
    __pow__ = lambda s, o: s._bin(o, "({0} ** {1})")  # noqa: E731
    __rpow__ = lambda s, o: s._rbin(o, "({0} ** {1})")  # noqa: E731
    __and__ = lambda s, o: s._bin(o, "({0} & {1})")  # noqa: E731
    __rand__ = lambda s, o: s._rbin(o, "({0} & {1})")  # noqa: E731
    __or__ = lambda s, o: s._bin(o, "({0} | {1})")  # noqa: E731
    __ror__ = lambda s, o: s._rbin(o, "({0} | {1})")  # noqa: E731
    __xor__ = lambda s, o: s._bin(o, "({0} ^ {1})")  # noqa: E731
    __rxor__ = lambda s, o: s._rbin(o, "({0} ^ {1})")  # noqa: E731
    __lt__ = lambda s, o: s._bin(o, "({0} < {1})")  # noqa: E731
    __le__ = lambda s, o: s._bin(o, "({0} <= {1})")  # noqa: E731
    __gt__ = lambda s, o: s._bin(o, "({0} > {1})")  # noqa: E731
    __ge__ = lambda s, o: s._bin(o, "({0} >= {1})")  # noqa: E731
    __eq__ = lambda s, o: s._bin(o, "({0} == {1})")  # noqa: E731
    __ne__ = lambda s, o: s._bin(o, "({0} != {1})")  # noqa: E731
    __neg__ = lambda s: _Expr(f"(-{s.text})")  # noqa: E731
    __pos__ = lambda s: s  # noqa: E731
    __abs__ = lambda s: _Expr(f"abs({s.text})")  # noqa: E731
    __invert__ = lambda s: _Expr(f"(~{s.text})")  # noqa: E731
    __hash__ = None

    def __bool__(self):
        raise TypeError(
            "fuse: a traced array has no truth value (`if`, `and`, `or` on arrays); use np.where"
        )

    def __float__(self):
        raise TypeError("fuse: use NumPy's functions (np.sqrt, np.exp, ...) on arrays, not math's")

    __int__ = __float__

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            return NotImplemented
        fmt = _UFUNCS.get(ufunc.__name__)
        if fmt is None:
            raise TypeError(f"fuse: np.{ufunc.__name__} is not supported in a fused function")
        return _Expr(fmt.format(*[_text(x) for x in inputs]))

    def __array_function__(self, func, types, args, kwargs):
        if func is np.where:
            c, a, b = args
            return _Expr(f"({_text(a)} if {_text(c)} else {_text(b)})")
        if func in _REDUCTIONS:
            kind, _ = _REDUCTIONS[func]
            return _Reduced(kind, args[0], kwargs.get("axis"), bool(kwargs.get("keepdims", False)))
        raise TypeError(f"fuse: {func.__name__} is not supported in a fused function")

    def sum(self, axis=None, keepdims=False):
        return _Reduced("sum", self, axis, keepdims)

    def prod(self, axis=None, keepdims=False):
        return _Reduced("prod", self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return _Reduced("max", self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return _Reduced("min", self, axis, keepdims)


def _identity(kind: str, dt: np.dtype) -> str:
    if kind == "sum":
        return "0"
    if kind == "prod":
        return "1"
    big = kind == "min"
    if dt.kind == "f":
        return "inf" if big else "-inf"
    if dt.kind == "b":
        return "True" if big else "False"
    info = np.iinfo(dt)
    return str(info.max if big else info.min)


class _Fused:
    def __init__(self, fn, kernel_name):
        self._fn = fn
        self._name = kernel_name or fn.__name__
        self._kernels: Dict[Any, Any] = {}
        # The native fast path: argument signature -> the built kernel's native half.
        self._fast = _native.FuseDispatch()
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<pydevice.fuse {self._name}>"

    def _key(self, args):
        key = []
        for a in args:
            if hasattr(a, "dtype") and hasattr(a, "shape") and not isinstance(a, np.generic):
                dt = a.dtype
                name = _dtype_name(dt) if isinstance(dt, np.dtype) else str(dt).replace("torch.", "")
                key.append(("a", name, len(a.shape)))
            else:
                key.append(("s", type(a).__name__, _text(a)))
        return tuple(key)

    def _build(self, key, args):
        names = [f"x{i}" for i in range(len(args))]
        proxies = [_Expr(n) if k[0] == "a" else _Expr(k[2]) for n, k in zip(names, key)]
        traced = self._fn(*proxies)
        dummies = [np.ones((1,) * k[2], dtype=k[1]) if k[0] == "a" else a for k, a in zip(key, args)]
        result = self._fn(*dummies)
        in_params = ", ".join(f"{k[1]} {n}" for n, k in zip(names, key) if k[0] == "a")
        arrays = [i for i, k in enumerate(key) if k[0] == "a"]
        if isinstance(traced, _Reduced):
            out = _dtype_name(np.asarray(result).dtype)
            kern = ReductionKernel(
                in_params, f"{out} out0", _text(traced.expr), _REDUCTIONS_EXPR[traced.kind],
                "out0 = a", _identity(traced.kind, np.dtype(out)), self._name, out,
            )
            return ("r", kern, arrays, traced.axis, traced.keepdims)
        many = isinstance(traced, tuple)
        outs = traced if many else (traced,)
        res = result if many else (result,)
        out_params = ", ".join(f"{_dtype_name(np.asarray(r).dtype)} out{j}" for j, r in enumerate(res))
        body = "\n".join(f"out{j} = {_text(o)}" for j, o in enumerate(outs))
        return ("e", ElementwiseKernel(in_params, out_params, body, self._name), arrays, many)

    def __call__(self, *args):
        r = self._fast.call(args)
        if r is not NotImplemented:
            return r
        if not any(hasattr(a, "shape") and not isinstance(a, np.generic) for a in args):
            return self._fn(*args)
        key = self._key(args)
        built = self._kernels.get(key)
        if built is None:
            built = self._build(key, args)
            self._kernels[key] = built
        arrays = [args[i] for i in built[2]]
        if built[0] == "r":
            r = built[1](*arrays, axis=built[3], keepdims=built[4])
            self._fast.insert(args, built[1]._k, built[2], built[3], bool(built[4]))
            return r
        r = built[1](*arrays)
        self._fast.insert(args, built[1]._k, built[2])
        return r

    def source(self, *args) -> str:
        """The generated kernel for arguments like ``args`` (NumPy arrays stand for device
        arrays of their dtype and shape); no GPU needed."""
        key = self._key(args)
        built = self._build(key, args)
        arrays = [args[i] for i in built[2]]
        if built[0] == "r":
            return built[1].source(*arrays, axis=built[3], keepdims=built[4])
        return built[1].source(*arrays)

    def host_source(self, *args) -> str:
        """The generated host function a call on NumPy arrays like ``args`` runs."""
        key = self._key(args)
        built = self._build(key, args)
        arrays = [args[i] for i in built[2]]
        if built[0] == "r":
            return built[1].host_source(*arrays, axis=built[3], keepdims=built[4])
        return built[1].host_source(*arrays)


_REDUCTIONS_EXPR = {"sum": "a + b", "prod": "a * b", "max": "max(a, b)", "min": "min(a, b)"}


def fuse(*args, kernel_name=None):
    """``cupy.fuse``: ``@pydevice.fuse`` or ``@pydevice.fuse(kernel_name='k')``."""
    if len(args) == 1 and callable(args[0]):
        return _Fused(args[0], kernel_name)

    def deco(fn):
        return _Fused(fn, kernel_name)

    return deco
