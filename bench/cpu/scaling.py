"""How the CPU back end's blocks scale with cores (issue 33): three kernels of different
shapes, each launched with 1, 2, 4, ... worker threads up to the machine's cores, on the
same inputs; the median time of a few launches, the speedup over one thread and the
efficiency (speedup over threads). Outputs are checked against NumPy once per kernel.

    python3 bench/cpu/scaling.py [--repeats 5] [--scale 1.0] [--threads 1,2,4]

On the GPU host: `bash bench/cpu/run_scaling.sh` (installs the wheel of .carry/, as
python/tests/gpu_run.sh does, and runs this).

- `fma_chain`: arithmetic only (a 256-step fma chain per element), no barriers;
- `block_sum`: a shared-memory tree per block, a barrier per level (fibers switch at each);
- `warp_sum`: warp shuffles (lockstep collectives) then one atomic per warp;
- `sync_only`: block_sum's barriers (8 levels) without shared memory (each thread adds in a
  register), and `shared_only`: block_sum's shared-memory traffic without barriers (each
  thread works on its own slot): which of the two costs block_sum its scaling.

`--kernels block_sum,sync_only` runs some of them. The last line gives each kernel's speedup
at the most threads (the figure to quote).

Prints one JSON line per (kernel, threads) and a table. The thread count is the back end's
worker pool size for that launch (`threads=`), the blocks being spread over it. Each count
gets one launch first that is not timed (it makes that count's persistent pool), and the
arrays are made (and their pages touched) before the clock starts. "CPU s" is the process's
user + system time during the launch: near `seconds` times the threads when every worker
had a core of its own (on a loaded machine it is not, and the wall time cannot scale).
"""
import argparse
import json
import os
import resource
import statistics
import time

import numpy as np

from cuda import device

BLOCK = 256


@device.kernel
def fma_chain(x, out):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i < x.shape[0]:
        v = x[i]
        acc = device.float32(0.0)
        for _ in range(256):
            acc = device.fma(acc, device.float32(0.999), v)
        out[i] = acc


@device.kernel
def block_sum(x, out):
    buf = device.shared_array(BLOCK, device.float32)
    t = device.thread_idx.x
    i = device.block_idx.x * BLOCK + t
    buf[t] = x[i] if i < x.shape[0] else device.float32(0.0)
    device.syncthreads()
    k = BLOCK // 2
    while k > 0:
        if t < k:
            buf[t] += buf[t + k]
        device.syncthreads()
        k //= 2
    if t == 0:
        out[device.block_idx.x] = buf[0]


@device.kernel
def warp_sum(x, out):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    v = x[i] if i < x.shape[0] else device.float32(0.0)
    off = 16
    while off > 0:
        v += device.shfl_down_sync(0xFFFFFFFF, v, off)
        off //= 2
    if device.lane_id == 0:
        device.atomic_ref(out, 0).add(v)


@device.kernel
def sync_only(x, out):
    t = device.thread_idx.x
    i = device.block_idx.x * BLOCK + t
    v = x[i] if i < x.shape[0] else device.float32(0.0)
    device.syncthreads()
    k = BLOCK // 2
    while k > 0:
        v = v * device.float32(0.5) + device.float32(1.0)
        device.syncthreads()
        k //= 2
    out[i] = v


@device.kernel
def shared_only(x, out):
    buf = device.shared_array(BLOCK, device.float32)
    t = device.thread_idx.x
    i = device.block_idx.x * BLOCK + t
    buf[t] = x[i] if i < x.shape[0] else device.float32(0.0)
    k = BLOCK // 2
    while k > 0:
        buf[t] = buf[t] * device.float32(0.5) + device.float32(1.0)
        k //= 2
    out[i] = buf[t]


def _levels(x, n):
    v = np.pad(x, (0, n - x.shape[0])).astype(np.float32)
    k = BLOCK // 2
    while k > 0:
        v = (v * np.float32(0.5) + np.float32(1.0)).astype(np.float32)
        k //= 2
    return v


def cases(rng, scale):
    n = max(BLOCK, int((1 << 20) * scale))
    x = rng.standard_normal(n).astype(np.float32)
    blocks = (n + BLOCK - 1) // BLOCK

    def fma_ref():
        acc = np.zeros(n, np.float32)
        for _ in range(256):
            acc = (acc * np.float32(0.999) + x).astype(np.float32)
        return acc

    return [
        ("fma_chain", fma_chain, lambda: (x, np.empty(n, np.float32)), 1, fma_ref, 1e-3),
        ("block_sum", block_sum, lambda: (x, np.empty(blocks, np.float32)), 1,
         lambda: np.pad(x, (0, blocks * BLOCK - n)).reshape(blocks, BLOCK).sum(1), 1e-4),
        ("warp_sum", warp_sum, lambda: (x, np.zeros(1, np.float32)), 1,
         lambda: np.array([x.sum(dtype=np.float64)], np.float32), 1e-2),
        ("sync_only", sync_only, lambda: (x, np.empty(blocks * BLOCK, np.float32)), 1,
         lambda: _levels(x, blocks * BLOCK), 1e-6),
        ("shared_only", shared_only, lambda: (x, np.empty(blocks * BLOCK, np.float32)), 1,
         lambda: _levels(x, blocks * BLOCK), 1e-6),
    ], blocks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0, help="problem size factor (2^20 elements at 1)")
    ap.add_argument("--threads", default=None, help="comma-separated thread counts (default: 1, 2, 4, ... up to the cores)")
    ap.add_argument("--kernels", default=None, help="comma-separated kernel names (default: all)")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if args.threads:
        counts = [int(t) for t in args.threads.split(",")]
    else:
        counts = [t for t in (1, 2, 4, 8, 16, 32, 64, 128) if t <= cores]
        if counts[-1] != cores:
            counts.append(cores)
    rng = np.random.default_rng(33)
    table = []
    all_cases, blocks = cases(rng, args.scale)
    if args.kernels:
        keep = args.kernels.split(",")
        all_cases = [c for c in all_cases if c[0] in keep]
    for name, k, make, out_index, ref, tol in all_cases:
        base = None
        for t in counts:
            k._launch_cpu(make(), blocks, BLOCK, 0, None, threads=t)
            times = []
            cpu = []
            for _ in range(args.repeats):
                a = make()
                r0 = resource.getrusage(resource.RUSAGE_SELF)
                t0 = time.perf_counter()
                k._launch_cpu(a, blocks, BLOCK, 0, None, threads=t)
                times.append(time.perf_counter() - t0)
                r1 = resource.getrusage(resource.RUSAGE_SELF)
                cpu.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
            if t == counts[0]:
                got = a[out_index]
                want = ref()
                assert np.allclose(got, want, rtol=tol, atol=tol * np.abs(want).max()), name
            med = statistics.median(times)
            base = base or med
            row = {"kernel": name, "threads": t, "cores": cores, "seconds": round(med, 4),
                   "speedup": round(base / med, 2), "efficiency": round(base / med / t, 3),
                   "cpu_seconds": round(statistics.median(cpu), 4)}
            print(json.dumps(row), flush=True)
            table.append(row)
    print(f"\n{cores} cores; load average {os.getloadavg()[0]:.1f} at the end")
    print(f"\n| kernel ({blocks} blocks of {BLOCK}) | threads | s | speedup | efficiency | CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in table:
        print(f"| {r['kernel']} | {r['threads']} | {r['seconds']} | {r['speedup']} | {r['efficiency']:.0%} | {r['cpu_seconds']} |")
    top = max(r["threads"] for r in table)
    print(f"\nspeedup at {top} threads: " + ", ".join(
        f"{r['kernel']} {r['speedup']}x" for r in table if r["threads"] == top))


if __name__ == "__main__":
    main()
