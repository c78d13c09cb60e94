"""``pydevice.fuse``: CuPy's ``cupy.fuse`` over ``ElementwiseKernel``/``ReductionKernel``
(docs/semantics.md §20.5).

The decorated function is traced once per argument signature (each array's dtype and shape,
each scalar's type and value) on proxy values (``_V``) that record what they compute as Python
text over *leaves* (the argument arrays and the results of reductions) and know their NumPy
dtype and shape. Operators, NumPy ufuncs and routines (``np.where``, ``np.clip``, ...), array
methods (``.sum(axis=...)``, ``.astype``, ``.copy``), attributes (``.dtype``, ``.shape``,
``.ndim``), in-place operators, ``out=`` and whole-array assignment (``x[...] = v``) are
recorded; CuPy's own routines (``cupy.sum``, ``cupy.where``, ...) reach the same tracer through
CuPy's fusion hook, as they reach CuPy's tracer. Each operation is typed as NumPy types it
(``ufunc.resolve_dtypes``, Python numbers weak as in NEP 50), and its operands are converted
to the operation's loop dtype in the text, so the generated code computes in NumPy's types.

The trace becomes a *plan*, steps run in the order the function did them: a
``ReductionKernel`` per reduction (its ``map_expr`` is the elementwise work before it), a
view per basic subscript (no kernel), an ``ElementwiseKernel`` per write into an argument
(in-place operators, ``out=``, ``x[...] = v``; values still alive that read the memory
written are computed first, so that they keep NumPy's values), then one
``ElementwiseKernel`` per output shape for the returned values. On NumPy arrays the kernels
run on the host through Cranelift (docs/semantics.md §20.8); a call without arrays runs the
function as written. What it must not do: change a value's meaning from NumPy's (a dtype, an
order of writes) silently; whatever it cannot trace is a ``TypeError`` naming it.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import threading
import weakref
from typing import Any, Dict, List, Optional

import numpy as np

from . import _native
from ._kernels import ElementwiseKernel, ReductionKernel, _dtype_name

__all__ = ["fuse"]

try:  # NumPy 2
    from numpy.lib.array_utils import normalize_axis_tuple as _normalize_axis_tuple
except ImportError:  # pragma: no cover - NumPy 1.x
    from numpy.core.numeric import normalize_axis_tuple as _normalize_axis_tuple


# --- the ufuncs: NumPy's name -> the text over operands already in the loop dtype -----------

_BIN = {
    "add": "({0} + {1})", "subtract": "({0} - {1})", "multiply": "({0} * {1})",
    "true_divide": "({0} / {1})", "divide": "({0} / {1})", "floor_divide": "({0} // {1})",
    "remainder": "({0} % {1})", "mod": "({0} % {1})", "power": "({0} ** {1})",
    "maximum": "max({0}, {1})", "minimum": "min({0}, {1})",
    "fmax": "({1} if isnan({0}) else {0} if isnan({1}) else max({0}, {1}))",
    "fmin": "({1} if isnan({0}) else {0} if isnan({1}) else min({0}, {1}))",
    "bitwise_and": "({0} & {1})", "bitwise_or": "({0} | {1})", "bitwise_xor": "({0} ^ {1})",
    "left_shift": "({0} << {1})", "right_shift": "({0} >> {1})",
    "logical_and": "(bool({0}) and bool({1}))", "logical_or": "(bool({0}) or bool({1}))",
    "logical_xor": "(bool({0}) != bool({1}))",
    "arctan2": "atan2({0}, {1})", "hypot": "hypot({0}, {1})", "copysign": "copysign({0}, {1})",
}
_CMP = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
        "equal": "==", "not_equal": "!="}
_UN = {
    "negative": "(-{0})", "positive": "(+{0})", "absolute": "abs({0})", "fabs": "abs({0})",
    "square": "({0} * {0})", "invert": "(~{0})", "logical_not": "(not bool({0}))",
    "sqrt": "sqrt({0})", "exp": "exp({0})", "expm1": "expm1({0})", "exp2": "exp2({0})",
    "log": "log({0})", "log2": "log2({0})", "log10": "log10({0})", "log1p": "log1p({0})",
    "sin": "sin({0})", "cos": "cos({0})", "tan": "tan({0})", "arcsin": "asin({0})",
    "arccos": "acos({0})", "arctan": "atan({0})", "sinh": "sinh({0})", "cosh": "cosh({0})",
    "tanh": "tanh({0})", "arcsinh": "asinh({0})", "arccosh": "acosh({0})",
    "arctanh": "atanh({0})", "isnan": "isnan({0})", "isinf": "isinf({0})",
    "isfinite": "isfinite({0})", "conjugate": "{0}.conjugate()",
    "reciprocal": "(1 / {0})",
}
# The functions of complex operands, through `cmath` (imported by the kernel's preamble).
_CMATH = {
    "sqrt": "cmath.sqrt({0})", "exp": "cmath.exp({0})", "log": "cmath.log({0})",
    "sin": "cmath.sin({0})", "cos": "cmath.cos({0})",
    "tan": "(cmath.sin({0}) / cmath.cos({0}))",
    "log10": "(cmath.log({0}) / {R}(2.302585092994046))",
    "log2": "(cmath.log({0}) / {R}(0.6931471805599453))",
    "exp2": "cmath.exp({0} * {R}(0.6931471805599453))",
    "expm1": "(cmath.exp({0}) - 1)", "log1p": "cmath.log(1 + {0})",
    "sinh": "((cmath.exp({0}) - cmath.exp(-{0})) / 2)",
    "cosh": "((cmath.exp({0}) + cmath.exp(-{0})) / 2)",
    "tanh": "((cmath.exp({0}) - cmath.exp(-{0})) / (cmath.exp({0}) + cmath.exp(-{0})))",
    # The inverse functions by their logarithmic forms (principal branches).
    "arcsin": "(-1j * cmath.log(1j * {0} + cmath.sqrt(1 - {0} * {0})))",
    "arccos": "({R}(1.5707963267948966) + 1j * cmath.log(1j * {0} + cmath.sqrt(1 - {0} * {0})))",
    "arctan": "(0.5j * (cmath.log(1 - 1j * {0}) - cmath.log(1 + 1j * {0})))",
    "arcsinh": "cmath.log({0} + cmath.sqrt({0} * {0} + 1))",
    "arccosh": "cmath.log({0} + cmath.sqrt({0} + 1) * cmath.sqrt({0} - 1))",
    "arctanh": "(0.5 * (cmath.log(1 + {0}) - cmath.log(1 - {0})))",
    "isnan": "(isnan(({0}).real) or isnan(({0}).imag))",
    "isinf": "(isinf(({0}).real) or isinf(({0}).imag))",
    "isfinite": "(isfinite(({0}).real) and isfinite(({0}).imag))",
    "absolute": "abs({0})", "conjugate": "{0}.conjugate()", "negative": "(-{0})",
    "positive": "(+{0})", "square": "({0} * {0})", "reciprocal": "(1 / {0})",
}
_ALIASES = {"abs": "absolute", "conj": "conjugate", "bitwise_not": "invert",
            "mod": "remainder", "bitwise_left_shift": "left_shift",
            "bitwise_right_shift": "right_shift", "pow": "power"}

#: Reductions: name -> (reduce expression, identity kind).
_REDUCE = {"sum": "sum", "nansum": "sum", "prod": "prod", "nanprod": "prod", "max": "max",
           "amax": "max", "min": "min", "amin": "min", "all": "all", "any": "any",
           "mean": "mean"}


#: Device functions the generated bodies may call (NumPy's rounding has no `math` spelling
#: that keeps the float type): name -> (source, the helpers it calls).
_HELPERS = {
    "_ftrunc": ("""
@device.func
def _ftrunc(x):
    # Floats of this size are integers already (and infinities, NaN stay as they are).
    if not (abs(x) < 4503599627370496.0):
        return x
    return copysign(x - fmod(x, 1.0), x)
""", ()),
    "_ffloor": ("""
@device.func
def _ffloor(x):
    t = _ftrunc(x)
    if t > x:
        return t - 1.0
    return t
""", ("_ftrunc",)),
    "_fceil": ("""
@device.func
def _fceil(x):
    t = _ftrunc(x)
    if t < x:
        return t + 1.0
    return t
""", ("_ftrunc",)),
    "_frint": ("""
@device.func
def _frint(x):
    f = _ffloor(x)
    d = x - f
    r = f
    if d > 0.5:
        r = f + 1.0
    elif not (d < 0.5):
        if fmod(f, 2.0) != 0.0:
            r = f + 1.0
    return copysign(r, x)
""", ("_ffloor",)),
    "_fi0": ("""
@device.func
def _fi0(x):
    # The modified Bessel function I0: its power series sum((x/2)**2k / (k!)**2), summed
    # until a term no longer changes the sum.
    y = x * x * 0.25
    t = x * 0.0 + 1.0
    s = t
    k = 1
    while k < 1000 and t > s * 1e-17:
        t = t * y / (k * k)
        s = s + t
        k += 1
    return s
""", ()),
    "_ffrexp_m": ("""
@device.func
def _ffrexp_m(x):
    # frexp's mantissa in [0.5, 1) with x's sign, by exact halvings and doublings; zeros,
    # infinities and NaN are their own mantissa.
    if x == 0.0 or not isfinite(x):
        return x
    a = abs(x)
    while a >= 1.0:
        a = a * 0.5
    while a < 0.5:
        a = a * 2.0
    return copysign(a, x)
""", ()),
    "_ffrexp_e": ("""
@device.func
def _ffrexp_e(x):
    # frexp's exponent: x == mantissa * 2**exponent; 0 for zeros, infinities and NaN.
    e = 0
    if x == 0.0 or not isfinite(x):
        return e
    a = abs(x)
    while a >= 1.0:
        a = a * 0.5
        e += 1
    while a < 0.5:
        a = a * 2.0
        e -= 1
    return e
""", ()),
    "_fnext": ("""
@device.func
def _fnext(x, y, p, tiny, big):
    # nextafter in a format of p significant bits whose smallest subnormal is tiny and
    # largest finite number big, computed exactly in float64 (x, y are float64 values of
    # that format).
    if isnan(x) or isnan(y):
        return x + y
    if x == y:
        return y
    if x == 0.0:
        return copysign(tiny, y)
    if isinf(x):
        return copysign(big, x)
    e = _ffrexp_e(x)
    k = e - p
    if (y > x) != (x > 0.0) and abs(_ffrexp_m(x)) == 0.5:
        # Toward zero from a power of two: the spacing below is half the spacing above.
        k = k - 1
    d = float64(2.0) ** float64(k)
    if d < tiny:
        d = tiny
    if y > x:
        return x + d
    return x - d
""", ("_ffrexp_m", "_ffrexp_e")),
}
_HELPER_CALL = re.compile(r"\b(_ftrunc|_ffloor|_fceil|_frint|_fi0|_ffrexp_m|_ffrexp_e|_fnext)\(")


def _preamble(texts) -> str:
    """The helpers (`_HELPERS`) the texts call, with those they call."""
    need, todo = [], [m.group(1) for t in texts for m in _HELPER_CALL.finditer(t)]
    while todo:
        n = todo.pop()
        if n not in need:
            need.append(n)
            todo.extend(_HELPERS[n][1])
    order = ["_ftrunc", "_ffloor", "_fceil", "_frint", "_fi0", "_ffrexp_m", "_ffrexp_e", "_fnext"]
    imports = "import cmath\n" if any("cmath." in t for t in texts) else ""
    return imports + "".join(_HELPERS[n][0] for n in order if n in need)


#: Float functions of one operand: name -> text over the operand (already in a float type
#: that is not float16: float16 is computed in float32, as NumPy computes it).
_FLOAT_UN = {
    "trunc": "_ftrunc({0})", "fix": "_ftrunc({0})", "floor": "_ffloor({0})",
    "ceil": "_fceil({0})", "rint": "_frint({0})", "cbrt": "cbrt({0})",
    "deg2rad": "({0} * {T}(0.017453292519943295))", "radians": "({0} * {T}(0.017453292519943295))",
    "rad2deg": "({0} * {T}(57.29577951308232))", "degrees": "({0} * {T}(57.29577951308232))",
    "signbit": "(copysign({T}(1), {0}) < {T}(0))",
}
_FLOAT_BIN = {
    "logaddexp": ("(max({0}, {1}) + log1p(exp(-abs({0} - {1}))) if {0} != {1} "
                  "else {0} + {T}(0.6931471805599453))"),
    "logaddexp2": ("(max({0}, {1}) + log1p(exp2(-abs({0} - {1}))) * {T}(1.4426950408889634) "
                   "if {0} != {1} else {0} + {T}(1))"),
    "ldexp": "({0} * {T}(2) ** {T}({1}))",
    "fmod": "fmod({0}, {1})",
}


def _is_complex(dt) -> bool:
    return dt is not None and np.dtype(dt).kind == "c"


def _lit(v) -> str:
    """A Python number as a literal of the dialect."""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "(-inf)"
        return repr(f)
    if isinstance(v, (complex, np.complexfloating)):
        c = complex(v)
        return f"complex({_lit(c.real)}, {_lit(c.imag)})" if not (
            math.isfinite(c.real) and math.isfinite(c.imag)) else repr(c)
    raise TypeError(f"fuse: {type(v).__name__} values cannot be used in a fused function")


class _Trace:
    """What one trace records: the leaves (arguments, reduction results, views, computed
    values), their dtypes and shapes, and the steps of the plan in order."""

    def __init__(self):
        # name -> ("arg", argument index) | ("tmp", step) | ("view", step)
        self.leaves: Dict[str, tuple] = {}
        self.dtypes: Dict[str, np.dtype] = {}
        self.shapes: Dict[str, tuple] = {}
        # ("r", kernel, input leaves, axis, keepdims, name): a reduction into leaf `name`;
        # ("v", leaf, shape or None, index, name): the view `broadcast_to(leaf, shape)[index]`;
        # ("e", kernel, input leaves, name): a value computed into the new leaf `name`;
        # ("w", kernel, input leaves, leaf): a value written into the argument `leaf`.
        self.steps: List[tuple] = []
        # Leaf -> the argument leaves whose memory it may share (arguments that overlap,
        # views of them); a write to one is seen through the others.
        self.memory: Dict[str, frozenset] = {}
        # The traced values made so far (weak references): those still alive when an argument
        # is written are computed first if they read its memory.
        self.values: List[Any] = []
        self.name = "fused"
        self.cls = None  # the class of traced values (`_V`, or `_CupyV` on CuPy arrays)


class _Traces(threading.local):
    """The traces under way in this thread (a fused function traced inside another's trace
    is inlined into it)."""

    def __init__(self):
        self.stack: List[_Trace] = []


_TRACES = _Traces()


def _trace() -> _Trace:
    return _TRACES.stack[-1]


class _V:
    """A traced value: the text computing it over the leaves, its dtype and shape. A Python
    number is a `_V` with `weak` set (its type is decided by the other operand, NEP 50)."""

    __array_priority__ = 1000
    __hash__ = None

    def __new__(cls, *args, **kwargs):
        # On CuPy arrays, traced values are also CuPy's fusion proxies, so that
        # `cupy.get_array_module(x)` says CuPy in the traced function as in CuPy's fuse.
        stack = _TRACES.stack
        if cls is _V and stack and stack[-1].cls is not None:
            cls = stack[-1].cls
        return object.__new__(cls)

    def __repr__(self):
        return f"<fused value {self.text} dtype={self.dtype} shape={self.shape}>"

    def __init__(self, text: str, dtype, shape, leaves=(), weak=None, leaf: Optional[str] = None):
        self.text = text
        self._dtype = None if dtype is None else np.dtype(dtype)
        self._shape = tuple(shape)
        self.leaves = tuple(leaves)
        self.weak = weak  # the Python type of a weak number, else None
        self.leaf = leaf  # the argument leaf this proxy stands for (in-place assignment)
        stack = _TRACES.stack
        if stack and leaves:
            stack[-1].values.append(weakref.ref(self))

    # -- attributes
    @property
    def dtype(self):
        if self._dtype is None:
            return np.result_type(self.weak(0))
        return self._dtype

    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        return int(np.prod(self._shape, dtype=np.int64))

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of unsized object")
        return self._shape[0]

    @property
    def real(self):
        if not _is_complex(self.dtype):
            return self
        return _V(f"({self.text}).real", np.empty((), self.dtype).real.dtype, self._shape, self.leaves)

    @property
    def imag(self):
        if not _is_complex(self.dtype):
            return _apply("multiply", [self, 0])
        return _V(f"({self.text}).imag", np.empty((), self.dtype).imag.dtype, self._shape, self.leaves)

    @property
    def T(self):
        if self.ndim > 1:
            raise TypeError("fuse: transposing a traced array is not supported")
        return self

    def __bool__(self):
        raise TypeError("fuse: a traced array cannot be converted to a Python scalar (`if`, "
                        "`and`, `or` on arrays); use np.where")

    def __float__(self):
        raise TypeError("fuse: a traced array cannot be converted to a Python scalar; use "
                        "NumPy's functions (np.sqrt, np.exp, ...) on arrays, not math's")

    __int__ = __float__
    __complex__ = __float__
    __index__ = __float__

    def __iter__(self):
        raise TypeError("fuse: iterating over a traced array is not supported")

    # -- NumPy's protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "reduce" and ufunc.__name__ in ("add", "multiply", "maximum", "minimum",
                                                     "logical_and", "logical_or"):
            kind = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                    "logical_and": "all", "logical_or": "any"}[ufunc.__name__]
            return _reduce(kind, inputs[0], **kwargs)
        if method != "__call__":
            raise TypeError(f"fuse: np.{ufunc.__name__}.{method} is not supported in a fused function")
        return _ufunc_call(ufunc.__name__, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        f = _FUNCTIONS.get(func.__name__)
        if f is None:
            raise TypeError(f"fuse: numpy.{func.__name__} is not supported in a fused function")
        return f(*args, **kwargs)

    # -- methods
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return _astype(self, np.dtype(dtype))

    def copy(self, order="K"):
        # A copy is a computed value (parenthesized: not a leaf's name), so that it keeps
        # its values when the array is written later.
        return _V(f"({self.text})", self.dtype, self._shape, self.leaves)

    def conj(self):
        return _apply("conjugate", [self])

    conjugate = conj

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return _reduce("sum", self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return _reduce("prod", self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return _reduce("max", self, axis=axis, out=out, keepdims=keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return _reduce("min", self, axis=axis, out=out, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        return _reduce("all", self, axis=axis, out=out, keepdims=keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        return _reduce("any", self, axis=axis, out=out, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return _reduce("mean", self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def clip(self, a_min=None, a_max=None, out=None):
        return _clip(self, a_min, a_max, out=out)

    # -- subscripts: basic indexing (integers, slices, `...`, `None`) makes views
    def __getitem__(self, index):
        if _whole(index):
            return self
        return _view(self, index)

    def __setitem__(self, index, value):
        if not _whole(index):
            raise TypeError("fuse: only whole-array assignment (`x[...] = v`, `x[:] = v`) is "
                            "supported on traced arrays")
        _assign(self, _as_v(value), "unsafe")


def _basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer))
               and not isinstance(i, bool) for i in items)


def _view(v: "_V", index) -> "_V":
    """`v[index]` for a basic index: each leaf of `v`, broadcast to `v`'s shape, is viewed
    with `index` when the plan runs (no kernel), and the text reads the views."""
    v = _as_v(v)
    if v.weak is not None or not v.leaves:
        raise TypeError("fuse: a number cannot be indexed")
    if not _basic(index):
        raise TypeError("fuse: only basic subscripts (integers, slices, `...`, `None`) are "
                        "supported on traced arrays")
    # The shape (and NumPy's IndexError) from a stand-in of no memory.
    shape = np.broadcast_to(np.empty((), np.int8), v.shape)[index].shape
    tr = _trace()
    text = v.text
    names = {}
    for leaf in v.leaves:
        leaf_shape = tr.shapes[leaf]
        name = f"v{len(tr.leaves)}"
        tr.steps.append(("v", leaf, None if leaf_shape == v.shape else v.shape, index, name))
        tr.leaves[name] = ("view", len(tr.steps) - 1)
        tr.dtypes[name] = tr.dtypes[leaf]
        tr.shapes[name] = shape
        tr.memory[name] = tr.memory.get(leaf, frozenset())
        names[leaf] = name
    text = re.sub(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b", lambda m: names[m.group(1)], text)
    return _V(text, v.dtype, shape, tuple(names[n] for n in v.leaves))


def _whole(index) -> bool:
    if index is Ellipsis:
        return True
    if isinstance(index, slice) and index == slice(None):
        return True
    if isinstance(index, tuple) and len(index) == 1:
        return _whole(index[0])
    return False


def _op(name, rev=False):
    if rev:
        return lambda s, o: _ufunc_call(name, (o, s), {})
    return lambda s, o: _ufunc_call(name, (s, o), {})


def _iop(name):
    def f(self, other):
        if self.leaf is None and not self.leaves:
            # A number (no array behind it) is rebound, as in Python.
            return _ufunc_call(name, (self, other), {})
        _ufunc_call(name, (self, other), {"out": (self,)})
        return self
    return f


for _m, _n in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
               ("truediv", "true_divide"), ("floordiv", "floor_divide"), ("mod", "remainder"),
               ("pow", "power"), ("and", "bitwise_and"), ("or", "bitwise_or"),
               ("xor", "bitwise_xor"), ("lshift", "left_shift"), ("rshift", "right_shift")]:
    setattr(_V, f"__{_m}__", _op(_n))
    setattr(_V, f"__r{_m}__", _op(_n, True))
    setattr(_V, f"__i{_m}__", _iop(_n))
for _m, _n in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
               ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")]:
    setattr(_V, f"__{_m}__", _op(_n))
_V.__neg__ = lambda s: _apply("negative", [s])
_V.__pos__ = lambda s: _apply("positive", [s])
_V.__abs__ = lambda s: _apply("absolute", [s])
_V.__invert__ = lambda s: _apply("invert", [s])
_V.__divmod__ = lambda s, o: (_apply("floor_divide", [s, o]), _apply("remainder", [s, o]))
_V.__rdivmod__ = lambda s, o: (_apply("floor_divide", [o, s]), _apply("remainder", [o, s]))


def _as_v(x) -> _V:
    if isinstance(x, _V):
        return x
    if isinstance(x, np.generic):
        # A typed scalar: its type is strong, as NumPy's.
        return _V(f"{_dtype_name(x.dtype)}({_lit(x.item())})", x.dtype, ())
    if isinstance(x, bool):
        # Python's bool is NumPy's bool (NEP 50 makes only int, float and complex weak).
        return _V(_lit(x), np.bool_, ())
    if isinstance(x, (int, float, complex)):
        return _V(_lit(x), None, (), weak=type(x))
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return _as_v(x[()])
    raise TypeError(f"fuse: {type(x).__module__}.{type(x).__qualname__} values cannot be used in a "
                    "fused function")


def _resolve(ufunc, ins: List[_V], nout: int):
    """The loop dtypes of `ufunc` for `ins`, NumPy's (weak Python numbers as NEP 50)."""
    key = tuple(v.weak if v.weak is not None else v.dtype for v in ins) + (None,) * nout
    try:
        return ufunc.resolve_dtypes(key)
    except (TypeError, ValueError) as e:
        if all(v.weak is not None for v in ins):
            # Two Python numbers: NumPy's defaults.
            r = ufunc(*[v.weak(1) for v in ins])
            rs = r if isinstance(r, tuple) else (r,)
            dts = [np.result_type(*[v.weak(1) for v in ins])] * len(ins)
            return tuple(dts) + tuple(np.asarray(x).dtype for x in rs)
        raise TypeError(str(e)) from None


def _cast(v: _V, dt: np.dtype) -> str:
    """`v`'s text converted to `dt` (unchanged when it already has that dtype). A Python int
    out of the range of an integer `dt` is NumPy's OverflowError (NEP 50)."""
    if v.weak is None and v.dtype == dt:
        return v.text
    if v.weak is int and dt.kind in "iu":
        info, value = np.iinfo(dt), int(v.text.strip("()"))
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dt}")
    if v.weak is not None and dt.kind != "c":
        return f"{_dtype_name(dt)}({v.text})"
    if _is_complex(v.dtype if v.weak is None else None) and dt.kind != "c":
        return f"{_dtype_name(dt)}(({v.text}).real)"
    return f"{_dtype_name(dt)}({v.text})"


def _shape_of(ins: List[_V]):
    shapes = [v.shape for v in ins]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        # NumPy's message for a ufunc's operands.
        text = " ".join("(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ")" for s in shapes)
        raise ValueError(f"operands could not be broadcast together with shapes {text}") from None


def _leaves(ins: List[_V]):
    out = []
    for v in ins:
        for n in v.leaves:
            if n not in out:
                out.append(n)
    return tuple(out)


def _complex_cmp(op: str, a: str, b: str) -> str:
    """NumPy's order of complex numbers: by real part, then imaginary part."""
    if op in ("==", "!="):
        return f"({a} {op} {b})"
    strict = op[0]
    return (f"(({a}).real {strict} ({b}).real or (({a}).real == ({b}).real and "
            f"({a}).imag {op} ({b}).imag))")


def _apply(name: str, inputs, out=None):
    name = _ALIASES.get(name, name)
    if name in ("fix", "around", "round"):
        return _round(name, inputs, out)
    if name == "angle":
        return _angle(*inputs)
    if name == "sinc":
        return _sinc(*inputs)
    if name == "i0":
        return _i0(*inputs)
    ufunc = getattr(np, name, None)
    if not isinstance(ufunc, np.ufunc) or not (name in _BIN or name in _CMP or name in _UN
                                               or name in _FLOAT_UN or name in _FLOAT_BIN
                                               or name in ("sign", "modf", "reciprocal", "frexp",
                                                           "nextafter")):
        raise TypeError(f"fuse: the ufunc {name} is not supported in a fused function")
    ins = [_as_v(x) for x in inputs]
    if len(ins) != ufunc.nin:
        raise TypeError(f"fuse: {name} takes {ufunc.nin} arguments, {len(ins)} were given")
    dts = _resolve(ufunc, ins, ufunc.nout)
    loop, res = dts[: ufunc.nin], dts[ufunc.nin]
    if name == "nextafter":
        if loop[0].kind != "f":
            raise TypeError(f"fuse: nextafter of {loop[0]} is not supported in a fused function")
        fi = np.finfo(loop[0])
        a, b = (_cast(v, np.dtype(np.float64)) for v in ins)
        text = (f"{_dtype_name(res)}(_fnext({a}, {b}, {fi.nmant + 1}, "
                f"float64({float(fi.smallest_subnormal)!r}), float64({float(fi.max)!r})))")
        return _out(_V(text, res, _shape_of(ins), _leaves(ins)), out, name)
    if name in _FLOAT_UN or name in _FLOAT_BIN or name in ("modf", "frexp"):
        if loop[0].kind == "c":
            raise TypeError(f"fuse: {name} of complex numbers is not supported in a fused function")
        if loop[0].kind in "iub":
            # Integer rounding keeps the integer (NumPy 2's loops for ints).
            if name in ("trunc", "floor", "ceil", "rint", "fix") and loop[0] == res:
                r = _V(_cast(ins[0], loop[0]), res, ins[0].shape, ins[0].leaves)
                return _out(r, out, name)
        # float16 is computed in float32 and rounded once.
        work = [np.dtype(np.float32) if d == np.float16 else d for d in loop]
        ops = [_cast(v, d) for v, d in zip(ins, work)]
        tname = _dtype_name(work[0])
        shape, leaves = _shape_of(ins), _leaves(ins)
        if name == "frexp":
            return (_V(f"{_dtype_name(res)}(_ffrexp_m({ops[0]}))", res, shape, leaves),
                    _V(f"int32(_ffrexp_e({ops[0]}))", dts[-1], shape, leaves))
        if name == "modf":
            t = f"_ftrunc({ops[0]})"
            frac = f"(copysign({tname}(0), {ops[0]}) if isinf({ops[0]}) else ({ops[0]} - {t}))"
            return (_V(f"{_dtype_name(res)}({frac})", res, shape, leaves),
                    _V(f"{_dtype_name(dts[-1])}({t})", dts[-1], shape, leaves))
        tpl = _FLOAT_UN.get(name) or _FLOAT_BIN[name]
        text = tpl.format(*ops, T=tname)
        return _out(_V(f"{_dtype_name(res)}({text})", res, shape, leaves), out, name)
    ops = [_cast(v, d) for v, d in zip(ins, loop)]
    tn = _dtype_name(res)
    if name == "sign":
        if loop[0].kind == "c":
            raise TypeError("fuse: sign of complex numbers is not supported")
        o = ops[0]
        if loop[0].kind == "u":
            text = f"{tn}({o} > 0)"
        elif loop[0].kind in "ib":
            text = f"({tn}({o} > 0) - {tn}({o} < 0))"
        else:
            text = f"({tn}(1) if {o} > 0 else ({tn}(-1) if {o} < 0 else {o}))"
        return _out(_V(text, res, _shape_of(ins), _leaves(ins)), out, name)
    if name == "reciprocal":
        text = (f"{tn}(1 / {ops[0]})" if loop[0].kind in "iu" else f"({tn}(1) / {ops[0]})"
                if loop[0].kind != "b" else f"{tn}(1 / {tn}({ops[0]}))")
        return _out(_V(text, res, _shape_of(ins), _leaves(ins)), out, name)
    if name in _CMP:
        text = (_complex_cmp(_CMP[name], *ops) if loop[0].kind == "c"
                else f"({ops[0]} {_CMP[name]} {ops[1]})")
    elif loop[0].kind == "b" and name in ("add", "multiply", "maximum", "minimum"):
        text = f"({ops[0]} {'|' if name in ('add', 'maximum') else '&'} {ops[1]})"
    elif loop[0].kind == "c" and name in ("maximum", "minimum"):
        c = _complex_cmp(">=" if name == "maximum" else "<=", ops[0], ops[1])
        text = f"({ops[0]} if {c} else {ops[1]})"
    elif loop[0].kind == "c" and name in _UN:
        if name not in _CMATH:
            raise TypeError(f"fuse: {name} of complex numbers is not supported in a fused function")
        part = _dtype_name(np.empty((), loop[0]).real.dtype)
        text = _CMATH[name].format(*ops, R=part)
    elif name == "absolute" and loop[0].kind == "b":
        text = ops[0]
    elif loop[0] == np.float16 and (name in _UN and _UN[name][0].isalpha() or name in (
            "arctan2", "hypot", "copysign", "fmax", "fmin")):
        # float16 functions are computed in float32 and rounded once, as NumPy's are.
        ops32 = [f"float32({o})" for o in ops]
        text = f"float16({(_BIN.get(name) or _UN[name]).format(*ops32)})"
    else:
        text = (_BIN.get(name) or _UN[name]).format(*ops)
    r = _V(text, res, _shape_of(ins), _leaves(ins))
    return _out(r, out, name)


def _out(r: "_V", out, name: str):
    """`r`, or `r` assigned to `out=` (returned) as NumPy's ufuncs do."""
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        if len(outs) != 1:
            raise TypeError(f"fuse: {name} has one output, {len(outs)} were given")
        target = outs[0]
        if not isinstance(target, _V):
            raise TypeError("fuse: `out=` must be an argument of the fused function")
        r._internal = True  # never seen by the function: not computed before the write
        _assign(target, r, "same_kind", ufunc_name=name)
        return target
    return r


def _round(name, inputs, out=None):
    """`around`/`round(x, decimals)` (NumPy: `rint(x * 10**d) / 10**d`) and `fix`."""
    x = _as_v(inputs[0])
    if name == "fix":
        return _apply("trunc", [x], out)
    decimals = inputs[1] if len(inputs) > 1 else 0
    if isinstance(decimals, _V):
        if decimals.weak is None or decimals.leaves:
            raise TypeError("fuse: round's `decimals` must be a Python int")
        decimals = int(decimals.text.strip("()"))
    if x.dtype.kind in "iu":
        if decimals >= 0:
            return _out(x.copy(), out, name)
        raise TypeError("fuse: rounding integers to negative decimals is not supported")
    if x.dtype.kind == "c":
        raise TypeError("fuse: rounding complex numbers is not supported")
    if decimals == 0:
        return _apply("rint", [x], out)
    scale = 10.0 ** decimals
    factor = np.dtype(x.dtype).type(scale)
    scaled = _apply("rint", [_apply("multiply", [x, factor])])
    return _out(_apply("true_divide", [scaled, factor]), out, name)


def _sinc(x):
    """`sinc(x)`: `sin(pi x) / (pi x)`, 1 at 0."""
    v = _as_v(x)
    with np.errstate(all="ignore"):
        res = np.sinc(np.ones((), v.dtype)).dtype
    if res.kind == "c":
        raise TypeError("fuse: sinc of complex numbers is not supported in a fused function")
    work = np.dtype(np.float32) if res == np.float16 else res
    tn, t = _dtype_name(work), _cast(v, work)
    text = f"{_dtype_name(res)}({tn}(1) if {t} == 0 else sin({tn}(3.141592653589793) * {t}) / ({tn}(3.141592653589793) * {t}))"
    return _V(text, res, v.shape, v.leaves)


def _i0(x):
    """`i0(x)`, the modified Bessel function of order 0 (NumPy's result type; float16 and
    float32 are summed in float64 and rounded once)."""
    v = _as_v(x)
    with np.errstate(all="ignore"):
        res = np.i0(np.ones((1,), v.dtype)).dtype
    if res.kind == "c" or v.dtype.kind == "c":
        raise TypeError("fuse: i0 of complex numbers is not supported in a fused function")
    return _V(f"{_dtype_name(res)}(_fi0({_cast(v, np.dtype(np.float64))}))", res, v.shape, v.leaves)


def _angle(z, deg=False):
    """`angle(z)`: the argument of complex numbers, 0 or pi of real ones."""
    v = _as_v(z)
    with np.errstate(all="ignore"):
        res = np.angle(np.ones((), v.dtype)).dtype
    tn = _dtype_name(res)
    if v.dtype.kind == "c":
        text = f"{tn}(atan2(({v.text}).imag, ({v.text}).real))"
    else:
        text = f"{tn}(atan2({tn}(0), {tn}({v.text})))"
    r = _V(text, res, v.shape, v.leaves)
    return _apply("multiply", [r, 180 / math.pi]) if deg else r


def _ufunc_call(name, inputs, kwargs):
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    dtype = kwargs.pop("dtype", None)
    casting = kwargs.pop("casting", "same_kind")
    if kwargs:
        raise TypeError(f"fuse: {name}: keyword arguments {sorted(kwargs)} are not supported")
    if isinstance(out, tuple) and all(o is None for o in out):
        out = None
    if dtype is not None:
        dt = np.dtype(dtype)
        inputs = [_astype(_as_v(x), dt) if _as_v(x).weak is None else x for x in inputs]
    del casting
    if name == "divmod":
        r = (_apply("floor_divide", inputs), _apply("remainder", inputs))
        return r
    return _apply(name, inputs, out=out)



def _astype(v: _V, dt: np.dtype) -> _V:
    v = _as_v(v)
    if v.weak is None and v.dtype == dt:
        return _V(f"({v.text})", dt, v.shape, v.leaves)
    if v.weak is None and v.dtype.kind == "c" and dt.kind != "c":
        text = f"{_dtype_name(dt)}(({v.text}).real)" if dt.kind != "b" else f"({v.text} != 0)"
    elif dt.kind == "b":
        text = f"bool({v.text})"
    else:
        text = f"{_dtype_name(dt)}({v.text})"
    return _V(text, dt, v.shape, v.leaves)


def _assign(target: _V, value: _V, casting: str, ufunc_name: Optional[str] = None) -> None:
    """`target[...] = value` (or a ufunc's `out=target`): NumPy's casting rule and
    broadcasting. An argument is written by a kernel at this point of the plan; a traced
    value that is not an argument takes the new value's text."""
    value = _as_v(value)
    if value.weak is None and not np.can_cast(value.dtype, target.dtype, casting):
        what = f"ufunc '{ufunc_name}' output" if ufunc_name else "array"
        raise TypeError(f"Cannot cast {what} from {value.dtype!r} to {target.dtype!r} with "
                        f"casting rule '{casting}'")
    if np.broadcast_shapes(value.shape, target.shape) != target.shape:
        raise ValueError(f"non-broadcastable output operand with shape {target.shape} doesn't "
                         f"match the broadcast shape {np.broadcast_shapes(value.shape, target.shape)}")
    if target.leaf is None:
        new = _astype(value, target.dtype)
        target.text, target.leaves = new.text, new.leaves
        return
    tr = _trace()
    leaf = target.leaf
    # Values computed from the memory about to be written, and still alive, are computed
    # now (views and the arguments themselves read the memory, as in NumPy).
    hit = tr.memory[leaf]
    for ref in tr.values:
        v = ref()
        if v is None or v is target or v.text in tr.leaves or getattr(v, "_internal", False):
            continue
        if any(tr.memory.get(n, frozenset()) & hit for n in v.leaves):
            _materialize(tr, v)
    new = _astype(value, target.dtype)
    if new.text == f"({leaf})":
        return
    # A value that reads no array (`x[:] = nan`) takes the target's shape from the target.
    ins = new.leaves or (leaf,)
    kern = _elementwise(tr, ins, [("o", new)], f"w{len(tr.steps)}", [target.dtype])
    tr.steps.append(("w", kern, ins, leaf))
    target.text, target.leaves = leaf, (leaf,)


def _materialize(tr: "_Trace", v: "_V") -> None:
    """Computes `v` into a new leaf at this point of the plan."""
    name = f"e{len(tr.leaves)}"
    kern = _elementwise(tr, v.leaves, [("o", v)], name, [v.dtype])
    tr.steps.append(("e", kern, v.leaves, name))
    tr.leaves[name] = ("tmp", len(tr.steps) - 1)
    tr.dtypes[name] = v.dtype
    tr.shapes[name] = v.shape
    v.text, v.leaves = name, (name,)


def _elementwise(tr: "_Trace", ins, outs, suffix, out_dtypes) -> ElementwiseKernel:
    """The ElementwiseKernel computing `outs` ((name, value) pairs) from the leaves `ins`."""
    if not ins:
        raise TypeError("fuse: an output that reads no array is not supported")
    in_params = ", ".join(f"{_dtype_name(tr.dtypes[n])} {n}" for n in ins)
    out_params = ", ".join(f"{_dtype_name(d)} {n}" for (n, _), d in zip(outs, out_dtypes))
    body = "\n".join(f"{n} = {v.text if v.weak is None and v.dtype == d else _astype(v, d).text}"
                     for (n, v), d in zip(outs, out_dtypes))
    return ElementwiseKernel(in_params, out_params, body, f"{tr.name}" + (f"_{suffix}" if suffix else ""),
                             preamble_python=_preamble([body]))


def _where(condition, x=None, y=None):
    if x is None or y is None:
        raise TypeError("fuse: where(condition) without x and y is not supported")
    c, a, b = _as_v(condition), _as_v(x), _as_v(y)
    dt = np.result_type(*[v.weak(0) if v.weak is not None else v.dtype for v in (a, b)])
    ct = c.text if c.weak is None and c.dtype.kind == "b" else f"bool({c.text})"
    return _V(f"({_cast(a, dt)} if {ct} else {_cast(b, dt)})", dt, _shape_of([c, a, b]),
              _leaves([c, a, b]))


def _clip(a, a_min=None, a_max=None, out=None, **kwargs):
    v = _as_v(a)
    if a_min is not None:
        v = _apply("maximum", [v, a_min])
    if a_max is not None:
        v = _apply("minimum", [v, a_max])
    if out is not None:
        _assign(out, v, "same_kind", "clip")
        return out
    return v


def _reduce(kind: str, a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    if kwargs.get("initial") is not None or kwargs.get("where") not in (None, True):
        raise TypeError(f"fuse: {kind}: `initial=` and `where=` are not supported")
    v = _as_v(a)
    op = _REDUCE[kind]
    if (_HELPER_CALL.search(v.text) or "cmath." in v.text) and v.leaves:
        # ReductionKernel has no device functions of its own: compute the value first.
        v = _V(v.text, v.dtype, v.shape, v.leaves)
        _materialize(_trace(), v)
    if isinstance(axis, list):
        axis = tuple(axis)
    axes = tuple(range(v.ndim)) if axis is None else _normalize_axis_tuple(axis, v.ndim)
    sample = np.ones((1,) * v.ndim, v.dtype)
    fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "all": np.all,
          "any": np.any, "mean": np.mean}[op]
    kw = {"dtype": dtype} if dtype is not None and op in ("sum", "prod", "mean") else {}
    with np.errstate(all="ignore"):
        res = np.asarray(fn(sample, axis=axis, keepdims=keepdims, **kw)).dtype
    shape = tuple(1 if i in axes else n for i, n in enumerate(v.shape) if keepdims or i not in axes)
    count = int(np.prod([v.shape[i] for i in axes], dtype=np.int64))
    if count == 0 and op in ("max", "min") and int(np.prod(shape, dtype=np.int64)) > 0:
        raise ValueError(f"zero-size array to reduction operation {'maximum' if op == 'max' else 'minimum'} "
                         "which has no identity")
    # float16 sums and means accumulate in float32 (rounded once when stored), as NumPy's do.
    acc = np.dtype(np.float32) if res == np.float16 and op in ("sum", "mean") else res
    x = v
    if kind in ("nansum", "nanprod") and v.dtype.kind in "fc":
        x = _V(f"({'0' if kind == 'nansum' else '1'} if isnan({v.text}) else {v.text})", v.dtype,
               v.shape, v.leaves)
    if op in ("all", "any"):
        m = f"({x.text} != 0)" if x.dtype.kind == "c" else f"bool({x.text})"
    else:
        m = _cast(x, acc)
    post = "t = a"
    if op == "sum" or op == "mean":
        red, ident = "a + b", "0"
        if op == "mean":
            post = f"t = a / {_dtype_name(acc)}({count})"
    elif op == "prod":
        red, ident = "a * b", "1"
    elif op == "all":
        red, ident = "a and b", "True"
    elif op == "any":
        red, ident = "a or b", "False"
    else:
        big = op == "min"
        if acc.kind == "b":
            red, ident = ("a and b", "True") if big else ("a or b", "False")
        elif acc.kind == "c":
            red = f"(a if {_complex_cmp('<=' if big else '>=', 'a', 'b')} else b)"
            ident = f"{_dtype_name(acc)}({'inf' if big else '(-inf)'}, {'inf' if big else '(-inf)'})"
        else:
            red = "min(a, b)" if big else "max(a, b)"
            if acc.kind == "f":
                ident = "inf" if big else "(-inf)"
            else:
                info = np.iinfo(acc)
                if big and acc.kind == "u":
                    ident = f"(~{_dtype_name(acc)}(0))"
                elif not big and acc == np.int64:
                    ident = "(-9223372036854775807 - 1)"
                else:
                    ident = f"{_dtype_name(acc)}({info.max if big else info.min})"
    tr = _trace()
    name = f"t{len(tr.leaves)}"
    ins = list(v.leaves)
    in_params = ", ".join(f"{_dtype_name(tr.dtypes[n])} {n}" for n in ins)
    kern = ReductionKernel(in_params, f"{_dtype_name(res)} t", m, red, post, ident,
                           f"{tr.name}_{name}", _dtype_name(acc))
    tr.steps.append(("r", kern, ins, None if axis is None else axes, bool(keepdims), name))
    tr.leaves[name] = ("tmp", len(tr.steps) - 1)
    tr.dtypes[name] = res
    tr.shapes[name] = shape
    r = _V(name, res, shape, (name,))
    if out is not None:
        if not isinstance(out, _V):
            raise TypeError("fuse: `out=` must be an argument of the fused function")
        _assign(out, r, "unsafe")
        return out
    return r


def _reduction(kind: str, with_dtype: bool):
    """NumPy's reduction function `kind` (`np.sum(a, axis, dtype, out, keepdims)`, or
    without `dtype` for max, min, all, any)."""
    if with_dtype:
        def f(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
            return _reduce(kind, a, axis, dtype, out, keepdims, **kwargs)
    else:
        def f(a, axis=None, out=None, keepdims=False, **kwargs):
            return _reduce(kind, a, axis, None, out, keepdims, **kwargs)
    return f


def _copyto(dst, src, casting="same_kind", where=True):
    _assign(dst, _as_v(src) if where is True else _where(where, src, dst), casting)


#: NumPy's functions on traced values (through `__array_function__`), by name.
_FUNCTIONS = {
    "where": _where,
    "clip": _clip,
    **{k: _reduction(k, True) for k in ("sum", "prod", "nansum", "nanprod", "mean")},
    **{k: _reduction(_REDUCE[k], False) for k in ("max", "amax", "min", "amin", "all", "any")},
    "copyto": _copyto,
    "copy": lambda a, order="K", subok=False: _as_v(a).copy(),
    "real": lambda a: _as_v(a).real,
    "imag": lambda a: _as_v(a).imag,
    "angle": _angle,
    "sinc": _sinc,
    "i0": _i0,
    "fix": lambda x, out=None: _apply("trunc", [x], out),
    "around": lambda a, decimals=0, out=None: _round("around", [a, decimals], out),
    "round": lambda a, decimals=0, out=None: _round("around", [a, decimals], out),
}


class _CupyHistory:
    """What CuPy's fusion hook calls while pydevice traces: CuPy's routines
    (``cupy.sum``, ``cupy.where``, ``cupy.sqrt``, ...) check
    ``cupy._core._fusion_thread_local`` and hand their work to the tracer, as they do to
    CuPy's own."""

    def call_ufunc(self, fusion_op, *args, **kwargs):
        name = getattr(fusion_op, "name", getattr(fusion_op, "__name__", ""))
        name = name[5:] if name.startswith("cupy_") else name
        # CuPy's ufuncs take their outputs positionally after the inputs, too.
        nin = {"where": 3, "clip": 3, "copy": 1, "real": 1, "imag": 1}.get(name)
        if nin is None:
            uf = getattr(np, _ALIASES.get(name, name), None)
            nin = uf.nin if isinstance(uf, np.ufunc) else len(args)
        args, outs = args[:nin], args[nin:]
        out = kwargs.pop("out", None)
        if outs:
            out = outs[0] if len(outs) == 1 else outs
        if name == "where":
            r = _where(*args)
        elif name == "clip":
            r = _clip(*args)
        elif name in ("real", "imag"):
            r = getattr(_as_v(args[0]), name)
        elif name == "copy":
            r = _as_v(args[0]).copy()
        else:
            return _ufunc_call(name, args, dict(kwargs, out=out))
        if out is not None:
            if not isinstance(out, _V):
                raise TypeError("fuse: `out=` must be an argument of the fused function")
            _assign(out, r, "unsafe")
            return out
        return r

    def call_reduction(self, fusion_op, *args, **kwargs):
        name = getattr(fusion_op, "name", "")
        name = name[5:] if name.startswith("cupy_") else name
        for suffix in ("_with_dtype", "_complex_dtype"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        if name not in _REDUCE:
            raise TypeError(f"fuse: the reduction {name} is not supported in a fused function")
        return _reduce(name, *args, **kwargs)

    def call_indexing(self, fusion_op, *args, **kwargs):
        raise TypeError("fuse: indexing is not supported in a fused function")


_CUPY_V: List[Any] = []


def _cupy_value_class():
    """`_V` made also a subclass of CuPy's `_ArrayProxy` (its methods are `_V`'s), or None
    where CuPy has no such class."""
    if not _CUPY_V:
        try:
            import importlib

            proxy = importlib.import_module("cupy._core._fusion_interface")._ArrayProxy
            _CUPY_V.append(type("_CupyV", (_V, proxy), {"__module__": __name__}))
        except (ImportError, AttributeError, TypeError):
            _CUPY_V.append(None)
    return _CUPY_V[0]


class _CupyHook:
    """Installs `_CupyHistory` as CuPy's fusion history for the duration of a trace."""

    def __enter__(self):
        self.tl = None
        cupy = sys.modules.get("cupy")
        if cupy is None:
            return self
        try:
            import importlib

            self.tl = importlib.import_module("cupy._core._fusion_thread_local").thread_local
        except (ImportError, AttributeError):
            return self
        self.saved = (getattr(self.tl, "history", None), getattr(self.tl, "is_new_fusing", False))
        self.tl.history = _CupyHistory()
        self.tl.is_new_fusing = True
        return self

    def __exit__(self, *exc):
        if self.tl is not None:
            self.tl.history, self.tl.is_new_fusing = self.saved
        return False


def _is_array(a) -> bool:
    return hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, np.generic)


def _xp(a):
    """The array module of `a`: NumPy, or CuPy for its arrays."""
    if isinstance(a, np.ndarray):
        return np
    return sys.modules.get("cupy", np)


def _overlap(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.may_share_memory(a, b)
    try:
        ia, ib = a.__cuda_array_interface__, b.__cuda_array_interface__
    except AttributeError:
        return False

    def span(x, i):
        lo = hi = i["data"][0]
        st = i.get("strides") or None
        if st is None:
            return lo, lo + x.nbytes
        for n, s in zip(i["shape"], st):
            if n == 0:
                return lo, lo
            if s > 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
        return lo, hi + x.itemsize

    (a0, a1), (b0, b1) = span(a, ia), span(b, ib)
    return a0 < b1 and b0 < a1


def _same_view(a, b) -> bool:
    if a is b:
        return True
    try:
        return (a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype
                and _ptr(a) == _ptr(b))
    except AttributeError:
        return False


def _ptr(a):
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return a.__cuda_array_interface__["data"][0]


def _flatten(x, out: list):
    """The structure of a result (tuples and lists of values), its values appended to `out`."""
    if isinstance(x, (tuple, list)):
        return (type(x), [_flatten(e, out) for e in x])
    out.append(x)
    return len(out) - 1


def _rebuild(spec, vals):
    if isinstance(spec, int):
        return vals[spec]
    kind, items = spec
    return kind(_rebuild(i, vals) for i in items)


class _Plan:
    """A traced function for one argument signature: reductions in order, then one
    elementwise kernel per output shape."""

    def __init__(self, trace: _Trace, steps, groups, returns, many, fast):
        self.trace = trace
        self.steps = steps
        self.groups = groups  # [(kernel, input leaves)]: the returned values, by shape
        self.returns = returns  # ("none",) | [("out", group, j) | ("leaf", name) | ("const", v)]
        self.many = many
        self.fast = fast

    def run(self, args):
        env: Dict[str, Any] = {}
        for n, (kind, i) in self.trace.leaves.items():
            if kind == "arg":
                env[n] = args[i]
        for step in self.steps:
            kind = step[0]
            if kind == "r":
                _, kern, ins, axis, keepdims, name = step
                env[name] = kern(*[env[n] for n in ins], axis=axis, keepdims=keepdims)
            elif kind == "v":
                _, leaf, shape, index, name = step
                a = env[leaf]
                if shape is not None and tuple(a.shape) != shape:
                    a = _xp(a).broadcast_to(a, shape)
                env[name] = a[index]
            elif kind == "e":
                _, kern, ins, name = step
                env[name] = kern(*[env[n] for n in ins])
            else:
                _, kern, ins, leaf = step
                dst = env[leaf]
                # An input that overlaps the argument written is read from a copy, unless it
                # is that very view (each element is read before it is written).
                arrays = [a.copy() if _overlap(a, dst) and not _same_view(a, dst) else a
                          for a in (env[n] for n in ins)]
                kern(*arrays, dst)
        results = [kern(*[env[n] for n in ins]) for kern, ins in self.groups]
        results = [r if isinstance(r, tuple) else (r,) for r in results]
        if self.returns == ("none",):
            return None
        vals = []
        for r in self.returns:
            if r[0] == "out":
                vals.append(results[r[1]][r[2]])
            elif r[0] == "leaf":
                vals.append(env[r[1]])
            else:
                vals.append(r[1])
        if self.many is None:
            return vals[0]
        return _rebuild(self.many, vals)


class _Fused:
    def __init__(self, fn, kernel_name):
        self._fn = fn
        self._name = kernel_name or getattr(fn, "__name__", "fused")
        self._plans: Dict[Any, _Plan] = {}
        # The native fast path: argument signature -> the built kernel's native half.
        self._fast = _native.FuseDispatch()
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<pydevice.fuse {self._name}>"

    def _key(self, args):
        key = []
        for a in args:
            if _is_array(a):
                dt = a.dtype
                name = _dtype_name(dt) if isinstance(dt, np.dtype) else str(dt).replace("torch.", "")
                key.append(("a", name, tuple(int(s) for s in a.shape)))
            elif a is None:
                key.append(("n",))
            elif isinstance(a, np.generic):
                key.append(("g", _dtype_name(a.dtype), _lit(a.item())))
            else:
                key.append(("s", type(a).__name__, _lit(a)))
        # Which arrays share memory: a write to one is seen through the others.
        arrays = [i for i, a in enumerate(args) if _is_array(a)]
        pairs = tuple((i, j) for n, i in enumerate(arrays) for j in arrays[n + 1:]
                      if _overlap(args[i], args[j])) if len(arrays) > 1 else ()
        key.append(("alias", pairs))
        return tuple(key)

    def _build(self, key, args) -> _Plan:
        tr = _Trace()
        tr.name = "".join(c if c.isalnum() or c == "_" else "_" for c in self._name) or "fused"
        if not (tr.name[0].isalpha() or tr.name[0] == "_"):
            tr.name = "f_" + tr.name
        if any(type(a).__module__.startswith("cupy") for a in args if _is_array(a)):
            tr.cls = _cupy_value_class()
        _TRACES.stack.append(tr)
        try:
            traced = self._trace(tr, key, args)
        finally:
            _TRACES.stack.pop()
        return self._finish(tr, traced)

    def _trace(self, tr: _Trace, key, args):
        proxies = []
        for i, (k, a) in enumerate(zip(key, args)):
            if k[0] == "a":
                n = f"x{i}"
                tr.leaves[n] = ("arg", i)
                tr.dtypes[n] = np.dtype(k[1])
                tr.shapes[n] = k[2]
                tr.memory[n] = frozenset([n] + [f"x{j}" for pair in key[-1][1] if i in pair
                                                for j in pair if j != i])
                proxies.append(_V(n, k[1], k[2], (n,), leaf=n))
            elif k[0] == "n":
                proxies.append(None)
            else:
                proxies.append(_as_v(a))
        with _CupyHook(), np.errstate(all="ignore"):
            return self._fn(*proxies)

    def _finish(self, tr: _Trace, traced) -> "_Plan":
        many, rets = None, []
        if isinstance(traced, (tuple, list)):
            # Tuples and lists of results, nested too: flattened here, rebuilt by run().
            many = _flatten(traced, rets)
        elif traced is not None:
            rets = [traced]
        # One kernel per output shape computes the returned values; arguments and
        # reductions are returned as they are.
        returns, new_groups = [], {}
        for r in rets:
            if not isinstance(r, (_V, bool, int, float, complex, np.generic)):
                raise TypeError(f"fuse: a fused function returns arrays or numbers, not "
                                f"{type(r).__name__}")
            v = _as_v(r)
            if v.weak is not None or not v.leaves:
                returns.append(("const", _eval_const(v)))
                continue
            if v.text in tr.leaves and tr.leaves[v.text][0] in ("arg", "tmp") and (
                    tr.leaves[v.text][0] == "tmp" or v.leaf == v.text):
                returns.append(("leaf", v.text))
                continue
            new_groups.setdefault(v.shape, []).append((v, len(returns)))
            returns.append(None)
        groups = []
        for shape, items in new_groups.items():
            ins = _leaves([v for v, _ in items])
            for j, (v, pos) in enumerate(items):
                returns[pos] = ("out", len(groups), j)
            outs = [(f"out{j}", v) for j, (v, _) in enumerate(items)]
            groups.append((_elementwise(tr, ins, outs, str(len(groups)) if groups else "",
                                        [v.dtype for _, v in outs]), ins))
        n_out = sum(1 for r in returns if r[0] == "out")
        fast = None
        if not tr.steps and len(groups) == 1 and all(r[0] == "out" for r in returns) and (
                many is None and n_out == 1 or many is not None and many[0] is tuple and n_out > 1
                and all(isinstance(i, int) for i in many[1])):
            fast = ("e", groups[0][1])
        elif (len(tr.steps) == 1 and tr.steps[0][0] == "r" and not groups and len(returns) == 1
              and many is None and returns[0] == ("leaf", tr.steps[0][5])):
            fast = ("r",)
        return _Plan(tr, tr.steps, groups, returns if traced is not None else ("none",), many, fast)

    def _plan(self, args) -> _Plan:
        key = self._key(args)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._build(key, args)
            self._plans[key] = plan
        return plan

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{self._name}: a fused function takes no keyword arguments")
        if _TRACES.stack or any(isinstance(a, _V) for a in args):
            # A fused function called inside another one's trace is inlined.
            return self._fn(*args)
        r = self._fast.call(args)
        if r is not NotImplemented:
            return r
        if not any(_is_array(a) for a in args):
            return self._fn(*args)
        plan = self._plan(args)
        r = plan.run(args)
        entry = self._fast_entry(plan, args)
        if entry is not None:
            self._fast.insert(args, *entry)
        return r

    @staticmethod
    def _fast_entry(plan: "_Plan", args):
        """What the native fast path remembers for a plan of one kernel: the kernel's native
        half, the indices of the arguments it takes, and for a reduction `axis` and
        `keepdims`; None for other plans."""
        if plan.fast is None or any(isinstance(a, np.generic) for a in args):
            # (A typed NumPy scalar is keyed by its value alone there, not its type.)
            return None
        if plan.fast[0] == "e":
            kern = plan.groups[0][0]
            return (kern._k, [plan.trace.leaves[n][1] for n in plan.fast[1]])
        _, kern, ins, axis, keepdims, _ = plan.steps[0]
        return (kern._k, [plan.trace.leaves[n][1] for n in ins], axis, bool(keepdims))

    def clear_cache(self):
        """Forgets the traced plans."""
        self._plans = {}
        self._fast = _native.FuseDispatch()

    def _sources(self, args, host: bool) -> str:
        plan = self._plan(args)
        env = {}
        for n, (kind, i) in plan.trace.leaves.items():
            if kind == "arg":
                env[n] = args[i]
            elif kind == "tmp":
                env[n] = np.empty(plan.trace.shapes[n], plan.trace.dtypes[n])
        texts = []
        for step in plan.steps:
            if step[0] == "v":
                _, leaf, shape, index, name = step
                a = env[leaf] if shape is None else np.broadcast_to(env[leaf], shape)
                env[name] = a[index]
                continue
            f = step[1].host_source if host else step[1].source
            if step[0] == "r":
                _, kern, ins, axis, keepdims, _ = step
                texts.append(f(*[env[n] for n in ins], axis=axis, keepdims=keepdims))
            elif step[0] == "e":
                texts.append(f(*[env[n] for n in step[2]]))
            else:
                texts.append(f(*[env[n] for n in step[2]], env[step[3]]))
        for kern, ins in plan.groups:
            f = kern.host_source if host else kern.source
            texts.append(f(*[env[n] for n in ins]))
        return "\n\n".join(texts)

    def source(self, *args) -> str:
        """The generated kernels for arguments like ``args`` (NumPy arrays stand for device
        arrays of their dtype and shape), in the order they run; no GPU needed."""
        return self._sources(args, host=False)

    def host_source(self, *args) -> str:
        """The generated host functions a call on NumPy arrays like ``args`` runs."""
        return self._sources(args, host=True)


#: What the text of a value that reads no array means, in NumPy (for `_eval_const`).
_CONST_NAMES = {
    **{n: getattr(np, n) for n in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64", "float16", "float32", "float64",
                                   "complex64", "complex128", "sqrt", "exp", "expm1", "exp2",
                                   "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh",
                                   "cosh", "tanh", "isnan", "isinf", "isfinite", "hypot",
                                   "copysign")},
    "bool": np.bool_, "max": np.maximum, "min": np.minimum, "abs": np.absolute,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "atan2": np.arctan2, "inf": np.inf,
    "nan": np.nan, "complex": complex, "cmath": np,
}


def _eval_const(v: _V):
    """A returned value that reads no array (a function of the scalar arguments only): its
    text evaluated with NumPy's scalars, which type it as the kernel would."""
    with np.errstate(all="ignore"):
        return eval(v.text, {"__builtins__": {}}, _CONST_NAMES)  # noqa: S307 (our own text)


def fuse(*args, kernel_name=None):
    """``cupy.fuse``: ``@pydevice.fuse``, ``@pydevice.fuse()`` or
    ``@pydevice.fuse(kernel_name='k')``."""
    if len(args) == 1 and callable(args[0]):
        return _Fused(args[0], kernel_name)

    def deco(fn):
        return _Fused(fn, kernel_name)

    return deco
