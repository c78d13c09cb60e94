# The sum of a float32 array, two ways, for the grid-sync benchmark (bench/grid_sync/README.md):
# `grid_sum` is one cooperative kernel (partial sums, `cg.this_grid().sync()`, block 0 adds
# the partials); `partials` then `finish_kernel` is the same algorithm as two launches.
# Launch shape: `grid` blocks of 256 threads, `grid` at most what is co-resident; `part` holds
# one float32 per warp of the grid.
from cuda import device
from cuda.device import cg


@device.func
def phase1(x, part):
    # A @func shall be heterogeneous (E0243): cooperative groups are device-only.
    if device.target(device.is_device):
        grid = cg.this_grid()
        tile = cg.tiled_partition(cg.this_thread_block(), 32)
        acc = device.float32(0)
        i = grid.thread_rank()
        n = len(x)
        while i < n:
            acc += x[i]
            i += grid.num_threads()
        acc = cg.reduce(tile, acc, 'add')
        if tile.thread_rank() == 0:
            part[grid.thread_rank() // 32] = acc


@device.func
def finish(part, out, sh):
    # A @func shall be heterogeneous (E0243): cooperative groups are device-only.
    if device.target(device.is_device):
        # One block adds the partials.
        block = cg.this_thread_block()
        tile = cg.tiled_partition(block, 32)
        acc = device.float32(0)
        j = block.thread_rank()
        while j < len(part):
            acc += part[j]
            j += block.num_threads()
        acc = cg.reduce(tile, acc, 'add')
        if tile.thread_rank() == 0:
            sh[tile.meta_group_rank()] = acc
        block.sync()
        if tile.meta_group_rank() == 0:
            v = device.float32(0)
            if tile.thread_rank() < tile.meta_group_size():
                v = sh[tile.thread_rank()]
            v = cg.reduce(tile, v, 'add')
            if tile.thread_rank() == 0:
                out[0] = v


@device.kernel
def grid_sum(x, part, out):
    sh = device.shared_array(32, device.float32)
    phase1(x, part)
    cg.this_grid().sync()
    if cg.this_grid().block_rank() == 0:
        finish(part, out, sh)


@device.kernel
def partials(x, part):
    phase1(x, part)


@device.kernel
def finish_kernel(part, out):
    sh = device.shared_array(32, device.float32)
    finish(part, out, sh)
