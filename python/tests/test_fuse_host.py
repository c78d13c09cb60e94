"""`pydevice.fuse` with CuPy's semantics on NumPy arrays (the host path, no GPU): operators
over dtype pairs and scalar kinds, in-place operators, reductions with axis/keepdims/dtype,
plans of several kernels, routines, complex comparisons, broadcasting, against NumPy running
the same functions unfused (fuse_cases.py; the GPU twins are in test_kernels_gpu.py)."""

import numpy as np
import pytest

import pydevice
from fuse_cases import BITWISE, CASES, INPLACE, OPERATORS, SIDES, _arg, check, shaped_random

PAIRS = [("int8", "uint8"), ("int32", "float32"), ("int64", "uint64"), ("float16", "float32"),
         ("uint8", "int64"), ("float64", "complex64"), ("int16", "int16"), ("uint32", "int32"),
         ("complex128", "float16"), ("float32", "float32")]
INT_PAIRS = [("int8", "uint8"), ("int64", "uint64"), ("uint8", "int64"), ("int16", "int16"),
             ("uint32", "int32"), ("uint16", "uint16")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name):
    fn, make = CASES[name]
    check(fn, make())


@pytest.mark.parametrize("sides", SIDES, ids=lambda s: "-".join(s))
@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_operators(op, sides):
    for d1, d2 in PAIRS:
        if op in ("lt", "le", "gt", "ge") and "complex" in d1 + d2 and "scalar" not in sides and False:
            continue
        x, y = _arg(sides[0], d1, 0), _arg(sides[1], d2, 1)
        check(OPERATORS[op], [x, y], rtol=1e-5)


@pytest.mark.parametrize("sides", SIDES, ids=lambda s: "-".join(s))
@pytest.mark.parametrize("op", sorted(BITWISE))
def test_bitwise_operators(op, sides):
    for d1, d2 in INT_PAIRS:
        x, y = _arg(sides[0], d1, 0), _arg(sides[1], d2, 1)
        check(BITWISE[op], [x, y])


@pytest.mark.parametrize("sides", SIDES[:3], ids=lambda s: "-".join(s))
@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_operators(op, sides):
    for dt in ("int8", "uint16", "int64", "float16", "float32", "float64", "complex64"):
        x, y = _arg(sides[0], dt, 0), _arg(sides[1], dt, 1)
        check(INPLACE[op], [x, y], rtol=1e-5)


@pytest.mark.parametrize("d1", ["int8", "uint32", "float16", "float64", "bool"])
def test_astype_to_every_dtype(d1):
    for d2 in ["bool", "int8", "uint8", "int32", "int64", "uint64", "float16", "float32",
               "float64", "complex64", "complex128"]:
        check(lambda x: x.astype(d2), [shaped_random((3, 4), d1, scale=10)])


@pytest.mark.parametrize("shape", [(1,), (3, 4), (2, 1, 4), (2, 0, 3)])
def test_sum_every_axis(shape):
    for axis in [None, -4, -3, -2, -1, 0, 1, 2, 3, (0,), (0, 1), (1, 2), (0, 2)]:
        check(lambda x: np.sum(x, axis=axis), [shaped_random(shape, "int64", scale=10)])
        check(lambda x: x.sum(axis, keepdims=True), [shaped_random(shape, "int64", scale=10)])


def test_floor_divide_and_remainder():
    for d1, d2 in PAIRS:
        if "complex" in d1 + d2:
            continue
        for sides in SIDES:
            x, y = _arg(sides[0], d1, 0), _arg(sides[1], d2, 1)
            check(lambda a, b: (a // b, a % b), [x, y], rtol=1e-5)


def test_arguments_that_share_memory():
    from fuse_cases import _same_memory

    base = shaped_random((4, 4), "int64")
    x = base.copy()
    want = _same_memory(x, x, x.T)
    x2 = base.copy()
    got = pydevice.fuse(_same_memory)(x2, x2, x2.T)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x2, x)


def test_one_plan_per_signature_and_fused_functions_inline():
    @pydevice.fuse()
    def inner(x, y):
        return x * y + 1

    @pydevice.fuse(kernel_name="outer")
    def outer(x, y):
        return inner(x, y).sum(axis=0) - inner(y, x)

    x, y = shaped_random((3, 4), "float32"), shaped_random((3, 4), "float32")
    np.testing.assert_allclose(outer(x, y), (x * y + 1).sum(axis=0) - (y * x + 1), rtol=1e-6)
    outer(x, y)
    assert len(outer._plans) == 1
    outer(x.astype(np.float64), y)
    assert len(outer._plans) == 2
    # The plan: a reduction, then the elementwise kernel, named after the function.
    src = outer.source(x, y)
    assert "def outer_t2(" in src and "def outer(" in src


def test_what_fuse_refuses_says_what_to_do():
    x = shaped_random((3, 4), "float32")
    with pytest.raises(TypeError, match="np.where"):
        pydevice.fuse(lambda a: a if a > 0 else -a)(x)
    with pytest.raises(TypeError, match="not supported in a fused function"):
        pydevice.fuse(lambda a: np.sort(a))(x)
    with pytest.raises(TypeError, match="only basic subscripts"):
        pydevice.fuse(lambda a: a[a > 1])(x)

    def setitem(a):
        a[0] = 1

    with pytest.raises(TypeError, match="whole-array assignment"):
        pydevice.fuse(setitem)(x)
    with pytest.raises(TypeError, match="math's"):
        import math

        pydevice.fuse(lambda a: math.sqrt(a))(x)


def test_python_int_out_of_range_is_numpy_overflow_error():
    x = shaped_random((3, 4), "uint8")
    with pytest.raises(OverflowError):
        np.add(x, -1)
    with pytest.raises(OverflowError):
        pydevice.fuse(lambda a: a + (-1))(x)
