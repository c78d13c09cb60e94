# conv2d: out = 5 x 5 correlation of a float32 image with w, zero outside the image:
#   out[i, j] = sum_{ky, kx} w[ky, kx] * img[i + ky - 2, j + kx - 2]
# Each block computes a 32 x 32 tile of out from a 36 x 36 tile of img (the tile and its
# 2-pixel halo) staged in shared memory, with w; each thread computes 4 rows of a column.
# Benchmark: 8192 x 8192; 2-D launch, block (32, 8), grid (w / 32, h / 32).
# Both sides must be multiples of TILE.
from cuda import device

K = 5
R = 2  # K // 2
TILE = 32
ROWS = 8  # block_dim.y
SIDE = 36  # TILE + 2 * R


@device.kernel
def conv2d(img, w, out):
    tile = device.shared_array((SIDE, SIDE), device.float32)
    ws = device.shared_array((K, K), device.float32)
    tx = device.thread_idx.x
    ty = device.thread_idx.y
    h = img.shape[0]
    wd = img.shape[1]
    x0 = device.block_idx.x * TILE
    y0 = device.block_idx.y * TILE

    t = ty * TILE + tx
    if t < K * K:
        ws[t // K, t % K] = w[t // K, t % K]
    for yy in range(ty, SIDE, ROWS):
        for xx in range(tx, SIDE, TILE):
            # uint32 like block_idx: above or left of the image these wrap to huge
            # values, which the comparisons with the (int64) shape reject
            gy = y0 + yy - R
            gx = x0 + xx - R
            v = 0.0
            if gy >= 0 and gy < h and gx >= 0 and gx < wd:
                v = img[gy, gx]
            tile[yy, xx] = v
    device.syncthreads()

    for r in range(0, TILE, ROWS):
        acc = 0.0
        for ky in range(K):
            for kx in range(K):
                acc += ws[ky, kx] * tile[ty + r + ky, tx + kx]
        out[y0 + ty + r, x0 + tx] = acc
