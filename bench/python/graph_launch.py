"""Launch cost inside a replayed CUDA graph (issue 35), beside direct launches, in one run.

A pydevice kernel (c = a * s + b on 4096 float32, 3 CuPy arrays and one scalar) and the same
kernel as a CuPy RawKernel are each launched K times: directly from Python, and captured once
into a CuPy graph (stream capture) that is then replayed. The cost per launch is the wall time
(host loop, then a synchronize) over K. Inside a graph the host is out of the loop, so the
figure is what the GPU spends per (tiny) kernel; the output of the last replay is checked.

    python3 bench/python/graph_launch.py [--k 2000] [--repeats 7]

Prints one JSON line per case and a table.
"""
import argparse
import json
import statistics
import time

import cupy
import numpy as np

from cuda import device

N = 4096
GRID, BLOCK = N // 256, 256

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    k = args.k
    a = cupy.random.standard_normal(N, dtype=cupy.float32)
    b = cupy.random.standard_normal(N, dtype=cupy.float32)
    c = cupy.zeros(N, dtype=cupy.float32)
    s = np.float32(1.5)
    raw = cupy.RawKernel(SRC, "axpb")
    stream = cupy.cuda.Stream(non_blocking=True)
    stream.use()

    def ours():
        device.launch(axpb, a, b, c, s, grid=GRID, block=BLOCK)

    def theirs():
        raw((GRID,), (BLOCK,), (a, b, c, s, np.int32(N)))

    cases = {}
    for name, fn in (("pydevice", ours), ("RawKernel", theirs)):
        for _ in range(100):
            fn()
        stream.synchronize()
        stream.begin_capture()
        for _ in range(k):
            fn()
        graph = stream.end_capture()
        graph.launch(stream)
        stream.synchronize()
        cases[f"{name} direct"] = lambda fn=fn: [fn() for _ in range(k)]
        cases[f"{name} graph replay"] = lambda g=graph: g.launch(stream)
    times = {n: [] for n in cases}
    for _ in range(args.repeats):
        for name, run in cases.items():
            stream.synchronize()
            t0 = time.perf_counter()
            run()
            stream.synchronize()
            times[name].append((time.perf_counter() - t0) / k * 1e6)
    c.fill(0)
    cases["pydevice graph replay"]()
    stream.synchronize()
    # The kernel may fuse a * s + b into one fma (CuPy rounds twice): compare with an
    # absolute tolerance too, for results near zero.
    ok = bool(cupy.allclose(c, a * s + b, rtol=1e-5, atol=1e-5))
    rows = []
    for name, t in times.items():
        r = {"case": name, "median_us": round(statistics.median(t), 3), "min_us": round(min(t), 3)}
        rows.append(r)
        print(json.dumps(r), flush=True)
    print(json.dumps({"output_ok": ok}))
    print(f"\n| case (K={k}, {N} float32, 3 arrays + 1 scalar) | µs per launch, median | best |")
    print("|---|---:|---:|")
    for r in rows:
        print(f"| {r['case']} | {r['median_us']} | {r['min_us']} |")
    if not ok:
        raise SystemExit("the replayed graph's output is wrong")


if __name__ == "__main__":
    main()
