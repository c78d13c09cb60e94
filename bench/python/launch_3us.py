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
Each case's output is checked once against CuPy/PyTorch. On the GPU machine:

    python3 bench/python/launch_3us.py [--launches 20000] [--repeats 7]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import time

import numpy as np

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

CASES = []  # (name, launch, sync, check)


def add(name, launch, sync, check):
    for _ in range(200):  # warm-up (and the first launch's specialization)
        launch()
    sync()
    ok = check()
    CASES.append((name, launch, sync))
    print(json.dumps({"case": name, "output_ok": bool(ok)}), flush=True)
    if not ok:
        raise SystemExit(f"{name}: wrong output")


def skip(name, why):
    print(json.dumps({"case": name, "skipped": why}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--tvm-ffi-lib", default=None, help="a prebuilt axpb.so (examples/tvm_ffi)")
    o = ap.parse_args()

    import cupy
    from cuda import device

    @device.kernel
    def axpb(a, b, c, s):
        i = device.tid(1)
        if i < c.shape[0]:
            c[i] = a[i] * s + b[i]

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

    add("pydevice device.launch, CuPy arrays + float",
        lambda: device.launch(axpb, a, b, c, S, grid=GRID, block=BLOCK, stream=stream),
        stream.synchronize, cupy_check)
    cfg = axpb[GRID, BLOCK, stream]
    add("pydevice kernel[grid, block, stream], CuPy arrays + float", lambda: cfg(a, b, c, S),
        stream.synchronize, cupy_check)
    raw = cupy.RawKernel(SRC, "axpb")
    s32, n32 = np.float32(S), np.int32(N)
    add("CuPy RawKernel, CuPy arrays + float", lambda: raw((GRID,), (BLOCK,), (a, b, c, s32, n32)),
        stream.synchronize, cupy_check)

    # The floor: pydevice's launcher for these arguments, launched from a Rust loop.
    spec = next(iter(axpb._specs.values()), None)
    launcher = getattr(spec, "launcher", None) if spec is not None else None
    floor = None
    if launcher is not None and hasattr(launcher, "time_packed_loop"):
        vals = tuple((int(x.data.ptr), (N,), (1,)) for x in (a, b, c)) + (S,)
        floor = lambda n: launcher.time_packed_loop(vals, GRID, BLOCK, stream.ptr, n)  # noqa: E731
        floor(200)
        stream.synchronize()
    else:
        skip("floor: cuLaunchKernel from a Rust loop", "no Launcher.time_packed_loop in this build")

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

        add("pydevice device.launch, PyTorch tensors + float",
            lambda: device.launch(axpb, ta, tb, tc, S, grid=GRID, block=BLOCK, stream=ts),
            ts.synchronize, torch_check)

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

    times = {name: [] for name, _, _ in CASES}
    floor_times = []
    k = o.launches
    for _ in range(o.repeats):
        for name, launch, sync in CASES:
            sync()
            t0 = time.perf_counter()
            for _ in range(k):
                launch()
            t1 = time.perf_counter()
            sync()
            times[name].append((t1 - t0) / k * 1e6)
        if floor is not None:
            stream.synchronize()
            floor_times.append(floor(k) / k * 1e6)
            stream.synchronize()
    if floor_times:
        times["floor: the same launch from a Rust loop (cuLaunchKernel + runtime checks)"] = floor_times
    rows = []
    for name, t in times.items():
        r = {"case": name, "median_us": round(statistics.median(t), 3), "min_us": round(min(t), 3)}
        rows.append(r)
        print(json.dumps(r), flush=True)
    print(f"\n| case ({k} launches x {o.repeats}, {N} float32, 3 arrays + 1 scalar) | median µs/launch | best |")
    print("|---|---:|---:|")
    for r in rows:
        print(f"| {r['case']} | {r['median_us']} | {r['min_us']} |")
    med = {r["case"]: r["median_us"] for r in rows}
    for case, target in (("pydevice device.launch, CuPy arrays + float", 3.0),
                         ("pydevice device.launch, PyTorch tensors + float", 3.5)):
        if case in med:
            verdict = "met" if med[case] <= target else "NOT met"
            print(f"target <= {target} µs for `{case}`: {verdict} ({med[case]} µs)")
    sys.stdout.flush()


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
