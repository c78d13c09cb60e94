# half2_poly: out[i] = p(x[i]) in float16, p = exp's Taylor polynomial of degree 8 by
# Horner's rule, one fused multiply-add (one rounding) a step. Each thread does two
# neighbouring elements (CUDA C++ does them as one __half2 with __hfma2; the dialect has
# no arithmetic on float16x2 vectors, so here they are two float16 chains).
# Benchmark: n = 2^26 float16; 1-D launch, block 256, grid n / 2 / 256. n must be even.
from cuda import device
from cuda.device import float16

C8 = 1 / 40320
C7 = 1 / 5040
C6 = 1 / 720
C5 = 1 / 120
C4 = 1 / 24
C3 = 1 / 6
C2 = 1 / 2
C1 = 1.0
C0 = 1.0


@device.func
def poly(v):
    r = float16(C8)
    r = device.fma(r, v, float16(C7))
    r = device.fma(r, v, float16(C6))
    r = device.fma(r, v, float16(C5))
    r = device.fma(r, v, float16(C4))
    r = device.fma(r, v, float16(C3))
    r = device.fma(r, v, float16(C2))
    r = device.fma(r, v, float16(C1))
    r = device.fma(r, v, float16(C0))
    return r


@device.kernel
def half2_poly(x, out):
    i = 2 * device.tid(1)
    if i + 1 < len(out):
        out[i] = poly(x[i])
        out[i + 1] = poly(x[i + 1])
