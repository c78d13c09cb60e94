"""ElementwiseKernel and ReductionKernel without a GPU: the generated kernels' source and PTX,
the diagnostics of bad definitions (pointing into the user's strings), and calls refused
before anything runs."""

import math

import numpy as np
import pytest

import pydevice

SQD = ("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff")


def test_contiguous_arguments_get_the_one_dimensional_kernel():
    k = pydevice.ElementwiseKernel(*SQD)
    x = np.zeros((64, 128), np.float32)
    src = k.source(x, x)
    assert "z = (x - y) * (x - y)" in src
    assert "_p_x[i]" in src and "_r0" not in src
    ptx = k.ptx(x, x)
    assert ".entry squared_diff" in ptx and "sub.rn.f32" in ptx


def test_broadcast_strided_and_scalar_arguments():
    k = pydevice.ElementwiseKernel(*SQD)
    x = np.zeros((2, 5), np.float32)
    # x and z are C-contiguous over the shape: flat; the broadcast row: modulo its length;
    # two elements per thread, `_r0` and `_s0`.
    src = k.source(x, np.zeros(5, np.float32))
    assert "_p_x[_r0]" in src and "_p_y[_r0 % _w1]" in src and "_p_z[_r0] = z" in src
    assert "_p_x[_s0]" in src and "_p_y[_s0 % _w1]" in src and "_p_z[_s0] = z" in src
    assert "_j0" not in src
    # Strided views are unravelled; the allocated output is still flat.
    src = k.source(x[:, ::2], x[:, ::2])
    assert "_p_x[_j0, _j1]" in src and "_p_x[_k0, _k1]" in src and "_p_z[_r0] = z" in src
    src = k.source(x, 5)
    assert "def squared_diff(_p_x, y, _p_z, _ind_size)" in src
    # A 4-d broadcast against a 0-d array merges to one dimension.
    assert "_p_x[i]" in k.source(np.zeros((2, 3, 4, 5), np.float32), np.float32(1))


def test_generic_placeholders_and_raw():
    g = pydevice.ElementwiseKernel("T x, T y", "T z", "\n    diff = x - y\n    z = diff * diff\n", "sdg")
    assert "diff = x - y" in g.source(np.zeros(4, np.float64), np.zeros(4, np.float64))
    sg = pydevice.ElementwiseKernel("X x, Y y", "Z z", "z = (x - y) * (x - y)", "sdsg")
    with pytest.raises(pydevice.CompileError, match="placeholder `Z`"):
        sg.source(np.zeros(4, np.float32), np.zeros(4, np.int32))
    assert "def sdsg" in sg.source(np.zeros(4, np.float32), np.zeros(4, np.int32), np.zeros(4, np.float64))
    ar = pydevice.ElementwiseKernel("T x, raw T y", "T z", "z = x + y[_ind.size() - i - 1]", "add_reverse")
    assert "y[(_ind_size) - i - 1]" in ar.source(np.zeros(8, np.float32), np.zeros(8, np.float32))


def test_cxx_bodies_get_the_python_spelling():
    with pytest.raises(pydevice.CompileError) as e:
        pydevice.ElementwiseKernel("T x, T y", "T z", "T diff = x - y;\nz = diff * diff;", "k")
    assert "diff = T(x - y)" in str(e.value)
    assert e.value.diagnostics[0].code == "E0701"
    with pytest.raises(pydevice.CompileError, match="x if x > 0 else -x"):
        pydevice.ElementwiseKernel("T x", "T z", "z = x > 0 ? x : -x", "k")


def test_body_errors_point_at_the_body():
    k = pydevice.ElementwiseKernel("T x", "T z", "z = x * nope", "k")
    with pytest.raises(pydevice.CompileError) as e:
        k.ptx(np.zeros(3, np.float32))
    d = e.value.diagnostics[0]
    assert d.code == "E0101" and d.line == 3 and d.column == 9, d


def test_bad_calls_change_nothing():
    k = pydevice.ElementwiseKernel(*SQD)
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="takes 2 inputs"):
        k(x)
    with pytest.raises(pydevice.ArgumentError, match="do not broadcast"):
        k(x, np.zeros(3, np.float32))
    out = np.full(1, 7, np.float32)
    with pytest.raises(pydevice.ArgumentError, match="has shape"):
        k(x, x, out)
    assert (out == 7).all()
    with pytest.raises(pydevice.ArgumentError, match="same_kind"):
        k(x, np.zeros(4, np.complex64))


def test_reduction_strategies_and_raw_rule():
    r = pydevice.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    x = np.zeros((2, 5), np.float32)
    assert r.strategy(x) == "Grid"
    assert r.strategy(np.zeros((64, 4096), np.float32), axis=1) == "Block"
    assert r.strategy(np.zeros((4096, 256), np.float32), axis=1) == "Warp"
    assert r.strategy(np.zeros((16, 2048), np.float32), axis=0) == "Thread"
    # Reductions over axes that are not the innermost: a tile of columns reading rows
    # (docs/semantics.md §20.4), split over block_idx.y with a `_final` pass.
    assert r.strategy(np.zeros((4096, 2048), np.float32), axis=0) == "Columns"
    assert r.strategy(np.zeros((6, 1000, 50), np.float32), axis=1) == "Columns"
    assert r.strategy(np.zeros((4, 8192, 64), np.float32), axis=(0, 2)) == "Warp"
    assert r.strategy(np.zeros((64, 1 << 18), np.float32), axis=0) == "Thread"
    cols = r.source(np.zeros((65536, 64), np.float32), axis=0)
    assert "_tree = device.shared_array(256, device.float32)" in cols and "def l2norm_final(" in cols
    assert ".entry l2norm(" in r.ptx(np.zeros((65536, 64), np.float32), axis=0)
    assert "l2norm_final" in r.source(x)
    assert ".entry l2norm" in r.ptx(x, axis=1)
    # Kept extents of 1 ((1, n) over axis 1, (n, 1) over axis 0) are a full reduction: found
    # on the H100, where the (1, 1024) row sum was a kernel that did not compile.
    for shape, axis in (((1, 1024), 1), ((1024, 1), 0), ((1, 1, 300), 2)):
        a = np.zeros(shape, np.float32)
        assert r.strategy(a, axis=axis) == "Grid"
        assert "def l2norm_final(" in r.source(a, axis=axis)
        assert ".entry l2norm(" in r.ptx(a, axis=axis)
    w = pydevice.ReductionKernel("T x, raw T w", "T y", "x * w[i % 5]", "a + b", "y = a", "0", "wsum")
    with pytest.raises(pydevice.ArgumentError, match="must lead the shape"):
        w.source(np.zeros((4, 5), np.float32), np.zeros(5, np.float32), axis=1)
    with pytest.raises(pydevice.CompileError, match="reserved in a reduction"):
        pydevice.ReductionKernel("T a", "T y", "a", "a + b", "y = a", "0", "bad")


def test_fuse_traces_into_one_kernel():
    @pydevice.fuse(kernel_name="squared_diff")
    def squared_diff(x, y):
        return (x - y) * (x - y)

    @pydevice.fuse()
    def pick(x, y):
        return np.where(x > y, np.sqrt(np.abs(x)), np.maximum(y, 0.5) * 2)

    @pydevice.fuse()
    def sum_of_products(x, y):
        return np.sum(x * y, axis=-1)

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y = np.ones(4, np.float32)
    # NumPy arguments run the Python function, as cupy.fuse does.
    np.testing.assert_array_equal(squared_diff(x, y), (x - y) ** 2)
    assert "def squared_diff(" in squared_diff.source(x, y)
    assert "out0 = ((x0 - x1) * (x0 - x1))" in squared_diff.source(x, y)
    src = pick.source(x, y)
    # Operands are converted to NumPy's loop type (here the Python numbers to float32).
    assert "(sqrt(abs(x0)) if (x0 > x1) else (max(x1, float32(0.5)) * float32(2)))" in src
    assert "from math import sqrt" in src
    src = sum_of_products.source(x, y)
    assert "b = device.float32((x0 * x1))" in src and "a = device.float32(a + b)" in src
    with pytest.raises(TypeError, match="np.where"):
        pydevice.fuse(lambda x: x if x > 0 else -x).source(x)


def test_vectorize_makes_one_kernel_per_signature():
    @pydevice.vectorize(["float32(float32, float32)", "float64(float64, float64)"], target="cuda")
    def hyp(a, b):
        return math.sqrt(a * a + b * b)

    src = hyp.source(np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert "@device.func\ndef hyp(a, b):" in src and "out0 = hyp(x0, x1)" in src
    assert "import math" in src
    x = np.zeros(4, np.float64)
    assert ".entry hyp_ufunc" in hyp._pick((x, x)).ptx(x, x)
    with pytest.raises(TypeError, match="no signature"):
        hyp.source(np.zeros(4, np.complex64), np.zeros(4, np.complex64))
    with pytest.raises(ValueError, match="target='cuda'"):
        pydevice.vectorize(["float32(float32)"], target="cpu")


def test_multiple_outputs_two_input_reductions_and_scalars_compile():
    two = pydevice.ElementwiseKernel("T x", "T y, T z", "y = x * 2\nz = x + 1", "two_outputs")
    assert ".entry two_outputs" in two.ptx(np.zeros(8, np.float32))
    dot = pydevice.ReductionKernel("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "dot")
    assert ".entry dot_final" not in dot.ptx(np.zeros(8, np.float32), np.zeros(8, np.float32))
    assert "def dot_final" in dot.source(np.zeros(8, np.float32), np.zeros(8, np.float32))
    mean = pydevice.ReductionKernel("T x, int64 count", "float64 m", "x", "a + b", "m = a / count", "0", "mean", "float64")
    assert ".entry mean" in mean.ptx(np.zeros((3, 4), np.float32), 4, axis=1)
