"""numba's `cuda.bf16` conversions with rounding directions (`float32_to_bfloat16_rz`,
`int64_to_bfloat16_ru`, `bfloat16_to_int16_rd`, ...) on the CPU back end, against an exact
reference computed with Python fractions. No GPU needed."""

import math
import os
import subprocess
import sys
import tempfile
import textwrap
from fractions import Fraction

import numpy as np

HERE = os.path.dirname(__file__)


def bf16_bits(q, mode):
    """The bits (as int16) of the bfloat16 nearest the exact number `q` in direction `mode`."""
    q = Fraction(q)
    if q == 0:
        return 0
    neg = q < 0
    a = -q if neg else q
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, -126)
    ulp = Fraction(2) ** (e - 7)
    n = a / ulp
    lo = math.floor(n)
    up = lo + (n != lo)
    if mode == "rz":
        m = lo
    elif mode == "rd":
        m = up if neg else lo
    elif mode == "ru":
        m = lo if neg else up
    else:
        m = round(n)  # ties to even
    bits = int(np.float32(float(m * ulp)).view(np.uint32)) >> 16
    if neg:
        bits |= 0x8000
    return int(np.uint16(bits).view(np.int16))


def test_bfloat16_conversions_round_as_cuda_does():
    rng = np.random.default_rng(11)
    n = 300
    f4 = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    f4[:4] = [1.5, -1.5, 789.0, -789.0]
    i4 = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    i4[:4] = [789, -789, 0, -(2**31)]
    i8 = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64) >> rng.integers(0, 60, n)
    i8[:3] = [-(2**63), 2**63 - 1, 789]
    u8 = rng.integers(0, 2**64 - 1, n, dtype=np.uint64) >> rng.integers(
        0, 60, n
    ).astype(np.uint64)
    f8 = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)
    bits = rng.integers(0, 2**16, n, dtype=np.int64).astype(np.uint16)
    bits[(bits & 0x7F80) == 0x7F80] = 0x4000  # leave out infinities and NaNs
    bits[:4] = [0x3FC0, 0xBFC0, 0x4780, 0xC8D0]  # 1.5, -1.5, 65536, -425984
    code = textwrap.dedent(
        """
        import sys
        import numpy as np
        import numba_bf16_kernels as K
        d = np.load(sys.argv[1])
        n = d["f4"].shape[0]
        out = np.zeros((n, 17), np.int16)
        K.to_bfloat16[(n + 63) // 64, 64](d["f4"], d["i4"], d["i8"], d["u8"], d["f8"], out)
        i2 = np.zeros((n, 4), np.int16)
        u4 = np.zeros((n, 4), np.uint32)
        i8 = np.zeros((n, 4), np.int64)
        K.from_bfloat16[(n + 63) // 64, 64](d["bits"], i2, u4, i8)
        np.savez(sys.argv[2], out=out, i2=i2, u4=u4, i8=i8)
        """
    )
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.npz")
        dst = os.path.join(tmp, "out.npz")
        np.savez(src, f4=f4, i4=i4, i8=i8, u8=u8, f8=f8, bits=bits)
        env = dict(os.environ, PYDEVICE_BACKEND="cpu")
        env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
        r = subprocess.run(
            [sys.executable, "-c", code, src, dst],
            check=False,
            env=env,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
        got = np.load(dst)
        out, i2, u4, i8r = got["out"], got["i2"], got["u4"], got["i8"]

    modes = ("rn", "rz", "rd", "ru")
    for i in range(n):
        srcs = [Fraction(float(f4[i])), int(i4[i]), int(i8[i]), int(u8[i])]
        for k, q in enumerate(srcs):
            for j, m in enumerate(modes):
                assert out[i, 4 * k + j] == bf16_bits(q, m), (i, k, m, q)
        assert out[i, 16] == bf16_bits(Fraction(float(f8[i])), "rn"), (i, f8[i])

    val = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    for j, f in enumerate((np.rint, np.trunc, np.floor, np.ceil)):
        r = f(val)
        np.testing.assert_array_equal(i2[:, j], np.clip(r, -(2**15), 2**15 - 1))
        np.testing.assert_array_equal(u4[:, j], np.clip(r, 0, 2**32 - 1))
        np.testing.assert_array_equal(i8r[:, j], np.clip(r, -(2**63), 2**63 - 1))
