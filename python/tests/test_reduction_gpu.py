"""ReductionKernel's five strategies on the GPU against NumPy (docs/semantics.md §20.4):
random float32/float64/int32 inputs, 2-D and 3-D, axis 0, 1, (0, 2), None, keepdims, odd
shapes (one row, one column, prime extents, empty), non-contiguous views; split column
reductions are reproducible bit for bit. Skipped without a GPU or CuPy."""

import numpy as np
import pytest

import pydevice

rng = np.random.default_rng(1620)

SUM = pydevice.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum")
L2NORM = pydevice.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")

# (shape, axis, strategy for a C-contiguous array)
CASES = [
    ((4096, 300), 0, "Columns"),  # split: 10 tiles x 16 slices
    ((65536, 64), 0, "Columns"),  # 2 tiles x 256 slices
    ((100_003, 3), 0, "Columns"),  # a tile of 4, prime rows
    ((997, 1009), 0, "Columns"),  # prime extents, 3 slices
    ((64, 1 << 17), 0, "Columns"),  # 4096 tiles: unsplit
    ((7, 1000, 33), 1, "Columns"),  # 3-D middle axis (a narrowed tile of 8: unsplit)
    ((1024, 16), 0, "Columns"),  # many outputs of 1024 rows: tiles narrowed to 8, unsplit
    ((1024, 256), 0, "Columns"),
    ((1024, 4096), 0, "Columns"),
    ((7, 1000, 33), (0, 2), "Warp"),
    ((6, 5, 40, 32), (0, 2), "Columns"),  # two reduced dimensions that do not merge
    ((50, 6, 70), (0, 1), "Columns"),  # two leading axes merged into one
    ((1000, 7), 1, "Thread"),  # short rows
    ((16, 2048), 0, "Thread"),
    ((997, 1009), 1, "Warp"),
    ((16, 4096), 1, "Block"),
    ((16, 100_000), 1, "Columns"),  # few long rows: a tile of one row, 12 slices
    ((997, 1009), None, "Grid"),
    ((1, 500), 0, "Thread"),  # one row
    ((500, 1), 0, "Grid"),  # one column
    ((1, 500), 1, "Grid"),
    ((3, 5, 7), (0, 1, 2), "Grid"),
    ((0, 7), 0, "Thread"),  # empty reduction: the identity
    ((7, 0), 0, None),  # no outputs
]


def rand(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return rng.integers(-50, 50, size=shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def check(got, x, axis, keepdims, dtype):
    want = x.astype(np.float64 if np.dtype(dtype).kind == "f" else np.int64).sum(axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, want.astype(dtype))
        return
    n_red = max(1, x.size // max(1, want.size))
    eps = 2e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=eps * n_red)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape,axis,strategy", CASES)
def test_every_strategy_against_numpy(cupy, shape, axis, strategy, keepdims, dtype):
    x = rand(shape, dtype)
    if strategy is not None:
        assert SUM.strategy(x, axis=axis, keepdims=keepdims) == strategy
    got = SUM(cupy.asarray(x), axis=axis, keepdims=keepdims)
    check(cupy.asnumpy(got), x, axis, keepdims, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_non_contiguous_views(cupy, dtype):
    base = rand((1203, 2 * 331 + 1), dtype)
    d = cupy.asarray(base)
    views = [
        (lambda a: a[::2, 1::2], 0),  # every other row and column: Columns over strided rows
        (lambda a: a[::2, 1::2], 1),
        (lambda a: a.T, 1),  # a transpose reduced over its (non-contiguous) last axis
        (lambda a: a.T, 0),
        (lambda a: a[::-1, ::3], 0),  # negative strides
        (lambda a: a[5:900].reshape(-1, 5, 2 * 331 + 1)[:, :, ::7], 1),  # 3-D middle axis
        (lambda a: a[5:900].reshape(-1, 5, 2 * 331 + 1)[:, :, ::7], (0, 2)),
    ]
    for view, axis in views:
        got = cupy.asnumpy(SUM(view(d), axis=axis))
        check(got, view(base), axis, False, dtype)


def test_split_columns_are_reproducible_and_post_map_runs_once(cupy):
    x = rand((1 << 17, 96), "float32")
    d = cupy.asarray(x)
    assert L2NORM.strategy(x, axis=0) == "Columns"
    first = cupy.asnumpy(L2NORM(d, axis=0))
    np.testing.assert_allclose(first, np.sqrt((x.astype(np.float64) ** 2).sum(axis=0)), rtol=1e-4)
    for _ in range(5):
        assert (cupy.asnumpy(L2NORM(d, axis=0)) == first).all()
    # The bench's shape, float64.
    y = rand((1 << 14, 1024), "float64")
    got = cupy.asnumpy(SUM(cupy.asarray(y), axis=0))
    np.testing.assert_allclose(got, y.sum(axis=0), rtol=1e-9, atol=1e-9 * y.shape[0])


def test_torch_and_numpy_inputs(cupy, torch):
    x = rand((5000, 130), "float32")
    t = torch.as_tensor(x, device="cuda")
    got = SUM(t, axis=0)
    np.testing.assert_allclose(got.cpu().numpy(), x.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-2)
    np.testing.assert_allclose(SUM(x, axis=0), x.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-2)
