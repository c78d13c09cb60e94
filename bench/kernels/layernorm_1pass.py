# layernorm_1pass: the layer normalization of `layernorm` (the same outputs: out, mean and
# rstd of each row of a float32 matrix), reading x from global memory once: one warp a row,
# the row held in registers. Each lane loads its CHUNKS float32x4 vectors of the row
# (16-byte loads, lane + 32 * c: a warp reads 512 contiguous bytes a chunk), sums them,
# folds the sum with xor shuffles, then sums the squared differences from the mean over the
# same registers (two-pass variance, as `layernorm`, without reading x again) and writes
# (x - mean) * rstd * w + b as float32x4 vectors. Triton's layer-norm forward and the
# framework kernels work this way (one read of x, 128-bit accesses).
# Rows may have up to 32 * 4 * CHUNKS = 1024 columns, a multiple of 4 (the float32x4 view
# of a row needs 16-byte-aligned rows); chunks past the end of a row are skipped.
# Benchmark: 32768 rows x 1024 columns; 1-D launch, block 256 (8 rows a block), grid rows / 8.
import math

from cuda import device
from cuda.device import float32x4

CHUNKS = 8  # float32x4 vectors a lane
FULL = 0xFFFFFFFF
EPS = 1e-5


@device.kernel
def layernorm_1pass(x, w, b, out, mean, rstd):
    row = device.tid(1) // 32
    lane = device.thread_idx.x % 32
    rows = x.shape[0]
    cols = x.shape[1]
    if row < rows:  # the same for the whole warp
        xr = x[row].view(float32x4)
        n4 = len(xr)
        v = device.local_array(CHUNKS, float32x4)
        for c in device.static_range(CHUNKS):  # every load first, then the arithmetic
            j = lane + 32 * c
            if j < n4:
                v[c] = xr[j]
            else:
                v[c] = float32x4(0.0, 0.0, 0.0, 0.0)
        s = 0.0
        for c in device.static_range(CHUNKS):
            e = v[c]
            s += (e.x + e.y) + (e.z + e.w)
        offset = 16
        while offset > 0:
            s += device.shfl_xor_sync(FULL, s, offset)
            offset //= 2
        m = s / float(cols)  # float32 (float32 / int64 would be float64)

        q = 0.0
        for c in device.static_range(CHUNKS):
            if lane + 32 * c < n4:
                e = v[c]
                dx = e.x - m
                dy = e.y - m
                dz = e.z - m
                dw = e.w - m
                q += (dx * dx + dy * dy) + (dz * dz + dw * dw)
        offset = 16
        while offset > 0:
            q += device.shfl_xor_sync(FULL, q, offset)
            offset //= 2
        r = 1.0 / math.sqrt(q / float(cols) + EPS)

        if lane == 0:
            mean[row] = m
            rstd[row] = r
        w4 = w.view(float32x4)
        b4 = b.view(float32x4)
        yr = out[row].view(float32x4)
        for c in device.static_range(CHUNKS):
            j = lane + 32 * c
            if j < n4:
                e = v[c]
                g = w4[j]
                h = b4[j]
                yr[j] = float32x4(
                    (e.x - m) * r * g.x + h.x,
                    (e.y - m) * r * g.y + h.y,
                    (e.z - m) * r * g.z + h.z,
                    (e.w - m) * r * g.w + h.w,
                )
