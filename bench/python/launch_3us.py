"""Issue 35's launch figure: host time per launch from Python of c = a * s + b with 3 arrays
and 1 scalar (4096 float32), side by side in one run:

- pydevice `device.launch` and `kernel[grid, block, stream]` on CuPy arrays (target <= 3.0 µs);
- pydevice `device.launch` on PyTorch tensors (target <= 3.5 µs);
- CuPy's RawKernel on the same arrays (the same kernel in CUDA C++);
- PyTorch: a custom op (`torch.library.custom_op`) whose body is the pydevice launch, and
  the built-in `torch.add(b, a, alpha=s, out=c)` (one ATen kernel, the dispatcher's floor);
- the pydevice kernel exported as a TVM-FFI function (`pydevice.tvm_ffi`), called with the
  PyTorch tensors, when apache-tvm-ffi is installed and a C++ compiler or a prebuilt library
  (`--tvm-ffi-lib`) is there;
- the floor: the same launch repeated from one Rust loop (`Launcher.time_packed_loop`: the
  driver's `cuLaunchKernel` and the runtime's checks, no Python), the part of a launch no
  Python-side change can remove.

Every case launches LAUNCHES times back to back on one stream and synchronizes; the host time
per launch is the loop's wall time over the count (the kernel is tiny, so the GPU keeps up
and the host is what is measured). REPEATS rounds, each running every case once in turn;
median and best per case, one JSON line per case, then a table and the targets' verdicts.
Each case's output is checked once against CuPy/PyTorch.

Issue 31's argument kinds run in the same rounds: the same launch with the scalar given as a
NumPy `float32`, a NumPy `float64`, and as the field of a `@struct` (each a kernel of its own
specialization), beside the Python `float`; each line reports its difference from the Python
number's median (the target: within 1 µs).

On the GPU machine (`bash scripts/launch_gpu.sh` runs this after the launch tests):

    python3 bench/python/launch_3us.py [--launches 20000] [--repeats 7]

Without a GPU or CuPy (or with `--dry-run`) the pydevice cases run with dry-run launchers
(everything but the driver call) on CuPy stand-ins, as `launch_host_cost.py` does: the
host-side part only; the peers' cases and the floor are skipped, saying so.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import time

import numpy as np

from cuda import device
from cuda.device import float32

N = 4096
BLOCK = 256
GRID = N // BLOCK
S = 1.5

SRC = r"""
extern "C" __global__ void axpb(const float* a, const float* b, float* c, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * s + b[i];
}
"""

@device.kernel
def axpb(a, b, c, s):
    i = device.tid(1)
    if i < c.shape[0]:
        c[i] = a[i] * s + b[i]


@device.struct
class Scale:
    s: float32


@device.kernel
def axpb_struct(a, b, c, p):
    """`axpb` with the scalar as a `@struct`'s field."""
    i = device.tid(1)
    if i < c.shape[0]:
        c[i] = a[i] * p.s + b[i]


CASES = []  # (name, launch, sync, pydevice kernel or None)
FAST = {}  # case name -> whether every timed launch took the native fast path


def add(name, launch, sync, check, kernel=None):
    for _ in range(200):  # warm-up (and the first launch's specialization)
        launch()
    sync()
    ok = check()
    CASES.append((name, launch, sync, kernel))
    print(json.dumps({"case": name, "output_ok": bool(ok)}), flush=True)
    if not ok:
        raise SystemExit(f"{name}: wrong output")


def skip(name, why):
    print(json.dumps({"case": name, "skipped": why}), flush=True)


def gpu_ready():
    """Whether CuPy and a GPU are there (the real launches); False runs the dry-run mode."""
    try:
        import cupy

        import pydevice._core as core

        return bool(core._native.driver_available()) and cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 (no CuPy, no driver: the dry run)
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--tvm-ffi-lib", default=None, help="a prebuilt axpb.so (examples/tvm_ffi)")
    ap.add_argument("--dry-run", action="store_true", help="host part only, without a GPU")
    ap.add_argument("--case", default="", help="time only the cases whose name contains this")
    o = ap.parse_args()
    if o.dry_run or not gpu_ready():
        return dry_run(o)

    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    stream.use()  # CuPy's current stream: RawKernel launches there; the others are given it
    a = cupy.random.standard_normal(N, dtype=cupy.float32)
    b = cupy.random.standard_normal(N, dtype=cupy.float32)
    c = cupy.zeros(N, dtype=cupy.float32)
    want = a * np.float32(S) + b

    def cupy_check():
        ok = bool(cupy.allclose(c, want, rtol=1e-5, atol=1e-5))
        c.fill(0)
        return ok

    add(PY_FLOAT,
        lambda: device.launch(axpb, a, b, c, S, grid=GRID, block=BLOCK, stream=stream),
        stream.synchronize, cupy_check, axpb)
    cfg = axpb[GRID, BLOCK, stream]
    add("pydevice kernel[grid, block, stream], CuPy arrays + float", lambda: cfg(a, b, c, S),
        stream.synchronize, cupy_check, axpb)
    for name, kernel, s in kinds():
        add(name, lambda kernel=kernel, s=s: device.launch(kernel, a, b, c, s, grid=GRID, block=BLOCK, stream=stream),
            stream.synchronize, cupy_check, kernel)
    raw = cupy.RawKernel(SRC, "axpb")
    s32, n32 = np.float32(S), np.int32(N)
    add("CuPy RawKernel, CuPy arrays + float", lambda: raw((GRID,), (BLOCK,), (a, b, c, s32, n32)),
        stream.synchronize, cupy_check)

    # The floor: pydevice's launcher for these arguments (the Python float's specialization),
    # launched from a Rust loop.
    import pydevice._core as core

    key = tuple(core._describe(x)[0] for x in (a, b, c, S))
    spec = axpb._specs.get((key, a.device.id)) or next(iter(axpb._specs.values()), None)
    launcher = getattr(spec, "launcher", None) if spec is not None else None
    floor = None
    if launcher is not None and hasattr(launcher, "time_packed_loop"):
        vals = tuple((int(x.data.ptr), (N,), (1,)) for x in (a, b, c)) + (S,)
        floor = lambda n: launcher.time_packed_loop(vals, GRID, BLOCK, stream.ptr, n)  # noqa: E731
        floor(200)
        stream.synchronize()
    else:
        skip(FLOOR, "no Launcher.time_packed_loop in this build")

    try:
        import torch
    except ImportError:
        torch = None
        skip("PyTorch cases", "PyTorch is not installed")
    if torch is not None:
        ts = torch.cuda.Stream()
        torch.cuda.set_stream(ts)  # PyTorch's current stream: torch.add and TVM-FFI launch there
        ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
        ta, tb = ta.clone(), tb.clone()
        tc = torch.zeros(N, device="cuda")
        twant = torch.as_tensor(want, device="cuda").clone()

        def torch_check():
            torch.cuda.synchronize()
            ok = bool(torch.allclose(tc, twant, rtol=1e-5, atol=1e-5))
            tc.zero_()
            return ok

        add(TORCH_FLOAT,
            lambda: device.launch(axpb, ta, tb, tc, S, grid=GRID, block=BLOCK, stream=ts),
            ts.synchronize, torch_check, axpb)
        s32t = np.float32(S)
        add("pydevice device.launch, PyTorch tensors + np.float32",
            lambda: device.launch(axpb, ta, tb, tc, s32t, grid=GRID, block=BLOCK, stream=ts),
            ts.synchronize, torch_check, axpb)

        @torch.library.custom_op("pydevice_bench::axpb", mutates_args=("c",))
        def axpb_op(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, s: float) -> None:
            device.launch(axpb, a, b, c, s, grid=GRID, block=BLOCK, stream=ts)

        add("PyTorch custom op (torch.library) around device.launch",
            lambda: torch.ops.pydevice_bench.axpb(ta, tb, tc, S), ts.synchronize, torch_check)

        add("PyTorch built-in torch.add(b, a, alpha=s, out=c)", lambda: torch.add(tb, ta, alpha=S, out=tc),
            ts.synchronize, torch_check)

        lib = tvm_ffi_lib(o.tvm_ffi_lib, axpb)
        if isinstance(lib, str) and lib.startswith("skip:"):
            skip("TVM-FFI export, PyTorch tensors", lib[5:])
        else:
            add("pydevice kernel as a TVM-FFI function, PyTorch tensors + float", lambda: lib(ta, tb, tc, S),
                ts.synchronize, torch_check)

    report(o, run_rounds(o, floor, stream.synchronize), "GPU")


PY_FLOAT = "pydevice device.launch, CuPy arrays + float"
TORCH_FLOAT = "pydevice device.launch, PyTorch tensors + float"
FLOOR = "floor: the same launch from a Rust loop (cuLaunchKernel + runtime checks)"


def kinds():
    """Issue 31's argument kinds for the scalar: (case name, kernel, value)."""
    s = np.float32(S)
    return [
        ("pydevice device.launch, CuPy arrays + np.float32", axpb, s),
        ("pydevice device.launch, CuPy arrays + np.float64", axpb, np.float64(S)),
        ("pydevice device.launch, CuPy arrays + @struct(float)", axpb_struct, Scale(S)),
        ("pydevice device.launch, CuPy arrays + @struct(np.float32)", axpb_struct, Scale(s)),
    ]


def run_rounds(o, floor, floor_sync):
    """Times every case: REPEATS rounds, each running every case once in turn."""
    cases = [c for c in CASES if o.case in c[0]]
    times = {name: [] for name, _, _, _ in cases}
    floor_times = []
    k = o.launches
    for _ in range(o.repeats):
        for name, launch, sync, kernel in cases:
            sync()
            before = kernel._dispatcher.fast_launches if kernel is not None else 0
            t0 = time.perf_counter()
            for _ in range(k):
                launch()
            t1 = time.perf_counter()
            sync()
            times[name].append((t1 - t0) / k * 1e6)
            if kernel is not None:
                fast = kernel._dispatcher.fast_launches - before == k
                FAST[name] = FAST.get(name, True) and fast
        if floor is not None and o.case in FLOOR:
            floor_sync()
            floor_times.append(floor(k) / k * 1e6)
            floor_sync()
    if floor_times:
        times[FLOOR] = floor_times
    return times


def report(o, times, mode):
    """One JSON line per case, the table, the issue 35 targets and the issue 31 differences."""
    k = o.launches
    rows = []
    for name, t in times.items():
        r = {"case": name, "median_us": round(statistics.median(t), 3), "min_us": round(min(t), 3)}
        if name in FAST:
            r["fast_path"] = FAST[name]
        rows.append(r)
        print(json.dumps(r), flush=True)
    print(f"\n| case ({mode}; {k} launches x {o.repeats}, {N} float32, 3 arrays + 1 scalar) "
          "| median µs/launch | best | fast path |")
    print("|---|---:|---:|---|")
    for r in rows:
        fast = {True: "yes", False: "NO"}.get(r.get("fast_path"), "")
        print(f"| {r['case']} | {r['median_us']} | {r['min_us']} | {fast} |")
    med = {r["case"]: r["median_us"] for r in rows}
    if mode == "GPU":
        for case, target in ((PY_FLOAT, 3.0), (TORCH_FLOAT, 3.5)):
            if case in med:
                verdict = "met" if med[case] <= target else "NOT met"
                print(f"target <= {target} µs for `{case}`: {verdict} ({med[case]} µs)")
    for case, m in med.items():
        base = TORCH_FLOAT if "PyTorch tensors + np." in case else PY_FLOAT
        if ("+ np." in case or "@struct" in case) and base in med:
            d = m - med[base]
            if mode == "GPU":
                verdict = "met" if d <= 1.0 else "NOT met"
            else:  # a dry run's times are the host part of a debug or loaded build: no verdict
                verdict = f"{m / med[base]:.2f}x the Python float (dry run: the verdict needs the GPU machine)"
            print(f"issue 31, within 1 µs of a Python float: `{case}` {d:+.3f} µs: {verdict}")
    sys.stdout.flush()


def dry_run(o):
    """The pydevice cases without a GPU: dry-run launchers (no driver call) on CuPy stand-ins."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from launch_host_cost import FAKE_BASE, FakeStream, _standin_class, cupy_arrays

    import pydevice._core as core

    # Real CuPy arrays over memory never touched where CuPy imports (it needs no GPU for
    # that), else stand-ins with the same attributes.
    arrays = cupy_arrays()
    what = "CuPy arrays (UnownedMemory)"
    if arrays is None:
        cls = _standin_class()
        arrays = [cls(FAKE_BASE + k * N * 4) for k in range(3)]
        what = "CuPy stand-ins"
    a, b, c = arrays
    stream = FakeStream()

    def prepare(kernel, *args):
        keys = tuple(core._describe(x)[0] for x in args)
        if (keys, 0) not in kernel._specs:
            m = kernel._mod()
            types = kernel._types_of_keys(keys, args, m)
            launcher = m.compile(kernel.__name__, types, "sm_90", 3).dry_run_launcher(0)
            kernel._specs[(keys, 0)] = core._Specialization(None, launcher, ())
        return kernel

    def nothing():
        pass

    def add_fast(name, kernel, launch):
        if o.case in name:  # (a case left out is not compiled either: quicker under valgrind)
            add(name, launch, nothing, lambda: True, kernel)  # no output to check: no GPU

    cfg = axpb[GRID, BLOCK, stream]
    add_fast(PY_FLOAT, prepare(axpb, a, b, c, S),
             lambda: device.launch(axpb, a, b, c, S, grid=GRID, block=BLOCK, stream=stream))
    add_fast("pydevice kernel[grid, block, stream], CuPy arrays + float", prepare(axpb, a, b, c, S),
             lambda: cfg(a, b, c, S))
    for name, kernel, s in kinds():
        if o.case in name:
            prepare(kernel, a, b, c, s)
        add_fast(name, kernel, lambda kernel=kernel, s=s: device.launch(kernel, a, b, c, s, grid=GRID, block=BLOCK, stream=stream))
    for peer in ("CuPy RawKernel", "PyTorch cases", FLOOR):
        skip(peer, "dry run: no GPU (or --dry-run)")
    report(o, run_rounds(o, None, nothing), f"dry run, {what}, no driver call")


def tvm_ffi_lib(prebuilt, kernel):
    """The exported function for `kernel` (built here, or `prebuilt`), or 'skip:why'."""
    try:
        import tvm_ffi
    except ImportError:
        return "skip:apache-tvm-ffi is not installed"
    try:
        if prebuilt:
            if not os.path.exists(prebuilt):
                return f"skip:{prebuilt} does not exist"
            return tvm_ffi.load_module(prebuilt).axpb
        if not (os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")):
            return "skip:no C++ compiler to build the library (give --tvm-ffi-lib)"
        import pydevice.tvm_ffi as export

        return export.export(kernel, "float32[::1], float32[::1], float32[::1], float32", name="axpb")
    except Exception as e:  # noqa: BLE001 (the other cases still run)
        return f"skip:{type(e).__name__}: {e}"


if __name__ == "__main__":
    main()
