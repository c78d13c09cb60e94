"""The cupyx.jit dialect: ``from pydevice.cupyx import jit`` instead of
``from cupyx import jit``.

``@jit.rawkernel()`` makes a kernel launched as cupyx launches one:
``kernel(grid, block, args, shared_mem=0, stream=None)`` (``stream=None`` is CuPy's current
stream when CuPy is imported) or ``kernel[grid, block](*args)``. pydevice rewrites this import
to ``from cupyx import jit`` in the source it compiles, so the compiler reads the module with
cupyx's rules.

As in CuPy (docs/semantics.md §15.4):

- a kernel that synchronizes the grid (``jit.cg.this_grid().sync()``) is launched
  cooperatively without being asked to;
- a program the compiler refuses raises a :class:`~pydevice.errors.CompileError` that is also
  the exception CuPy raises for it: ``NameError`` for a name that is not defined (its message
  leads with CuPy's ``Unbound name: x``), ``TypeError`` for a type error, ``ValueError`` for
  the rest.
"""

from __future__ import annotations

import re
import sys

from . import _core
from .errors import CompileError


class JitNameError(CompileError, NameError):
    """A cupyx.jit kernel reads a name that is not defined (CuPy raises ``NameError``)."""


class JitTypeError(CompileError, TypeError):
    """A cupyx.jit kernel has a type error (CuPy raises ``TypeError``)."""


class JitValueError(CompileError, ValueError):
    """A cupyx.jit kernel is refused for another reason (CuPy raises ``ValueError``)."""


# Diagnostic codes whose CuPy exception is a TypeError: wrong types of operands, arguments,
# annotations, truth values and attributes. (E0203, bad indexing and unpacking — `x, =
# jit.grid(1)` — is CuPy's ValueError, as Python's unpacking of the wrong count is.)
_TYPE_CODES = {"E0107", "E0202", "E0205", "E0207", "E0212", "E0250", "E0251"}
_UNBOUND = re.compile(r"name `([^`]+)` is not defined")


def _cupyx_error(e: CompileError, unusable=None) -> CompileError:
    """``e`` as the exception class CuPy raises for the first error it reports. ``unusable``
    maps the names bound (in the module or an enclosing function) to values device code
    cannot use to their types: reading one is CuPy's ``TypeError``, not an unbound name."""
    first = next((d for d in e.diagnostics if d.severity == "error"), None)
    code = first.code if first is not None else ""
    if code == "E0101":
        m = _UNBOUND.search(first.message)
        if m and unusable and m.group(1) in unusable:
            return JitTypeError(
                f"`{m.group(1)}` is a {unusable[m.group(1)]}, which device code cannot use\n"
                + e.rendered,
                e.diagnostics,
            )
        head = f"Unbound name: {m.group(1)}\n" if m else ""
        return JitNameError(head + e.rendered, e.diagnostics)
    if code in _TYPE_CODES:
        return JitTypeError(e.rendered, e.diagnostics)
    return JitValueError(e.rendered, e.diagnostics)


class RawKernel(_core.Kernel):
    """A ``@jit.rawkernel()`` kernel."""

    _auto_cooperative = True

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None, **kwargs):
        if stream is None and "cupy" in sys.modules:
            stream = sys.modules["cupy"].cuda.get_current_stream()
        args = tuple(args)
        if not self._dispatcher.try_launch(args, grid, block, stream, shared_mem):
            self._launch(args, grid, block, stream, shared_mem)

    @property
    def cached_codes(self) -> dict:
        """CuPy's ``cached_codes``: the code of each specialization made so far, keyed by its
        parameter types. pydevice's code is the PTX it compiled (CuPy's is CUDA C++)."""
        with self._lock:
            specs = list(self._specs.values())
        codes: dict = {}
        for spec in specs:
            codes.setdefault(tuple(spec.kernel.param_types), spec.kernel.ptx)
        return codes

    @property
    def cached_code(self) -> str:
        """CuPy's ``cached_code``: the code of the one specialization made so far (a
        ``RuntimeError`` when there are several or none, as in CuPy)."""
        codes = self.cached_codes
        if len(codes) != 1:
            raise RuntimeError(
                f"the kernel has {len(codes)} specializations; `cached_code` needs exactly one "
                "(use `cached_codes`)"
            )
        return next(iter(codes.values()))

    def _mod(self):
        try:
            return super()._mod()
        except CompileError as e:
            raise _cupyx_error(e, self._unusable()) from None

    def _unusable(self) -> dict:
        g = getattr(self._src, "_gathered", None) if self._src is not None else None
        return dict(g.unusable) if g is not None else {}

    def _cpu_kernel(self, m, key, args, constants):
        try:
            return super()._cpu_kernel(m, key, args, constants)
        except CompileError as e:
            if isinstance(e, (JitNameError, JitTypeError, JitValueError)):
                raise
            raise _cupyx_error(e) from None

    def _specialize(self, key, args, ordinal: int, consts=()):
        try:
            return super()._specialize(key, args, ordinal, consts)
        except CompileError as e:
            if isinstance(e, (JitNameError, JitTypeError, JitValueError)):
                raise
            raise _cupyx_error(e, self._unusable()) from None


class _Jit:
    """The ``jit`` object of the cupyx dialect."""

    def rawkernel(self, *, mode: str = "cuda", device: bool = False, **options):
        _core._check_options("@jit.rawkernel", options, set())
        if device:
            return lambda fn: _core.Func(fn, {}, "cupyx")
        return lambda fn: RawKernel(fn, {}, "cupyx")

    def __getattr__(self, name):
        import pydevice

        return getattr(pydevice, name)


jit = _Jit()
