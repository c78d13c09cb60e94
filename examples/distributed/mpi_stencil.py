"""The two-GPU Jacobi stencil (examples/multi_gpu_stencil.py) on N MPI ranks (issue 36).

    mpiexec -n 4 python3 examples/distributed/mpi_stencil.py [--rows 2050 --cols 1024 --steps 200]

Rank r owns a slab of the interior rows plus one halo row on each side, on GPU r % (GPUs on
the node), in CuPy arrays; each step launches the pydevice `jacobi` kernel on the rank's
stream, then exchanges halo rows with its neighbours. The exchange goes over NCCL (CuPy's
`cupy.cuda.nccl`, its unique id broadcast over MPI) when CuPy has NCCL, else through
CUDA-aware MPI when mpi4py's MPI reports it, else through host buffers (said in the output).
Rank 0 gathers the slabs and checks them bit for bit against the same steps on one GPU.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from multi_gpu_stencil import initial, jacobi, run_single, shape_of  # noqa: E402

from cuda import device  # noqa: E402


def slabs(rows, world):
    """Global row ranges [lo, hi) owned by each rank (interior rows 1..rows-1 split evenly)."""
    inner = rows - 2
    bounds = [1 + inner * r // world for r in range(world + 1)]
    return [(bounds[r], bounds[r + 1]) for r in range(world)]


class Exchange:
    """Sends this slab's edge rows to the neighbours and receives their halo rows."""

    def __init__(self, comm, cp, stream):
        self.comm, self.cp, self.stream = comm, cp, stream
        self.rank, self.world = comm.Get_rank(), comm.Get_size()
        self.nccl = None
        try:
            from cupy.cuda import nccl

            uid = nccl.get_unique_id() if self.rank == 0 else None
            uid = comm.bcast(uid, root=0)
            self.nccl = nccl.NcclCommunicator(self.world, uid, self.rank)
            self.kind = "NCCL"
        except Exception:  # noqa: BLE001 (no NCCL in this CuPy: the next path)
            self.kind = "CUDA-aware MPI" if self._cuda_aware() else "host buffers over MPI"

    @staticmethod
    def _cuda_aware():
        try:
            from mpi4py import MPI

            return bool(MPI.Query_cuda_support())
        except Exception:  # noqa: BLE001 (an MPI without the query)
            return False

    def run(self, buf):
        """buf: this rank's (slab + 2 halo rows) array; fills rows 0 and -1 from neighbours."""
        up, down = self.rank - 1, self.rank + 1
        if self.nccl is not None:
            from cupy.cuda import nccl

            s = self.stream.ptr
            n = buf.shape[1]
            nccl.groupStart()
            if up >= 0:
                self.nccl.send(buf[1].data.ptr, n, nccl.NCCL_FLOAT32, up, s)
                self.nccl.recv(buf[0].data.ptr, n, nccl.NCCL_FLOAT32, up, s)
            if down < self.world:
                self.nccl.send(buf[-2].data.ptr, n, nccl.NCCL_FLOAT32, down, s)
                self.nccl.recv(buf[-1].data.ptr, n, nccl.NCCL_FLOAT32, down, s)
            nccl.groupEnd()
            return
        self.stream.synchronize()
        if self.kind == "CUDA-aware MPI":
            send_up, send_down, recv_up, recv_down = buf[1], buf[-2], buf[0], buf[-1]
        else:
            send_up, send_down = self.cp.asnumpy(buf[1]), self.cp.asnumpy(buf[-2])
            recv_up, recv_down = np.empty_like(send_up), np.empty_like(send_down)
        reqs = []
        if up >= 0:
            reqs += [self.comm.Isend(send_up, dest=up, tag=1), self.comm.Irecv(recv_up, source=up, tag=2)]
        if down < self.world:
            reqs += [self.comm.Isend(send_down, dest=down, tag=2),
                     self.comm.Irecv(recv_down, source=down, tag=1)]
        from mpi4py import MPI

        MPI.Request.Waitall(reqs)
        if self.kind != "CUDA-aware MPI":
            if up >= 0:
                buf[0].set(recv_up)
            if down < self.world:
                buf[-1].set(recv_down)


def main():
    from mpi4py import MPI
    import cupy as cp

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2050)
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    dev = rank % cp.cuda.runtime.getDeviceCount()
    g = initial(args.rows, args.cols)
    lo, hi = slabs(args.rows, world)[rank]
    with cp.cuda.Device(dev):
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:  # the copies in on the kernels' stream
            bufs = [cp.asarray(g[lo - 1:hi + 1]), cp.asarray(g[lo - 1:hi + 1])]
        ex = Exchange(comm, cp, stream)
        grid, block = shape_of(*bufs[0].shape)
        for k in range(args.steps):
            frm, to = k % 2, 1 - k % 2
            # The kernel updates rows 1..-2 of the slab (its interior); rows 0 and -1 are halos
            # (or the fixed global boundary on the first and last rank).
            device.launch(jacobi, bufs[frm], bufs[to], grid=grid, block=block, stream=stream)
            ex.run(bufs[to])
        stream.synchronize()
        mine = cp.asnumpy(bufs[args.steps % 2][1:-1])
    parts = comm.gather(mine, root=0)
    if rank == 0:
        split = np.concatenate([g[:1], *parts, g[-1:]])
        single = run_single(cp, 0, g, args.steps)
        same = np.array_equal(single.view(np.uint32), split.view(np.uint32))
        print(f"{args.rows}x{args.cols}, {args.steps} steps on {world} ranks "
              f"({cp.cuda.runtime.getDeviceCount()} GPUs), halos over {ex.kind}: "
              f"bit-exact against one GPU: {same}", flush=True)
        comm.bcast(same, root=0)
        return 0 if same else 1
    return 0 if comm.bcast(None, root=0) else 1


if __name__ == "__main__":
    sys.exit(main())
