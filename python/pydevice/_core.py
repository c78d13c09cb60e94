"""The host side of ``cuda.device``: decorators, launching, host calls and reflection.

This is glue over ``pydevice._native`` (the Rust crate through PyO3). What happens here:

1. **Source.** A decorated function's source is its file's text as ``linecache`` holds it (a
   module, a script or a notebook cell), so diagnostics name the real file and line. The
   dialect imports of ``pydevice.numba``/``pydevice.cupyx`` are rewritten to the ones the
   compiler recognizes (``numba``/``cupyx``), on the same line. The current values of the
   numeric module globals the function (and the device functions it calls) reads are
   appended as assignments, so a global computed at run time is a constant of the kernel,
   as the spec's constant expressions allow. A nested function is moved to the top level at
   its own lines (its columns shift by its indentation).
2. **Arguments.** Each argument is described by a handler chosen by its exact type (a dict
   lookup): the handler returns a cheap hashable key (dtype, rank, layout, device for an
   array) and the value to pass (data pointer, shape and strides for an array). The kernel
   keeps one prepared launcher per tuple of keys; the first launch with a new tuple
   specializes, compiles (the crate's ``KernelCache``, without the GIL) and loads it.
3. **Launch.** The launcher (Rust) packs the values into the parameters' layouts with the
   crate's ``abi::pack`` and calls ``cuLaunchKernel`` without the GIL.
"""

from __future__ import annotations

import ast
import inspect
import json
import linecache
import os
import re
import threading
import types as _pytypes
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _native
from . import _types
from .errors import ArgumentError, CompileError, DeviceMismatchError, LaunchError

# ---------------------------------------------------------------------------------------
# Source of decorated objects

_REWRITES = [
    # `from pydevice.numba import cuda` -> `from numba import cuda` (the numba dialect).
    (re.compile(r"^(\s*from\s+)pydevice\.numba(\s+import\b)"), r"\1numba\2"),
    (re.compile(r"^(\s*from\s+)pydevice\.cupyx(\s+import\b)"), r"\1cupyx\2"),
    (re.compile(r"^(\s*import\s+)pydevice\.numba(\s+as\s+numba\b)"), r"\1numba\2"),
    # `import pydevice as device` / `from pydevice import x` -> cuda.device.
    (re.compile(r"^(\s*import\s+)pydevice(\s+as\s+\w+)"), r"\1cuda.device\2"),
    (re.compile(r"^(\s*from\s+)pydevice(\s+import\b)"), r"\1cuda.device\2"),
]


def _rewrite_imports(lines: List[str]) -> List[str]:
    out = []
    for line in lines:
        if "pydevice" in line:
            for pat, rep in _REWRITES:
                line = pat.sub(rep, line)
        out.append(line)
    return out


def _is_top(line: str) -> bool:
    return bool(line.strip()) and not line[0].isspace() and not line.lstrip().startswith("#")


def _hoist_nested(lines: List[str], blocks: List[Tuple[int, List[str]]]) -> List[str]:
    """Moves nested functions (each ``(first, block)``: its 0-based first line and its source
    lines) to the top level at the same lines, blanking the top-level statements around them."""
    out = list(lines)
    # The top-level statement around each block, and the last hoisted line in it.
    spans: Dict[Tuple[int, int], int] = {}
    for first, block in blocks:
        start = first
        while start > 0 and not _is_top(lines[start]):
            start -= 1
        while start > 0 and lines[start - 1].lstrip().startswith("@") and _is_top(lines[start - 1]):
            start -= 1
        end = first + len(block)
        while end < len(lines) and not _is_top(lines[end]):
            end += 1
        key = (start, end)
        spans[key] = max(spans.get(key, first), first)
    for (start, end), last in spans.items():
        for i in range(start, end):
            # An import in the enclosing function (`from cuda import device` inside a test
            # function) stays, moved to the top level, so the names it binds resolve.
            stripped = lines[i].strip()
            single = not stripped.endswith(("(", "\\", ","))
            if i < last and single and stripped.startswith(("import ", "from ")) and " import " in f" {stripped}":
                out[i] = stripped + "\n"
            else:
                out[i] = "\n"
    for first, block in blocks:
        for i, text in enumerate(_dedent(block)):
            out[first + i] = text
    return out


def _dedent(block: List[str]) -> List[str]:
    indent = min((len(l) - len(l.lstrip()) for l in block if l.strip()), default=0)
    return [l[indent:] if l.strip() else "\n" for l in block]


def _referenced_names(code: _pytypes.CodeType, out: set) -> None:
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            _referenced_names(c, out)


def _constant_text(value) -> Optional[str]:
    """A Python literal the compiler folds for a numeric global, or None."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if np.isfinite(value) else None
    if isinstance(value, complex):
        return repr(value) if np.isfinite(value.real) and np.isfinite(value.imag) else None
    if isinstance(value, type) and issubclass(value, np.generic) and value is not np.generic:
        # A NumPy scalar type (`numpy.float16`, as CuPy's tests pass dtypes): an alias.
        try:
            name = np.dtype(value).name
        except TypeError:  # an abstract type (`numpy.floating`)
            return None
        return f"_pydevice_numpy_.{name}" if name in _types.SCALARS else None
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        inner = _constant_text(value.item())
        if inner is not None and value.dtype.name in _types.SCALARS:
            return f"_pydevice_numpy_.{value.dtype.name}({inner})"
    return None


def _closure_values(fn) -> List[Tuple[str, Any]]:
    """The names `fn` reads from enclosing functions, with their current values (a cell
    not yet assigned is left out: reading it is the compiler's E0101)."""
    out = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            out.append((name, cell.cell_contents))
        except ValueError:
            pass
    return out


def _device_name_before(tree, lineno: int, kind: str) -> Optional[str]:
    """A name that a module-level import before line ``lineno`` binds to ``cuda.device``'s
    decorator ``kind`` (``device.kernel``, ``kernel``), or None."""
    found = None
    for n in tree.body:
        if getattr(n, "lineno", lineno) >= lineno:
            break
        if kind == "jit":
            # numba's dialect: `from numba import cuda` (as rewritten from pydevice.numba).
            if isinstance(n, ast.ImportFrom) and n.module == "numba" and n.level == 0:
                for a in n.names:
                    if a.name == "cuda":
                        found = f"{a.asname or 'cuda'}.jit"
            continue
        if isinstance(n, ast.ImportFrom) and n.module == "cuda" and n.level == 0:
            for a in n.names:
                if a.name == "device":
                    found = f"{a.asname or 'device'}.{kind}"
        elif isinstance(n, ast.ImportFrom) and n.module == "cuda.device" and n.level == 0:
            for a in n.names:
                if a.name == kind:
                    found = a.asname or kind
        elif isinstance(n, ast.Import):
            for a in n.names:
                if a.name == "cuda.device" and a.asname:
                    found = f"{a.asname}.{kind}"
    return found


class _Gathered:
    """What the compiler needs beside the file's text for one entry: the nested device
    functions it can reach (to hoist) and the numeric values of the globals and enclosing
    functions' names they read (to append as assignments)."""

    def __init__(self, fn, factories: bool = False):
        self.filename = fn.__code__.co_filename
        self.nested: List[Any] = []
        self.globals: Dict[str, str] = {}
        self.closure: Dict[str, str] = {}
        # Names bound to values device code cannot use (a str, a list), with their types:
        # reading one is E0101, which a dialect may report as its own type error.
        self.unusable: Dict[str, str] = {}
        self._seen: set = set()
        self._visited: List[Any] = []
        self._visit(fn)
        # Device functions made by host functions called with constants (`g(10)(x, y)`):
        # one instance each, appended to the module (`_factories`).
        from ._factories import Factories

        self.factories = Factories(self._device_function, self._visit_device)
        if factories:
            for f in list(self._visited):
                self.factories.scan(f)

    def _device_function(self, v):
        """The function a device function of this file wraps, else None."""
        if isinstance(v, (Func, Kernel)):
            u = v.underlying
            if u.__code__.co_filename == self.filename:
                return u
        return None

    def _visit_device(self, v) -> None:
        u = self._device_function(v)
        if u is not None and u.__globals__ is self._globals:
            self._visit(u)

    def apply(self, lines: List[str]) -> List[str]:
        """The file's lines with each factory call replaced by its instance's name."""
        out = list(lines)
        for line, start, end, name in sorted(self.factories.replacements, reverse=True):
            text = out[line]
            out[line] = text[:start] + name + text[end:]
        return out

    def _visit(self, fn) -> None:
        if id(fn) in self._seen:
            return
        self._seen.add(id(fn))
        if not self._visited:
            self._globals = fn.__globals__
        self._visited.append(fn)
        if "<locals>" in fn.__qualname__:
            self.nested.append(fn)
        names: set = set()
        _referenced_names(fn.__code__, names)
        g = fn.__globals__
        for name in sorted(names):
            if name in g:
                self._value(name, g[name], g, self.globals, fn)
        for name, v in _closure_values(fn):
            self._value(name, v, g, self.closure, fn)

    def _value(self, name: str, v, g: dict, into: Dict[str, str], fn) -> None:
        if isinstance(v, (Func, Kernel)):
            u = v.underlying
            # A device function the compiler can see: one of this module (a nested one is
            # hoisted beside the entry); one of another module stays E0101.
            if u.__globals__ is g and u.__code__.co_filename == self.filename:
                self._visit(u)
            return
        text = _constant_text(v)
        if text is None:
            self.unusable.setdefault(name, type(v).__name__)
            return
        prev = into.setdefault(name, text)
        if prev != text:
            raise CompileError(
                f"error: `{name}` has two values where device code reads it ({prev} and {text}): "
                f"the device functions `{fn.__qualname__}` reaches read it from different enclosing "
                "functions; pydevice compiles them into one module, where a name has one value "
                "(rename one of them)",
                [],
            )

    def suffix(self) -> List[str]:
        """Assignments of the values; an enclosing function's name wins over a global."""
        out = [f"{n} = {t}\n" for n, t in self.globals.items() if n not in self.closure]
        out += [f"{n} = {t}\n" for n, t in self.closure.items()]
        return out


class _Source:
    """The compiler's view of a decorated function: file name, text, entry name."""

    def __init__(self, fn, decorator=None, factories: bool = False):
        code = fn.__code__
        # cupyx.jit's device functions made by host calls with constants (`_factories`).
        self._factories = factories
        self.filename = code.co_filename
        self.entry = fn.__name__
        lines = linecache.getlines(self.filename, fn.__globals__)
        if not lines:
            raise OSError(
                f"the source of `{fn.__qualname__}` is not available ({self.filename}): "
                "pydevice compiles device code from source; define it in a file or a notebook cell"
            )
        lines = [l if l.endswith("\n") else l + "\n" for l in lines]
        self.fn = fn
        self._gathered: Optional[_Gathered] = None
        self._lines = lines
        self.lines = _rewrite_imports(lines)
        self._decorator = decorator

    def text(self) -> str:
        # Gathered at the first compile, when the device functions an entry calls from an
        # enclosing function (defined after it, often) exist.
        g = self._gathered = _Gathered(self.fn, self._factories)
        src = g.apply(self._lines)
        blocks = []
        for f in g.nested:
            first = f.__code__.co_firstlineno - 1
            if first < len(src) and not _is_top(src[first]):
                block, _ = inspect.getsourcelines(f)
                blocks.append((first, src[first : first + len(block)]))
        # A function defined inside another gathered one (a `def` in a kernel's body, which
        # the compiler refuses with its span) stays where it is: hoisting it would blank the
        # function around it.
        entry_first = self.fn.__code__.co_firstlineno - 1
        spans = [(b[0], b[0] + len(b[1])) for b in blocks]
        if _is_top(self._lines[entry_first]) if entry_first < len(self._lines) else False:
            spans.append((entry_first, entry_first + len(inspect.getsourcelines(self.fn)[0])))
        blocks = [
            b for b in blocks
            if not any(s <= b[0] and b[0] + len(b[1]) <= e and (s, e) != (b[0], b[0] + len(b[1])) for s, e in spans)
        ]
        lines = self.lines if src == self._lines else _rewrite_imports(src)
        if blocks:
            lines = _rewrite_imports(_hoist_nested(src, blocks))
        if self._decorator is not None:
            lines = self._apply_decorator(lines, entry_first, *self._decorator)
        suffix = g.suffix()
        if suffix:
            suffix = ["\nimport numpy as _pydevice_numpy_\n"] + suffix
        if g.factories.texts:
            suffix = suffix + ["\n\n"] + [t + "\n\n" for t in g.factories.texts]
        return "".join(lines + suffix)

    def _apply_decorator(self, lines: List[str], first: int, kind: str, options: dict) -> List[str]:
        """The source with the options given from Python (``device.kernel(max_threads=64)(f)``)
        written into the function's decorator, on the decorator's own lines, so the compiler
        reads them as it reads options written in the source (they take precedence over the
        source's). A function without a decorator in the source gets one on the blank line
        above its ``def`` (and, when no import of ``cuda.device`` precedes it, an import on
        the blank line above that). Lines keep their numbers."""
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            return lines  # the compiler reports the source's own errors
        node = None
        for n in tree.body:
            if isinstance(n, ast.FunctionDef) and n.name == self.entry:
                start = min([d.lineno for d in n.decorator_list] + [n.lineno]) - 1
                if start == first:
                    node = n
        if node is None:
            return lines
        ours = None
        names = ("jit",) if kind == "jit" else ("kernel", "func")
        for d in node.decorator_list:
            f = d.func if isinstance(d, ast.Call) else d
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in names:
                ours = d
        given = dict(options)
        if ours is None:
            given = {k: v for k, v in given.items() if _OPTION_DEFAULTS.get(k, object()) != v}
            above = node.lineno - 2
            if above < 0 or lines[above].strip() or node.decorator_list:
                return lines  # nowhere to write it: the compiler says it is not decorated
            indent = lines[node.lineno - 1][: node.col_offset]
            kwargs = ", ".join(f"{k}={v!r}" for k, v in given.items())
            out = list(lines)
            name = _device_name_before(tree, node.lineno, kind)
            if name is None and kind == "jit":
                return lines  # no `cuda` of numba's to decorate with
            if name is None:
                # No import of cuda.device before the function: one on the blank line
                # above the decorator's (the compiler reads imports in order).
                if above < 1 or lines[above - 1].strip():
                    return lines
                out[above - 1] = f"{indent}import cuda.device as _pydevice_device_\n"
                name = f"_pydevice_device_.{kind}"
            out[above] = f"{indent}@{name}({kwargs})\n"
            return out
        source_kw = ours.keywords if isinstance(ours, ast.Call) else []
        source_args = ours.args if isinstance(ours, ast.Call) else []
        if any(kw.arg is None for kw in source_kw) or any(isinstance(a, ast.Starred) for a in source_args):
            return lines  # `**` or `*` arguments: the compiler reports them
        # Positional arguments (numba's signature) stay as written.
        parts = [ast.unparse(a) for a in source_args]
        changed = False
        for kw in source_kw:
            text = ast.unparse(kw.value)
            if kw.arg in given:
                v = given.pop(kw.arg)
                changed |= repr(v) != text
                text = repr(v)
            parts.append(f"{kw.arg}={text}")
        for k, v in given.items():
            if _OPTION_DEFAULTS.get(k, object()) == v:
                continue
            parts.append(f"{k}={v!r}")
            changed = True
        if not changed:
            return lines
        callee = ours.func if isinstance(ours, ast.Call) else ours
        text = f"{ast.unparse(callee)}({', '.join(parts)})"
        out = list(lines)
        # AST columns count UTF-8 bytes.
        first_line = out[ours.lineno - 1].encode()
        last_line = out[ours.end_lineno - 1].encode()
        head = first_line[: ours.col_offset].decode()
        tail = last_line[ours.end_col_offset :].decode()
        if ours.end_lineno == ours.lineno:
            out[ours.lineno - 1] = head + text + tail
        else:
            # A decorator over several lines: written on its first, the others left blank
            # (what followed it on its last line can only be a comment).
            out[ours.lineno - 1] = head + text + "\n"
            for k in range(ours.lineno, ours.end_lineno):
                out[k] = "\n"
        return out


_MODULES: Dict[Tuple[str, str], Any] = {}
_MODULES_LOCK = threading.Lock()


def _native_module(filename: str, text: str):
    key = (filename, text)
    m = _MODULES.get(key)
    if m is None:
        m = _native.Module(filename, text)
        with _MODULES_LOCK:
            m = _MODULES.setdefault(key, m)
    return m


# ---------------------------------------------------------------------------------------
# Argument description

_DTYPE_NAMES = {np.dtype(n): n for n in _types.SCALAR_NAMES if _types.SCALARS[n].dtype is not None}


def _dtype_name(dt) -> str:
    """The compiler's name of a NumPy dtype (numba's Record notation for structured ones)."""
    name = _DTYPE_NAMES.get(dt)
    if name is not None:
        return name
    if isinstance(dt, np.dtype) and dt.fields is not None:
        return _record_notation(dt)
    raise TypeError(f"arrays of dtype {dt} cannot be kernel arguments")


def _record_notation(dt: np.dtype) -> str:
    fields = []
    for name in dt.names:
        fdt, off = dt.fields[name][:2]
        if fdt.subdtype is not None:
            base, shape = fdt.subdtype
            ftype = f"nestedarray({_dtype_name(base)}, {tuple(shape)})"
        else:
            ftype = _dtype_name(fdt)
        fields.append(f"{name}[type={ftype};offset={off}]")
    return f"Record({','.join(fields)};{dt.itemsize};{dt.isalignedstruct})"


def _layout(shape, strides) -> str:
    """'C', 'F' or 'A' for a shape and element strides."""
    expect = 1
    c = True
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            c = False
            break
        expect *= n
    if c:
        return "C"
    expect = 1
    for n, s in zip(shape, strides):
        if n != 1 and s != expect:
            return "A"
        expect *= n
    return "F"


def _array_type(dtype_name: str, ndim: int, layout: str) -> str:
    if ndim == 0:
        # A zero-dimensional array (docs/semantics.md §5.3): its parameter is the element's
        # address alone, its value `(address, (), ())`.
        return f"{dtype_name}[()]"
    dims = [":"] * ndim
    if layout == "C":
        dims[-1] = "::1"
    elif layout == "F":
        dims[0] = "::1"
    return f"{dtype_name}[{', '.join(dims)}]"


class _Unsupported(Exception):
    pass


def _h_int(a):
    return ("i",), a


def _h_float(a):
    return ("f",), a


def _h_bool(a):
    return ("b",), a


def _h_complex(a):
    return ("c",), a


# Tuples (and @struct values) nest at most this deep as arguments: the compiler's own bound
# on type nesting (`pydevice::types::MAX_TYPE_DEPTH`), so a deeper one is refused here, before
# it can overflow a stack.
_MAX_NESTING = 64


def _h_tuple(t, depth=0):
    if depth >= _MAX_NESTING:
        raise _Unsupported(f"a tuple nested deeper than {_MAX_NESTING} levels")
    keys = []
    vals = []
    # The tuple's own items: a subclass's `__iter__` (which may never end) is not called.
    for i in range(tuple.__len__(t)):
        k, v = _describe(tuple.__getitem__(t, i), depth + 1)
        keys.append(k)
        vals.append(v)
    return ("t", tuple(keys)), tuple(vals)


def _h_numpy_scalar(a):
    if a.dtype.fields is not None:
        return ("R", a.dtype), a.tobytes()
    return ("n", a.dtype), a.item()


def _h_vector(v):
    return ("V", type(v)), tuple(x.item() if hasattr(x, "item") else x for x in v)


def _h_struct(s, depth=0):
    if depth >= _MAX_NESTING:
        raise _Unsupported(f"a @struct value nested deeper than {_MAX_NESTING} levels")
    keys = []
    vals = []
    for name in type(s)._fields:
        k, v = _describe(getattr(s, name), depth + 1)
        keys.append(k)
        vals.append(v)
    return ("S", type(s), tuple(keys)), tuple(vals)


def _h_tensor_map(m):
    # `hopper.TensorMap`: its 128 bytes, packed by value (a grid constant, §18.4).
    return ("M",), bytes(m)


def _h_host_array(a):
    # Copied in and out around the launch; always passed C-contiguous.
    return ("H", a.dtype, a.ndim), a


def _wanted_layout(ann: Optional[str]) -> Optional[str]:
    """The layout an array annotation demands: "C" (``[:, ::1]``), "F" (``[::1, :]``) or None."""
    m = _ARRAY_RE.match(ann) if ann else None
    if not m:
        return None
    dims = [d.strip() for d in m.group(2).split(",")]
    if dims[-1] == "::1":
        return "C"
    if dims[0] == "::1":
        return "F"
    return None


def _host_arg(k, v, i: int, arrays: list, copies: list, want: Optional[str] = None):
    """A host call's argument (key, value) for a host `@func` (``Func.__call__``): a NumPy
    array as its own memory, ``(address, shape, element strides)``, keyed ``("h", dtype,
    ndim, layout)``, when its strides and address are multiples of its item size; else an
    aligned C-contiguous copy (added to ``copies`` to be written back). Each array is added
    to ``arrays`` with its argument's index ``i``. Tuples and structs are walked."""
    tag = k[0]
    if tag == "H":
        a = v
        _dtype_name(a.dtype)  # a dtype the compiler knows, else TypeError
        isz = a.itemsize
        shape = a.shape
        es = tuple(st // isz for st in a.strides)
        direct = isz > 0 and all(st % isz == 0 for st in a.strides) and a.ctypes.data % a.dtype.alignment == 0
        arrays.append((i, a))
        if direct:
            layout = _layout(shape, es)
            if want is None or want == layout or a.ndim == 0:
                return ("h", a.dtype, a.ndim, layout), (a.ctypes.data, shape, es)
        # A copy: the layout the annotation wants (C by default).
        order = want or "C"
        c = np.array(a, order=order, copy=True)
        copies.append((i, a, c))
        es = tuple(st // isz for st in c.strides)
        return ("h", a.dtype, a.ndim, order if a.ndim else "C"), (c.ctypes.data, shape, es)
    if tag == "t":
        pairs = [_host_arg(x, y, i, arrays, copies) for x, y in zip(k[1], v)]
        return ("t", tuple(p[0] for p in pairs)), tuple(p[1] for p in pairs)
    if tag == "S":
        pairs = [_host_arg(x, y, i, arrays, copies) for x, y in zip(k[2], v)]
        return ("S", k[1], tuple(p[0] for p in pairs)), tuple(p[1] for p in pairs)
    return k, v


def _make_cupy_handler():
    def h(a):
        sh = a.shape
        isz = a.itemsize
        st = a.strides
        if len(sh) == 1:
            s0 = st[0] // isz
            lay = "C" if (s0 == 1 or sh[0] <= 1) else "A"
            return ("A", a.dtype, 1, lay, a.data.device_id), (a.data.ptr, sh, (s0,))
        es = tuple(s // isz for s in st)
        return ("A", a.dtype, len(sh), _layout(sh, es), a.data.device_id), (a.data.ptr, sh, es)

    return h


_TORCH_DTYPES: Dict[Any, str] = {}


def _make_torch_handler(torch):
    for n in _types.SCALAR_NAMES:
        t = getattr(torch, n if n != "bool" else "bool", None)
        if t is not None and isinstance(t, torch.dtype):
            _TORCH_DTYPES[t] = n
    for alias, n in (("float8_e4m3fn", "float8e4m3"), ("float8_e5m2", "float8e5m2")):
        t = getattr(torch, alias, None)
        if t is not None:
            _TORCH_DTYPES[t] = n

    def h(t):
        if not t.is_cuda:
            raise _Unsupported("a PyTorch tensor on the CPU (move it to the GPU with .cuda())")
        sh = tuple(t.shape)
        st = t.stride()
        return ("T", t.dtype, len(sh), _layout(sh, st), t.get_device()), (t.data_ptr(), sh, st)

    return h


def _h_dlpack(a):
    cap = a.__dlpack__()
    data, dtype, shape, strides, dev, read_only = _native.dlpack_describe(cap)

    shape = tuple(shape)
    strides = tuple(strides)
    # `dev` is None for managed memory, which every GPU reaches.
    key = ("D", dtype, len(shape), _layout(shape, strides), dev)
    return (key + _READ_ONLY if read_only else key), (data, shape, strides)


# The tail of an array key (tags "A" and "D") for read-only memory: a CUDA Array Interface
# with `data=(p, True)` or a DLPack tensor flagged read-only.
_READ_ONLY = (True,)


def _is_read_only(k) -> bool:
    return len(k) > 5 and k[5] is True


def _int_tuple(v, what: str, lo: int, hi: int) -> tuple:
    """A tuple of ints in ``[lo, hi]`` from a CUDA Array Interface field, or _Unsupported."""
    if not isinstance(v, (tuple, list)) or len(v) > 64:
        raise _Unsupported(f"its __cuda_array_interface__ {what} must be a tuple of at most 64 ints")
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not lo <= int(x) <= hi:
            raise _Unsupported(
                f"its __cuda_array_interface__ {what} {tuple(v)!r} must hold ints from {lo} to {hi}"
            )
        out.append(int(x))
    return tuple(out)


_I64 = (1 << 63) - 1


def _cai_fields(a):
    """The checked fields of a CUDA Array Interface: (dtype, shape, element strides, data
    address, read-only). A malformed interface is _Unsupported (named, not a Python error
    from deep inside)."""
    cai = a.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise _Unsupported("its __cuda_array_interface__ is not a dict")
    try:
        descr = cai.get("descr", ())
        dt = np.dtype(descr) if isinstance(descr, list) and len(descr) > 1 else np.dtype(cai["typestr"])
    except (KeyError, TypeError, ValueError) as e:
        raise _Unsupported(f"its __cuda_array_interface__ typestr/descr is not a dtype ({e})") from None
    shape = _int_tuple(cai.get("shape"), "shape", 0, _I64)
    data = cai.get("data")
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise _Unsupported("its __cuda_array_interface__ data must be a (pointer, read_only) pair")
    ptr = data[0]
    if ptr is None:
        ptr = 0
    if isinstance(ptr, bool) or not isinstance(ptr, (int, np.integer)) or not 0 <= int(ptr) < (1 << 64):
        raise _Unsupported(f"its __cuda_array_interface__ data pointer {ptr!r} is not an address")
    st = cai.get("strides")
    if st is None:
        strides = _c_strides(shape)
    else:
        st = _int_tuple(st, "strides", -_I64, _I64)
        if len(st) != len(shape):
            raise _Unsupported(
                f"its __cuda_array_interface__ has {len(st)} strides for {len(shape)} dimensions"
            )
        if dt.itemsize == 0 or any(s % dt.itemsize for s in st):
            raise _Unsupported(
                f"its __cuda_array_interface__ strides {st} are not multiples of its item size {dt.itemsize}"
            )
        strides = tuple(s // dt.itemsize for s in st)
    return dt, shape, strides, int(ptr), bool(data[1])


def _h_cai(a):
    dt, shape, strides, ptr, read_only = _cai_fields(a)
    # The interface does not say which GPU holds the memory: the driver does (None for
    # managed or host memory, which any GPU may reach).
    dev = _native.pointer_device(ptr) if ptr else None
    key = ("A", dt, len(shape), _layout(shape, strides), dev)
    # Read-only memory is part of the key (`_READ_ONLY`): such an argument may only go to a
    # parameter the kernel never stores to.
    return (key + _READ_ONLY if read_only else key), (ptr, shape, strides)


_HANDLERS: Dict[type, Any] = {
    int: _h_int,
    float: _h_float,
    bool: _h_bool,
    complex: _h_complex,
    tuple: _h_tuple,
    np.ndarray: _h_host_array,
}
for _v in _types.VECTORS.values():
    _HANDLERS[_v] = _h_vector


def _register_cupy_hooks(t) -> None:
    """The kernel builders' fast path allocates with ``cupy.ndarray(shape, dtype)`` (what
    ``cupy.empty`` does; in its two steps when ``_cupy_construct`` finds them) and launches
    on ``cupy.cuda.get_current_stream()``."""
    try:
        import cupy
    except ImportError:
        return
    if t is cupy.ndarray:
        _native.set_cupy_hooks(cupy.ndarray, cupy.cuda.get_current_stream, _cupy_construct(cupy))


def _cupy_construct(cupy):
    """``cupy.ndarray(shape, dtype)`` in its two steps, ``(base.__new__, cupy.ndarray,
    base._init)``: CuPy 13 and later define ``ndarray`` as a Python subclass of the extension
    type ``cupy._core.core._ndarray_base``, whose ``__new__`` makes the object with
    ``base.__new__`` and then calls ``_init(shape, dtype)``, and whose ``__init__`` does
    nothing; calling the two steps directly skips the Python-level ``__new__`` (about 0.4 us
    of 1.1 per array). ``None`` when CuPy is laid out otherwise (the fast path then calls
    ``cupy.ndarray``)."""
    try:
        base = cupy._core.core._ndarray_base
        init = base._init
    except AttributeError:
        return None
    nd = cupy.ndarray
    if nd.__bases__ != (base,) or "__new__" not in vars(nd) or "_init" in vars(nd):
        return None
    return (base.__new__, nd, init)


def _handler_for(a):
    """Finds (and remembers, by exact type) how to describe an argument."""
    t = type(a)
    mod = t.__module__ or ""
    h = None
    if mod.startswith("cupy") and t.__name__ == "ndarray":
        h = _make_cupy_handler()
        _native.register_array_type("cupy", t)
        _register_cupy_hooks(t)
    elif mod.startswith("torch") and t.__name__ in ("Tensor", "Parameter"):
        import torch

        h = _make_torch_handler(torch)
        if t is torch.Tensor:
            _native.register_array_type("torch", t)
    elif isinstance(a, np.generic):
        h = _h_numpy_scalar
        if a.dtype.fields is None and a.dtype.kind in "iufb":
            # Launches with this type then take the native fast path (python/src/fast.rs).
            _native.register_scalar_type(t, a.dtype.kind, a.dtype.itemsize)
    elif isinstance(a, np.ndarray):
        h = _h_host_array
    elif hasattr(a, "__dlpack__") and hasattr(a, "__dlpack_device__"):
        dev_type = a.__dlpack_device__()[0]
        if int(dev_type) in (2, 13):  # kDLCUDA, kDLCUDAManaged
            h = _h_dlpack
        elif hasattr(a, "__cuda_array_interface__"):
            h = _h_cai
    elif hasattr(a, "__cuda_array_interface__"):
        h = _h_cai
    elif isinstance(a, tuple):
        h = _h_tuple
    elif getattr(t, "_pydevice_tensor_map", False):
        h = _h_tensor_map
    if h is None:
        raise _Unsupported(
            f"{t.__module__}.{t.__qualname__} (a kernel takes arrays with __dlpack__ or "
            "__cuda_array_interface__, host NumPy arrays, numbers, NumPy scalars, tuples, "
            "vectors and @struct instances)"
        )
    _HANDLERS[t] = h
    return h


def _describe(a, depth=0):
    h = _HANDLERS.get(type(a))
    if h is None:
        h = _handler_for(a)
    if depth and (h is _h_tuple or h is _h_struct):
        return h(a, depth)
    return h(a)


_INT_KINDS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
_FLOAT_KINDS = {"float16", "bfloat16", "float32", "float64"}
_COMPLEX_KINDS = {"complex64", "complex128"}
_PY_NUMBER_TYPES = {
    "device": {"i": "int32", "f": "float32", "b": "bool", "c": "complex64"},
    "numba": {"i": "int64", "f": "float64", "b": "bool", "c": "complex128"},
    "cupyx": {"i": "int64", "f": "float64", "b": "bool", "c": "complex128"},
}


def _type_of_key(k, dialect: str):
    """The compiler's type description (a string or a tuple) for an argument key."""
    tag = k[0]
    if tag in ("i", "f", "b", "c"):
        return _PY_NUMBER_TYPES[dialect][tag]
    if tag == "n":
        return _dtype_name(k[1])
    if tag == "R":
        return _record_notation(k[1])
    if tag in ("A", "D"):
        name = k[1] if tag == "D" else _dtype_name(k[1])
        return _array_type(name, k[2], k[3])
    if tag == "T":
        return _array_type(_TORCH_DTYPES[k[1]], k[2], k[3])
    if tag == "H":
        return _array_type(_dtype_name(k[1]), k[2], "C")
    if tag == "h":
        return _array_type(_dtype_name(k[1]), k[2], k[3])
    if tag == "t":
        return tuple(_type_of_key(x, dialect) for x in k[1])
    if tag == "V":
        return k[1].__name__
    if tag == "S":
        return k[1].__name__
    if tag == "M":
        return "hopper.TensorMap"
    raise AssertionError(k)


def _launch_device(kernel, args, key, stream_device: Optional[int], peer: bool = False) -> int:
    """The GPU a launch runs on: the stream's (a non-default stream belongs to one GPU),
    else the arrays', else the default device (``PYDEVICE_DEVICE``, 0 unless set). Every
    array whose GPU is known must be on it: DeviceMismatchError names both GPUs. With
    ``peer=True`` an array of another GPU is admitted when the launch's GPU can access that
    GPU's memory (peer access, enabled here once per pair; docs/semantics.md §13.3)."""
    launch = stream_device
    because = "its stream is on"
    if peer and launch is None:
        # The launch's GPU is the first array's; the others are its peers.
        for k in key:
            if k[0] in ("A", "D", "T") and k[4] is not None:
                launch = k[4]
                because = "the first array is on"
                break
    for i, k in enumerate(key):
        if k[0] not in ("A", "D", "T") or k[4] is None:
            continue
        if launch is None:
            launch = k[4]
            because = f"argument {i} (parameter `{kernel._param_name(i)}`) is on"
        elif k[4] != launch and peer:
            if not _native.enable_peer_access(launch, k[4]):
                raise DeviceMismatchError(
                    f"{kernel.__name__}(): argument {i} (parameter `{kernel._param_name(i)}`) is on "
                    f"GPU {k[4]}, and GPU {launch} (where the launch runs: {because} GPU {launch}) "
                    f"cannot access GPU {k[4]}'s memory (the driver allows no peer access between "
                    "them); copy the array (pydevice.copy)",
                    kernel.__name__,
                    k[4],
                    launch,
                )
        elif k[4] != launch:
            raise DeviceMismatchError(
                f"{kernel.__name__}(): argument {i} (parameter `{kernel._param_name(i)}`) is on "
                f"GPU {k[4]}, but the launch runs on GPU {launch} ({because} GPU {launch}); "
                "copy the array to that GPU (pydevice.copy) or launch on a stream of its GPU",
                kernel.__name__,
                k[4],
                launch,
            )
    return _default_device() if launch is None else launch


_ARRAY_RE = re.compile(r"^(.*)\[(.*)\]$")


def _reconcile(ours, ann: Optional[str], k, module) -> Any:
    """The type to specialize a parameter for: the annotation where the argument fits it
    (Python numbers adopt the annotated number type), else TypeError text."""
    if ann is None:
        return ours
    tag = k[0]
    if tag == "n" and k[1].kind in "biufc":
        # A NumPy scalar converts to the annotated number type as a Python number of its
        # kind does (`np.float64` for `x: float`, `np.int64` for `n: uint32`); an integer
        # out of the type's range is refused when the value is read (ArgumentRangeError).
        tag = {"b": "b", "i": "i", "u": "i", "f": "f", "c": "c"}[k[1].kind]
        if ann == ours:
            return ann
    if tag in ("i", "f", "b", "c"):
        ok = {
            "b": {"bool"},
            "i": _INT_KINDS | _FLOAT_KINDS | _COMPLEX_KINDS,
            "f": _FLOAT_KINDS | _COMPLEX_KINDS,
            "c": _COMPLEX_KINDS,
        }[tag]
        if ann in ok:
            return ann
        raise _Mismatch(ann)
    mine = module.type_name(ours)
    if mine == ann:
        return ann
    a = _ARRAY_RE.match(ann)
    m = _ARRAY_RE.match(mine)
    if a and m and a.group(1) == m.group(1):
        ad = [d.strip() for d in a.group(2).split(",")]
        md = [d.strip() for d in m.group(2).split(",")]
        # (`()`, a 0-d array, matches only itself: it is no dimension for `:` to match.)
        if len(ad) == len(md) and "()" not in md and all(x == ":" or x == y for x, y in zip(ad, md)):
            return ann
    raise _Mismatch(ann, mine)


class _Mismatch(Exception):
    pass


# ---------------------------------------------------------------------------------------
# Streams and launch shapes

_stream_cache: Tuple[Any, int, Optional[int]] = (None, 0, None)


def _resolve_stream(s) -> int:
    if hasattr(s, "__cuda_stream__"):
        proto = s.__cuda_stream__
        proto = proto() if callable(proto) else proto
        return int(proto[1])
    for attr in ("cuda_stream", "ptr", "handle"):  # PyTorch, CuPy, numba / cuda.core
        if hasattr(s, attr):
            h = getattr(s, attr)
            if hasattr(h, "value"):
                h = h.value
            return int(h or 0)
    raise TypeError(
        f"stream: expected a cuda.core Stream, an object with __cuda_stream__, a CuPy or PyTorch "
        f"stream or an int handle; given {type(s).__module__}.{type(s).__qualname__}"
    )


def _stream_handle(s) -> int:
    return _stream_place(s)[0]


def _implicit_stream(args):
    """The stream of a launch given ``stream=None``: the current stream of the framework
    whose arrays it is given (the first CuPy array or CUDA PyTorch tensor decides: CuPy's
    ``get_current_stream`` on its GPU, PyTorch's current stream on its device), so that a
    launch is ordered with that framework's work and is captured inside ``torch.cuda.graph``
    or CuPy stream capture; 0 (the legacy default stream) otherwise (docs/semantics.md §13.3)."""
    for a in args:
        mod = type(a).__module__
        if mod.startswith("torch") and getattr(a, "is_cuda", False):
            import torch

            return torch._C._cuda_getCurrentRawStream(a.get_device())
        if mod.startswith("cupy") and hasattr(a, "data") and hasattr(a, "device"):
            import cupy

            try:
                return cupy.cuda.get_current_stream(a.device.id).ptr
            except TypeError:  # a CuPy without the device argument
                with a.device:
                    return cupy.cuda.get_current_stream().ptr
    return 0


def _stream_place(s) -> Tuple[int, Optional[int]]:
    """The stream's handle and GPU (None for the default streams, which follow the launch).
    The last stream object is remembered (one entry, held, so its identity is stable)."""
    global _stream_cache
    if s is None:
        return 0, None
    if type(s) is int:
        return s, (None if s <= 2 else _native.stream_device(s))
    c = _stream_cache
    if c[0] is s:
        return c[1], c[2]
    h = _resolve_stream(s)
    d = None if h <= 2 else _native.stream_device(h)
    _stream_cache = (s, h, d)
    return h, d


# ---------------------------------------------------------------------------------------
# Decorated objects

_KERNEL_OPTIONS = {"interop", "max_threads", "min_blocks", "fastmath", "contract", "lineinfo", "debug", "bounds_check", "wraparound", "restrict", "assertions", "cluster"}
_FUNC_OPTIONS = {"interop", "extern"}
_NUMBA_OPTIONS = {"device", "fastmath", "lineinfo", "debug", "opt", "cache", "max_registers", "inline", "link"}


def _check_options(what: str, given: dict, allowed: set) -> None:
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise TypeError(
            f"{what} got unknown keyword argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(u) for u in unknown)} (supported: {', '.join(sorted(allowed))})"
        )


# The value each boolean option has when it is not given.
_OPTION_DEFAULTS = {
    "interop": False,
    "fastmath": False,
    "contract": True,
    "lineinfo": False,
    "debug": False,
    "bounds_check": False,
    "wraparound": True,
    "assertions": True,
}
# The integer options and their ranges (as the compiler checks them in source, E0103).
_COUNT_OPTIONS = {"max_threads": 1024, "min_blocks": 64}


def _check_option_values(what: str, given: dict) -> None:
    """Refuses option values the compiler would refuse in the source's decorator, with the
    option's name: ``max_threads=-1`` (ValueError), ``bounds_check="no"`` (TypeError)."""
    for k, v in given.items():
        if k in _OPTION_DEFAULTS:
            if not isinstance(v, (bool, np.bool_)):
                raise TypeError(f"{what}: `{k}` must be True or False, not {v!r}")
            given[k] = bool(v)
        elif k in _COUNT_OPTIONS:
            hi = _COUNT_OPTIONS[k]
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{what}: `{k}` must be an integer from 1 to {hi}, not {v!r}")
            if not 1 <= v <= hi:
                raise ValueError(f"{what}: `{k}` must be an integer from 1 to {hi}, not {v!r}")
            given[k] = int(v)
        elif k == "cluster":
            dims = v if isinstance(v, tuple) else (v,)
            if not 1 <= len(dims) <= 3 or any(
                isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1
                for d in dims
            ):
                raise ValueError(f"{what}: `cluster` must be 1 to 3 positive integers, not {v!r}")
            given[k] = tuple(int(d) for d in dims) if isinstance(v, tuple) else int(v)
        elif k == "extern":
            if not isinstance(v, (bool, str)):
                raise TypeError(f"{what}: `extern` must be True, False or a symbol name, not {v!r}")
    if "min_blocks" in given and "max_threads" not in given:
        raise ValueError(f"{what}: `min_blocks` needs `max_threads` as well")


class _Specialization:
    __slots__ = ("launcher", "host_arrays", "kernel", "refuse")

    def __init__(self, kernel, launcher, host_arrays, refuse=None):
        self.kernel = kernel
        self.launcher = launcher
        self.host_arrays = host_arrays
        # The argument whose read-only memory the kernel may store to (every launch of it
        # is refused), or None.
        self.refuse = refuse


def _holds_read_only(k) -> bool:
    """Whether an argument key describes read-only device memory (at any tuple depth)."""
    tag = k[0]
    if tag in ("A", "D"):
        return _is_read_only(k)
    if tag == "t":
        return any(_holds_read_only(x) for x in k[1])
    if tag == "S":
        return any(_holds_read_only(x) for x in k[2])
    return False


def _read_only_error(entry, i: int) -> ValueError:
    """NumPy's error for a store into read-only memory, naming the argument."""
    return ValueError(
        f"{entry.__name__}(): argument {i} (parameter `{entry._param_name(i)}`) is read-only, and "
        f"`{entry.__name__}` may store to it: assignment destination is read-only"
    )


def _default_device() -> int:
    """The GPU of launches whose stream and arrays do not say (``PYDEVICE_DEVICE``, read at
    import, else 0); the native fast path reads the same value."""
    return _native.default_device()


_native.set_default_device(int(os.environ.get("PYDEVICE_DEVICE", "0")))

# `PYDEVICE_BACKEND=cpu` runs every launch of an unchanged program on the CPU back end (as
# `NUMBA_ENABLE_CUDASIM=1` runs numba's on its simulator); read once, at import.
_BACKEND = os.environ.get("PYDEVICE_BACKEND", "").strip().lower() or None
# `PYDEVICE_RACECHECK=1` checks every launch on the CPU back end for data races (§22).
_RACECHECK = os.environ.get("PYDEVICE_RACECHECK", "").strip().lower() not in ("", "0", "false", "no")
if _BACKEND not in (None, "cpu", "gpu", "cuda"):
    raise ValueError(f"PYDEVICE_BACKEND={_BACKEND!r}: expected 'cpu' or 'gpu'")


def _dim3(d, what: str) -> Tuple[int, int, int]:
    """A launch dimension (an int or a tuple of 1 to 3 ints) as three ints."""
    if isinstance(d, (int, np.integer)):
        return (int(d), 1, 1)
    t = tuple(int(x) for x in d)
    if not 1 <= len(t) <= 3:
        # A ValueError, as a GPU launch's (the native launcher's) for the same dimensions.
        raise ValueError(f"{what} must be an int or a tuple of 1 to 3 ints, got {d!r}")
    return t + (1,) * (3 - len(t))


_SUPPORTED_ARCHS = (75, 80, 86, 87, 89, 90, 100, 120)
_ARCH_OF_DEVICE: Dict[int, str] = {}


def _arch_for(ordinal: int) -> str:
    a = _ARCH_OF_DEVICE.get(ordinal)
    if a is None:
        n = int(_native.device_arch(ordinal)[3:])
        best = max((x for x in _SUPPORTED_ARCHS if x <= n), default=_SUPPORTED_ARCHS[0])
        a = _ARCH_OF_DEVICE[ordinal] = f"sm_{best}"
    return a


class _Entry:
    """What `Kernel` and `Func` share: the source, its native module and the entry's facts."""

    dialect = "device"
    # The decorator (`kernel` or `func`) whose options given from Python are written into
    # the source (`_Source._apply_decorator`).
    _decorator_kind: Optional[str] = None

    def __init__(self, fn, options: dict, dialect: str):
        if not isinstance(fn, _pytypes.FunctionType):
            raise TypeError(f"expected a function, got {type(fn).__name__}")
        self.underlying = fn
        self.options = dict(options)
        self.dialect = dialect
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self._src: Optional[_Source] = None
        self._module = None
        self._params: Optional[List[str]] = None
        self._annotated: Optional[List[Optional[str]]] = None
        # Parameters hinted ConstExpr: their values are compile-time (docs/semantics.md §5.6).
        self._const: List[str] = []
        self._all_params: List[str] = []
        self._lock = threading.Lock()

    @property
    def _source(self) -> "_Source":
        if self._src is None:
            decorator = None
            if self.dialect == "device" and self._decorator_kind is not None:
                decorator = (self._decorator_kind, self.options)
            elif self.dialect == "numba" and self.options:
                # numba's `cuda.jit(max_registers=32)(f)`: written into `@cuda.jit` alike.
                options = dict(self.options)
                if self._decorator_kind == "func":
                    options["device"] = True
                decorator = ("jit", options)
            self._src = _Source(self.underlying, decorator, factories=self.dialect == "cupyx")
        return self._src

    # The native module is made on first use (parsing is a few hundred microseconds).
    def _mod(self):
        m = self._module
        if m is None:
            m = _native_module(self._source.filename, self._source.text())
            for name, _is_kernel, params, ann, const in m.entries():
                if name == self.__name__:
                    self._const = list(const)
                    self._all_params = list(params)
                    # The run-time parameters, which `_annotated` describes.
                    self._params = [p for p in params if p not in self._const]
                    self._annotated = ann
                    break
            else:
                raise CompileError(
                    f"error: `{self.__name__}` is not a module-level device function the compiler found "
                    f"in {self._source.filename} (is it decorated with a pydevice decorator?)",
                    [],
                )
            self._module = m
        return m

    def _param_name(self, i: int) -> str:
        try:
            self._mod()
        except CompileError:
            pass
        if self._params is not None and i < len(self._params):
            return self._params[i]
        return f"#{i}"

    def _arg_types(self, args, types) -> list:
        """The compiler's types for example arguments or given type descriptions."""
        m = self._mod()
        if types is not None:
            if isinstance(types, str):
                return _split_signature(types)
            return [t if isinstance(t, (str, tuple)) else str(t) for t in types]
        keys = []
        for i, a in enumerate(args):
            try:
                keys.append(_describe(a)[0])
            except _Unsupported as e:
                raise self._bad_arg(i, a, str(e)) from None
        return self._types_of_keys(tuple(keys), args, m)

    def _types_of_keys(self, key, args, m) -> list:
        n = len(self._params or ())
        if len(key) != n:
            raise TypeError(f"{self.__name__}() takes {n} arguments, {len(key)} given")
        out = []
        for i, k in enumerate(key):
            ours = _type_of_key(k, self.dialect)
            ann = self._annotated[i] if self._annotated else None
            try:
                out.append(_reconcile(ours, ann, k, m))
            except _Mismatch as e:
                given = e.args[1] if len(e.args) > 1 else ours
                raise self._bad_arg(i, args[i], f"expected {e.args[0]}, given {given}") from None
        return out

    def _bad_arg(self, i: int, a, why: str) -> TypeError:
        t = type(a)
        return ArgumentError(
            f"{self.__name__}(): argument {i} (parameter `{self._param_name(i)}`): {why} "
            f"[given a {t.__module__}.{t.__qualname__}]"
        )

    def _split_constants(self, args):
        """For a kernel with ConstExpr parameters: the run-time arguments, and the
        ``(name, value)`` pairs of the compile-time ones (part of the specialization key)."""
        self._mod()
        n = len(self._all_params)
        if len(args) != n:
            raise TypeError(f"{self.__name__}() takes {n} arguments, {len(args)} given")
        rt = []
        consts = []
        for p, a in zip(self._all_params, args):
            if p in self._const:
                v = a.item() if isinstance(a, np.generic) else a
                if not isinstance(v, (bool, int, float)):
                    raise TypeError(
                        f"{self.__name__}(): parameter `{p}` is ConstExpr: its argument must be "
                        f"a bool, an int or a float, not {type(a).__name__}"
                    )
                # The type is part of the key: 1, 1.0 and True are three specializations.
                consts.append((p, type(v).__name__, v))
            else:
                rt.append(a)
        return tuple(rt), tuple(consts)

    # Reflection -----------------------------------------------------------------------
    def typed_ir(self, *args, types=None, arch: Optional[str] = None) -> str:
        """pydevice's typed IR of the specialization for ``args`` (or ``types``)."""
        return self._mod().typed_ir(self.__name__, self._arg_types(args, types), arch)

    def llvm_ir(self, *args, types=None, arch: Optional[str] = None, opt: int = 3) -> str:
        """The optimized LLVM IR of the specialization."""
        return self._mod().llvm_ir(self.__name__, self._arg_types(args, types), arch, opt)

    def ptx(self, *args, types=None, arch: Optional[str] = None, opt: int = 3) -> str:
        """The PTX of the specialization (compiled through the shared cache)."""
        return self._mod().compile(self.__name__, self._arg_types(args, types), arch, opt).ptx

    def cuda(self, *args, types=None, arch: Optional[str] = None, opt: int = 3) -> list:
        """The CUDA C++ the specialization links with when loaded, as ``(name, source)``
        pairs: the shims of its ``jit.thrust`` calls (NVRTC compiles them with CCCL's headers);
        empty for most kernels."""
        return list(self._mod().compile(self.__name__, self._arg_types(args, types), arch, opt).cuda)

    def abi(self, *args, types=None) -> dict:
        """The parameter ABI (symbol; each parameter's name, type, C++ type, size, align, fields;
        ``read_only``, the parameters holding arrays that the function never stores to)."""
        raw = json.loads(self._mod().abi(self.__name__, self._arg_types(args, types)))
        return {
            "symbol": raw["symbol"],
            "params": [
                {
                    "name": p["name"],
                    "type": p["layout"]["name"],
                    "cxx": p["layout"]["cxx"],
                    "size": p["layout"]["size"],
                    "align": p["layout"]["align"],
                    "fields": p["layout"]["fields"],
                }
                for p in raw["params"]
            ],
            # The parameters (indices) holding memory the function never stores to.
            "read_only": raw.get("read_only", []),
        }

    def header(self) -> str:
        """The CUDA C++ header of this function's module."""
        return header(self)


class Kernel(_Entry):
    """A ``@kernel``: launch it with ``device.launch(k, *args, grid=, block=, stream=)`` or
    ``k[grid, block, stream, shared](*args)``. ``underlying`` is the decorated function."""

    _decorator_kind = "kernel"
    # Whether a kernel that synchronizes the grid is launched cooperatively without being
    # asked to (`cooperative=True`): cupyx.jit's kernels are (§15.4).
    _auto_cooperative = False

    def __init__(self, fn, options: dict, dialect: str = "device"):
        super().__init__(fn, options, dialect)
        self._specs: Dict[Any, _Specialization] = {}
        # CPU back end: (argument kinds, constants) -> compiled kernel.
        self._cpu: Dict[Any, Any] = {}
        self._bounds_check = bool(options.get("bounds_check", False))
        # The repeated-launch fast path (Rust): argument kinds -> prepared launcher.
        self._dispatcher = _native.Dispatcher()

    def __repr__(self) -> str:
        return f"<pydevice kernel {self.__qualname__}>"

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"kernel `{self.__name__}` runs on a device: launch it with "
            f"device.launch({self.__name__}, *args, grid=..., block=..., stream=...) or "
            f"{self.__name__}[grid, block](*args)"
        )

    def __getitem__(self, config):
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise TypeError("kernel[grid, block] or kernel[grid, block, stream, shared]")
        # Native (`_native.Configured`): a call takes the fast path without a Python frame.
        return _native.Configured(self, *config)

    def _specialize(self, key, args, ordinal: int, consts=()) -> _Specialization:
        """The specialization for argument kinds ``key`` (and ConstExpr values ``consts``) on
        GPU ``ordinal``: compiled once per architecture (the shared cache), loaded once per GPU."""
        full = (key, ordinal, consts) if consts else (key, ordinal)
        with self._lock:
            spec = self._specs.get(full)
            if spec is not None:
                return spec
        m = self._mod()
        types = self._types_of_keys(key, args, m)
        constants = [(p, v) for p, _t, v in consts]
        compiled = m.compile(self.__name__, types, _arch_for(ordinal), 3, constants)
        launcher = compiled.load(ordinal)
        host = tuple(i for i, k in enumerate(key) if k[0] == "H")
        refuse = None
        for i, k in enumerate(key):
            if _holds_read_only(k) and compiled.may_store(i):
                refuse = i
                break
        spec = _Specialization(compiled, launcher, host, refuse)
        with self._lock:
            return self._specs.setdefault(full, spec)

    def _launch(
        self, args, grid, block, stream, shared, seed=None, cooperative=False, cluster=None, backend=None,
        peer=False, race_check=None, deterministic=False,
    ):
        which = backend if backend is not None else _BACKEND
        if which is not None:
            which = str(which).lower()
            if which == "cpu":
                race = _RACECHECK if race_check is None else bool(race_check)
                return self._launch_cpu(
                    args, grid, block, shared, seed, deterministic=deterministic, cooperative=cooperative,
                    race_check=race, cluster=cluster,
                )
            if which not in ("gpu", "cuda"):
                raise ValueError(f"backend={backend!r}: expected 'cpu' or 'gpu'")
        if race_check or deterministic:
            raise ValueError("race_check=True and deterministic=True need the CPU back end: pass backend='cpu' too")
        consts = ()
        if self._module is None:
            self._mod()
        if self._const:
            args, consts = self._split_constants(args)
        keys = []
        vals = []
        H = _HANDLERS
        try:
            for a in args:
                h = H.get(type(a))
                if h is None:
                    h = _handler_for(a)
                k, v = h(a)
                keys.append(k)
                vals.append(v)
        except _Unsupported as e:
            i = len(keys)
            raise self._bad_arg(i, args[i], f"unsupported argument type {e}") from None
        key = tuple(keys)
        h, stream_device = _stream_place(_implicit_stream(args) if stream is None else stream)
        ordinal = _launch_device(self, args, key, stream_device, peer)
        spec = self._specs.get((key, ordinal, consts) if consts else (key, ordinal))
        if spec is None:
            spec = self._specialize(key, args, ordinal, consts)
        if spec.refuse is not None:
            raise _read_only_error(self, spec.refuse)
        auto = self._auto_cooperative and not cooperative and spec.launcher.cooperative
        if auto:
            # A dialect whose kernels launch cooperatively when they synchronize the grid
            # (cupyx.jit, §15.4); the fast path, which launches plainly, is not used for them.
            cooperative = True
        if spec.host_arrays:
            return self._launch_host(spec, vals, grid, block, stream, shared, seed, cooperative, cluster)
        spec.launcher.launch(tuple(vals), grid, block, shared, h, seed, cooperative, cluster)
        if consts or auto:
            # The fast path keys on argument kinds, not values: not for ConstExpr kernels.
            pass
        elif not self._bounds_check:
            # Later launches with arguments of these kinds take the fast path (when all of
            # them have one: CuPy arrays, PyTorch tensors, Python numbers, NumPy scalars,
            # @struct instances).
            self._dispatcher.insert(args, spec.launcher)
        else:
            # A bounds-checked kernel is a debugging aid: wait for it and report its first
            # out-of-range access as BoundsError.
            _native.synchronize(spec.launcher.device, h)
            spec.launcher.check_bounds()

    def _cpu_kernel(self, m, key, args, constants):
        """The kernel compiled for the CPU back end for argument kinds ``key``."""
        return m.cpu_kernel(self.__name__, self._types_of_keys(key, args, m), constants)

    def _launch_cpu(
        self, args, grid, block, shared, seed=None, threads=0, deterministic=False, cooperative=False,
        race_check=False, cluster=None,
    ):
        """Runs the kernel on the CPU back end (docs/semantics.md, "CPU back end"): each GPU
        thread a fiber, blocks over the cores. Arguments are numbers, tuples, vectors,
        structs and NumPy arrays; arrays are worked on in place (a failed launch leaves
        them as they were). Synchronous. What a GPU launch refuses is refused here too: a
        grid-synchronizing kernel launched without ``cooperative=True``, a store to a
        read-only array, two host arrays sharing memory where the kernel may store to one.
        ``race_check`` records every access to shared and global memory and raises
        RaceError for two by different threads with no barrier between them, one a store
        (§22). ``cluster`` runs the blocks in thread block clusters of that shape (the
        kernel's own ``cluster=`` shape without it): a cluster's blocks run together, sharing
        their shared memory (§22.1). Ctrl-C stops the launch (KeyboardInterrupt)."""
        if self._module is None:
            self._mod()
        consts = ()
        if self._const:
            args, consts = self._split_constants(args)
        keys = []
        vals = []
        try:
            for a in args:
                k, v = _describe(a)
                keys.append(k)
                vals.append(v)
        except _Unsupported as e:
            i = len(keys)
            raise self._bad_arg(i, args[i], f"unsupported argument type {e}") from None
        for i, k in enumerate(keys):
            a = args[i]
            if k[0] != "H" and (hasattr(a, "__cuda_array_interface__") or hasattr(a, "__dlpack__")):
                raise self._bad_arg(i, a, "the CPU back end takes host arrays (NumPy), not device arrays")
        key = tuple(keys)
        ck = self._cpu.get((key, consts))
        if ck is None:
            m = self._mod()
            constants = [(p, v) for p, _t, v in consts]
            ck = self._cpu_kernel(m, key, args, constants)
            self._cpu[(key, consts)] = ck
        if ck.cooperative and not cooperative and not self._auto_cooperative:
            raise LaunchError(
                f"kernel `{self.__name__}`: launch rejected: the kernel synchronizes the whole grid "
                "(`cg.this_grid().sync()`), so it needs a cooperative launch "
                "(`device.launch(..., cooperative=True)`), on the CPU back end as on a GPU",
                self.__name__,
            )
        host = [i for i, k in enumerate(key) if k[0] == "H"]
        for n, i in enumerate(host):
            if not vals[i].flags.writeable and ck.may_store(i):
                raise _read_only_error(self, i)
            for j in host[n + 1 :]:
                if (ck.may_store(i) or ck.may_store(j)) and np.may_share_memory(vals[i], vals[j]):
                    raise ArgumentError(
                        f"{self.__name__}(): host arrays {i} (parameter `{self._param_name(i)}`) and "
                        f"{j} (parameter `{self._param_name(j)}`) share memory, and the kernel may "
                        "store to one of them; a GPU launch copies each host array on its own, so they "
                        "would not see each other's stores (the CPU back end refuses it too)"
                    )
        # Arrays are read and written in place (no copy in and out): a C-contiguous array as
        # it is, any other through a contiguous copy written back after the launch.
        host_vals = []
        copies = []  # (array, its contiguous copy), each kept alive during the launch
        for k, v in zip(key, vals):
            if k[0] == "H":
                # (`np.ascontiguousarray` makes a 0-d array 1-D; `np.require` keeps it 0-d.)
                c = np.require(v, requirements="C")
                copies.append((v, c))
                host_vals.append((tuple(c.shape), c.__array_interface__["data"][0]))
            else:
                host_vals.append(v)
        # A launch that fails leaves the arrays as they were, as a GPU launch on host arrays
        # does (the native side restores what the kernel stored).
        ck.launch(
            tuple(host_vals),
            _dim3(grid, "grid"),
            _dim3(block, "block"),
            int(shared or 0),
            seed,
            int(threads),
            bool(deterministic),
            bool(race_check),
            None if cluster is None else _dim3(cluster, "cluster"),
        )
        for a, c in copies:
            if c is not a and a.flags.writeable and a.size:
                a[...] = c

    def _launch_host(self, spec, vals, grid, block, stream, shared, seed=None, cooperative=False, cluster=None):
        """Host NumPy arrays: copied to the device, launched, synchronized, copied back."""
        ordinal = spec.launcher.device
        h = _stream_handle(stream)
        host = spec.host_arrays
        for n, i in enumerate(host):
            if not vals[i].flags.writeable and spec.kernel.may_store(i):
                raise _read_only_error(self, i)
            # Each host array gets a device copy of its own, so two that share memory would
            # not see each other's stores: refused where the kernel may store to either.
            for j in host[n + 1 :]:
                if (spec.kernel.may_store(i) or spec.kernel.may_store(j)) and np.may_share_memory(
                    vals[i], vals[j]
                ):
                    raise ArgumentError(
                        f"{self.__name__}(): host arrays {i} (parameter `{self._param_name(i)}`) and "
                        f"{j} (parameter `{self._param_name(j)}`) share memory, and the kernel may "
                        "store to one of them; each host array is copied to the GPU on its own, so "
                        "they would not see each other's stores: pass device arrays (CuPy, PyTorch) "
                        "to share memory on the GPU"
                    )
        bufs = {}
        for i in spec.host_arrays:
            a = vals[i]
            c = np.ascontiguousarray(a)
            buf = _native.Buffer.upload(ordinal, c.tobytes() if c.size else b"\0")
            bufs[i] = (a, buf)
            vals[i] = (buf.ptr, a.shape, _c_strides(a.shape))
        spec.launcher.launch(tuple(vals), grid, block, shared, h, seed, cooperative, cluster)
        _native.synchronize(ordinal, h)
        if self._bounds_check:
            spec.launcher.check_bounds()
        for i, (a, buf) in bufs.items():
            if spec.kernel.may_store(i) and a.size:
                data = buf.download()[: a.nbytes]
                a[...] = np.frombuffer(data, dtype=a.dtype).reshape(a.shape)

    # Reflection needing a GPU -----------------------------------------------------------
    def _loaded(self, args, types, device):
        m = self._mod()
        ordinal = _default_device() if device is None else device
        t = self._arg_types(args, types)
        return m.compile(self.__name__, t, _arch_for(ordinal), 3).load(ordinal)

    def attributes(self, *args, types=None, device: Optional[int] = None) -> dict:
        """Registers, shared/local/const bytes, max threads per block (needs a GPU)."""
        return self._loaded(args, types, device).attributes()

    def occupancy(self, *args, block: int, shared: int = 0, types=None, device=None) -> dict:
        """Resident blocks and warps per multiprocessor at ``block`` threads (needs a GPU)."""
        return self._loaded(args, types, device).occupancy(block, shared)

    def suggested_block_size(self, *args, shared: int = 0, types=None, device=None) -> Tuple[int, int]:
        """``(block threads, min grid blocks)`` that maximize occupancy (needs a GPU)."""
        return self._loaded(args, types, device).suggested_block_size(shared)

    def check_bounds(self, *args, types=None, device=None) -> None:
        """After synchronizing: raises BoundsError for the first out-of-range access of this
        ``bounds_check=True`` specialization (and clears the record)."""
        self._loaded(args, types, device).check_bounds()

    @property
    def specializations(self) -> list:
        """The argument types of each specialization made so far (for the GPU, then for the
        CPU back end)."""
        gpu = [s.kernel.param_types for s in self._specs.values()]
        return gpu + [ck.param_types for ck in self._cpu.values()]


def _c_strides(shape) -> tuple:
    out = []
    acc = 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


# The spec's `launch(f, *args, grid, block, stream, shared=0)`, plus pydevice's `seed=None`
# (the seed of the kernel's `cuda.device.random` numbers) and `cooperative=False` (True: every
# block resident at once, as `cg.this_grid().sync()` needs; docs/semantics.md §17.4): runs
# kernel `f` on `args` with
# a `grid` of blocks of `block` threads (each an int or a tuple of 1 to 3 ints) and `shared`
# bytes of dynamic shared memory, asynchronously on `stream` (a cuda.core Stream, anything
# with `__cuda_stream__`, a CuPy or PyTorch stream, or a handle; None is the default
# stream). The extension `cluster=(x, y, z)` (sm_90, semantics §18.1) runs it in thread block
# clusters of that shape; a grid that is not a whole number of clusters is refused
# (LaunchError). `backend="cpu"` runs it on the CPU back end (docs/semantics.md §22), where
# `deterministic=True` runs the blocks one after the other in grid order and `race_check=True`
# raises RaceError for a data race (default: `PYDEVICE_RACECHECK`). It is native: the fast
# path when the kernel has a launcher for arguments of these kinds, else `Kernel._launch`.
launch = _native.launch


class Func(_Entry):
    """A ``@func``: callable in device code, and on the host (compiled by Cranelift)."""

    _decorator_kind = "func"

    def __init__(self, fn, options: dict, dialect: str = "device"):
        super().__init__(fn, options, dialect)
        self.interop = bool(options.get("interop", False))
        self._host: Dict[Any, Any] = {}

    def __repr__(self) -> str:
        return f"<pydevice func {self.__qualname__}>"

    def __call__(self, *args):
        if self._module is None:
            self._mod()
        consts = ()
        if self._const:
            args, consts = self._split_constants(args)
        keys = []
        vals = []
        # Host arrays are passed as their own memory where the layout allows; `copies`
        # collects the others (argument, array, its copy).
        arrays: List[Tuple[int, np.ndarray]] = []
        copies: List[Tuple[int, np.ndarray, np.ndarray]] = []
        try:
            ann = self._annotated
            for i, a in enumerate(args):
                k, v = _describe(a)
                want = _wanted_layout(ann[i]) if ann and i < len(ann) else None
                k, v = _host_arg(k, v, i, arrays, copies, want)
                keys.append(k)
                vals.append(v)
        except _Unsupported as e:
            i = len(keys)
            raise self._bad_arg(i, args[i], f"unsupported argument type {e}") from None
        key = tuple(keys)
        hf = self._host.get((key, consts))
        if hf is None:
            m = self._mod()
            constants = [(p, v) for p, _t, v in consts]
            hf = m.host_function(self.__name__, self._types_of_keys(key, args, m), constants)
            self._host[(key, consts)] = hf
        if arrays:
            self._check_host_arrays(hf, arrays, copies)
        try:
            result = hf.call_raw(tuple(vals), self._params)
        finally:
            # Also after an exception: the stores made before it stay, as in place.
            for i, a, c in copies:
                if hf.may_store(i) and a.size:
                    a[...] = c
        return _host_result(result, hf.result_type, self.underlying.__globals__)

    def _check_host_arrays(self, hf, arrays, copies) -> None:
        """Refuses read-only arrays where the function may store, and copied arrays that
        share memory with another array argument when either may be stored to (the copy
        would not see the other's stores, nor the other the copy's)."""
        for i, a in arrays:
            if not a.flags.writeable and hf.may_store(i):
                raise _read_only_error(self, i)
        for i, a, _c in copies:
            for j, b in arrays:
                if b is a or not (hf.may_store(i) or hf.may_store(j)):
                    continue
                if np.may_share_memory(a, b):
                    raise ArgumentError(
                        f"{self.__name__}(): argument {i} (parameter `{self._param_name(i)}`) must be "
                        f"copied (its strides {a.strides} or its address are not multiples of its item "
                        f"size {a.itemsize}), but it shares memory with argument {j} (parameter "
                        f"`{self._param_name(j)}`), which the copy would not see; pass an aligned "
                        "array (np.ascontiguousarray)"
                    )


def _host_result(v, rtype: str, g: dict):
    if isinstance(v, tuple) and len(v) == 3 and v[0] == "struct" and isinstance(v[2], list):
        cls = g.get(v[1]) or _STRUCTS.get(v[1])
        fields = {n: _host_result(x, "", g) for n, x in v[2]}
        if cls is not None and hasattr(cls, "_fields"):
            return cls(**fields)
        return fields
    if rtype in _types.VECTORS:
        return _types.VECTORS[rtype](*v)
    if isinstance(v, tuple):
        return tuple(_host_result(x, "", g) for x in v)
    return v


_STRUCTS: Dict[str, type] = {}


def _make_struct(cls, align: Optional[int]):
    ann = cls.__dict__.get("__annotations__", {})
    fields = tuple(ann)
    defaults = {f: cls.__dict__[f] for f in fields if f in cls.__dict__}
    ns = {
        k: v
        for k, v in cls.__dict__.items()
        if k not in fields and k not in ("__dict__", "__weakref__")
    }

    def __init__(self, *args, **kwargs):
        if len(args) > len(fields):
            raise TypeError(f"{cls.__name__}() takes {len(fields)} fields, {len(args)} given")
        values = dict(zip(fields, args))
        for k, v in kwargs.items():
            if k not in fields:
                raise TypeError(f"{cls.__name__}() has no field `{k}`")
            if k in values:
                raise TypeError(f"{cls.__name__}() got field `{k}` twice")
            values[k] = v
        for f in fields:
            if f not in values:
                if f not in defaults:
                    raise TypeError(f"{cls.__name__}() missing field `{f}`")
                values[f] = defaults[f]
            object.__setattr__(self, f, values[f])

    def __setattr__(self, k, v):
        raise AttributeError(f"{cls.__name__} is immutable (heterogeneous structs are)")

    def __repr__(self):
        return f"{cls.__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in fields)})"

    def __eq__(self, other):
        return type(other) is type(self) and all(getattr(self, f) == getattr(other, f) for f in fields)

    def __hash__(self):
        return hash(tuple(getattr(self, f) for f in fields))

    def __iter__(self):
        return iter(tuple(getattr(self, f) for f in fields))

    ns.update(
        __init__=__init__,
        __setattr__=__setattr__,
        __repr__=__repr__,
        __eq__=__eq__,
        __hash__=__hash__,
        __iter__=__iter__,
        __slots__=fields,
        _fields=fields,
        _align=align,
        underlying=cls,
    )
    for f in fields:
        ns.pop(f, None)
    new = type(cls.__name__, cls.__bases__, ns)
    new.__qualname__ = cls.__qualname__
    new.__module__ = cls.__module__
    _HANDLERS[new] = _h_struct
    _native.register_struct_type(new, list(fields))
    _STRUCTS[cls.__name__] = new
    return new


# ---------------------------------------------------------------------------------------
# Decorators


def kernel(fn=None, **options):
    """``@kernel`` / ``@kernel(interop=, max_threads=, min_blocks=, fastmath=, contract=,
    lineinfo=, debug=, bounds_check=, wraparound=, assertions=, cluster=)``: a kernel.
    Options given here that the source's decorator does not say (``kernel(max_threads=64)(f)``)
    are written into it, so the compiler sees them as source options (they take precedence);
    unknown keywords raise ``TypeError`` and out-of-range values ``ValueError`` here."""
    _check_options("@kernel", options, _KERNEL_OPTIONS)
    _check_option_values("@kernel", options)
    if fn is None:
        return lambda f: Kernel(f, options)
    return Kernel(fn, options)


def func(fn=None, *, interop: bool = False, **options):
    """``@func`` / ``@func(interop=True)``: a heterogeneous function, callable in device code
    and on the host."""
    _check_options("@func", options, _FUNC_OPTIONS - {"interop"})
    options = dict(options, interop=interop)
    _check_option_values("@func", options)
    if fn is None:
        return lambda f: Func(f, options)
    return Func(fn, options)


def struct(cls=None, *, align: Optional[int] = None, **options):
    """``@struct`` / ``@struct(align=N)``: a heterogeneous struct type; instances are built
    on the host (``Particle(1.0, 2.0)``) and passed by value."""
    _check_options("@struct", options, {"align"})
    if align is not None and (not isinstance(align, int) or align <= 0 or align & (align - 1)):
        raise ValueError(f"@struct(align=...) must be a power of two, not {align!r}")
    if cls is None:
        return lambda c: _make_struct(c, align)
    if not isinstance(cls, type):
        raise TypeError(f"@struct decorates a class, not {type(cls).__name__}")
    return _make_struct(cls, align)


def _split_signature(sig: str) -> list:
    """Splits numba notation ``"float32[:], (int32, float32), point"`` at top-level commas
    (a ``void(...)`` wrapper is dropped)."""
    s = sig.strip()
    m = re.match(r"^\w+\s*\((.*)\)$", s)
    if m and not s.startswith("Record("):
        s = m.group(1)
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def compile_ptx(f, signature, *, arch: str = "sm_90", opt: int = 3) -> str:
    """PTX of ``f`` (a ``@kernel`` or ``@func``) for ``signature`` (numba notation, such as
    ``"float32[::1], int32"``, or a list of type names), without a GPU."""
    return f.ptx(types=signature, arch=arch, opt=opt)


def header(obj) -> str:
    """The CUDA C++ header of the module of ``obj`` (a decorated function): its ``@struct``
    types and ``extern "C"`` declarations of its annotated ``interop=True`` functions."""
    m = obj._mod()
    stem = os.path.splitext(os.path.basename(obj._source.filename))[0]
    return m.header(stem)


def synchronize(stream=None, device: Optional[int] = None) -> None:
    """Waits for the work on ``stream`` (all streams of the device when None), raising
    DeviceFault for a kernel that faulted. The device is the stream's, else ``device``, else
    the default one. With the CPU back end selected (``PYDEVICE_BACKEND=cpu``) and no stream
    given, there is nothing to wait for: CPU launches are synchronous."""
    if _BACKEND == "cpu" and stream is None and device is None:
        return
    h, d = (None, None) if stream is None else _stream_place(stream)
    if d is None:
        d = _default_device() if device is None else device
    _native.synchronize(d, h)


def device_count() -> int:
    """The number of GPUs (0 without a driver)."""
    return _native.device_count()


def can_access_peer(a: int, b: int) -> bool:
    """Whether kernels on GPU ``a`` can load and store GPU ``b``'s memory directly (peer
    access over NVLink or PCIe), which ``launch(..., peer=True)`` needs (a GPU is its own
    peer)."""
    return bool(_native.can_access_peer(int(a), int(b)))


def _contiguous_place(a, what: str):
    """(data pointer, bytes, GPU or None) of a C-contiguous device array."""
    try:
        k, v = _describe(a)
    except _Unsupported as e:
        raise TypeError(f"copy: {what} is not a device array: {e}") from None
    if k[0] not in ("A", "D", "T"):
        raise TypeError(f"copy: {what} must be a device array (DLPack or CUDA Array Interface)")
    data, shape, strides = v
    if _layout(shape, strides) != "C":
        raise ValueError(f"copy: {what} must be C-contiguous (shape {tuple(shape)}, strides {tuple(strides)})")
    n = 1
    for x in shape:
        n *= x
    itemsize = a.itemsize if hasattr(a, "itemsize") else a.element_size()
    return data, n * itemsize, k[4]


def _cpu_device_bytes(a: np.ndarray, what: str) -> np.ndarray:
    """The bytes of a C-contiguous array of the CPU device (a NumPy array), as a view."""
    if not a.flags.c_contiguous:
        raise ValueError(f"copy: {what} must be C-contiguous (shape {a.shape}, strides {a.strides})")
    return a.reshape(-1).view(np.uint8)


def _cpu_device_copy(dst: np.ndarray, src: np.ndarray, via_host: bool) -> str:
    """`copy` on the CPU back end's device, whose memory is host memory (see `copy`)."""
    d = _cpu_device_bytes(dst, "dst")
    s = _cpu_device_bytes(src, "src")
    if d.size != s.size:
        raise ValueError(f"copy: dst has {d.size} bytes, src {s.size}")
    if not dst.flags.writeable:
        raise ValueError("copy: dst is read-only")
    np.copyto(d, s)  # overlapping arrays are copied as if through a temporary
    return "host" if via_host else "same_device"


def copy(dst, src, *, stream=None, src_stream=None, via_host: bool = False) -> str:
    """Copies the C-contiguous device array ``src`` into ``dst`` (the same number of bytes),
    which may be on another GPU, and returns how: ``"same_device"``, ``"peer"`` (peer to peer,
    where the driver allows it between the two GPUs) or ``"host"`` (through host memory).
    The copy is ordered after the work already on ``src_stream`` (a stream of ``src``'s GPU;
    default: ``stream``, else the default stream) and ``stream`` (of ``dst``'s GPU), and
    before work submitted to either later. ``via_host=True`` takes the host path anyway.

    With the CPU back end selected (``PYDEVICE_BACKEND=cpu``), its device's memory is host
    memory: two NumPy arrays are copied there, synchronously (CPU launches are), and the copy
    is ``"same_device"`` (``"host"`` with ``via_host=True``); the streams order nothing."""
    if _BACKEND == "cpu" and isinstance(dst, np.ndarray) and isinstance(src, np.ndarray):
        return _cpu_device_copy(dst, src, via_host)
    dp, dn, dd = _contiguous_place(dst, "dst")
    sp, sn, sd = _contiguous_place(src, "src")
    if dn != sn:
        raise ValueError(f"copy: dst has {dn} bytes, src {sn}")
    dh, dsd = _stream_place(stream)
    sh, ssd = (dh, dsd) if src_stream is None else _stream_place(src_stream)
    dd = dsd if dd is None else dd
    sd = ssd if sd is None else sd
    dd = _default_device() if dd is None else dd
    sd = _default_device() if sd is None else sd
    if src_stream is None and sd != dd:
        sh = 0  # `stream` belongs to dst's GPU; src's work is ordered on its default stream
    return _native.copy(dp, dd, dh, sp, sd, sh, dn, via_host)


def set_cache_dir(path: Optional[str], shared: bool = False) -> None:
    """Turns on the on-disk specialization cache (the Rust ``KernelCache``'s, shared with
    other embedders using the same directory), or off with None. Also ``PYDEVICE_CACHE_DIR``.

    The directory must be the user's own and not writable by others (its entries are code
    that runs with the reader's rights): another one raises ``ValueError``, unless
    ``shared=True``, which trusts everyone who can write it (a cache a group shares on
    purpose)."""
    _native.set_disk_cache(path, bool(shared))


def cache_stats() -> dict:
    """Hits, misses, compiles and disk hits/writes of the specialization cache."""
    return _native.cache_stats()


def machine_representation() -> str:
    """The spec's ``machine_representation()``: ``"itanium"`` on Linux."""
    return _native.machine_representation()


def _cache_dir_from_environment() -> None:
    """``PYDEVICE_CACHE_DIR``, read at import. A directory the cache refuses leaves the disk
    cache off with a warning: the import (host calls, ``set_cache_dir``) still works."""
    path = os.environ.get("PYDEVICE_CACHE_DIR")
    if not path:
        return
    try:
        set_cache_dir(path)
    except ValueError as e:
        import warnings

        warnings.warn(
            f"PYDEVICE_CACHE_DIR: {e}; the on-disk kernel cache is off (set another directory "
            "with pydevice.set_cache_dir)",
            RuntimeWarning,
            stacklevel=2,
        )


_cache_dir_from_environment()
