"""The generated column and warp reductions (tests/fixtures/kernels/*.gen.py, the goldens
of tests/kernels.rs) run on the CPU emulator against NumPy, no GPU needed: the Columns
kernel with 1 to 40 slices of the reduced axis and its `_final` pass (the same tiles over the slices), narrow tiles, a 3-D
middle axis, strided views, fewer rows than row groups, and the warp-per-row loop with its
four-at-a-time part and remainder. The launcher's part is done by hand: the input as the
kernel sees it (kept dimensions first, then reduced), the grid (tiles, slices) and the
partial results (`slices × n_out`)."""

import pathlib

import numpy as np
import pytest

import simt_emulator as emu

K = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "kernels"
rng = np.random.default_rng(16)


def columns(name, view, out_shape, splits, tile):
    """Runs the Columns kernel `name` on `view` (kept..., reduced) and returns y."""
    g = emu.load(K / f"{name}.gen.py")
    n_out = int(np.prod(out_shape))
    n_red = view.size // n_out
    y = np.zeros(out_shape, view.dtype)
    partials = np.zeros(splits * n_out if splits > 1 else 0, view.dtype)
    args = [view, y, partials, n_out, n_red]
    emu.launch(g["l2norm"], (-(-n_out // tile), splits), 256, args)
    if splits > 1:
        emu.launch(g["l2norm_final"], (-(-n_out // tile), 1), 256, args)
    return y


def l2(view):
    return np.sqrt((view.astype(np.float64) ** 2).sum(axis=-1))


@pytest.mark.parametrize("splits", [1, 3, 40])
def test_columns_kernel_with_slices(splits):
    x = rng.standard_normal((103, 45)).astype(np.float32)
    np.testing.assert_allclose(columns("sum_columns_tile", x.T, (45,), splits, 32), l2(x.T), rtol=1e-5)
    x = rng.standard_normal((89, 3))
    np.testing.assert_allclose(columns("sum_columns_narrow", x.T, (3,), splits, 4), l2(x.T), rtol=1e-12)
    x = rng.standard_normal((3, 71, 40)).astype(np.float32)
    v = x.transpose(0, 2, 1)
    np.testing.assert_allclose(columns("sum_middle_axis_columns", v, (3, 40), splits, 32), l2(v), rtol=1e-5)


@pytest.mark.parametrize("splits", [1, 3])
def test_columns_kernel_with_two_reduced_dimensions(splits):
    x = rng.standard_normal((6, 5, 40, 32)).astype(np.float32)
    v = x.transpose(1, 3, 0, 2)  # kept (5, 32), reduced (6, 40)
    got = columns("sum_axes_0_2_columns", v, (5, 32), splits, 32)
    np.testing.assert_allclose(got, l2(v.reshape(5, 32, -1)), rtol=1e-5)


def test_columns_kernel_odd_inputs():
    x = rng.standard_normal((300, 70)).astype(np.float32)
    v = x[::2].T  # every other row
    np.testing.assert_allclose(columns("sum_columns_tile", v, (70,), 5, 32), l2(v), rtol=1e-5)
    x = rng.standard_normal((5, 33)).astype(np.float32)  # fewer rows than row groups
    for splits in (1, 3):
        np.testing.assert_allclose(columns("sum_columns_tile", x.T, (33,), splits, 32), l2(x.T), rtol=1e-5)
    e = np.zeros((0, 33), np.float32)  # nothing to reduce
    np.testing.assert_array_equal(columns("sum_columns_tile", e.T, (33,), 1, 32), np.zeros(33))


def test_narrowed_columns_kernel():
    """The tile narrowed to 8 outputs so that one slice is enough (`column_shape`): a block
    reads 32 row groups of 8 columns; odd extents, strided rows, fewer rows than groups."""
    x = rng.standard_normal((200, 44)).astype(np.float32)
    np.testing.assert_allclose(columns("sum_columns_narrowed", x.T, (44,), 1, 8), l2(x.T), rtol=1e-5)
    v = x[::3, 1:].T  # every third row, 43 columns
    np.testing.assert_allclose(columns("sum_columns_narrowed", v, (43,), 1, 8), l2(v), rtol=1e-5)
    x = rng.standard_normal((20, 9)).astype(np.float32)  # fewer rows than row groups
    np.testing.assert_allclose(columns("sum_columns_narrowed", x.T, (9,), 1, 8), l2(x.T), rtol=1e-5)


@pytest.mark.parametrize("n_red", [1, 31, 32, 128, 129, 300])
def test_warp_rows_kernel(n_red):
    g = emu.load(K / "sum_warp_rows.gen.py")
    x = rng.standard_normal((16, n_red))
    y = np.zeros(16)
    emu.launch(g["l2norm"], (2, 1), 256, [x, y, np.zeros(0), 16, n_red])
    np.testing.assert_allclose(y, l2(x), rtol=1e-12)


@pytest.mark.parametrize("n_red", [0, 1, 3, 4, 5, 16, 17])
def test_thread_columns_kernel(n_red):
    g = emu.load(K / "sum_thread_columns.gen.py")
    x = rng.standard_normal((n_red, 300)).astype(np.float32)
    y = np.zeros(300, np.float32)
    emu.launch(g["l2norm"], (2, 1), 256, [x.T, y, np.zeros(0, np.float32), 300, n_red])
    np.testing.assert_allclose(y, l2(x.T), rtol=1e-5)


@pytest.mark.parametrize("splits", [1, 3])
def test_rows_split_kernel(splits):
    # Few long rows: a tile of one row per block, 256 threads along the row.
    x = rng.standard_normal((3, 5000)).astype(np.float32)
    np.testing.assert_allclose(columns("sum_rows_split", x, (3,), splits, 1), l2(x), rtol=1e-5)
