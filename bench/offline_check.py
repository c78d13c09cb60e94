"""Checks of the benchmark that need no GPU, for a build machine before a GPU run.

  ours     every bench/kernels/NAME.py compiles with $PYDEVICE for the signature its case's
           inputs give through `pydevice run` (.npy arrays are C-contiguous), and ptxas
           (found on PATH or beside the nvidia-cuda-nvcc wheel) accepts the PTX
  numba    the numba-cuda kernels of the second set run in numba's CUDA simulator at small
           sizes and match the references (the simulator has no warp shuffles; they are
           added here: a barrier per warp)
  cupyx    every cupyx.jit kernel transpiles for its case's argument types (cupyx.jit's own
           transpiler; the warp size is given as 32 instead of asking a device)

usage: [PYDEVICE=path/to/pydevice] python3 bench/offline_check.py [ours|numba|cupyx ...]
Needs numpy; numba-cuda and cupy for their parts (skipped with a note when missing).
Exits 1 if any check fails.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))
import cases  # noqa: E402

failures = []


def report(ok, what, note=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + note if note else ''}", flush=True)
    if not ok:
        failures.append(what)


_shapes = {}


def arguments(case):
    """(dtype, ndim, bytes) of each argument (ndim None for a scalar), drawing the inputs
    once a case."""
    if case.name not in _shapes:
        _shapes[case.name] = [
            (v.dtype, v.ndim, v.nbytes) if isinstance(v, np.ndarray)
            else (np.asarray(v).dtype, None, 0)
            for v in case.inputs().values()
        ]
    return _shapes[case.name]


def signature(case):
    """The --sig that `pydevice run` derives from the case's arguments."""
    parts = []
    for dtype, ndim, _ in arguments(case):
        if ndim is None:
            parts.append(dtype.name)
        else:
            parts.append(f"{dtype.name}[{', '.join([':'] * (ndim - 1) + ['::1'])}]")
    return ", ".join(parts)


def check_ours():
    cli = os.environ.get("PYDEVICE")
    if not cli:
        print("ours: PYDEVICE not set; skipped")
        return
    ptxas = shutil.which("ptxas") or os.path.join(
        sysconfig.get_paths()["purelib"], "nvidia", "cu13", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases.CASES:
            ptx = os.path.join(tmp, case.name + ".ptx")
            sig = signature(case)
            res = subprocess.run(
                [cli, "compile", os.path.join(HERE, "kernels", case.name + ".py"), "--entry",
                 case.name, "--sig", sig, "--arch", "sm_90", "-o", ptx],
                capture_output=True, text=True)
            if res.returncode != 0:
                report(False, f"ours {case.name}", res.stderr.strip()[-300:])
                continue
            if os.path.exists(ptxas):
                res = subprocess.run([ptxas, "-arch=sm_90", ptx, "-o", os.devnull],
                                     capture_output=True, text=True)
                report(res.returncode == 0, f"ours {case.name} ({sig})", res.stderr.strip())
            else:
                report(True, f"ours {case.name} ({sig})", "no ptxas: PTX not assembled")


# ---- numba-cuda in its simulator ------------------------------------------------------------

def _simulator_shuffles(kernelapi):
    lock, warps = threading.Lock(), {}

    def exchange(value, source):
        th = threading.current_thread()
        lane = th.thread_id % 32
        key = (id(th._manager), tuple(th.blockIdx), th.thread_id // 32)
        with lock:
            barrier, slots = warps.setdefault(key, (threading.Barrier(32), {}))
        slots[lane] = value
        barrier.wait()
        src = source(lane)
        got = slots[src] if 0 <= src < 32 else value
        barrier.wait()
        return got

    api = kernelapi.FakeCUDAModule
    api.shfl_xor_sync = lambda self, mask, v, m: exchange(v, lambda lane: lane ^ m)
    api.shfl_up_sync = lambda self, mask, v, d: exchange(v, lambda lane: lane - d)
    api.shfl_down_sync = lambda self, mask, v, d: exchange(v, lambda lane: lane + d)
    # the simulator's hfma rounds twice; the device's fma.rn.f16 rounds once
    kernelapi.FakeCUDAFp16.hfma = lambda self, a, b, c: np.float16(
        np.float64(a) * np.float64(b) + np.float64(c))


def check_numba():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    try:
        from numba.cuda.simulator import kernelapi
    except ImportError:
        print("numba: numba-cuda not installed; skipped")
        return
    _simulator_shuffles(kernelapi)
    import numba_suite as ns

    r = np.random.default_rng(1)

    def run(name, grid, block, *args):
        ns.KERNELS[name][grid, block](*args)

    def close(name, got, want, rtol=1e-5, atol=1e-6):
        report(np.allclose(got, want, rtol=rtol, atol=atol), f"numba {name} (simulator)")

    x = 2 * r.standard_normal((3, 600), dtype=np.float32)
    for name in ("softmax_rows", "softmax_1pass"):  # 600 columns: the last chunks partial
        out = np.zeros_like(x)
        run(name, 3, 256, x, out)
        close(name, out, cases._softmax(x))

    a = {"x": r.standard_normal((10, 100), dtype=np.float32) + np.float32(0.5),
         "w": r.uniform(0.5, 1.5, 100).astype(np.float32),
         "b": r.uniform(-0.5, 0.5, 100).astype(np.float32)}
    want = cases._layernorm(a)
    for name in ("layernorm", "layernorm_1pass"):
        got = {"out": np.zeros((10, 100), np.float32), "mean": np.zeros(10, np.float32),
               "rstd": np.zeros(10, np.float32)}
        run(name, 2, 256, a["x"], a["w"], a["b"], got["out"], got["mean"], got["rstd"])
        close(name, np.concatenate([got[k].ravel() for k in want]),
              np.concatenate([want[k].ravel() for k in want]), 1e-4, 1e-5)

    n = 256
    pos = np.empty((n, 4), np.float32)
    pos[:, :3] = r.uniform(-1, 1, (n, 3))
    pos[:, 3] = r.uniform(0.5, 1, n) / n
    acc = np.zeros((n, 3), np.float32)
    run("nbody", n // cases.NBODY_BLOCK, cases.NBODY_BLOCK, pos, acc)
    saved = cases.NBODY_CHECKED
    cases.NBODY_CHECKED = n
    close("nbody", acc, cases._nbody({"pos": pos})["acc"], 1e-4, 1e-4)
    cases.NBODY_CHECKED = saved

    n = cases.GEMM_TILE
    ma, mb = r.random((n, n), dtype=np.float32), r.random((n, n), dtype=np.float32)
    mc = np.zeros_like(ma)
    run("sgemm_reg", (1, 1), (16, 16), ma, mb, mc)
    close("sgemm_reg", mc, ma.astype(np.float64) @ mb, 1e-5, 1e-4)

    rows = 40
    indptr = np.r_[0, np.cumsum(r.integers(0, 70, rows))].astype(np.int32)
    a = {"indptr": indptr, "indices": r.integers(0, rows, indptr[-1]).astype(np.int32),
         "data": r.random(indptr[-1], dtype=np.float32), "x": r.random(rows, dtype=np.float32)}
    y = np.zeros(rows, np.float32)
    run("spmv_csr", 5, 256, a["indptr"], a["indices"], a["data"], a["x"], y)
    close("spmv_csr", y, [(a["data"][p:q].astype(np.float64) * a["x"][a["indices"][p:q]]).sum()
                          for p, q in zip(indptr[:-1], indptr[1:])])  # some rows empty

    img = np.zeros((64, cases.MB_W), np.int32)
    run("mandelbrot", (cases.MB_W // 32, 64 // 8), (32, 8), img)
    saved = cases.MB_ROWS_CHECKED
    cases.MB_ROWS_CHECKED = np.arange(64)
    report(np.array_equal(img, cases._mandelbrot({})["out"]), "numba mandelbrot (simulator)")
    cases.MB_ROWS_CHECKED = saved

    n = 64
    img, w = r.random((n, n), dtype=np.float32), r.uniform(-1, 1, (5, 5)).astype(np.float32)
    out = np.zeros_like(img)
    run("conv2d", (n // 32, n // 32), (32, 8), img, w, out)
    pad = np.pad(img.astype(np.float64), 2)
    close("conv2d", out, sum(w[ky, kx] * pad[ky:ky + n, kx:kx + n]
                             for ky in range(5) for kx in range(5)))

    keys = r.integers(0, 1 << 32, 2 * cases.SORT_SEG, dtype=np.uint32)
    out = np.zeros_like(keys)
    run("bitonic_sort", 2, cases.SORT_SEG // 2, keys, out)
    report(np.array_equal(out, np.sort(keys.reshape(-1, cases.SORT_SEG), 1).ravel()),
           "numba bitonic_sort (simulator)")

    n = 256  # the four stages of a 256-point FFT compose to np.fft.fft
    x = (r.uniform(-1, 1, n) + 1j * r.uniform(-1, 1, n)).astype(np.complex64)
    u, v = x.copy(), np.zeros_like(x)
    for ns_ in (1, 4, 16, 64):
        run("fft_radix4", 1, n // 4, u, v, np.int32(ns_))
        u, v = v, u
    close("fft_radix4", u, np.fft.fft(x.astype(np.complex128)), 1e-4, 1e-4)

    x = r.uniform(-1, 1, 1024).astype(np.float16)
    out = np.zeros_like(x)
    run("half2_poly", 2, 256, x, out)
    report(np.array_equal(out, cases._half2_poly({"x": x})["out"]), "numba half2_poly (simulator)")

    x = r.integers(0, 10, 3 * cases.SCAN_TILE, dtype=np.int32)
    status, state = np.zeros(3, np.uint64), np.zeros(2, np.uint32)
    good = True
    for _ in range(3):  # the launch counter must make repeated launches work
        out = np.full_like(x, -1)
        run("scan_lookback", 3, 256, x, out, status, state)
        good &= np.array_equal(out, np.cumsum(x, dtype=np.int32))
    report(good and list(state) == [3, 0], "numba scan_lookback (simulator, 3 launches)")


def check_cupyx():
    try:
        import cupy
        from cupyx.jit import _compile, _cuda_typerules, _cuda_types
    except ImportError:
        print("cupyx: cupy not installed; skipped")
        return
    warnings.filterwarnings("ignore")
    cupy._core._get_warpsize = lambda: 32  # asked of the device otherwise
    cupy._core._full_mask = lambda: 0xFFFFFFFF
    import cupyx_suite as cs

    for case in cases.CASES:
        if case.name in cs.NOT_EXPRESSIBLE:
            continue
        types = [
            _cuda_typerules.get_ctype_from_scalar("numpy", dtype.type(0)) if ndim is None
            else _cuda_types.CArray(dtype, ndim, True, nbytes < 2**31)
            for dtype, ndim, nbytes in arguments(case)
        ]
        try:
            _compile.transpile(cs.KERNELS[case.name]._func, ['extern "C"', "__global__"],
                               "numpy", tuple(types), _cuda_types.void)
            report(True, f"cupyx {case.name} (transpiled)")
        except Exception as e:  # noqa: BLE001 - report any transpiler error
            report(False, f"cupyx {case.name}", f"{type(e).__name__}: {str(e)[:300]}")


def main(argv):
    parts = argv or ["ours", "numba", "cupyx"]
    for part in parts:
        {"ours": check_ours, "numba": check_numba, "cupyx": check_cupyx}[part]()
    if failures:
        print(f"{len(failures)} failed: {', '.join(failures)}")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
