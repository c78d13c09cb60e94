"""The cupyx.jit dialect: ``from pydevice.cupyx import jit`` instead of
``from cupyx import jit``.

``@jit.rawkernel()`` makes a kernel launched as cupyx launches one:
``kernel(grid, block, args, shared_mem=0, stream=None)`` (``stream=None`` is CuPy's current
stream when CuPy is imported). pydevice rewrites this import to ``from cupyx import jit`` in
the source it compiles, so the compiler reads the module with cupyx's rules.
"""

from __future__ import annotations

import sys

from . import _core


class RawKernel(_core.Kernel):
    """A ``@jit.rawkernel()`` kernel."""

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None, **kwargs):
        if stream is None and "cupy" in sys.modules:
            stream = sys.modules["cupy"].cuda.get_current_stream()
        args = tuple(args)
        if not self._dispatcher.try_launch(args, grid, block, stream, shared_mem):
            self._launch(args, grid, block, stream, shared_mem)


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
