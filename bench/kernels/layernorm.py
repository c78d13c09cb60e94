# layernorm: layer normalization of each row of a float32 matrix (llm.c's
# layernorm_forward_kernel3: one warp a row, warp-shuffle reductions):
#   mean[r] = sum(x[r, :]) / C, rstd[r] = 1 / sqrt(sum((x[r, :] - mean[r])^2) / C + 1e-5),
#   out[r, j] = (x[r, j] - mean[r]) * rstd[r] * w[j] + b[j]
# Benchmark: 32768 rows x 1024 columns; 1-D launch, block 256 (8 rows a block), grid rows / 8.
import math

from cuda import device

FULL = 0xFFFFFFFF
EPS = 1e-5


@device.kernel
def layernorm(x, w, b, out, mean, rstd):
    row = device.tid(1) // 32
    lane = device.thread_idx.x % 32
    rows = x.shape[0]
    cols = x.shape[1]
    if row < rows:  # the same for the whole warp
        s = 0.0
        for j in range(lane, cols, 32):
            s += x[row, j]
        offset = 16
        while offset > 0:
            s += device.shfl_xor_sync(FULL, s, offset)
            offset //= 2
        m = s / float(cols)  # float32 (float32 / int64 would be float64)

        v = 0.0
        for j in range(lane, cols, 32):
            d = x[row, j] - m
            v += d * d
        offset = 16
        while offset > 0:
            v += device.shfl_xor_sync(FULL, v, offset)
            offset //= 2
        r = 1.0 / math.sqrt(v / float(cols) + EPS)

        if lane == 0:
            mean[row] = m
            rstd[row] = r
        for j in range(lane, cols, 32):
            out[row, j] = (x[row, j] - m) * r * w[j] + b[j]
