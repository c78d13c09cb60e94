"""A small CPU emulator of generated reduction (and elementwise) kernels, for tests without a GPU: each block's
threads are Python threads, `syncthreads` is a barrier, and `shfl_xor_sync` exchanges
through the block's scratch list between two barriers (so every thread of the block must
call it, as the warp strategy's loops do when the rows divide evenly among the block's
warps). It covers the part of `cuda.device` that tests/fixtures/kernels/*.gen.py use; it is
not a general simulator."""

import threading

import numpy as np

_tl = threading.local()


class _Dim:
    def __init__(self, name):
        self.name = name

    def __get__(self, obj, owner=None):
        return getattr(_tl, self.name)


class _D3:
    def __init__(self, x, y=0, z=0):
        self.x, self.y, self.z = x, y, z


class _Device:
    thread_idx = _Dim("tidx")
    block_idx = _Dim("bidx")
    grid_dim = _Dim("gdim")
    block_dim = _Dim("bdim")
    float32 = staticmethod(np.float32)
    float64 = staticmethod(np.float64)
    int32 = staticmethod(np.int32)
    int64 = staticmethod(np.int64)
    uint32 = staticmethod(np.uint32)
    complex128 = staticmethod(np.complex128)

    def shared_array(self, n, dt):
        # The k-th declaration of every thread of the block is one array.
        k = _tl.ndecl
        _tl.ndecl += 1
        with _tl.lock:
            return _tl.shared.setdefault(k, np.zeros(n, dtype=np.dtype(dt)))

    def syncthreads(self):
        _tl.barrier.wait()

    def syncwarp(self):
        _tl.barrier.wait()

    def shfl_xor_sync(self, mask, v, s):
        x = _tl.shared.setdefault("shfl", [None] * _tl.bdim.x)
        x[_tl.tidx.x] = v
        _tl.barrier.wait()
        r = x[_tl.tidx.x ^ s]
        _tl.barrier.wait()
        return r

    def tid(self, n):
        return _tl.bidx.x * _tl.bdim.x + _tl.tidx.x

    def grid_size(self, n):
        return _tl.bdim.x * _tl.gdim.x

    def kernel(self, f):
        return f


device = _Device()


def load(path):
    """The kernels of a generated source file (its `cuda` imports replaced by the emulator's)."""
    lines = [ln for ln in open(path).read().splitlines() if not ln.startswith("from cuda")]
    g = {"device": device}
    for name in ("float32", "float64", "int32", "int64", "complex128"):
        g[name] = getattr(device, name)
    exec(compile("\n".join(lines) + "\n", path, "exec"), g)
    return g


def launch(fn, grid, block, args):
    """Runs `fn(*args)` over a (x, y) grid of blocks, one block at a time."""
    for by in range(grid[1]):
        for bx in range(grid[0]):
            shared, lock = {}, threading.Lock()
            barrier = threading.Barrier(block)
            errors = []

            def run(t, bx=bx, by=by, shared=shared, lock=lock, barrier=barrier):
                _tl.tidx, _tl.bidx, _tl.gdim, _tl.bdim = _D3(t), _D3(bx, by), _D3(*grid), _D3(block)
                _tl.shared, _tl.ndecl, _tl.lock, _tl.barrier = shared, 0, lock, barrier
                try:
                    fn(*args)
                except Exception as e:  # noqa: BLE001 (reported by the caller)
                    errors.append(e)
                    barrier.abort()

            threads = [threading.Thread(target=run, args=(t,)) for t in range(block)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            if errors:
                raise errors[0]
