# softmax_1pass: the row softmax of `softmax_rows` (out[r, :] = exp(x[r, :] - max) / sum),
# reading x from global memory once: one block of 256 threads a row, the row held in
# registers. Each thread loads its CHUNKS float32x4 vectors of the row (16-byte loads,
# t + 256 * c: a block reads 4 KiB contiguous bytes a chunk), takes their maximum, and the
# block folds the maxima (xor shuffles, then the 8 warps' values through shared memory);
# then the exponentials are computed once, kept in the same registers, summed and folded
# the same way (a second shared array, so that two barriers suffice), and written scaled
# as float32x4 vectors. Triton's fused softmax works this way (one read of x, 128-bit
# accesses); `softmax_rows` keeps llm.c's form (three reads of x, three barriers).
# Rows may have up to 256 * 4 * CHUNKS = 2048 columns, a multiple of 4 (the float32x4 view
# of a row needs 16-byte-aligned rows); chunks past the end of a row are skipped.
# Benchmark: 16384 x 2048; 1-D launch, block 256 (= BLOCK), grid = rows.
import math

from cuda import device
from cuda.device import float32x4

BLOCK = 256
WARPS = 8  # BLOCK // 32
CHUNKS = 2  # float32x4 vectors a thread
FULL = 0xFFFFFFFF


@device.kernel
def softmax_1pass(x, out):
    maxima = device.shared_array(WARPS, device.float32)
    sums = device.shared_array(WARPS, device.float32)
    row = device.block_idx.x
    t = device.thread_idx.x
    lane = t % 32
    warp = t // 32
    xr = x[row].view(float32x4)
    n4 = len(xr)

    v = device.local_array(CHUNKS, float32x4)
    for c in device.static_range(CHUNKS):  # every load first, then the arithmetic
        j = t + BLOCK * c
        if j < n4:
            v[c] = xr[j]
        else:
            v[c] = float32x4(-math.inf, -math.inf, -math.inf, -math.inf)
    m = -math.inf
    for c in device.static_range(CHUNKS):
        e = v[c]
        m = max(m, max(max(e.x, e.y), max(e.z, e.w)))
    offset = 16
    while offset > 0:
        m = max(m, device.shfl_xor_sync(FULL, m, offset))
        offset //= 2
    if lane == 0:
        maxima[warp] = m
    device.syncthreads()
    m = maxima[0]
    for w in range(1, WARPS):
        m = max(m, maxima[w])

    s = 0.0
    for c in device.static_range(CHUNKS):  # exp(-inf - m) = 0 past the end of the row
        e = v[c]
        p = float32x4(math.exp(e.x - m), math.exp(e.y - m), math.exp(e.z - m), math.exp(e.w - m))
        v[c] = p
        s += (p.x + p.y) + (p.z + p.w)
    offset = 16
    while offset > 0:
        s += device.shfl_xor_sync(FULL, s, offset)
        offset //= 2
    if lane == 0:
        sums[warp] = s
    device.syncthreads()
    s = sums[0]
    for w in range(1, WARPS):
        s += sums[w]

    inv = 1.0 / s
    yr = out[row].view(float32x4)
    for c in device.static_range(CHUNKS):
        j = t + BLOCK * c
        if j < n4:
            p = v[c]
            yr[j] = float32x4(p.x * inv, p.y * inv, p.z * inv, p.w * inv)
