"""A stencil's halo exchange inside the kernel, over peer memory (issue 36).

    python3 examples/distributed/peer_halo.py [--rows 8194 --cols 8192 --steps 200]

The 2-D Jacobi stencil of examples/multi_gpu_stencil.py on two GPUs, each owning half of the
rows and no halo copies: the kernel on each GPU reads the neighbouring row it needs directly
from the other GPU's array (`device.launch(..., peer=True)`, docs/semantics.md §13.3), over
NVLink. After each step every GPU records an event and waits for the other's before the next
step reads its rows. Beside it, the same steps with halo rows copied between the steps
(`pydevice.copy`, examples/multi_gpu_stencil.py's `run_decomposed`) and on one GPU. Both
two-GPU results are checked bit for bit against the one-GPU result; the table gives the time
per step of each.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from multi_gpu_stencil import initial, run_decomposed, run_single, shape_of  # noqa: E402

from cuda import device  # noqa: E402


@device.kernel
def jacobi_peer(src, dst, up, down, first, last):
    """One half of the grid: rows of `src`, with the row above its first in `up` (the other
    GPU's array, its last row) and the row below its last in `down` (the other's first)."""
    j, i = device.tid(2)
    rows, cols = src.shape
    if i < rows and j >= 1 and j < cols - 1:
        if (i == 0 and first) or (i == rows - 1 and last):
            return  # the global boundary rows stay as they are
        n = up[up.shape[0] - 1, j] if i == 0 else src[i - 1, j]
        s = down[0, j] if i == rows - 1 else src[i + 1, j]
        dst[i, j] = 0.25 * (n + s + src[i, j - 1] + src[i, j + 1])


def run_peer(cp, devs, g, steps):
    rows = g.shape[0]
    m = rows // 2
    halves = []
    for dev, part in zip(devs, (g[:m], g[m:])):
        with cp.cuda.Device(dev):
            s = cp.cuda.Stream(non_blocking=True)
            with s:  # the copies in on the kernels' stream
                halves.append((s, [cp.asarray(part), cp.asarray(part)]))
    (s0, top), (s1, bottom) = halves
    gt, bt = shape_of(*top[0].shape), shape_of(*bottom[0].shape)
    cp.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    for k in range(steps):
        frm, to = k % 2, 1 - k % 2
        with cp.cuda.Device(devs[0]):
            device.launch(jacobi_peer, top[frm], top[to], top[frm], bottom[frm], True, False,
                          grid=gt[0], block=gt[1], stream=s0, peer=True)
            e0 = s0.record()
        with cp.cuda.Device(devs[1]):
            device.launch(jacobi_peer, bottom[frm], bottom[to], top[frm], bottom[frm], False, True,
                          grid=bt[0], block=bt[1], stream=s1, peer=True)
            e1 = s1.record()
        # The next step reads the other half's new rows: each stream waits for the other's.
        s0.wait_event(e1)
        s1.wait_event(e0)
    s0.synchronize()
    s1.synchronize()
    dt = (time.perf_counter() - t0) / steps
    out = np.concatenate([cp.asnumpy(top[steps % 2]), cp.asnumpy(bottom[steps % 2])])
    return out, dt


def timed(fn, cp, *args):
    cp.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    r = fn(cp, *args)
    for d in range(cp.cuda.runtime.getDeviceCount()):
        with cp.cuda.Device(d):
            cp.cuda.runtime.deviceSynchronize()
    return r, time.perf_counter() - t0


def main():
    import cupy as cp

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=8194)
    ap.add_argument("--cols", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    if cp.cuda.runtime.getDeviceCount() < 2:
        print("skipped: needs two GPUs")
        return 0
    devs = [0, 1]
    g = initial(args.rows, args.cols)
    run_single(cp, 0, g, 2)  # compile and load outside the timings
    run_peer(cp, devs, g, 2)
    run_decomposed(cp, devs, g, 2)
    single, t_single = timed(run_single, cp, 0, g, args.steps)
    (peer, _), t_peer = timed(run_peer, cp, devs, g, args.steps)
    (copied, paths), t_copy = timed(run_decomposed, cp, devs, g, args.steps)
    ok_peer = np.array_equal(single.view(np.uint32), peer.view(np.uint32))
    ok_copy = np.array_equal(single.view(np.uint32), copied.view(np.uint32))
    n = args.steps
    print(f"\n| {args.rows}x{args.cols} float32, {n} steps | ms per step | bit-exact vs one GPU |")
    print("|---|---:|---|")
    print(f"| one GPU | {t_single / n * 1e3:.3f} | (reference) |")
    print(f"| two GPUs, halos read in the kernel (peer=True) | {t_peer / n * 1e3:.3f} | {ok_peer} |")
    print(f"| two GPUs, halo rows copied ({', '.join(sorted(paths))}) then computed | "
          f"{t_copy / n * 1e3:.3f} | {ok_copy} |")
    return 0 if ok_peer and ok_copy else 1


if __name__ == "__main__":
    sys.exit(main())
