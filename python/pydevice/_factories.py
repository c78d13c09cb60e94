"""Device functions made by a host function called with constant arguments in device code
(cupyx.jit's factories, docs/semantics.md §15.4.2)::

    def g(const):
        @jit.rawkernel(device=True)
        def f(x, y):
            return x + y + const
        return f

    @jit.rawkernel()
    def k(x, y, z):
        z[0] = g(10)(x[0], y[0]) + g(20)(x[0], y[0])

CuPy calls a Python function whose arguments are all constants while it compiles, as
pydevice does here: ``g(10)`` is called on the host, and the device function it returns
becomes one *instance* of the module, its own name (``_pyd_factory_1_f``) and the constants
of its enclosing function written into its body, so that ``g(10)`` and ``g(20)`` (and the
kernel, also named ``f`` in CuPy's tests) do not clash. In an instance an ``if`` whose test is
then constant keeps only the branch taken, as CuPy's compiler does, which ends a recursion
such as ``g(step * 2)(x)`` under ``if step < 256``. The same call with the same values gives
the same instance. A call whose arguments are not constants, or whose result is not a
device function, stays as written (the compiler's diagnostic then says why).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

# Node types a constant argument or `if` test may contain.
_CONST_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp,
    ast.Compare, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)


def _is_number(v) -> bool:
    return isinstance(v, (bool, int, float, complex))


def const_eval(node: ast.AST, ns: Dict[str, Any]) -> Tuple[bool, Any]:
    """``(True, value)`` when ``node`` is arithmetic on numbers and on names bound to numbers
    in ``ns``; ``(False, None)`` otherwise."""
    for n in ast.walk(node):
        if not isinstance(n, _CONST_NODES):
            return False, None
        if isinstance(n, ast.Name) and not (n.id in ns and _is_number(ns[n.id])):
            return False, None
        if isinstance(n, ast.Constant) and not _is_number(n.value):
            return False, None
    try:
        expr = ast.Expression(body=node) if not isinstance(node, ast.Expression) else node
        value = eval(compile(ast.fix_missing_locations(expr), "<constant>", "eval"), {"__builtins__": {}}, dict(ns))
    except Exception:
        return False, None
    return _is_number(value), value


def numbers_of(fn) -> Dict[str, Any]:
    """The numbers ``fn`` can read by name: its globals', then its enclosing functions'."""
    ns = {k: v for k, v in fn.__globals__.items() if _is_number(v)}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if _is_number(v):
            ns[name] = v
        else:
            ns.pop(name, None)
    return ns


def names_of(fn) -> Dict[str, Any]:
    """Every value ``fn`` can read by name (globals, then its enclosing functions')."""
    ns = dict(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            ns[name] = cell.cell_contents
        except ValueError:
            ns.pop(name, None)
    return ns


def _source(fn) -> Optional[Tuple[ast.FunctionDef, int, int]]:
    """``fn``'s definition parsed, with its first line (0-based) and indentation in its file."""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    indent = len(lines[0]) - len(lines[0].lstrip())
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    return tree.body[0], start - 1, indent


class Factories:
    """The instances made for one compile: ``replacements`` to make in the file's lines
    (0-based line, first and end column, new text) and the instances' source (``texts``).
    ``device_of(v)`` gives the function a decorated device function wraps (None for other
    values); ``visit(fn)`` lets the caller gather what an instance reads (device functions)."""

    def __init__(self, device_of: Callable[[Any], Any], visit: Callable[[Any], None]):
        self.device_of = device_of
        self.visit = visit
        self.replacements: List[Tuple[int, int, int, str]] = []
        self.texts: List[str] = []
        self._made: Dict[Tuple[Any, Tuple[str, ...]], str] = {}

    def _call_target(self, call: ast.Call, names: Dict[str, Any], numbers: Dict[str, Any]):
        """For ``g(args)(...)``'s inner call ``g(args)``: the device function it returns, when
        ``g`` is a plain function and every argument a constant; else None."""
        if not isinstance(call.func, ast.Name) or call.keywords:
            return None
        g = names.get(call.func.id)
        if not isinstance(g, types.FunctionType):
            return None
        values = []
        for a in call.args:
            ok, v = const_eval(a, numbers)
            if not ok:
                return None
            values.append(v)
        try:
            made = g(*values)
        except Exception:
            return None
        return self.device_of(made)

    def scan(self, fn) -> None:
        """Records a replacement for each factory call in ``fn``'s source (one line each)."""
        src = _source(fn)
        if src is None:
            return
        fdef, first, indent = src
        names = names_of(fn)
        numbers = numbers_of(fn)
        for node in ast.walk(fdef):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Call)):
                continue
            inner = node.func
            if inner.lineno != inner.end_lineno:
                continue
            u = self._call_target(inner, names, numbers)
            if u is None:
                continue
            name = self.instance(u)
            self.replacements.append(
                (first + inner.lineno - 1, indent + inner.col_offset, indent + inner.end_col_offset, name)
            )

    def instance(self, u) -> str:
        """The name of the instance of device function ``u`` (with its enclosing
        function's values), made on first use."""
        numbers = numbers_of(u)
        key = (u.__code__, tuple(sorted(f"{k}={v!r}" for k, v in numbers.items() if k in u.__code__.co_freevars)))
        name = self._made.get(key)
        if name is not None:
            return name
        name = f"_pyd_factory_{len(self._made) + 1}_{u.__name__}"
        self._made[key] = name
        src = _source(u)
        if src is None:
            return name
        fdef = src[0]
        names = names_of(u)
        # The enclosing function's numbers are written in; its device functions gathered.
        subst = {k: v for k, v in numbers.items() if k in u.__code__.co_freevars}
        for k in u.__code__.co_freevars:
            if k in names and self.device_of(names[k]) is not None:
                self.visit(names[k])
        fdef = _Instantiate(self, subst, names, numbers).visit(fdef)
        fdef.name = name
        self.texts.append(ast.unparse(ast.fix_missing_locations(fdef)) + "\n")
        return name


class _Instantiate(ast.NodeTransformer):
    def __init__(self, factories: Factories, subst: Dict[str, Any], names, numbers):
        self.f = factories
        self.subst = subst
        self.names = names
        self.numbers = numbers

    def visit_Name(self, node: ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id in self.subst:
            return ast.copy_location(ast.Constant(self.subst[node.id]), node)
        return node

    def visit_If(self, node: ast.If):
        ok, v = const_eval(node.test, self.numbers)
        if not ok:
            return self.generic_visit(node)
        taken = node.body if v else node.orelse
        out = []
        for s in taken:
            r = self.visit(s)
            out.extend(r if isinstance(r, list) else [r] if r is not None else [])
        return out or [ast.copy_location(ast.Pass(), node)]

    def visit_Call(self, node: ast.Call):
        if isinstance(node.func, ast.Call):
            u = self.f._call_target(node.func, self.names, self.numbers)
            if u is not None:
                node.func = ast.copy_location(ast.Name(self.f.instance(u), ast.Load()), node.func)
        return self.generic_visit(node)
