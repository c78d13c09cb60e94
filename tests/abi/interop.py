# A module whose header tests/abi_layouts.rs compiles with nvcc: structs (nested, with
# alignment), vectors (including the ones CUDA 13 lacks), tuples and arrays, as parameters and
# results of interoperable functions.
from cuda import device
from cuda.device import float16, bfloat16, float32, float64, int8, int32, uint64
from cuda.device import float32x3, float64x4, float16x3, int8x2, bfloat16x2
from cuda.device import complex64, complex128, float8e4m3, float8e5m2
from cuda.device import float8e4m3x1, float8e4m3x2, float8e4m3x3, float8e4m3x4
from cuda.device import float8e5m2x1, float8e5m2x2, float8e5m2x3, float8e5m2x4


@device.struct
class point:
    x: float32
    y: float32
    z: float32


@device.struct(align=16)
class particle:
    pos: point
    mass: float64
    id: int32
    color: float32x3
    tag: int8


@device.struct(align=32)
class wide:
    a: float64x4
    h: float16x3
    b: bfloat16x2
    c: int8x2
    flag: bool


@device.func(interop=True)
def weigh(p: particle, k: float32) -> float64:
    return p.mass * k


@device.func(interop=True)
def split(p: point, n: int32):
    return (p.x, n, p.y)


@device.func(interop=True)
def move(p: point, d: float32x3):
    return point(p.x + d.x, p.y + d.y, p.z + d.z)


@device.func(interop=True)
def half_sum(w: wide, h: float16, b: bfloat16) -> float32:
    return float32(w.h.x) + float32(h) + float32(b)


@device.struct
class phasor:
    z: complex64
    q: float8e4m3
    w: complex128


@device.func(interop=True)
def rotate(z: complex64, w: complex128, q: float8e5m2) -> complex64:
    return z * complex64(w) + float32(q)


@device.func(interop=True)
def settle(p: phasor) -> phasor:
    return phasor(p.z * 2, p.q, p.w)


@device.kernel(interop=True)
def spin(zs: "complex64[::1]", w: complex128, e: float8e4m3):
    i = device.tid(1)
    if i < len(zs):
        zs[i] = zs[i] * complex64(w) + float32(e)


@device.kernel(interop=True)
def scale(xs: "float32[::1]", grid: "float64[:, :]", p: particle, w: wide, t: "(int8, float64, uint64)"):
    i = device.tid(1)
    if i < len(xs):
        xs[i] = xs[i] * p.pos.x + grid[0, 0] + w.a.x + t[1]


@device.struct
class fp8pack:
    tag: int8
    a: float8e4m3x2
    b: float8e5m2x3
    c: float8e4m3x4


@device.func(interop=True)
def fp8_mix(a: float8e4m3x2, b: float8e5m2x4, c: float8e4m3x3, d: float8e5m2x1) -> float8e4m3x4:
    return float8e4m3x4(a.y, b.x, c.z, d.x)


@device.func(interop=True)
def fp8_pair(x: float8e5m2x2, y: float8e4m3x1):
    return (y, x)


@device.func(interop=True)
def fp8_repack(p: fp8pack, e: float8e5m2x4) -> fp8pack:
    return fp8pack(p.tag, p.a, float8e5m2x3(e.x, e.y, e.z), p.c)


@device.kernel(interop=True)
def fp8_store(out: "float8e4m3[::1]", a: float8e4m3x4, b: float8e5m2x2, c: float8e5m2x3, d: float8e4m3x1, p: fp8pack, vs: "float8e5m2x3[:]"):
    i = device.tid(1)
    if i < len(out):
        out[i] = a[i % 4] + b.y + c.z + d.x + p.c.w
        vs[i] = c


@device.func
def helper(x: int32) -> int32:
    return x + 1


@device.kernel(interop=True)
def unannotated(xs, n):
    pass
