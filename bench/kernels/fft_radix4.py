# fft_radix4: one stage of a radix-4 Stockham FFT on complex64 (Govindaraju et al. 2008,
# FftIteration with R = 4): thread j < n/4 reads x[j + r*n/4] for r = 0..3, multiplies
# them by the twiddles exp(-2*pi*i * r*(j % ns) / (4*ns)), does a 4-point DFT and writes
# y[(j // ns)*4*ns + j % ns + r*ns]. ns is the length of the sub-transforms so far.
# Benchmark: n = 2^24 (a 4^12-point transform), ns = 64; 1-D launch, block 256,
# grid n / 4 / 256.
import math

from cuda import device
from cuda.device import complex64

ANGLE = -1.5707963267948966  # -2*pi/4, times (j % ns) / ns (math.pi here is E0106)


@device.kernel
def fft_radix4(x, y, ns):
    j = device.tid(1)
    q = len(x) // 4
    if j < q:
        k = j % ns
        ang = ANGLE * float(k) / float(ns)  # float32 (an int32 times a float would be float64)
        v0 = x[j]
        v1 = x[j + q] * complex64(math.cos(ang), math.sin(ang))
        v2 = x[j + 2 * q] * complex64(math.cos(2.0 * ang), math.sin(2.0 * ang))
        v3 = x[j + 3 * q] * complex64(math.cos(3.0 * ang), math.sin(3.0 * ang))
        a0 = v0 + v2
        a1 = v0 - v2
        a2 = v1 + v3
        d = v1 - v3
        a3 = complex64(d.imag, -d.real)  # (v1 - v3) * -1j
        o = (j // ns) * ns * 4 + k
        y[o] = a0 + a2
        y[o + ns] = a1 + a3
        y[o + 2 * ns] = a0 - a2
        y[o + 3 * ns] = a1 - a3
