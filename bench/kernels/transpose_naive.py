# transpose_naive: dst[c, r] = src[r, c] for a float32 matrix, one element a thread.
# Reads are coalesced along rows of src; writes stride down columns of dst.
# Benchmark: 8192 x 8192; 2-D launch, block (32, 8), grid (cols / 32, rows / 8).
from cuda import device


@device.kernel
def transpose_naive(src, dst):
    col, row = device.tid(2)
    if row < src.shape[0] and col < src.shape[1]:
        dst[col, row] = src[row, col]
