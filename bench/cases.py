"""The twelve benchmark cases, shared by the Python suites and run_ours.py.

For each kernel: its launch shape, its inputs (seeded, so every suite sees the same data),
its numpy reference, how to compare, and the fewest bytes it must move through device memory
(each input read once, each output written once), from which GB/s is computed.

bench/peers/cuda/bench_cuda.cu repeats the sizes and launch shapes in C++: keep both in step.
Needs numpy only.
"""

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

    def inputs(self):
        """The kernel's arguments, drawn from a generator seeded by the kernel's name."""
        return self.make(np.random.default_rng(zlib.crc32(self.name.encode())))

    def check(self, args, got):
        """(ok, note): compare the outputs `got` (name -> array) with the reference."""
        want = self.reference(args)
        for name in self.outputs:
            g, w = np.asarray(got[name]), want[name]
            if g.shape != w.shape:
                return False, f"{name}: shape {g.shape}, expected {w.shape}"
            if self.tol is None:
                good = np.array_equal(g, w)
            else:
                good = np.allclose(g, w, rtol=self.tol[0], atol=self.tol[1])
            if not good:
                bad = int(np.count_nonzero(g != w))
                return False, f"{name}: {bad} of {w.size} elements differ from the reference"
        return True, ""


def _f32(rng, *shape):
    return rng.random(shape, dtype=np.float32)


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
