"""Cases of `pydevice.fuse` with CuPy's semantics (docs/semantics.md §20.5), shared by the
host tests (test_fuse_host.py, NumPy arrays, no GPU) and the GPU tests (test_kernels_gpu.py,
CuPy arrays): each case is a function written for NumPy and a maker of its arguments; the
reference is NumPy running the same function unfused on copies of the arguments.

`check(fn, args, xp)` runs `pydevice.fuse(fn)` on `xp` copies of `args` (NumPy arrays and
scalars) and compares the results (values and dtypes) and the arguments afterwards (in-place
operators, `out=`) with NumPy's; when NumPy raises, the fused call must raise the same type.
"""

import numpy as np

import pydevice

rng = np.random.default_rng(7)

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint32", "uint64", "float16",
          "float32", "float64", "complex64", "complex128"]
NUMERIC = [d for d in DTYPES if d != "bool"]
INTS = ["int8", "uint8", "int16", "int32", "int64", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]


def shaped_random(shape, dtype, scale=5, seed=None):
    """An array of `shape` with values in [0, scale) (CuPy's testing.shaped_random), no
    zeros (so that divisions are defined)."""
    dt = np.dtype(dtype)
    r = np.random.default_rng(seed) if seed is not None else rng
    if dt.kind == "b":
        return r.integers(0, 2, shape).astype(dt)
    x = (r.random(shape) * scale).astype(dt) if dt.kind in "fc" else r.integers(0, scale, shape).astype(dt)
    if dt.kind == "c":
        x = x + 1j * (r.random(shape) * scale).astype(dt)
    x[x == 0] = 1
    return x


def _to(xp, a):
    if isinstance(a, np.ndarray):
        return a.copy() if xp is np else xp.asarray(a)
    return a


def _host(a):
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        return a.get()
    return a


def _compare(got, want, rtol, where):
    if want is None:
        assert got is None, f"{where}: expected None, got {got!r}"
        return
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), f"{where}: {got!r} vs {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, rtol, f"{where}[{i}]")
        return
    g, w = np.asarray(_host(got)), np.asarray(want)
    assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, NumPy's is {w.dtype}"
    assert g.shape == w.shape, f"{where}: shape {g.shape}, NumPy's is {w.shape}"
    if w.dtype.kind in "fc":
        tol = max(rtol, 2e-3 if w.dtype in (np.float16,) else rtol)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(g, w, err_msg=where)


def check(fn, args, xp=np, rtol=1e-6):
    """`pydevice.fuse(fn)` on `xp` copies of `args` against NumPy's `fn` on copies."""
    ref_args = [_to(np, a) for a in args]
    fused_args = [_to(xp, a) for a in args]
    try:
        with np.errstate(all="ignore"):
            want = fn(*ref_args)
        err = None
    except Exception as e:  # noqa: BLE001 (whatever NumPy raises, the fused call must too)
        want, err = None, e
    fused = pydevice.fuse(fn)
    if err is not None:
        try:
            fused(*fused_args)
        except type(err) if not isinstance(err, TypeError) else TypeError:
            return
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"NumPy raised {err!r}, the fused call {e!r}") from e
        raise AssertionError(f"NumPy raised {err!r}, the fused call did not")
    got = fused(*fused_args)
    _compare(got, want, rtol, "result")
    for i, (g, w) in enumerate(zip(fused_args, ref_args)):
        if isinstance(w, np.ndarray):
            _compare(g, w, rtol, f"argument {i} after the call")
    return got


def _arg(kind, dtype, seed):
    dt = np.dtype(dtype)
    if kind == "array":
        return shaped_random((3, 4), dt, seed=seed)
    if kind == "scalar":
        return dt.type(3)
    return dt.type(3).item()  # a Python number


OPERATORS = {
    "neg": lambda x, y: -x, "add": lambda x, y: x + y, "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y, "div": lambda x, y: x / y, "pow": lambda x, y: x ** y,
    "eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y,
}
BITWISE = {
    "lshift": lambda x, y: x << y, "rshift": lambda x, y: x >> y, "and": lambda x, y: x & y,
    "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y, "invert": lambda x, y: ~x,
}
SIDES = [("array", "array"), ("array", "scalar"), ("array", "primitive"), ("scalar", "array"),
         ("primitive", "array")]


def _iadd(x, y):
    x += y


def _isub(x, y):
    x -= y


def _imul(x, y):
    x *= y


def _itruediv(x, y):
    x /= y


def _imod(x, y):
    x %= y


def _ipow(x, y):
    x **= y


def _iand(x, y):
    x &= y


def _ilshift(x, y):
    x <<= y


INPLACE = {"iadd": _iadd, "isub": _isub, "imul": _imul, "itruediv": _itruediv,
           "imod": _imod, "ipow": _ipow, "iand": _iand, "ilshift": _ilshift}


def _setitem_ellipsis(x, y):
    y[...] = x
    return y


def _setitem_slice(x, y):
    y[:] = x
    return y


def _postmap_inplace(x, y):
    y += x
    res = np.sum(x, 0)
    y += res


def _sum_div_clip(x):
    x = x / np.sum(x)
    return np.clip(x, 0.02, 0.07)


def _out_add(x, y, z):
    np.add(x, y, out=z)
    return z


def _copyto(x, y):
    np.copyto(y, x * 2)
    return y


def _attrs(x, y):
    return x.astype(y.dtype) * x.ndim + x.shape[0] + (x.size > 3)


def _same_memory(x, y, z):
    x += y
    return x + z


def _batchnorm(x, gamma, beta, running_mean, running_var, size, adjust):
    # The shape of CuPy's fusion example (tests/cupy_tests/core_tests/fusion_tests): two
    # reductions, views with None, and arguments updated in place.
    decay = 0.9
    eps = 2e-5
    expander = (None, slice(None), None, None)
    gamma = gamma[expander]
    beta = beta[expander]
    mean = np.sum(x, axis=(0, 2, 3)) / size
    diff = x - mean[expander]
    var = np.sum(diff * diff, axis=(0, 2, 3)) / size
    inv_std = 1. / np.sqrt(var + eps)
    y = gamma * diff * inv_std[expander] + beta
    running_mean *= decay
    running_mean += (1 - decay) * mean
    running_var *= decay
    running_var += (1 - decay) * adjust * var
    return y


def _batchnorm_args():
    x = shaped_random((4, 6, 5, 7), "float32", scale=10)
    size = x.size // 6
    return [x, np.ones(6), np.zeros(6), np.zeros(6), np.ones(6), size, size / max(size - 1., 1.)]


#: name -> (function, argument maker)
CASES = {
    "methods_sum": (lambda x: x.sum(), lambda: [shaped_random((3, 4), "int32")]),
    "methods_prod_f64": (lambda x: x.prod(), lambda: [shaped_random((3, 4), "float64", scale=2)]),
    "methods_max_min": (lambda x: (x.max(), x.min()), lambda: [shaped_random((3, 4), "int16")]),
    "methods_all_any": (lambda x: (x.all(), x.any(axis=1)), lambda: [shaped_random((3, 4), "float32") - 2]),
    "copy": (lambda x: x.copy(), lambda: [shaped_random((3, 4), "uint8")]),
    "astype": (lambda x: x.astype(np.float16) + x.astype("int8"), lambda: [shaped_random((3, 4), "float64")]),
    "sum_axes": (lambda x: (x.sum(axis=0), np.sum(x, axis=-1), x.sum(axis=(0, 2)),
                            np.sum(x, 1, keepdims=True)), lambda: [shaped_random((2, 3, 4), "int64")]),
    "sum_dtype": (lambda x: x.sum(axis=0, dtype=np.float32), lambda: [shaped_random((3, 4), "int8")]),
    "sum_int8_widens": (lambda x: x.sum(), lambda: [np.full((300,), 100, np.int8)]),
    "sum_bad_axis": (lambda x: np.sum(x, axis=2), lambda: [shaped_random((3, 4), "int64")]),
    "sum_repeated_axis": (lambda x: np.sum(x, axis=(0, -2)), lambda: [shaped_random((3, 4), "int64")]),
    "sum_empty": (lambda x: np.sum(x, axis=1), lambda: [np.zeros((2, 0, 3), np.int64)]),
    "mean": (lambda x: (x.mean(), np.mean(x, axis=0)), lambda: [shaped_random((3, 4), "int32")]),
    "premap": (lambda x, y: np.sum(x * 3 + y, 0), lambda: [shaped_random((3, 4), "int64"), shaped_random((3, 4), "int64")]),
    "postmap": (lambda x, y: np.sum(x, 1) + 3, lambda: [shaped_random((3, 4), "int64"), shaped_random((3, 4), "int64")]),
    "postmap_two_arrays": (lambda x, y: np.sum(x, 0) + y, lambda: [shaped_random((3, 4), "int64"), shaped_random((3, 4), "int64")]),
    "postmap_broadcast_error": (lambda x, y: np.sum(x, 1) + y, lambda: [shaped_random((3, 4), "int64"), shaped_random((3, 4), "int64")]),
    "premap_postmap": (lambda x, y: np.sum(np.sqrt(x) + y, 0) * 2 + y, lambda: [shaped_random((3, 4), "int64"), shaped_random((3, 4), "int64")]),
    "postmap_inplace": (_postmap_inplace, lambda: [shaped_random((3, 4), "int64"), shaped_random((3, 4), "int64")]),
    "two_reductions": (lambda x, y: (x.sum(0), y.sum(None)), lambda: [shaped_random((3, 4), "int64"), shaped_random((3, 4), "int64")]),
    "two_reductions_elementwise": (lambda x, y: x.sum(1) + y.sum(), lambda: [shaped_random((3, 4), "int64"), shaped_random((3, 4), "int64")]),
    "multistage": (lambda x: x.prod(axis=1).sum(axis=1), lambda: [shaped_random((3, 4, 5), "int64")]),
    "multistage_elementwise": (lambda x: (np.sqrt(x).prod(axis=0) + x).sum(axis=1) * 2, lambda: [shaped_random((3, 4, 5), "int64")]),
    "multistage_multiaxis": (lambda x: x.prod(axis=(-1, 1)).sum(axis=(0, 1)), lambda: [shaped_random((3, 4, 5, 6), "int64", scale=2)]),
    "nansum_nanprod": (lambda x: (np.nansum(x), np.nanprod(x, axis=0)), lambda: [np.where(shaped_random((3, 4), "float64") > 3, np.nan, 1.5)]),
    "sum_div_clip": (_sum_div_clip, lambda: [shaped_random((3, 4), "int64", scale=10)]),
    "where": (lambda x, y: np.where(x > y, x, y * 2), lambda: [shaped_random((3, 4), "float32"), shaped_random((3, 4), "int16")]),
    "where_scalars": (lambda x: np.where(x > 2, 1, 0.5), lambda: [shaped_random((3, 4), "int8")]),
    "clip": (lambda x: np.clip(x, 2, 4), lambda: [shaped_random((3, 4), "int32", scale=8)]),
    "out_add": (_out_add, lambda: [shaped_random((3, 4), "int16"), shaped_random((4,), "int8"), np.zeros((3, 4), np.float32)]),
    "copyto": (_copyto, lambda: [shaped_random((3, 4), "int16"), np.zeros((3, 4), np.int32)]),
    "setitem_ellipsis": (_setitem_ellipsis, lambda: [shaped_random((3, 4), "int32"), shaped_random((3, 4), "int32")]),
    "setitem_slice": (_setitem_slice, lambda: [shaped_random((3, 4), "float32"), shaped_random((3, 4), "int32")]),
    "divmod": (lambda x, y: divmod(x, y), lambda: [shaped_random((3, 4), "int32") - 2, shaped_random((3, 4), "int32")]),
    "ufuncs": (lambda x: np.sqrt(x) + np.exp(-x) * np.log1p(x) - np.arctan2(x, 2.0) + np.square(x),
               lambda: [shaped_random((3, 4), "float32")]),
    "ufunc_methods_of_numpy_scalars": (lambda x: np.float32(2) * x + np.int8(3), lambda: [shaped_random((3, 4), "int8")]),
    "logical": (lambda x, y: np.logical_and(x > 1, y < 3) | np.logical_not(x > 3), lambda: [shaped_random((3, 4), "float64"), shaped_random((3, 4), "int32")]),
    "complex_compare": (lambda x, y: (x < y, x >= y, np.maximum(x, y)),
                        lambda: [np.array([1 + 2j, 1 + 1j, 2 + 0j, 1 + 1j], np.complex64),
                                 np.array([1 + 1j, 1 + 2j, 1 + 5j, 1 + 1j], np.complex64)]),
    "complex_max_min": (lambda x: (x.max(), x.min(axis=0)), lambda: [shaped_random((3, 4), "complex128")]),
    "complex_ops": (lambda x, y: x * y - x / y + abs(x) + x.real * y.imag + np.conj(x),
                    lambda: [shaped_random((3, 4), "complex64"), shaped_random((3, 4), "complex64")]),
    "attrs": (_attrs, lambda: [shaped_random((3, 4), "int16"), shaped_random((3, 4), "float32")]),
    "broadcast": (lambda x, y: x * y + 1, lambda: [shaped_random((3, 1, 4), "int64"), shaped_random((3, 5, 4), "int64")]),
    "broadcast_error": (lambda x, y: x + y, lambda: [shaped_random((3, 4), "int64"), shaped_random((3,), "int64")]),
    "same_memory": (None, None),  # arguments that alias: see test_fuse_host.py
    "itruediv_int_raises": (_itruediv, lambda: [shaped_random((3, 4), "int32"), shaped_random((3, 4), "int32")]),
    "bool_arithmetic": (lambda x, y: (x + y, x * y, np.maximum(x, y)), lambda: [shaped_random((3, 4), "bool"), shaped_random((3, 4), "bool")]),
    "uint64_with_signed_raises": (lambda x, y: x & y, lambda: [shaped_random((3, 4), "uint64"), shaped_random((3, 4), "int64")]),
    "returns_tuple_of_one": (lambda x: (x + 1,), lambda: [shaped_random((3, 4), "float32")]),
    "returns_list": (lambda x: [x + 1, x.sum()], lambda: [shaped_random((3, 4), "float32")]),
    "returns_argument": (lambda x, y: y, lambda: [shaped_random((3, 4), "float32"), shaped_random((3, 4), "int8")]),
    "index_int": (lambda x: x[1] + x[-1, 0, 2], lambda: [shaped_random((2, 3, 4), "int32")]),
    "index_slices": (lambda x: x[:, ::-1] * 2 + x[1:, None, 0], lambda: [shaped_random((2, 3, 4), "float32")]),
    "index_ellipsis_newaxis": (lambda x: x[..., 2] + x[1, ...][None], lambda: [shaped_random((2, 3, 4), "int16")]),
    "index_expression": (lambda x, y: (x + y)[1] - y[0], lambda: [shaped_random((3, 4), "int64"), shaped_random((4,), "int8")]),
    "index_twice": (lambda x, y: x[0][1] + x[1] + y[0] + x[1][0] + x, lambda: [shaped_random((3, 4), "float64"), shaped_random((4,), "int32")]),
    "index_of_reduction": (lambda x: x.sum(axis=0)[1:] * x[0, 1:], lambda: [shaped_random((3, 4), "int32")]),
    "index_out_of_range": (lambda x: x[3], lambda: [shaped_random((2, 3, 4), "int32")]),
    "index_too_many": (lambda x: x[0, 0, 0], lambda: [shaped_random((2, 3), "int32")]),
    "rounding": (lambda x: (np.floor(x), np.ceil(x), np.trunc(x), np.rint(x), np.fix(x),
                            np.around(x, 1), *np.modf(x), np.sign(x), np.signbit(x)),
                 lambda: [np.array([-2.5, -1.5, -0.5, -0.0, 0.4, 0.5, 1.5, 2.5, 7.7, np.inf, -np.inf, np.nan], np.float32)]),
    "rounding_float16_and_ints": (lambda x, i: (np.floor(x) + np.cbrt(x), np.rint(i), np.sign(i), np.degrees(x)),
                                  lambda: [shaped_random((3, 4), "float16") - 2, shaped_random((3, 4), "int16") - 2]),
    "float_binary": (lambda x, y: (np.logaddexp(x, y), np.logaddexp2(x, y), np.ldexp(x, y), np.copysign(x, -y)),
                     lambda: [shaped_random((3, 4), "float32"), shaped_random((3, 4), "int32")]),
    "complex_functions": (lambda z: (np.exp(z), np.log(z), np.sqrt(z), np.sin(z), np.tanh(z), np.log10(z),
                                     np.isfinite(z), np.angle(z), np.reciprocal(z), np.sum(np.exp(z))),
                          lambda: [shaped_random((3, 4), "complex128")]),
    "nested_results_fmod_rdivmod": (lambda a, b: (np.fmod(a, b), divmod(3, b), [a.sum()]),
                                     lambda: [shaped_random((3, 4), "float32", scale=10) - 4, shaped_random((3, 4), "int32", scale=4)]),
    "returns_empty_tuple": (lambda x: (), lambda: [shaped_random((3, 4), "int8")]),
    "batchnorm": (_batchnorm, _batchnorm_args),
    "frexp": (lambda x, i: (*np.frexp(x), *np.frexp(i)),
              lambda: [np.array([0.0, -0.0, np.inf, -np.nan, 3.0, -0.75, 5e-324, 1e308]), shaped_random((3, 4), "int8")]),
    "nextafter": (lambda x, y: (np.nextafter(x, y), np.nextafter(x.astype(np.float32), -y)),
                  lambda: [np.array([0.0, -0.0, 1.0, -0.75, 0.5, np.inf, np.nan, 5e-324, 1e308]),
                           np.array([2.0, -1.0, 1.0, 3.0, 0.0, 0.0, 1.0, 1.0, np.inf])]),
    "i0": (lambda x: (np.i0(x), np.i0(x).sum(axis=0)), lambda: [shaped_random((3, 4), "float32", scale=20) - 10]),
    "complex_inverse_trig": (lambda z: (np.arcsin(z), np.arccos(z), np.arctan(z), np.arcsinh(z),
                                        np.arccosh(z), np.arctanh(z)),
                             lambda: [(shaped_random((3, 4), "complex128", scale=2) - 1) * 2]),
    "sinc": (lambda x, i: (np.sinc(x), np.sinc(i)), lambda: [np.array([0.0, 0.5, -1.5, 2.0], np.float32), shaped_random((4,), "int16")]),
}
del CASES["same_memory"]
