"""Checks the corpus ports on the CPU, without a GPU: each port's kernels run as plain Python
under a small SIMT emulator, at the reduced sizes its `SMALL` dict gives (module constants
overridden before setup), and every output its TOL names is compared with its NumPy
reference, as bench/corpus/run.py does on the GPU.

The emulator stands in for `cuda.device` (and `cuda.device.cg`) with the part of it the ports
use. Kernels without barriers or warp operations run thread after thread; the others run a
block at a time with one Python thread per CUDA thread, `syncthreads` as a barrier over the
block's live threads, and shuffles and `cg.reduce` exchanged through the block's slots
between two barriers (every thread of the block must reach them, as in the ports). Integer
arithmetic is Python's (no uint32 wrap-around): this checks the ports' algorithms, launch
shapes and references, not pydevice's code generation.

  python3 bench/corpus/emulate.py [PORT ...]        # default: every port with a SMALL dict
"""

import importlib
import inspect
import math
import os
import sys
import threading
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 1234


class _Dim3:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

    def __iter__(self):
        return iter((self.x, self.y, self.z))


class _BlockBarrier:
    """A barrier over the threads of a block that are still running."""

    def __init__(self, n):
        self.live = n
        self.arrived = 0
        self.gen = 0
        self.cv = threading.Condition()

    def wait(self):
        with self.cv:
            gen = self.gen
            self.arrived += 1
            if self.arrived == self.live:
                self._release()
            else:
                while gen == self.gen:
                    self.cv.wait()

    def leave(self):
        with self.cv:
            self.live -= 1
            if self.live and self.arrived == self.live:
                self._release()

    def _release(self):
        self.arrived = 0
        self.gen += 1
        self.cv.notify_all()


class _Block:
    def __init__(self, nthreads, shared_bytes):
        self.barrier = _BlockBarrier(nthreads)
        self.shared = {}
        self.dynamic = np.zeros(max(shared_bytes, 16), np.uint8)
        self.slots = [None] * nthreads
        self.lock = threading.Lock()


_tl = threading.local()


def _linear():
    t, b = _tl.tidx, _tl.bdim
    return (t.z * b.y + t.y) * b.x + t.x


class _Tile:
    def __init__(self, n):
        self.n = n

    def thread_rank(self):
        return _linear() % self.n

    def size(self):
        return self.n

    num_threads = size

    def meta_group_rank(self):
        return _linear() // self.n

    def meta_group_size(self):
        b = _tl.bdim
        return -(-(b.x * b.y * b.z) // self.n)


class _ThreadBlock:
    def thread_rank(self):
        return _linear()

    def sync(self):
        _tl.block.barrier.wait()


def _exchange(value, source):
    """Every thread of the block publishes `value`; returns the value of thread source(me)."""
    blk, me = _tl.block, _linear()
    blk.slots[me] = value
    blk.barrier.wait()
    got = blk.slots[source(me)]
    blk.barrier.wait()
    return got


class _CG(types.ModuleType):
    def this_thread_block(self):
        return _ThreadBlock()

    def tiled_partition(self, parent, n):
        return _Tile(n)

    def reduce(self, group, value, op):
        blk, me = _tl.block, _linear()
        blk.slots[me] = value
        blk.barrier.wait()
        base = me - me % group.n
        vals = blk.slots[base:base + group.n]
        blk.barrier.wait()
        if op == "add":
            acc = vals[0]
            for v in vals[1:]:
                acc = acc + v
            return acc
        return {"min": min, "max": max}[op](vals)


class _Device(types.ModuleType):
    """The emulated `cuda.device`."""

    float16, float32, float64 = np.float16, np.float32, np.float64
    int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
    uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
    is_device, is_host, any_target = "is_device", "is_host", "any_target"

    @property
    def thread_idx(self):
        return _tl.tidx

    @property
    def block_idx(self):
        return _tl.bidx

    @property
    def block_dim(self):
        return _tl.bdim

    @property
    def grid_dim(self):
        return _tl.gdim

    def kernel(self, fn=None, **options):
        if fn is None:
            return lambda f: _Kernel(f)
        return _Kernel(fn)

    def func(self, fn=None, **options):
        if fn is None:
            return lambda f: f
        return fn

    def target(self, desc):
        return desc in ("is_device", "any_target")

    def tid(self, n):
        t, b, bd = _tl.tidx, _tl.bidx, _tl.bdim
        pos = (b.x * bd.x + t.x, b.y * bd.y + t.y, b.z * bd.z + t.z)
        return pos[0] if n == 1 else pos[:n]

    def grid_size(self, n):
        g, bd = _tl.gdim, _tl.bdim
        s = (g.x * bd.x, g.y * bd.y, g.z * bd.z)
        return s[0] if n == 1 else s[:n]

    def local_array(self, shape, dtype, order="C", align=0):
        return np.zeros(shape, dtype=np.dtype(dtype), order=order)

    def shared_array(self, shape, dtype, order="C", align=0):
        k = _tl.ndecl
        _tl.ndecl += 1
        blk = _tl.block
        with blk.lock:
            if k not in blk.shared:
                blk.shared[k] = np.zeros(shape, dtype=np.dtype(dtype), order=order)
            return blk.shared[k]

    def dynamic_shared_array(self):
        return _tl.block.dynamic

    def syncthreads(self):
        _tl.block.barrier.wait()

    def shfl_sync(self, mask, v, src):
        return _exchange(v, lambda me: me - me % 32 + src)

    def shfl_down_sync(self, mask, v, d):
        return _exchange(v, lambda me: me + d if (me % 32) + d < 32 else me)

    def shfl_up_sync(self, mask, v, d):
        return _exchange(v, lambda me: me - d if (me % 32) >= d else me)

    def shfl_xor_sync(self, mask, v, m):
        return _exchange(v, lambda me: me ^ m)

    def fma(self, a, b, c):
        return a * b + c

    def rsqrt(self, x):
        return type(x)(1.0 / math.sqrt(x)) if isinstance(x, np.floating) else 1.0 / math.sqrt(x)


class _Kernel:
    def __init__(self, fn):
        self.underlying = fn
        self.__name__ = fn.__name__
        src = inspect.getsource(fn)
        self.cooperative = any(w in src for w in ("syncthreads", "shfl", "cg.", "warpReduce"))


def install():
    """Puts the emulated `cuda`, `cuda.device` and `cuda.device.cg` into sys.modules."""
    cuda = types.ModuleType("cuda")
    dev = _Device("cuda.device")
    cg = _CG("cuda.device.cg")
    dev.cg = cg
    cuda.device = dev
    sys.modules.update({"cuda": cuda, "cuda.device": dev, "cuda.device.cg": cg})


def _dim3(d):
    if isinstance(d, (int, np.integer)):
        return _Dim3(int(d), 1, 1)
    d = [int(x) for x in d] + [1, 1]
    return _Dim3(d[0], d[1], d[2])


def launch(kernel, grid, block, *args, shared=0):
    g, b = _dim3(grid), _dim3(block)
    n = b.x * b.y * b.z
    fn = kernel.underlying
    for bz in range(g.z):
        for by in range(g.y):
            for bx in range(g.x):
                blk = _Block(n, shared)
                ids = [_Dim3(x, y, z) for z in range(b.z) for y in range(b.y) for x in range(b.x)]

                def body(t, blk=blk, bidx=_Dim3(bx, by, bz)):
                    _tl.tidx, _tl.bidx, _tl.bdim, _tl.gdim = t, bidx, b, g
                    _tl.block, _tl.ndecl = blk, 0
                    fn(*args)

                if not kernel.cooperative:
                    for t in ids:
                        body(t)
                    continue
                errors = []

                def thread(t, blk=blk, body=body):
                    try:
                        body(t)
                    except BaseException as e:  # noqa: BLE001
                        errors.append(e)
                    finally:
                        blk.barrier.leave()

                ths = [threading.Thread(target=thread, args=(t,)) for t in ids]
                for th in ths:
                    th.start()
                for th in ths:
                    th.join()
                if errors:
                    raise errors[0]


def check_port(stem):
    mod = importlib.import_module(stem)
    for k, v in getattr(mod, "SMALL", {}).items():
        setattr(mod, k, v)
    h = mod.setup(np.random.default_rng(SEED))
    ref = mod.reference(h)
    d = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in h.items()}
    mod.run(launch, d)
    fails = []
    for name, (rtol, atol) in mod.TOL.items():
        got = np.asarray(d[name], np.float64)
        want = np.asarray(ref[name], np.float64).reshape(got.shape)
        # The emulator computes some float32 steps in float64; allow float32 rounding.
        bad = ~np.isclose(got, want, rtol=max(rtol, 2e-5), atol=max(atol, 1e-6))
        if bad.any():
            i = int(np.argmax(bad))
            fails.append(f"{name}: {int(bad.sum())} of {bad.size} differ (first at {i}: {got.ravel()[i]} vs {want.ravel()[i]})")
    return fails


def main():
    install()
    sys.path.insert(0, HERE)
    stems = sys.argv[1:] or [
        os.path.splitext(f)[0] for f in sorted(os.listdir(HERE))
        if f.endswith(".py") and "\nSMALL = {" in open(os.path.join(HERE, f)).read()
    ]
    failed = 0
    for stem in stems:
        try:
            fails = check_port(stem)
        except Exception as e:  # noqa: BLE001
            fails = [f"{type(e).__name__}: {e}"]
        failed += bool(fails)
        print(("ok   " if not fails else "FAIL ") + stem + "".join("\n     " + f for f in fails), flush=True)
    print(f"{len(stems) - failed} of {len(stems)} ports match their references on the CPU emulator")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
