# vector_add: out[i] = a[i] + b[i] over float32 vectors of n elements.
# Benchmark: n = 2**26; 1-D launch, block 256, grid n / 256 (one element a thread;
# the bounds check makes any n work).
from cuda import device


@device.kernel
def vector_add(a, b, out):
    i = device.tid(1)
    if i < len(out):
        out[i] = a[i] + b[i]
