"""Exceptions of pydevice. Every failure is one of these (or a ``TypeError`` for a wrong
argument); none of them ends the process.

- :class:`CompileError`: the program is ill-formed (or the back end failed). It carries the
  diagnostics, each with its code, message, file, line and column, and the rendered text.
- :class:`LaunchError`: the driver refused a launch (bad grid or block, too much shared
  memory). The CUDA context is still usable.
- :class:`DeviceFault`: a kernel faulted (illegal address, trap). The CUDA context is lost:
  later work on that device fails too.
- :class:`BoundsError`: a ``bounds_check=True`` kernel indexed an array out of range (also an
  ``IndexError``). The context is still usable.
- :class:`KernelRaised`: a kernel thread failed an ``assert`` or executed ``raise``; it names
  the file, line, message, thread and block. The context is still usable.
- :class:`DeviceMismatchError`: a launch mixes GPUs (an array on one, the stream or another
  array on another); it names both. Nothing was launched (also an ``ArgumentError``).
- :class:`NoDriverError`: no CUDA driver on this machine.
- :class:`DeadlockError`, :class:`RaceError`: a kernel on the CPU back end deadlocked, or (with
  ``race_check=True``) had a data race; the latter names both accesses' lines.
- :class:`ArgumentError`: an argument does not fit its parameter (also a ``TypeError``);
  :class:`ArgumentRangeError` for an integer out of its type's range (also an
  ``OverflowError``); :class:`ShapeMismatchError` for an output whose shape is not the
  arguments' broadcast shape (also a ``ValueError``).
- :class:`HostError`: a ``@func`` could not be built or called on the host;
  :class:`HostRecursionError` (also a ``RecursionError``) when a host call ran out of stack
  (recursion too deep, or a frame larger than the stack left), as CPython reports it.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional


class Diagnostic(NamedTuple):
    """One problem found in a program."""

    code: str
    message: str
    severity: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    label: str
    notes: List[str]
    rendered: str

    def __str__(self) -> str:
        return self.rendered


class PydeviceError(Exception):
    """Base class of pydevice's errors."""


class CompileError(PydeviceError):
    """The program is ill-formed: ``diagnostics`` says where and why; ``rendered`` is the text
    rustc-style (also ``str(e)``)."""

    def __init__(self, rendered: str, diagnostics=()):
        super().__init__(rendered)
        self.rendered = rendered
        self.diagnostics = [d if isinstance(d, Diagnostic) else Diagnostic(**d) for d in diagnostics]


class HostError(PydeviceError):
    """A ``@func`` could not be built or called on the host."""


class HostRecursionError(HostError, RecursionError):
    """A host call ran out of stack: recursion too deep, or a frame (a large
    ``local_array``) larger than the stack left. Nothing overflowed (each compiled function
    checks the stack on entry); catch it as Python's ``RecursionError``."""


class DriverError(PydeviceError):
    """The CUDA driver reported an error outside a launch."""


class NoDriverError(DriverError):
    """No CUDA driver is installed on this machine."""


class LaunchError(PydeviceError):
    """The driver refused a launch or could not load a kernel; the context is still usable."""

    def __init__(self, message: str, kernel: Optional[str] = None):
        super().__init__(message)
        self.kernel = kernel


class DeviceFault(PydeviceError):
    """A kernel faulted while running. The CUDA context of its device is lost."""

    context_usable = False

    def __init__(self, message: str, kernel: Optional[str] = None):
        super().__init__(message)
        self.kernel = kernel


class BoundsError(PydeviceError, IndexError):
    """A ``bounds_check=True`` kernel indexed an array out of range (the access was skipped)."""

    def __init__(self, message: str, kernel: str = "", line: int = 0, column: int = 0):
        super().__init__(message)
        self.kernel = kernel
        self.line = line
        self.column = column


class KernelRaised(PydeviceError):
    """A kernel thread failed an ``assert`` or executed ``raise`` (the first one of the launch
    is reported; that thread stopped, the others ran on, and the context is still usable)."""

    def __init__(
        self,
        message: str,
        kernel: str = "",
        line: int = 0,
        column: int = 0,
        file: str = "",
        exception: str = "",
        thread: tuple = (0, 0, 0),
        block: tuple = (0, 0, 0),
    ):
        super().__init__(message)
        self.kernel = kernel
        self.line = line
        self.column = column
        self.file = file
        #: What Python would print, e.g. ``AssertionError: n must be positive``.
        self.exception = exception
        self.thread = tuple(thread)
        self.block = tuple(block)


class RaceAccess(NamedTuple):
    """One access of a data race: where (``line``, ``column``), whether it stored, and by
    which thread (``thread``, ``block``: ``thread_idx`` and ``block_idx``)."""

    line: int
    column: int
    write: bool
    thread: tuple
    block: tuple


class RaceError(PydeviceError):
    """A kernel launched with ``race_check=True`` on the CPU back end had a data race: two
    threads accessed the same byte of shared or global memory with no barrier between them,
    at least one storing (docs/semantics.md §22). ``first`` and ``second`` are the two
    accesses (:class:`RaceAccess`, each naming its Python line), ``space`` is ``"shared"`` or
    ``"global"``."""

    def __init__(
        self,
        message: str,
        kernel: str = "",
        file: str = "",
        space: str = "",
        address: int = 0,
        first: tuple = (0, 0, False, (0, 0, 0), (0, 0, 0)),
        second: tuple = (0, 0, False, (0, 0, 0), (0, 0, 0)),
    ):
        super().__init__(message)
        self.kernel = kernel
        self.file = file
        self.space = space
        self.address = address
        self.first = RaceAccess(*first)
        self.second = RaceAccess(*second)

    @property
    def lines(self) -> tuple:
        """The two accesses' lines."""
        return (self.first.line, self.second.line)


class DeadlockError(PydeviceError):
    """A kernel run on the CPU back end deadlocked: threads wait at barriers or warp
    collectives that can never complete (the message says where each waits)."""

    def __init__(self, message: str, kernel: str = ""):
        super().__init__(message)
        self.kernel = kernel


class LinkError(PydeviceError):
    """Device code could not be linked."""


class ArgumentError(PydeviceError, TypeError):
    """An argument does not fit its parameter (also a ``TypeError``)."""


class ShapeMismatchError(ArgumentError, ValueError):
    """An output array given to an ``ElementwiseKernel`` does not have the shape the
    arguments broadcast to (also a ``ValueError``, as CuPy and NumPy raise for it; the message
    begins with CuPy's "Out shape is mismatched")."""


class ArgumentRangeError(ArgumentError, OverflowError):
    """An integer argument is out of its parameter type's range (also an ``OverflowError``,
    as numba raises for such a value)."""


class DeviceMismatchError(ArgumentError):
    """A launch mixes GPUs: an array argument is on one GPU and the launch (its stream or its
    other arrays) on another. ``found`` is the array's GPU, ``launch`` the launch's."""

    def __init__(self, message: str, kernel: str = "", found: int = -1, launch: int = -1):
        super().__init__(message)
        self.kernel = kernel
        self.found = found
        self.launch = launch
