"""An independent Python reference of ``cuda.device.random`` (docs/semantics.md §6.4): the
Philox4x32-10 block of (seed, thread, call), the uniform conversions and Box–Muller with the
same polynomials, in plain Python integers and IEEE floats (no fused multiply-add)."""

import math
import struct

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox(counter, key):
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK
    return c0, c1, c2, c3


def block(seed, thread, call):
    return philox(
        (call & MASK, call >> 32, thread & MASK, thread >> 32), (seed & MASK, seed >> 32)
    )


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def uniform_f32(w):
    return (w >> 8) * 2.0**-24


def uniform_f64(hi, lo):
    return ((hi << 32 | lo) >> 11) * 2.0**-53


LN = [1.0 / (2 * k + 1) for k in range(12)]
SIN = [(-1.0) ** k / math.factorial(2 * k + 1) for k in range(8)]
COS = [(-1.0) ** k / math.factorial(2 * k) for k in range(9)]


def horner(c, z):
    p = c[-1]
    for k in reversed(c[:-1]):
        p = p * z + k
    return p


def ln(y):
    bits = struct.unpack("<Q", struct.pack("<d", y))[0]
    e = ((bits >> 52) & 0x7FF) - 1023
    m = struct.unpack("<d", struct.pack("<Q", bits & 0x000FFFFFFFFFFFFF | 0x3FF0000000000000))[0]
    if m > math.sqrt(2.0):
        m *= 0.5
        e += 1
    s = (m - 1.0) / (m + 1.0)
    return e * math.log(2.0) + 2.0 * s * horner(LN, s * s)


def cos_2pi(u):
    t = u * 4.0
    q = int(t)
    f = t - q
    swap = f > 0.5
    x = (1.0 - f if swap else f) * (math.pi / 2)
    z = x * x
    s, c = x * horner(SIN, z), horner(COS, z)
    a, b = (s, c) if swap else (c, s)
    return [a, -b, -a, b][q]


def normal(w):
    u1, u2 = uniform_f64(w[0], w[1]), uniform_f64(w[2], w[3])
    return math.sqrt(-2.0 * ln(1.0 - u1)) * cos_2pi(u2)


def rand32(seed, thread, call):
    return uniform_f32(block(seed, thread, call)[0])


def rand64(seed, thread, call):
    w = block(seed, thread, call)
    return uniform_f64(w[0], w[1])


def randn64(seed, thread, call):
    return normal(block(seed, thread, call))


def randn32(seed, thread, call):
    return f32(randn64(seed, thread, call))
