"""``cuda.device.random``: pydevice's extension for random numbers in device code.

``rand(dtype=float)`` draws a uniform number in [0, 1) and ``randn(dtype=float)`` a standard
normal one, of ``float32`` or ``float64`` (the dialect's ``float`` by default), from a
counter-based Philox4x32-10 stream: the launch's seed, the thread's global index and the
thread's call count select the numbers (docs/semantics.md §6.4). Launch with
``device.launch(k, ..., seed=N)`` to fix the seed; without one each launch draws its own.

``rand`` and ``randn`` are compiled, never run by Python: in a ``@func`` called on the host
they continue the host stream that :func:`seed` sets, with the same numbers as that thread
of a kernel launched with that seed.
"""

from __future__ import annotations

from ._native import set_host_stream as _set_host_stream

__all__ = ["rand", "randn", "seed"]


def _device_only(name: str):
    def f(*args, **kwargs):
        raise TypeError(f"cuda.device.random.{name} can only be used in device code (or a @func)")

    f.__name__ = name
    f.__qualname__ = name
    return f


rand = _device_only("rand")
randn = _device_only("randn")


def seed(seed: int, thread: int = 0) -> None:
    """Makes ``rand``/``randn`` in ``@func``s called on the host (on this thread) continue the
    stream of ``seed`` as thread ``thread``, from its first call."""
    _set_host_stream(int(seed), int(thread))
