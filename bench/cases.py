"""The benchmark cases, shared by the Python suites and run_ours.py.

For each kernel: its launch shape, its inputs (seeded, so every suite sees the same data),
its numpy reference, how to compare, and the fewest bytes it must move through device memory
(each input read once, each output written once), from which GB/s is computed.

bench/peers/cuda/bench_cuda.cu repeats the sizes and launch shapes in C++: keep both in step.
Needs numpy only.
"""

import os
import statistics
import time
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

WARMUP = 5  # untimed launches before timing
RUNS = 50  # timed launches; the median is reported

N1 = 1 << 26  # elements of the 1-D kernels: 256 MiB a float32 array, 5x the H100's 50 MB L2
N2 = 8192  # side of the 2-D float32 grids: 256 MiB an array
NMM = 2048  # matmul side: 17 GFLOP a launch (4096 would take ~8x longer in every suite)
NHIST = 1 << 27  # histogram input: 128 MiB of uint8
SCAN_BLOCK = 1024  # scan_block scans each run of 1024 elements on its own
GRID_STRIDE = 1056  # blocks for the grid-stride kernels: 8 blocks of 256 on each of 132 SMs


def poison(shape, dtype):
    """An output buffer full of 0xFF bytes (NaN for floats), so unwritten elements fail."""
    a = np.empty(shape, dtype)
    a.view(np.uint8).fill(0xFF)
    return a


def _brev32(x):
    table = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], np.uint32)
    out = np.zeros_like(x)
    for k in range(4):
        byte = (x >> np.uint32(8 * k)) & np.uint32(0xFF)
        out |= table[byte] << np.uint32(24 - 8 * k)
    return out


def _xorshift_rounds(x, rounds=4):
    h = x.copy()
    for _ in range(rounds):
        h ^= h << np.uint32(13)
        h ^= h >> np.uint32(17)
        h ^= h << np.uint32(5)
    return h


def _stencil5(u):
    out = u.copy()
    c = u[1:-1, 1:-1]
    out[1:-1, 1:-1] = np.float32(0.5) * c + np.float32(0.125) * (
        u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
    )
    return out


def _cached(key, compute):
    """compute() -> dict of arrays and numpy scalars, kept as BENCH_CACHE/<key>.npz when
    that variable names a directory (run_gpu_bench.sh points it to /dev/shm), so that the
    four Python suites of one run draw the inputs and compute the references once."""
    cache = os.environ.get("BENCH_CACHE")
    path = os.path.join(cache, key + ".npz") if cache and os.path.isdir(cache) else None
    if path and os.path.exists(path):
        with np.load(path) as f:
            return {k: (f[k][()] if f[k].ndim == 0 else f[k]) for k in f.files}
    value = compute()
    if path:
        tmp = f"{path}.{os.getpid()}.npz"
        np.savez(tmp, **value)
        os.replace(tmp, path)
    return value


@dataclass(frozen=True)
class Case:
    name: str  # kernel name: entry point, bench/kernels/<name>.py, JSON "kernel"
    grid: tuple
    block: tuple
    make: Callable  # rng -> dict of kernel arguments in parameter order, outputs initialised
    outputs: tuple  # names of the arguments the kernel writes
    reference: Callable  # args -> dict of expected outputs
    nbytes: int
    tol: tuple = None  # (rtol, atol) for np.allclose; None: exact equality
    flops: int = 0
    # Where the reference covers only part of an output (a CPU reference of the whole
    # would take seconds): pick(name, array) -> the part that `reference` returns.
    pick: Callable = None
    # Bytes of dynamic shared memory a block (`pydevice run --shared`).
    shared: int = 0
    # Share of elements allowed to differ (Mandelbrot: escape counts of points near the
    # set's boundary depend on the last bit of each operation, e.g. on FMA contraction).
    mismatch: float = 0.0
    # Another case whose inputs and reference this one shares (the same job done by another
    # algorithm: softmax_1pass and softmax_rows), so that they are drawn and computed once.
    same_data_as: str = None

    @property
    def data_name(self):
        return self.same_data_as or self.name

    def inputs(self):
        """The kernel's arguments, drawn from a generator seeded by the kernel's name (or
        by `same_data_as`; or read back from $BENCH_CACHE, where the first suite of a run
        left them)."""
        return _cached(
            f"{self.data_name}.inputs",
            lambda: self.make(np.random.default_rng(zlib.crc32(self.data_name.encode()))),
        )

    def check(self, args, got):
        """(ok, note): compare the outputs `got` (name -> array) with the reference."""
        want = _cached(f"{self.data_name}.reference", lambda: self.reference(args))
        for name in self.outputs:
            g, w = np.asarray(got[name]), want[name]
            if self.pick is not None:
                g = self.pick(name, g)
            if g.shape != w.shape:
                return False, f"{name}: shape {g.shape}, expected {w.shape}"
            if self.tol is None:
                same = g == w
            else:
                same = np.isclose(g, w, rtol=self.tol[0], atol=self.tol[1])
            bad = int(np.count_nonzero(~same))
            if bad > self.mismatch * w.size:
                return False, f"{name}: {bad} of {w.size} elements differ from the reference"
        return True, ""


def _f32(rng, *shape):
    return rng.random(shape, dtype=np.float32)


def _hgemm(a):
    """Rows HGEMM_ROWS_CHECKED of a @ b in float64 from the float16 inputs (their products
    are exact; the tensor cores accumulate in float32)."""
    rows = a["a"][HGEMM_ROWS_CHECKED].astype(np.float64)
    return {"c": (rows @ a["b"].astype(np.float64)).astype(np.float32)}


CASES = [
    Case(
        "vector_add",
        grid=(N1 // 256,),
        block=(256,),
        make=lambda r: {"a": _f32(r, N1), "b": _f32(r, N1), "out": poison(N1, np.float32)},
        outputs=("out",),
        reference=lambda a: {"out": a["a"] + a["b"]},
        nbytes=12 * N1,
    ),
    Case(
        "saxpy",
        grid=(N1 // 256,),
        block=(256,),
        make=lambda r: {
            "alpha": np.float32(2.5),
            "x": _f32(r, N1),
            "y": _f32(r, N1),
            "out": poison(N1, np.float32),
        },
        outputs=("out",),
        reference=lambda a: {"out": a["alpha"] * a["x"] + a["y"]},
        nbytes=12 * N1,
        tol=(1e-6, 1e-6),  # contraction to fma rounds once instead of twice
    ),
    Case(
        "transpose_naive",
        grid=(N2 // 32, N2 // 8),
        block=(32, 8),
        make=lambda r: {"src": _f32(r, N2, N2), "dst": poison((N2, N2), np.float32)},
        outputs=("dst",),
        reference=lambda a: {"dst": np.ascontiguousarray(a["src"].T)},
        nbytes=8 * N2 * N2,
    ),
    Case(
        "transpose_tiled",
        grid=(N2 // 32, N2 // 32),
        block=(32, 8),
        make=lambda r: {"src": _f32(r, N2, N2), "dst": poison((N2, N2), np.float32)},
        outputs=("dst",),
        reference=lambda a: {"dst": np.ascontiguousarray(a["src"].T)},
        nbytes=8 * N2 * N2,
    ),
    Case(
        "reduce_block",
        grid=(GRID_STRIDE,),
        block=(256,),
        make=lambda r: {"x": _f32(r, N1), "out": np.zeros(1, np.float32)},
        outputs=("out",),
        reference=lambda a: {"out": np.array([a["x"].sum(dtype=np.float64)], np.float32)},
        nbytes=4 * N1,
        tol=(1e-4, 0.0),
    ),
    Case(
        "reduce_warp",
        grid=(GRID_STRIDE,),
        block=(256,),
        make=lambda r: {"x": _f32(r, N1), "out": np.zeros(1, np.float32)},
        outputs=("out",),
        reference=lambda a: {"out": np.array([a["x"].sum(dtype=np.float64)], np.float32)},
        nbytes=4 * N1,
        tol=(1e-4, 0.0),
    ),
    Case(
        "histogram",
        grid=(GRID_STRIDE,),
        block=(256,),
        make=lambda r: {
            "data": r.integers(0, 256, NHIST, dtype=np.uint8),
            "bins": np.zeros(256, np.int32),
        },
        outputs=("bins",),
        reference=lambda a: {"bins": np.bincount(a["data"], minlength=256).astype(np.int32)},
        nbytes=NHIST,
    ),
    Case(
        "stencil5",
        grid=(N2 // 32, N2 // 8),
        block=(32, 8),
        make=lambda r: {"u": _f32(r, N2, N2), "out": poison((N2, N2), np.float32)},
        outputs=("out",),
        reference=lambda a: {"out": _stencil5(a["u"])},
        nbytes=8 * N2 * N2,
        tol=(1e-6, 1e-6),
    ),
    Case(
        "matmul_tiled",
        grid=(NMM // 16, NMM // 16),
        block=(16, 16),
        make=lambda r: {
            "a": _f32(r, NMM, NMM),
            "b": _f32(r, NMM, NMM),
            "c": poison((NMM, NMM), np.float32),
        },
        outputs=("c",),
        reference=lambda a: {
            "c": (a["a"].astype(np.float64) @ a["b"].astype(np.float64)).astype(np.float32)
        },
        nbytes=12 * NMM * NMM,
        tol=(1e-4, 1e-4),
        flops=2 * NMM**3,
    ),
    Case(
        "scan_block",
        grid=(N1 // SCAN_BLOCK,),
        block=(SCAN_BLOCK,),
        make=lambda r: {
            "x": r.integers(0, 10, N1, dtype=np.int32),
            "out": poison(N1, np.int32),
        },
        outputs=("out",),
        reference=lambda a: {
            "out": a["x"].reshape(-1, SCAN_BLOCK).cumsum(axis=1, dtype=np.int32).ravel()
        },
        nbytes=8 * N1,
    ),
    Case(
        "math_f64",
        grid=(N1 // 256,),
        block=(256,),
        make=lambda r: {
            "x": r.uniform(-4.0, 4.0, N1),
            "out": poison(N1, np.float64),
        },
        outputs=("out",),
        reference=lambda a: {
            "out": np.exp(a["x"]) * np.sin(a["x"]) + np.sqrt(np.abs(a["x"]))
        },
        nbytes=16 * N1,
        tol=(1e-12, 1e-12),
    ),
    Case(
        "bits_u32",
        grid=(N1 // 256,),
        block=(256,),
        make=lambda r: {
            "x": r.integers(0, 1 << 32, N1, dtype=np.uint32),
            "out": poison(N1, np.uint32),
        },
        outputs=("out",),
        reference=lambda a: {
            "out": _brev32(_xorshift_rounds(a["x"]))
            ^ np.bitwise_count(a["x"]).astype(np.uint32)
        },
        nbytes=8 * N1,
    ),
]


# ---- sizes and helpers of the second set of kernels (issue 21) ----------------------------

SM_ROWS, SM_COLS = 16384, 2048  # softmax_rows: 128 MiB in, one block of 256 a row
LN_ROWS, LN_COLS = 32768, 1024  # layernorm: 128 MiB in, one warp a row
LN_EPS = 1e-5
NBODY = 32768  # bodies; 2^30 interactions a launch
NBODY_BLOCK = 128  # = its shared tile of positions
NBODY_EPS2 = 0.01  # softening, squared
NBODY_CHECKED = 128  # bodies whose acceleration the CPU reference computes
NGEMM = 2048  # sgemm_reg side
NHGEMM = 4096  # hgemm_mma side (m = n = k); 128 x 128 block tiles of 4 warps, 1-D grid
HGEMM_BM, HGEMM_BN = 128, 128
HGEMM_SHARED = 4 * (128 * 32 + 32 * 128) * 2  # 4 stages of float16 a and b tiles: 64 KiB
HGEMM_ROWS_CHECKED = np.arange(0, NHGEMM, 64)  # every 64th row of c
GEMM_TILE = 128  # sgemm_reg: each block computes a 128 x 128 tile, each thread 8 x 8
SCAN_TILE = 2048  # scan_lookback: 256 threads x 8 elements a tile
SPMV_ROWS = 1 << 20  # square CSR matrix, 16..47 nonzeros a row (about 2^25 in all)
MB_H, MB_W, MB_MAXIT = 4096, 4096, 256  # mandelbrot image and iteration limit
MB_X0, MB_Y0, MB_DX, MB_DY = -2.0, -1.25, 2.5 / MB_W, 2.5 / MB_H
CONV = 8192  # conv2d image side; 5 x 5 filter, zero padding
CONV_K = 5
SORT_N, SORT_SEG = 1 << 24, 2048  # bitonic_sort: each block sorts one run of 2048 uint32
FFT_N, FFT_NS = 1 << 24, 64  # fft_radix4: one Stockham radix-4 stage of a 4^12-point FFT
HALF_N = 1 << 26  # half2_poly: float16 elements
# half2_poly: exp(x)'s Taylor polynomial of degree 8, highest coefficient first (Horner)
HALF_COEFFS = (1 / 40320, 1 / 5040, 1 / 720, 1 / 120, 1 / 24, 1 / 6, 1 / 2, 1.0, 1.0)


def _softmax(x):
    """In float32 (numpy's exp and pairwise sums are within a few ulp; float64 would take
    seconds more for each suite)."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return e


def _softmax_inputs(r):
    return {
        "x": (2.0 * r.standard_normal((SM_ROWS, SM_COLS), dtype=np.float32)),
        "out": poison((SM_ROWS, SM_COLS), np.float32),
    }


def _layernorm_inputs(r):
    return {
        "x": r.standard_normal((LN_ROWS, LN_COLS), dtype=np.float32) + np.float32(0.5),
        "w": r.uniform(0.5, 1.5, LN_COLS).astype(np.float32),
        "b": r.uniform(-0.5, 0.5, LN_COLS).astype(np.float32),
        "out": poison((LN_ROWS, LN_COLS), np.float32),
        "mean": poison(LN_ROWS, np.float32),
        "rstd": poison(LN_ROWS, np.float32),
    }


def _layernorm(a):
    """Mean and variance in float64, the normalized rows in float32."""
    x = a["x"]
    mean = x.mean(axis=1, dtype=np.float64)
    d = x - mean.astype(np.float32)[:, None]
    var = np.einsum("ij,ij->i", d, d, dtype=np.float64) / x.shape[1]
    rstd = 1.0 / np.sqrt(var + LN_EPS)
    d *= rstd.astype(np.float32)[:, None]
    d *= a["w"]
    d += a["b"]
    return {"out": d, "mean": mean, "rstd": rstd}


def _nbody_inputs(r):
    pos = np.empty((NBODY, 4), np.float32)
    pos[:, :3] = r.uniform(-1.0, 1.0, (NBODY, 3))
    pos[:, 3] = r.uniform(0.5, 1.0, NBODY) / NBODY  # masses: accelerations of order 1
    return {"pos": pos, "acc": poison((NBODY, 3), np.float32)}


def _nbody(a):
    """Accelerations of the first NBODY_CHECKED bodies, in float64."""
    pos = a["pos"].astype(np.float64)
    me = pos[:NBODY_CHECKED, None, :3]
    d = pos[None, :, :3] - me
    d2 = (d * d).sum(axis=2) + NBODY_EPS2
    s = pos[None, :, 3] / (d2 * np.sqrt(d2))
    return {"acc": (d * s[:, :, None]).sum(axis=1)}


def _scan_inputs(r):
    tiles = N1 // SCAN_TILE
    return {
        "x": r.integers(0, 10, N1, dtype=np.int32),
        "out": poison(N1, np.int32),
        "status": np.zeros(tiles, np.uint64),  # per tile: flag (high word), sum (low word)
        "state": np.zeros(2, np.uint32),  # launches done, blocks finished in this launch
    }


def _csr_inputs(r):
    """A square CSR matrix with 16..47 nonzeros a row; each row's columns are sorted and
    distinct (random gaps of 1..16384 from a random start), values uniform in [-1, 1)."""
    rows = SPMV_ROWS
    lengths = r.integers(16, 48, rows)
    indptr = np.zeros(rows + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    nnz = int(indptr[-1])
    gaps = r.integers(1, 16385, nnz, dtype=np.int32)
    cols = np.cumsum(gaps, dtype=np.int64)
    starts = np.repeat(cols[indptr[:-1]] - gaps[indptr[:-1]], lengths)  # cumsum before row
    cols -= starts
    cols += np.repeat(r.integers(0, rows - 48 * 16384, rows) - 1, lengths)
    return {
        "indptr": indptr.astype(np.int32),
        "indices": cols.astype(np.int32),
        "data": r.random(nnz, dtype=np.float32) * np.float32(2) - np.float32(1),
        "x": r.random(rows, dtype=np.float32) * np.float32(2) - np.float32(1),
        "y": poison(rows, np.float32),
    }


def _spmv(a):
    prod = a["data"].astype(np.float64) * a["x"].astype(np.float64)[a["indices"]]
    return {"y": np.add.reduceat(prod, a["indptr"][:-1])}


MB_ROWS_CHECKED = np.arange(0, MB_H, 64)  # every 64th row of the image


def _mandelbrot(a):
    """Escape counts of the checked rows, in float32 with the kernel's order of operations."""
    f = np.float32
    j = np.arange(MB_W, dtype=np.float32)
    i = MB_ROWS_CHECKED.astype(np.float32)
    cx = np.broadcast_to(f(MB_X0) + j * f(MB_DX), (len(i), MB_W))
    cy = np.broadcast_to((f(MB_Y0) + i * f(MB_DY))[:, None], (len(i), MB_W))
    x = np.zeros_like(cx)
    y = np.zeros_like(cx)
    it = np.zeros(cx.shape, np.int32)
    live = np.ones(cx.shape, bool)
    for _ in range(MB_MAXIT):
        x2, y2 = x * x, y * y
        live &= (x2 + y2) <= f(4.0)
        if not live.any():
            break
        y = np.where(live, f(2.0) * x * y + cy, y)
        x = np.where(live, x2 - y2 + cx, x)
        it += live
    return {"out": it}


CONV_ROWS_CHECKED = np.r_[0:24, CONV // 2 - 12:CONV // 2 + 12, CONV - 24:CONV]


def _conv2d(a):
    """The checked rows of the 5 x 5 correlation with zero padding, in float64."""
    img, w, r = a["img"], a["w"].astype(np.float64), CONV_K // 2
    out = np.zeros((len(CONV_ROWS_CHECKED), CONV))
    for ky in range(CONV_K):
        src = CONV_ROWS_CHECKED + ky - r
        ok = (src >= 0) & (src < CONV)
        slab = np.zeros((len(src), CONV + 2 * r))
        slab[ok, r:r + CONV] = img[src[ok]]
        for kx in range(CONV_K):
            out += w[ky, kx] * slab[:, kx:kx + CONV]
    return {"out": out}


FFT_CHECKED = np.r_[0:1 << 16, FFT_N // 4 - (1 << 16):FFT_N // 4]  # butterflies checked


def _fft_positions(ns):
    j = FFT_CHECKED
    o = (j // ns) * ns * 4 + j % ns
    return np.concatenate([o + r * ns for r in range(4)])


def _fft_radix4(a):
    """One Stockham radix-4 stage (Govindaraju et al. 2008), in complex128, for the
    butterflies FFT_CHECKED; returns the outputs at _fft_positions(ns)."""
    x = a["x"].astype(np.complex128)
    ns = int(a["ns"])
    q = len(x) // 4
    j = FFT_CHECKED
    ang = -2.0 * np.pi * (j % ns) / (4 * ns)
    v = [x[j + r * q] * np.exp(1j * r * ang) for r in range(4)]
    a0, a1, a2, d = v[0] + v[2], v[0] - v[2], v[1] + v[3], v[1] - v[3]
    a3 = d * -1j
    return {"y": np.concatenate([a0 + a2, a1 + a3, a0 - a2, a1 - a3])}


def _half2_table():
    """Horner's rule in float16 with one rounding per fused multiply-add, for every
    float16 bit pattern (so the reference of 2^26 elements is one table look-up)."""
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    x = x.astype(np.float64)
    r = np.full_like(x, np.float16(HALF_COEFFS[0]))
    with np.errstate(all="ignore"):  # NaN and infinite patterns
        for c in HALF_COEFFS[1:]:  # a float16 product is exact in float64; the sum rounds once
            r = (r * x + np.float64(np.float16(c))).astype(np.float16).astype(np.float64)
    return r.astype(np.float16)


def _half2_poly(a):
    return {"out": _half2_table()[a["x"].view(np.uint16)]}


CASES += [
    Case(
        "softmax_rows",
        grid=(SM_ROWS,),
        block=(256,),
        make=_softmax_inputs,
        outputs=("out",),
        reference=lambda a: {"out": _softmax(a["x"])},
        nbytes=8 * SM_ROWS * SM_COLS,
        tol=(1e-5, 1e-9),
    ),
    Case(
        "layernorm",
        grid=(LN_ROWS // 8,),
        block=(256,),
        make=_layernorm_inputs,
        outputs=("out", "mean", "rstd"),
        reference=_layernorm,
        nbytes=8 * LN_ROWS * LN_COLS + 8 * LN_COLS + 8 * LN_ROWS,
        tol=(1e-4, 1e-5),
    ),
    # The same two jobs reading x once, the row held in registers, 16-byte accesses
    # (bench/kernels/softmax_1pass.py, layernorm_1pass.py; Triton's and torch's algorithm).
    Case(
        "softmax_1pass",
        grid=(SM_ROWS,),
        block=(256,),
        make=_softmax_inputs,
        outputs=("out",),
        reference=lambda a: {"out": _softmax(a["x"])},
        nbytes=8 * SM_ROWS * SM_COLS,
        tol=(1e-5, 1e-9),
        same_data_as="softmax_rows",
    ),
    Case(
        "layernorm_1pass",
        grid=(LN_ROWS // 8,),
        block=(256,),
        make=_layernorm_inputs,
        outputs=("out", "mean", "rstd"),
        reference=_layernorm,
        nbytes=8 * LN_ROWS * LN_COLS + 8 * LN_COLS + 8 * LN_ROWS,
        tol=(1e-4, 1e-5),
        same_data_as="layernorm",
    ),
    Case(
        "nbody",
        grid=(NBODY // NBODY_BLOCK,),
        block=(NBODY_BLOCK,),
        make=_nbody_inputs,
        outputs=("acc",),
        reference=_nbody,
        nbytes=16 * NBODY + 12 * NBODY,
        tol=(1e-3, 1e-3),  # rsqrt.approx, and sums of 32768 terms in float32
        flops=20 * NBODY * NBODY,
        pick=lambda name, arr: arr[:NBODY_CHECKED],
    ),
    Case(
        "sgemm_reg",
        grid=(NGEMM // GEMM_TILE, NGEMM // GEMM_TILE),
        block=(16, 16),
        make=lambda r: {
            "a": _f32(r, NGEMM, NGEMM),
            "b": _f32(r, NGEMM, NGEMM),
            "c": poison((NGEMM, NGEMM), np.float32),
        },
        outputs=("c",),
        reference=lambda a: {
            "c": (a["a"].astype(np.float64) @ a["b"].astype(np.float64)).astype(np.float32)
        },
        nbytes=12 * NGEMM * NGEMM,
        tol=(1e-4, 1e-4),
        flops=2 * NGEMM**3,
    ),
    Case(
        "hgemm_mma",
        grid=((NHGEMM // HGEMM_BM) * (NHGEMM // HGEMM_BN),),
        block=(128,),
        shared=HGEMM_SHARED,
        make=lambda r: {
            "a": (2 * r.random((NHGEMM, NHGEMM), dtype=np.float32) - 1).astype(np.float16),
            "b": (2 * r.random((NHGEMM, NHGEMM), dtype=np.float32) - 1).astype(np.float16),
            "c": poison((NHGEMM, NHGEMM), np.float32),
        },
        outputs=("c",),
        reference=_hgemm,
        nbytes=8 * NHGEMM * NHGEMM,
        tol=(1e-3, 5e-3),  # sums of 4096 float32 terms of order 1 (the tensor cores' adds)
        flops=2 * NHGEMM**3,
        pick=lambda name, arr: arr[HGEMM_ROWS_CHECKED],
    ),
    Case(
        "spmv_csr",
        grid=(SPMV_ROWS // 8,),
        block=(256,),
        make=_csr_inputs,
        outputs=("y",),
        reference=_spmv,
        nbytes=0,  # set below from the matrix drawn
        tol=(1e-4, 1e-5),
    ),
    Case(
        "mandelbrot",
        grid=(MB_W // 32, MB_H // 8),
        block=(32, 8),
        make=lambda r: {"out": poison((MB_H, MB_W), np.int32)},
        outputs=("out",),
        reference=_mandelbrot,
        nbytes=4 * MB_H * MB_W,
        pick=lambda name, arr: arr[MB_ROWS_CHECKED],
        mismatch=0.01,
    ),
    Case(
        "conv2d",
        grid=(CONV // 32, CONV // 32),
        block=(32, 8),
        make=lambda r: {
            "img": _f32(r, CONV, CONV),
            "w": (r.uniform(-1.0, 1.0, (CONV_K, CONV_K)) / CONV_K).astype(np.float32),
            "out": poison((CONV, CONV), np.float32),
        },
        outputs=("out",),
        reference=_conv2d,
        nbytes=8 * CONV * CONV,
        tol=(1e-5, 1e-5),
        flops=2 * CONV_K * CONV_K * CONV * CONV,
        pick=lambda name, arr: arr[CONV_ROWS_CHECKED],
    ),
    Case(
        "bitonic_sort",
        grid=(SORT_N // SORT_SEG,),
        block=(SORT_SEG // 2,),
        make=lambda r: {
            "keys": r.integers(0, 1 << 32, SORT_N, dtype=np.uint32),
            "out": poison(SORT_N, np.uint32),
        },
        outputs=("out",),
        reference=lambda a: {"out": np.sort(a["keys"].reshape(-1, SORT_SEG), axis=1).ravel()},
        nbytes=8 * SORT_N,
    ),
    Case(
        "fft_radix4",
        grid=(FFT_N // 4 // 256,),
        block=(256,),
        make=lambda r: {
            "x": (r.uniform(-1, 1, FFT_N) + 1j * r.uniform(-1, 1, FFT_N)).astype(np.complex64),
            "y": poison(FFT_N, np.complex64),
            "ns": np.int32(FFT_NS),
        },
        outputs=("y",),
        reference=_fft_radix4,
        nbytes=16 * FFT_N,
        pick=lambda name, arr: arr[_fft_positions(FFT_NS)],
        tol=(1e-5, 1e-5),  # parts of order 1; float32 twiddles and sums
    ),
    Case(
        "half2_poly",
        grid=(HALF_N // 2 // 256,),
        block=(256,),
        make=lambda r: {
            "x": r.uniform(-1.0, 1.0, HALF_N).astype(np.float16),
            "out": poison(HALF_N, np.float16),
        },
        outputs=("out",),
        reference=_half2_poly,
        nbytes=4 * HALF_N,
        tol=(1e-3, 0.0),  # one float16 ulp is 2^-10 relative
    ),
    # Last, so that a hang (its look-back spins on other blocks' flags) costs no other case.
    Case(
        "scan_lookback",
        grid=(N1 // SCAN_TILE,),
        block=(256,),
        make=_scan_inputs,
        outputs=("out",),
        reference=lambda a: {"out": np.cumsum(a["x"], dtype=np.int32)},
        nbytes=8 * N1,
    ),
]


def _spmv_nbytes():
    """8 bytes a nonzero (value, column), the row pointers, x read once, y written once."""
    lengths = np.random.default_rng(zlib.crc32(b"spmv_csr")).integers(16, 48, SPMV_ROWS)
    return 8 * int(lengths.sum()) + 4 * (SPMV_ROWS + 1) + 8 * SPMV_ROWS


CASES = [
    Case(**{**c.__dict__, "nbytes": _spmv_nbytes()}) if c.name == "spmv_csr" else c
    for c in CASES
]
BY_NAME = {c.name: c for c in CASES}


def select(names):
    """The cases named (all when `names` is empty), in suite order."""
    unknown = set(names) - BY_NAME.keys()
    if unknown:
        raise SystemExit(f"unknown kernel(s): {', '.join(sorted(unknown))}")
    return [c for c in CASES if not names or c.name in names]


def result(impl, case, median_us, min_us, ok, note=""):
    """The JSON-lines record every suite prints for one kernel."""
    rec = {
        "impl": impl,
        "kernel": case.name,
        "median_us": round(median_us, 2),
        "min_us": round(min_us, 2),
        "gbps": round(case.nbytes / (median_us * 1e3), 1),
        "ok": ok,
    }
    if case.flops:
        rec["gflops"] = round(case.flops / (median_us * 1e3), 1)
    if note:
        rec["note"] = note
    return rec


def time_launches(launch, new_event, elapsed_ms):
    """(median, min) in us of RUNS launches. After WARMUP launches, left in flight, the
    timed launches are queued back to back with a device event between each two, and each
    launch's time is the interval between its two events: the GPU never waits for the
    host, so the host's cost of launching stays out of the numbers. The event API is the
    framework's (numba or CuPy)."""
    for _ in range(WARMUP):
        launch()
    events = [new_event() for _ in range(RUNS + 1)]
    events[0].record()
    for ev in events[1:]:
        launch()
        ev.record()
    events[-1].synchronize()
    us = [1e3 * elapsed_ms(a, b) for a, b in zip(events, events[1:])]
    return statistics.median(us), min(us)


def launch_cost(launch, synchronize):
    """Host us per asynchronous launch, as (median, min) over 100 batches of 100 launches;
    each batch is timed on the host clock without waiting for the GPU, then drained."""
    for _ in range(1000):
        launch()
    synchronize()
    per = []
    for _ in range(100):
        t0 = time.perf_counter()
        for _ in range(100):
            launch()
        per.append((time.perf_counter() - t0) * 1e4)  # / 100 launches * 1e6 us
        synchronize()
    return statistics.median(per), min(per)


def launch_record(impl, median, low):
    return {"impl": impl, "kernel": "launch_overhead", "host_us": round(median, 3),
            "host_us_min": round(low, 3)}
