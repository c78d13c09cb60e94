"""GPU tests of cooperative groups from Python (docs/semantics.md §17): a grid-synchronized
sum launched with ``device.launch(..., cooperative=True)`` against NumPy, the refusal of the
same kernel launched the ordinary way and of a grid too large to be co-resident, and a tile
reduction. Skipped without a driver, a GPU or CuPy."""

import numpy as np
import pytest

from cuda import device
from cuda.device import cg


@device.kernel
def grid_sum(x, part, out):
    grid = cg.this_grid()
    tile = cg.tiled_partition(cg.this_thread_block(), 32)
    acc = device.float64(0)
    i = grid.thread_rank()
    while i < len(x):
        acc += x[i]
        i += grid.num_threads()
    acc = cg.reduce(tile, acc, 'add')
    if tile.thread_rank() == 0:
        part[grid.thread_rank() // 32] = acc
    grid.sync()
    if grid.thread_rank() == 0:
        total = device.float64(0)
        for w in range(len(part)):
            total += part[w]
        out[0] = total


@device.kernel
def tile_max(x, out):
    t = cg.tiled_partition(cg.this_thread_block(), 8)
    i = cg.this_grid().thread_rank()
    out[i] = cg.reduce(t, x[i], 'max')


def test_grid_sync_sum_with_a_cooperative_launch(cupy):
    rng = np.random.default_rng(19)
    x = rng.uniform(-1, 1, 1_000_003)
    blocks, block = 16, 256
    xd = cupy.asarray(x)
    part = cupy.zeros(blocks * block // 32)
    out = cupy.zeros(1)
    device.launch(grid_sum, xd, part, out, grid=blocks, block=block, cooperative=True)
    cupy.cuda.Device().synchronize()
    assert abs(float(out[0]) - x.sum()) < 1e-8 * len(x)
    # The ordinary launch of a grid-synchronizing kernel is refused, not a deadlock.
    with pytest.raises(device.LaunchError, match="cooperative launch"):
        device.launch(grid_sum, xd, part, out, grid=blocks, block=block)
    with pytest.raises(device.LaunchError, match="cooperative launch"):
        grid_sum[blocks, block](xd, part, out)
    # A grid larger than the device holds at once is refused with the limit.
    big = cupy.zeros(1 << 22)
    with pytest.raises(device.LaunchError, match=r"at most \d+ can be resident"):
        device.launch(grid_sum, xd, big, out, grid=1 << 16, block=block, cooperative=True)


def test_tile_reduction(cupy):
    rng = np.random.default_rng(7)
    x = rng.integers(-1000, 1000, 4096).astype(np.int32)
    out = cupy.zeros(4096, dtype=np.int32)
    device.launch(tile_max, cupy.asarray(x), out, grid=16, block=256)
    want = np.repeat(x.reshape(-1, 8).max(axis=1), 8)
    np.testing.assert_array_equal(cupy.asnumpy(out), want)
