"""scripts/numba_suite.py's capture (issue 30): what it writes for numba-cuda's kernels that
it could not express before. No GPU and no pydevice build needed (numba for one test)."""

import enum
import importlib.util
import os
import types

import pytest


def _suite():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "numba_suite.py")
    spec = importlib.util.spec_from_file_location("numba_suite", path)
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    return suite


class Shape(enum.IntEnum):
    circle = 2


class Other(enum.IntEnum):
    two = 2


KERNEL = """from numba import cuda

@cuda.jit
def f(a, b, out):
    out[0] = a == b
    out[2] = a is b
    out[3] = (a is not b)
"""


def test_is_between_members_of_different_enums_is_numbas_constant():
    suite = _suite()
    folded = suite.fold_enum_identity(KERNEL, "f", ["a", "b", "out"], [Shape.circle, Other.two, None])
    assert "out[2] = False" in folded and "out[3] = (True)" in folded
    assert "out[0] = a == b" in folded
    # members of one enum keep `is` (equality of their numbers)
    same = suite.fold_enum_identity(KERNEL, "f", ["a", "b", "out"], [Shape.circle, Shape.circle, None])
    assert same == KERNEL
    # a parameter the kernel reassigns cannot be folded
    rebound = KERNEL.replace("    out[0] = a == b\n", "    a = b\n")
    with pytest.raises(suite.Uncapturable):
        suite.fold_enum_identity(rebound, "f", ["a", "b", "out"], [Shape.circle, Other.two, None])


def test_eager_device_signature_keeps_its_result_type():
    """A device function compiled eagerly (`@cuda.jit("i8(i8)", device=True)`, as numba-cuda's
    fib1) is written with its result type, which a recursive function needs."""
    pytest.importorskip("numba", reason="numba-cuda is not installed")
    from numba.core import types as nbt

    suite = _suite()

    def fib1(n):
        if n < 2:
            return n
        return fib1(n - 1) + fib1(n - 2)

    class Eager:
        _can_compile = False
        targetoptions = {"device": True}
        py_func = staticmethod(fib1)
        overloads = {(nbt.int64,): types.SimpleNamespace(
            signature=types.SimpleNamespace(return_type=nbt.int64))}

    sb = suite.SourceBuilder()
    sb.add_global("fib1", Eager())
    assert sb.functions[0].startswith('@cuda.jit("int64(int64)", device=True)\ndef fib1(n):')
