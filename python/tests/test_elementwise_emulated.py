"""The generated elementwise kernels that unravel a multi-index (tests/fixtures/kernels/
squared_diff_broadcast.gen.py and squared_diff_generic_f64_strided.gen.py, the goldens of
tests/kernels.rs) run on the CPU emulator against NumPy, no GPU needed: below 2**31 elements
the index is unravelled in unsigned 32-bit arithmetic by extents read before the loop, over a
grid-stride loop of fewer threads than elements, for broadcast and strided operands. Operands
C-contiguous over the whole shape come as 1-D views indexed by `i`, and a row broadcast along
the leading axes as the 1-D row indexed by `i` modulo its length (docs/semantics.md §20.3), as
ElementwiseKernel.bind passes them."""

import pathlib

import numpy as np

import simt_emulator as emu

K = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "kernels"
rng = np.random.default_rng(2020)


def run(name, entry, x, y, z, grid=2, block=64):
    g = emu.load(K / f"{name}.gen.py")
    emu.launch(g[entry], (grid, 1), block, [x, y, z, np.int32(z.size)])
    return z


def test_broadcast_2d():
    x = rng.standard_normal((37, 29)).astype(np.float32)
    row = rng.standard_normal(29).astype(np.float32)
    z = np.zeros_like(x)
    # x and z are C-contiguous: flat views; y, stride 0 along axis 0: the row itself.
    run("squared_diff_broadcast", "squared_diff", x.reshape(-1), row, z.reshape(-1))
    np.testing.assert_allclose(z, (x - row) ** 2, rtol=1e-6)


def test_strided_3d_float64():
    base = rng.standard_normal((6, 5, 22))
    x = base[::2, :, 1::3]  # (3, 5, 7), no unit stride
    y = rng.standard_normal((3, 5, 7))
    z = np.zeros((3, 5, 7))
    # z is C-contiguous over the whole shape: a flat view; x and y are unravelled.
    g = "squared_diff_generic"
    run("squared_diff_generic_f64_strided", g, x, y, z.reshape(-1), grid=1, block=32)
    np.testing.assert_allclose(z, (x - y) ** 2, rtol=1e-12)
