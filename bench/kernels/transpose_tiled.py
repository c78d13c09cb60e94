# transpose_tiled: dst[c, r] = src[r, c] for a float32 matrix through a 32 x 32 tile in
# shared memory, so that both the reads and the writes are coalesced. The tile has one
# column of padding so that reading it by columns does not hit one shared-memory bank.
# A block of 32 x 8 threads moves one tile, each thread 4 elements.
# Benchmark: 8192 x 8192; 2-D launch, block (32, 8), grid (cols / 32, rows / 32).
# Both sides must be multiples of TILE.
from cuda import device

TILE = 32
PADDED = 33  # TILE + 1
ROWS = 8  # block_dim.y


@device.kernel
def transpose_tiled(src, dst):
    tile = device.shared_array((TILE, PADDED), device.float32)
    tx = device.thread_idx.x
    ty = device.thread_idx.y

    col = device.block_idx.x * TILE + tx
    row0 = device.block_idx.y * TILE
    for k in range(0, TILE, ROWS):
        tile[ty + k, tx] = src[row0 + ty + k, col]
    device.syncthreads()

    # tile (block_idx.y, block_idx.x) of src becomes tile (block_idx.x, block_idx.y) of dst
    col = device.block_idx.y * TILE + tx
    row0 = device.block_idx.x * TILE
    for k in range(0, TILE, ROWS):
        dst[row0 + ty + k, col] = tile[tx, ty + k]
