# numba-cuda's `cuda.bf16` conversions with explicit rounding directions; only the import
# differs from numba-cuda (the names are imported from numba.cuda.bf16 there).
from pydevice.numba import cuda


@cuda.jit
def to_bfloat16(f4, i4, i8, u8, f8, out):
    i = cuda.grid(1)
    if i < f4.shape[0]:
        out[i, 0] = cuda.bf16.bfloat16_as_int16(cuda.bf16.float32_to_bfloat16_rn(f4[i]))
        out[i, 1] = cuda.bf16.bfloat16_as_int16(cuda.bf16.float32_to_bfloat16_rz(f4[i]))
        out[i, 2] = cuda.bf16.bfloat16_as_int16(cuda.bf16.float32_to_bfloat16_rd(f4[i]))
        out[i, 3] = cuda.bf16.bfloat16_as_int16(cuda.bf16.float32_to_bfloat16_ru(f4[i]))
        out[i, 4] = cuda.bf16.bfloat16_as_int16(cuda.bf16.int32_to_bfloat16_rn(i4[i]))
        out[i, 5] = cuda.bf16.bfloat16_as_int16(cuda.bf16.int32_to_bfloat16_rz(i4[i]))
        out[i, 6] = cuda.bf16.bfloat16_as_int16(cuda.bf16.int32_to_bfloat16_rd(i4[i]))
        out[i, 7] = cuda.bf16.bfloat16_as_int16(cuda.bf16.int32_to_bfloat16_ru(i4[i]))
        out[i, 8] = cuda.bf16.bfloat16_as_int16(cuda.bf16.int64_to_bfloat16_rn(i8[i]))
        out[i, 9] = cuda.bf16.bfloat16_as_int16(cuda.bf16.int64_to_bfloat16_rz(i8[i]))
        out[i, 10] = cuda.bf16.bfloat16_as_int16(cuda.bf16.int64_to_bfloat16_rd(i8[i]))
        out[i, 11] = cuda.bf16.bfloat16_as_int16(cuda.bf16.int64_to_bfloat16_ru(i8[i]))
        out[i, 12] = cuda.bf16.bfloat16_as_int16(cuda.bf16.uint64_to_bfloat16_rn(u8[i]))
        out[i, 13] = cuda.bf16.bfloat16_as_int16(cuda.bf16.uint64_to_bfloat16_rz(u8[i]))
        out[i, 14] = cuda.bf16.bfloat16_as_int16(cuda.bf16.uint64_to_bfloat16_rd(u8[i]))
        out[i, 15] = cuda.bf16.bfloat16_as_int16(cuda.bf16.uint64_to_bfloat16_ru(u8[i]))
        out[i, 16] = cuda.bf16.bfloat16_as_int16(cuda.bf16.float64_to_bfloat16(f8[i]))


@cuda.jit
def from_bfloat16(bits, i2, u4, i8):
    i = cuda.grid(1)
    if i < bits.shape[0]:
        a = cuda.bf16.uint16_as_bfloat16(bits[i])
        i2[i, 0] = cuda.bf16.bfloat16_to_int16_rn(a)
        i2[i, 1] = cuda.bf16.bfloat16_to_int16_rz(a)
        i2[i, 2] = cuda.bf16.bfloat16_to_int16_rd(a)
        i2[i, 3] = cuda.bf16.bfloat16_to_int16_ru(a)
        u4[i, 0] = cuda.bf16.bfloat16_to_uint32_rn(a)
        u4[i, 1] = cuda.bf16.bfloat16_to_uint32_rz(a)
        u4[i, 2] = cuda.bf16.bfloat16_to_uint32_rd(a)
        u4[i, 3] = cuda.bf16.bfloat16_to_uint32_ru(a)
        i8[i, 0] = cuda.bf16.bfloat16_to_int64_rn(a)
        i8[i, 1] = cuda.bf16.bfloat16_to_int64_rz(a)
        i8[i, 2] = cuda.bf16.bfloat16_to_int64_rd(a)
        i8[i, 3] = cuda.bf16.bfloat16_to_int64_ru(a)
