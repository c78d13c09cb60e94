# Extern declarations of every kind of parameter and result, called from one kernel:
# tests/interop_link.rs compares the PTX signature of each call with nvcc's definition of a
# C++ stub with the same prototype (bool and 8/16-bit integers widened, 16-bit floats,
# __half2 / __nv_bfloat162 by reference, over-aligned structs and vectors, tuples, arrays).
from cuda import device
from cuda.device import float16, bfloat16, float32, float64, int8, int16, int32, uint64
from cuda.device import float32x4, float16x2, bfloat16x2, int8x3


@device.struct
class mixed:
    flag: bool
    h: float16
    v: float32x4


@device.func(extern=True)
def e_bool(b: bool, c: int8, s: int16) -> bool: ...


@device.func(extern=True)
def e_half(h: float16, b: bfloat16) -> float16: ...


@device.func(extern=True)
def e_h2(v: float16x2, w: bfloat16x2) -> float32: ...


@device.func(extern=True)
def e_mixed(m: mixed, t: "(int8, float64)") -> "(int8, float64)": ...


@device.func(extern=True)
def e_vec(v: float32x4, u: int8x3, n: uint64) -> float32x4: ...


@device.func(extern=True)
def e_arr(a: "float64[:, :]", i: int32) -> None: ...


@device.kernel
def k(out: "float64[:, :]", hs: "float16[::1]"):
    h = hs[0]
    b = e_bool(True, int8(1), int16(2))
    h2 = e_half(h, bfloat16(1.0))
    f = e_h2(float16x2(h, h), bfloat16x2(bfloat16(1.0), bfloat16(2.0)))
    t = e_mixed(mixed(b, h2, float32x4(1, 2, 3, 4)), (int8(1), float64(2.0)))
    v = e_vec(float32x4(f, 1, 2, 3), int8x3(1, 2, 3), uint64(7))
    e_arr(out, 0)
    out[0, 0] = float64(t[1]) + float64(v.x)
