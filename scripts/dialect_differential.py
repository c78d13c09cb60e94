"""Differential check of the numba-cuda and cupyx.jit dialects: each kernel in
tests/fixtures/numba (tests/fixtures/cupyx) is run by numba-cuda (cupyx.jit) itself and by
`pydevice run` on the same random inputs, and the outputs are compared (floats within a
stated tolerance: atomics add in a different order).

Usage (on a GPU machine with numba-cuda and CuPy): python3 scripts/dialect_differential.py PYDEVICE"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

np.row_stack = np.vstack  # numba-cuda 0.30 with NumPy 2.5
from numba import cuda  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
rng = np.random.default_rng(3)


def cases():
    n = 100_000
    yield ("vector_add.py", "add", (n + 255) // 256, 256,
           {"a": rng.standard_normal(n, dtype=np.float32), "b": rng.standard_normal(n, dtype=np.float32),
            "c": np.zeros(n, np.float32)}, {"c": 0.0})
    m = 128
    yield ("matmul_shared.py", "fast_matmul", (8, 8), (16, 16),
           {"A": rng.standard_normal((m, m), dtype=np.float32), "B": rng.standard_normal((m, m), dtype=np.float32),
            "C": np.zeros((m, m), np.float32)}, {"C": 1e-4})
    n = 50_000
    yield ("atomics_and_types.py", "hist", 64, 128,
           {"x": rng.random(n), "bins": np.zeros(16, np.int32), "total": np.zeros(2)}, {"bins": 0.0, "total": 1e-9})
    n = 200_000
    yield ("atomic_inc_dec.py", "wrap_counters", (n + 255) // 256, 256,
           {"inc32": np.zeros(64, np.uint32), "dec32": rng.integers(0, 42, 64).astype(np.uint32),
            "inc64": np.zeros(64, np.uint64), "dec64": rng.integers(0, 6, 64).astype(np.uint64),
            "idx": rng.integers(0, 64, n).astype(np.int32), "olds": np.zeros(1, np.uint64)},
           {"inc32": 0.0, "dec32": 0.0, "inc64": 0.0, "dec64": 0.0, "olds": 0.0})
    n = 10_000
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    yield ("fp16_arith.py", "half_ops", (n + 127) // 128, 128,
           {"a": rng.uniform(-4, 4, n).astype(np.float16), "b": (sign * rng.uniform(0.5, 4, n)).astype(np.float16),
            "c": rng.uniform(-4, 4, n).astype(np.float16), "out": np.zeros((9, n), np.float16),
            "flags": np.zeros(n, np.int32)},
           {"out": 1e-3, "flags": 0.0})
    # Positive inputs keep the logarithms and square roots finite; each result may differ by
    # one float16 ulp where numba uses CUDA's half-precision approximations.
    yield ("fp16_math.py", "half_math", (n + 127) // 128, 128,
           {"a": rng.uniform(0.05, 6, n).astype(np.float16), "out": np.zeros((13, n), np.float16)},
           {"out": 2e-3})
    # Arrays of records (structured dtypes with align=True), nested ones too: records are
    # references into their array in both.
    rec = np.dtype([("x", "<f4"), ("y", "<f4"), ("n", "<i4"), ("w", "<f8")], align=True)
    recs = np.zeros(n, rec)
    recs["x"], recs["y"] = rng.standard_normal(n), rng.standard_normal(n)
    recs["n"], recs["w"] = rng.integers(-1000, 1000, n), rng.standard_normal(n)
    yield ("records.py", "shift", (n + 127) // 128, 128,
           {"recs": recs, "out": np.zeros(n, np.float32)}, {"recs": 0.0, "out": 1e-6})
    pos = np.dtype([("x", "<f4"), ("y", "<f8")], align=True)
    nested = np.zeros(n, np.dtype([("id", "i1"), ("pos", pos), ("k", "<u2")], align=True))
    nested["id"], nested["k"] = rng.integers(-128, 128, n), rng.integers(0, 65536, n)
    nested["pos"]["x"], nested["pos"]["y"] = rng.standard_normal(n), rng.standard_normal(n)
    yield ("records_nested.py", "move", (n + 127) // 128, 128,
           {"recs": nested, "out": np.zeros(n)}, {"recs": 0.0, "out": 1e-12})


    yield ("fp16_exp10_rint.py", "half_exp10_rint", (n + 127) // 128, 128,
           {"a": rng.uniform(-4, 4, n).astype(np.float16), "out": np.zeros((2, n), np.float16)},
           {"out": 2e-3})
    yield ("static_args.py", "static_args", 1, 32,
           {"ary": rng.integers(0, 1000, 32).astype(np.uint32), "ary2": rng.standard_normal((32, 1)),
            "x": 0.25}, {"ary": 0.0, "ary2": 1e-12})
    yield ("int_bit_count.py", "bit_counts", (n + 127) // 128, 128,
           {"a": rng.integers(0, 256, n).astype(np.uint8), "b": rng.integers(-2**62, 2**62, n),
            "out": np.zeros((2, n), np.int32)}, {"out": 0.0})
    # What numba-cuda's own test suite needed (scripts/numba_suite.py): cache hints, degrees,
    # radians, remainder, nextafter, round, NumPy constants, vector type names, `x.dtype`.
    x = rng.uniform(0.01, 4, n).astype(np.float32) * np.where(rng.random(n) < 0.5, -1, 1).astype(np.float32)
    yield ("suite_builtins.py", "suite_builtins", (n + 127) // 128, 128,
           {"x": x, "out": np.zeros((7, n), np.float32), "rounded": np.zeros(n, np.int64)},
           {"out": 1e-6, "rounded": 0.0})


def cupyx_cases():
    n = 1 << 20
    yield ("elementwise_copy.py", "elementwise_copy", 128, 1024,
           {"x": rng.standard_normal(n, dtype=np.float32), "y": np.zeros(n, np.float32), "size": np.uint32(n)},
           {"y": 0.0})
    n = 256 * 64
    yield ("shared_and_atomics.py", "block_sum", 64, 256,
           {"x": rng.random(n, dtype=np.float32), "out": np.zeros(1, np.float32)}, {"out": 1e-4})
    rows, cols = 300, 500
    yield ("grid_stride_2d.py", "scale_2d", 64, 128,
           {"x": rng.standard_normal((rows, cols), dtype=np.float32), "y": np.zeros((rows, cols), np.float32),
            "alpha": np.float32(1.5), "cols": np.int32(cols)}, {"y": 1e-4})
    n = 32 * 1024
    yield ("warp_ops.py", "warp_ops", n // 128, 128,
           {"x": rng.integers(-1000, 1000, n).astype(np.int32), "out": np.zeros(4 * n, np.int32)}, {"out": 0.0})
    n = 100_000
    acc = np.array([0, 0, 2**31 - 1, -2**31, -1, 0, 0, 0, 0, 0], np.int32)
    yield ("atomics_int.py", "atomics_int", (n + 255) // 256, 256,
           {"x": rng.integers(-2**20, 2**20, n).astype(np.int32), "acc": acc}, {"acc": 0.0})
    n = 10_000
    yield ("typing_rule.py", "first_assignment", (n + 127) // 128, 128,
           {"x": rng.uniform(-100, 100, n).astype(np.float32), "y": rng.uniform(-100, 100, n),
            "out": np.zeros(n, np.float32)}, {"out": 0.0})
    n = 10_000
    yield ("complex_array_parts.py", "complex_parts", (n + 127) // 128, 128,
           {"z": rng.standard_normal(n) + 1j * rng.standard_normal(n),
            "w": (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64),
            "out": np.zeros(n)}, {"z": 0.0, "w": 0.0, "out": 1e-12})


def load_module(src, name):
    """Imports source from a real file: cupyx.jit reads kernels with inspect.getsource."""
    import importlib.util
    d = Path(tempfile.mkdtemp())
    path = d / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return vars(mod)


def run_cupyx(src, entry, grid, block, args):
    import cupy
    ns = load_module(src, entry)
    dev = {k: (cupy.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    ns[entry]((grid,), (block,), tuple(dev.values()))
    cupy.cuda.runtime.deviceSynchronize()
    return {k: cupy.asnumpy(v) for k, v in dev.items() if isinstance(v, cupy.ndarray)}


def run_numba(src, entry, grid, block, args):
    ns = load_module(src, entry)
    dev = {k: (cuda.to_device(v) if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    ns[entry][grid, block](*dev.values())
    cuda.synchronize()
    return {k: d.copy_to_host() for k, d in dev.items() if isinstance(args[k], np.ndarray)}


def run_ours(pydevice, path, entry, grid, block, args, outs):
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        cmd = [pydevice, "run", str(path), "--entry", entry,
               "--grid", ",".join(map(str, grid if isinstance(grid, tuple) else (grid,))),
               "--block", ",".join(map(str, block if isinstance(block, tuple) else (block,)))]
        for k, v in args.items():
            if isinstance(v, np.ndarray):
                np.save(d / f"{k}.npy", v)
                cmd += ["--arg", f"{k}={d / (k + '.npy')}"]
            else:
                cmd += ["--arg", f"{k}={np.asarray(v).dtype.name}:{v}"]
        for k in outs:
            cmd += ["--out", f"{k}={d / (k + '.out.npy')}"]
        subprocess.run(cmd, check=True, stderr=subprocess.PIPE)
        return {k: np.load(d / f"{k}.out.npy") for k in outs}


def leaves(a):
    """The number arrays of an output: itself, or each field of a record array (recursively)."""
    if a.dtype.names is None:
        return [a]
    return [x for name in a.dtype.names for x in leaves(a[name])]


failed = 0
suites = [("numba", cases, run_numba), ("cupyx", cupyx_cases, run_cupyx)]
for dialect, make, run_theirs in suites:
  for file, entry, grid, block, args, tol in make():
    path = ROOT / "tests/fixtures" / dialect / file
    src = path.read_text()
    try:
        theirs = run_theirs(src, entry, grid, block, {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})
    except Exception as e:  # the peer itself failed: report, do not count against us
        print(f"skip {dialect}/{file}: {dialect} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        continue
    try:
        ours = run_ours(sys.argv[1], path, entry, grid, block, args, tol)
    except subprocess.CalledProcessError as e:
        print(f"FAIL {dialect}/{file}: pydevice failed: {e.stderr.decode()[-500:]}")
        failed += 1
        continue
    for k, t in tol.items():
        a, b = leaves(theirs[k]), leaves(ours[k])
        ok = all(np.array_equal(x, y) if t == 0 else np.allclose(x, y, rtol=t, atol=t) for x, y in zip(a, b))
        worst = max((float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0
                     for x, y in zip(a, b)), default=0.0)
        bound = "exact" if t == 0 else f"|diff| <= {t} + {t}*|ours|"
        print(f"{'ok  ' if ok else 'FAIL'} {dialect}/{file}:{entry} output `{k}` vs pydevice (max |diff| {worst:.3g}, {bound})")
        failed += not ok
print(f"dialect differential: {failed} mismatch(es)")
sys.exit(1 if failed else 0)
