# matmul_tiled: c = a @ b for square float32 matrices, through 16 x 16 tiles of a and b
# staged in shared memory. One element of c a thread.
# Benchmark: 2048 x 2048 (17 GFLOP a launch); 2-D launch, block (16, 16),
# grid (n / 16, n / 16). n must be a multiple of TILE.
from cuda import device

TILE = 16


@device.kernel
def matmul_tiled(a, b, c):
    sa = device.shared_array((TILE, TILE), device.float32)
    sb = device.shared_array((TILE, TILE), device.float32)
    tx = device.thread_idx.x
    ty = device.thread_idx.y
    col, row = device.tid(2)
    n = a.shape[0]

    acc = 0.0
    for t in range(0, n, TILE):
        sa[ty, tx] = a[row, t + tx]
        sb[ty, tx] = b[t + ty, col]
        device.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]
        device.syncthreads()
    c[row, col] = acc
