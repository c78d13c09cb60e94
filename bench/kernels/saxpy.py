# saxpy: out[i] = alpha * x[i] + y[i] over float32 vectors; alpha is a float32 scalar.
# Benchmark: n = 2**26, alpha = 2.5; 1-D launch, block 256, grid n / 256.
from cuda import device


@device.kernel
def saxpy(alpha, x, y, out):
    i = device.tid(1)
    if i < len(out):
        out[i] = alpha * x[i] + y[i]
