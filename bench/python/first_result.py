"""Time to first result in a fresh process: from interpreter start to the synchronized result
of a vector add on CuPy arrays (1M float32), for pydevice, numba-cuda, cupyx.jit and CuPy's
RawKernel, each script the same shape (imports, kernel definition, arrays, launch, sync,
check). Each is run RUNS times in a new `python3` process; the wall time of the whole process
is reported (median, best). CuPy keeps compiled kernels in an on-disk cache
(~/.cupy/kernel_cache), so CuPy RawKernel and cupyx.jit are also run with a fresh, empty
CUPY_CACHE_DIR per run ("cold"); numba and pydevice do not cache on disk unless asked.
Run on the GPU machine:  python3 bench/python/first_result.py
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = 5
COMMON_HEAD = "import cupy\n"
COMMON_TAIL = """
n = 1 << 20
a = cupy.arange(n, dtype=cupy.float32)
b = cupy.ones(n, dtype=cupy.float32)
c = cupy.zeros(n, dtype=cupy.float32)
LAUNCH
cupy.cuda.Device().synchronize()
assert bool((c == a + b).all())
"""
SCRIPTS = {
    "pydevice": ("""
from cuda import device

@device.kernel
def vec_add(a, b, c):
    i = device.tid(1)
    if i < len(c):
        c[i] = a[i] + b[i]
""", "device.launch(vec_add, a, b, c, grid=n // 256, block=256, stream=cupy.cuda.get_current_stream())"),
    "numba-cuda": ("""
import numpy as np
np.row_stack = np.vstack
from numba import cuda

@cuda.jit
def vec_add(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]
""", "vec_add[n // 256, 256](a, b, c)"),
    "cupyx.jit": ("""
from cupyx import jit

@jit.rawkernel()
def vec_add(a, b, c):
    i = jit.blockIdx.x * jit.blockDim.x + jit.threadIdx.x
    if i < c.size:
        c[i] = a[i] + b[i]
""", "vec_add((n // 256,), (256,), (a, b, c))"),
    "CuPy RawKernel": ("""
vec_add = cupy.RawKernel(r'''
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}''', "vec_add")
""", "vec_add((n // 256,), (256,), (a, b, c, cupy.int32(n)))"),
}


def run(script, env):
    # From a file, as users run scripts: pydevice and cupyx.jit read the kernel's source.
    # Writing the file is outside the timed region.
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    try:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, f.name], env=env, capture_output=True, text=True)
        dt = time.perf_counter() - t0
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}")
    return dt


rows = []
for name, (define, launch) in SCRIPTS.items():
    script = COMMON_HEAD + define + COMMON_TAIL.replace("LAUNCH", launch)
    variants = [("default", None)]
    if name in ("cupyx.jit", "CuPy RawKernel"):
        variants.append(("cold CuPy cache", "fresh"))
    for label, cache in variants:
        times = []
        try:
            run(script, dict(os.environ))  # first run: warms the OS file cache, not timed
            for _ in range(RUNS):
                env = dict(os.environ)
                if cache == "fresh":
                    env["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cupy-cache-")
                times.append(run(script, env))
            r = {"framework": name, "variant": label, "median_s": round(statistics.median(times), 3),
                 "min_s": round(min(times), 3)}
        except Exception as e:  # noqa: BLE001
            r = {"framework": name, "variant": label, "error": str(e)}
        rows.append(r)
        print(json.dumps(r), flush=True)
baseline = run(COMMON_HEAD + COMMON_TAIL.replace("LAUNCH", "c[:] = a + b"), dict(os.environ))
print(json.dumps({"framework": "(CuPy alone: import, arrays, c[:] = a + b)", "s": round(baseline, 3)}))
print()
print(f"| framework | variant | median s | best s |  ({RUNS} fresh processes each)")
print("|---|---|---|---|")
for r in rows:
    print(f"| {r['framework']} | {r['variant']} | {r.get('median_s', r.get('error'))} | {r.get('min_s', '')} |")
