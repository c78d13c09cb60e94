"""CuPy's call rules for ElementwiseKernel (docs/semantics.md §20.2), on NumPy arrays (the host
path), so CI checks them without a GPU; CuPy's own tests check the same through
scripts/cupy_suite.py on the GPU machine."""

import numpy as np
import pytest

import pydevice


def _noop(input_raw, output_raw):
    ins = ", ".join(f"{'raw ' if r else ''}float32 x{i}" for i, r in enumerate(input_raw))
    outs = ", ".join(f"{'raw ' if r else ''}float32 y{i}" for i, r in enumerate(output_raw))
    return pydevice.ElementwiseKernel(ins, outs, "", "kernel")


def test_invalid_kernel_name_is_a_value_error():
    with pytest.raises(ValueError, match="Invalid kernel name"):
        pydevice.ElementwiseKernel("T x", "", "", "1")
    with pytest.raises(ValueError, match="Invalid kernel name"):
        pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "1")


def test_size_only_when_every_array_is_raw():
    a = np.array([1, 2], dtype=np.float32)
    b = np.array([3, 4], dtype=np.float32)
    with pytest.raises(ValueError, match=r"^Specified 'size' can"):
        _noop((False, False), (False,))(a, b, size=2)
    with pytest.raises(ValueError, match=r"^Specified 'size' can"):
        _noop((True, False), (True,))(a, b, size=2)
    k = _noop((True, True), (False,))
    y = k(a, b, size=2)
    assert y.shape == (2,)
    with pytest.raises(ValueError, match=r"^Loop size is undecided\."):
        k(a, b)


def test_an_empty_operation_leaves_outputs_as_they_are():
    a = np.array([1, 2], dtype=np.float32)
    out = np.array([7, 8], dtype=np.float32)
    _noop((False,), (False,))(a, out)
    assert out.tolist() == [7.0, 8.0]


def test_block_size_is_validated_and_does_not_change_results():
    k = pydevice.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(k(x, 1, block_size=1), x + 1)
    with pytest.raises(ValueError):
        k(x, 1, block_size=0)


@pytest.mark.parametrize("on", ["host", "framework"])
def test_output_of_the_wrong_shape_is_a_value_error(on, request):
    # CuPy's TestElementwiseInvalidShape: `ValueError` with CuPy's words, which pydevice's
    # ShapeMismatchError is (also an ArgumentError).
    xp = np if on == "host" else request.getfixturevalue("cupy")
    f = pydevice.ElementwiseKernel("T x", "T y", "y += x")
    x = xp.arange(12).reshape(3, 4)
    y = xp.arange(4)
    with pytest.raises(ValueError, match="Out shape is mismatched") as e:
        f(x, y)
    assert isinstance(e.value, pydevice.ShapeMismatchError)
    assert isinstance(e.value, pydevice.ArgumentError)
    assert "output `y` has shape [4], but the arguments broadcast to [3, 4]" in str(e.value)
    # The right shape still runs.
    y2 = xp.zeros((3, 4), dtype=x.dtype)
    f(x, y2)
    np.testing.assert_array_equal(np.asarray(getattr(y2, "get", lambda: y2)()), np.arange(12).reshape(3, 4))


@pytest.mark.parametrize("on", ["host", "framework"])
def test_reduction_cached_codes_has_one_entry_per_specialization(on, request):
    # CuPy's TestReductionKernelCachedCode: one generated source per argument types.
    xp = np if on == "host" else request.getfixturevalue("cupy")
    kernel = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", name="cached_code")
    assert kernel._cached_codes == {}
    x = xp.arange(10)
    assert int(kernel(x)) == 45
    codes = kernel._cached_codes
    assert len(codes) == 1
    (desc, src), = codes.items()
    assert "int64" in desc and "def cached_code" in src
    kernel(x)
    assert kernel._cached_codes == codes
    assert float(kernel(x.astype(xp.float32))) == 45.0
    codes2 = kernel._cached_codes
    assert len(codes2) == 2
    assert any("float32" in d for d in codes2)
    kernel._cached_codes.clear()  # a snapshot: the kernel's record is unchanged
    assert len(kernel._cached_codes) == 2
