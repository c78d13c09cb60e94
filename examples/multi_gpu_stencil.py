"""A domain-decomposed 2-D Jacobi stencil on two GPUs with CuPy arrays: each GPU holds half
of the interior rows plus a halo row on each side, and after every step the edge rows are
exchanged with `pydevice.copy` (peer to peer where the driver allows it, else through the
host). The result is checked bit for bit against the same steps on one GPU.

    python3 examples/multi_gpu_stencil.py [DEV0 DEV1]     # `0 0`: both halves on GPU 0

Launches follow their stream: each half launches on a stream of its own GPU, so the kernel
runs there (and an array of the other GPU would raise DeviceMismatchError).
"""
import sys

import numpy as np

from cuda import device


@device.kernel
def jacobi(src, dst):
    j, i = device.tid(2)
    rows, cols = src.shape
    if i >= 1 and i < rows - 1 and j >= 1 and j < cols - 1:
        dst[i, j] = 0.25 * (src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1])


def initial(rows, cols):
    i, j = np.indices((rows, cols))
    g = ((i * 7 + j * 3) % 17).astype(np.float32) * 0.5
    g[:, 0] = 50.0
    g[0, :] = 100.0
    return g


def shape_of(rows, cols):
    return ((cols + 15) // 16, (rows + 15) // 16), (16, 16)


def run_single(cp, dev, g, steps):
    with cp.cuda.Device(dev):
        s = cp.cuda.Stream(non_blocking=True)
        with s:  # the copies in on the kernels' stream (a non-blocking stream does not wait
            bufs = [cp.asarray(g), cp.asarray(g)]  # for the legacy one CuPy would use)
    grid, block = shape_of(*g.shape)
    for k in range(steps):
        device.launch(jacobi, bufs[k % 2], bufs[1 - k % 2], grid=grid, block=block, stream=s)
    s.synchronize()
    return cp.asnumpy(bufs[steps % 2])


def run_decomposed(cp, devs, g, steps):
    rows, cols = g.shape
    m = rows // 2
    parts = [g[: m + 1], g[m - 1 :]]  # global rows 0..=m and m-1..rows
    halves = []
    for dev, part in zip(devs, parts):
        with cp.cuda.Device(dev):
            s = cp.cuda.Stream(non_blocking=True)
            with s:  # the copies in on the kernels' stream
                halves.append((s, [cp.asarray(part), cp.asarray(part)]))
    paths = set()
    for k in range(steps):
        frm, to = k % 2, 1 - k % 2
        for s, bufs in halves:
            grid, block = shape_of(*bufs[0].shape)
            device.launch(jacobi, bufs[frm], bufs[to], grid=grid, block=block, stream=s)
        (s0, top), (s1, bottom) = halves
        # The top's last owned row (global m-1) to the bottom's first halo row, and back.
        paths.add(device.copy(bottom[to][0], top[to][m - 1], stream=s1, src_stream=s0))
        paths.add(device.copy(top[to][m], bottom[to][1], stream=s0, src_stream=s1))
    for s, _ in halves:
        s.synchronize()
    top = cp.asnumpy(halves[0][1][steps % 2])
    bottom = cp.asnumpy(halves[1][1][steps % 2])
    return np.concatenate([top[:m], bottom[1:]]), paths


def main(argv):
    import cupy as cp

    devs = [int(x) for x in argv[1:3]] or [0, 1]
    if cp.cuda.runtime.getDeviceCount() <= max(devs):
        print(f"skipped: GPUs {devs} needed, {cp.cuda.runtime.getDeviceCount()} present (give `0 0`)")
        return 0
    g = initial(514, 1024)
    single = run_single(cp, devs[0], g, 200)
    split, paths = run_decomposed(cp, devs, g, 200)
    same = np.array_equal(single.view(np.uint32), split.view(np.uint32))
    print(f"514x1024, 200 steps on GPUs {devs}: halo copies {sorted(paths)}; bit-exact against one GPU: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
