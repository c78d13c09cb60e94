# Python and CUDA C++ calling each other (tests/interop_link.rs links it with nvlink;
# tests/gpu/interop.rs runs it). interop.cu, beside it, defines the `cpp_*` functions and a
# kernel that calls the `py_*` functions through the header `pydevice abi --header` writes.
from cuda import device
from cuda.device import float32, float64, int32, float32x3


@device.struct
class pair:
    a: float32
    b: int32


@device.struct(align=16)
class body:
    pos: float32x3
    mass: float64
    id: int32


# ---- Python functions that CUDA C++ calls -----------------------------------------------

@device.func(interop=True)
def py_scale(x: float32, k: float32) -> float32:
    return x * k + 1


@device.func(interop=True)
def py_norm2(v: float32x3) -> float32:
    return v.x * v.x + v.y * v.y + v.z * v.z


@device.func(interop=True)
def py_momentum(b: body, v: float32) -> float64:
    return b.mass * float64(v) + float64(b.id)


@device.func(interop=True)
def py_make_pair(x: float32, n: int32) -> pair:
    return pair(x * 2, n + 1)


@device.func(interop=True)
def py_twice_scale(x: float32) -> float32:
    # Its module holds a `.weak` copy of py_scale, which links beside py_scale's own module.
    return py_scale(x, 2) * 2


@device.func(interop=True)
def py_sum(xs: "float32[:]") -> float32:
    s = float32(0)
    for i in range(len(xs)):
        s += xs[i]
    return s


# ---- CUDA C++ functions that Python calls ------------------------------------------------

@device.func(extern=True)
def cpp_scale(x: float32, k: float32) -> float32: ...


@device.func(extern="cpp_l1")
def l1(v: float32x3) -> float32: ...


@device.func(extern=True)
def cpp_momentum(b: body, v: float32) -> float64: ...


@device.func(extern=True)
def cpp_make_pair(x: float32, n: int32) -> pair: ...


@device.func(extern=True)
def cpp_sum(xs: "float32[:]") -> float32: ...


@device.kernel
def py_calls_cpp(xs: "float32[::1]", masses: "float64[::1]", ws: "float32[::1]", out: "float64[::1]"):
    i = device.tid(1)
    if i < len(xs):
        x = xs[i]
        b = body(float32x3(x, 1, 2), masses[i], i)
        p = cpp_make_pair(x, i)
        total = float64(cpp_scale(x, 3)) + float64(l1(b.pos)) + cpp_momentum(b, x)
        out[i] = total + float64(p.a) + float64(p.b) + float64(cpp_sum(ws))


# ---- A kernel that C-style host code launches by name ------------------------------------

@device.kernel(interop=True)
def py_axpy(a: float32, xs: "float32[::1]", ys: "float32[::1]", p: pair):
    i = device.tid(1)
    if i < len(xs):
        ys[i] = a * xs[i] + ys[i] + p.a * float32(p.b)
