# Kernels and functions of the Python tests: the spec's heterogeneous functions and structs
# (verbatim), and kernels that take every kind of argument.
from cuda import device
from cuda.device import float32, int32, float32x3
import numpy as np

SCALE = 3
OFFSET = np.float32(0.5)


@device.func
def recip(a):
  return 1 / a
# Can be called in device code.

@device.func(interop=True)
def diff(a, b):
  return abs(a - b)
# Can be called in device code by other frameworks and languages.


@device.struct
class point:
    x: int
    y: int
    z: int


@device.struct(align=16)
class complex:
    real: float
    imag: float


@device.struct
class Particle:
    x: float32
    y: float32


@device.kernel
def vec_add(a, b, c):
    i = device.tid(1)
    if i < len(c):
        c[i] = a[i] + b[i]


@device.kernel
def uses_funcs(x, out):
    i = device.tid(1)
    if i < len(out):
        out[i] = recip(x[i]) + diff(x[i], float32(1.0))


@device.kernel
def all_kinds(out, n, f, t, v, p, q, c):
    i = device.tid(1)
    if i < len(out):
        out[i] = n + f + t[0] + t[1] + v.x + v.z + p.x + p.y + q.x + q.y + q.z + c.real * SCALE + OFFSET


@device.kernel
def scale2d(m, k: float32):
    i, j = device.tid(2)
    if i < m.shape[0] and j < m.shape[1]:
        m[i, j] = m[i, j] * k


@device.kernel
def annotated(a: "float32[::1]", n: int32):
    i = device.tid(1)
    if i < n:
        a[i] = a[i] + 1


@device.kernel
def with_shared(out):
    buf = device.dynamic_shared_array()
    i = device.thread_idx.x
    buf[i] = 1
    device.syncthreads()
    out[device.tid(1)] = buf[i] + buf[0]


@device.kernel(bounds_check=True)
def checked(a, n):
    i = device.tid(1)
    a[i + n] = 1.0


@device.kernel
def heavy_regs(a):
    i = device.tid(1)
    if i < len(a):
        a[i] = a[i] * 2


@device.func
def hyp(x: float32, y: float32) -> float32:
    return (x * x + y * y) ** 0.5


@device.func
def norm2(p: Particle) -> float32:
    return p.x * p.x + p.y * p.y


@device.func
def moved(p: Particle, d: float32) -> Particle:
    return Particle(p.x + d, p.y - d)


@device.func
def swap(t):
    return (t[1], t[0])


@device.func
def total_and_clear(a):
    s = a[0] * 0
    for i in range(len(a)):
        s += a[i]
        a[i] = 0
    return s


@device.func
def scaled(x):
    return x * SCALE


@device.kernel
def window_scale(a, out, width: device.ConstExpr[int], scale: device.ConstExpr):
    # `width` and `scale` are compile-time values: one specialization per value (§5.6).
    i = device.tid(1)
    if i < len(out):
        buf = device.local_array(width, float32)
        for j in range(width):
            buf[j] = a[i + j]
        s = float32(0)
        for j in range(width):
            s += buf[j]
        out[i] = s * scale


@device.kernel
def stride_count(out, sums, stop, step):
    # A block-stride loop whose 64-bit counter is narrowed to 32 bits (pipeline.cpp's
    # NarrowCounterPass: start = thread index, step and stop int32, step > 0): with stop near
    # INT32_MAX and a large step, `i + step` passes 2^31 on the last test (no wrap allowed).
    t = device.thread_idx.x
    if step > 0:
        n = 0
        s = 0
        for i in range(t, stop, step):
            n += 1
            s += i
        out[t] = n
        sums[t] = s
