# math_f64: out[i] = exp(x[i]) * sin(x[i]) + sqrt(|x[i]|) over float64 vectors.
# Benchmark: n = 2**26 values uniform in [-4, 4); 1-D launch, block 256, grid n / 256.
import math

from cuda import device


@device.kernel
def math_f64(x, out):
    i = device.tid(1)
    if i < len(out):
        v = x[i]
        out[i] = math.exp(v) * math.sin(v) + math.sqrt(abs(v))
