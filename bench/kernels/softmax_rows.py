# softmax_rows: out[r, :] = exp(x[r, :] - max(x[r, :])) / sum(exp(x[r, :] - max(x[r, :])))
# for a float32 matrix, in llm.c's block form: one block of 256 threads a row; the row's
# maximum and then its sum of exponentials are each reduced by warp shuffles (xor) and
# across the 8 warps through shared memory; a third pass writes the normalized values.
# Benchmark: 16384 x 2048; 1-D launch, block 256 (= BLOCK), grid = rows.
import math

from cuda import device

BLOCK = 256
WARPS = 8  # BLOCK // 32
FULL = 0xFFFFFFFF


@device.kernel
def softmax_rows(x, out):
    partial = device.shared_array(WARPS, device.float32)
    row = device.block_idx.x
    t = device.thread_idx.x
    lane = t % 32
    warp = t // 32
    cols = x.shape[1]

    m = -math.inf
    for j in range(t, cols, BLOCK):
        m = max(m, x[row, j])
    offset = 16
    while offset > 0:
        m = max(m, device.shfl_xor_sync(FULL, m, offset))
        offset //= 2
    if lane == 0:
        partial[warp] = m
    device.syncthreads()
    m = partial[0]
    for w in range(1, WARPS):
        m = max(m, partial[w])
    device.syncthreads()  # every thread has read the maxima before partial is reused

    s = 0.0
    for j in range(t, cols, BLOCK):
        s += math.exp(x[row, j] - m)
    offset = 16
    while offset > 0:
        s += device.shfl_xor_sync(FULL, s, offset)
        offset //= 2
    if lane == 0:
        partial[warp] = s
    device.syncthreads()
    s = partial[0]
    for w in range(1, WARPS):
        s += partial[w]

    inv = 1.0 / s
    for j in range(t, cols, BLOCK):
        out[row, j] = math.exp(x[row, j] - m) * inv
