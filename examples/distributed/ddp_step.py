"""Data-parallel training with pydevice kernels between NCCL all-reduces (issue 36).

    torchrun --standalone --nproc_per_node=4 examples/distributed/ddp_step.py [--steps 20]
    python3 examples/distributed/ddp_step.py --reference --world 4    # the same run on one GPU

The model is small but real: ``out = LayerNorm(x @ W1) @ W2``, loss the mean squared error.
Each rank takes its shard of every global batch. The fused LayerNorm (forward and backward)
and the fused AdamW update are pydevice kernels, launched on the rank's current PyTorch
stream (``stream=None`` follows the tensors' framework, docs/semantics.md §13.3); the
matrix products are PyTorch's.

Bit-exact against one GPU. Floating-point all-reduce sums in an order NCCL chooses, so the
gradients are all-reduced as fixed-point integers: a pydevice kernel truncates each gradient to
a multiple of 2^-FRAC_BITS in int64, NCCL sums the integers (integer addition does not
depend on the order), and the AdamW kernel turns the sum back into float32. The reference
(``--reference``) runs every shard of a step on one GPU with the same kernels and shapes and
adds the integers, so both runs hold the same bits after every step; the script prints a
SHA-256 of the parameters that the test compares.

Prints one JSON line per rank 0 run: step time (median over the timed steps), the share of
it spent on the host in pydevice launches, and the parameters' digest.
"""

import argparse
import hashlib
import json
import math
import os
import statistics
import time

import numpy as np
import torch

from cuda import device

FRAC_BITS = 32  # gradients are truncated to multiples of 2^-32 before the all-reduce
BLOCK = 256


@device.kernel
def layernorm_forward(out, xhat, rstd, inp, gain, bias, rows, cols):
    """One block per row: mean and variance by a shared-memory tree, then the output."""
    row = device.block_idx.x
    t = device.thread_idx.x
    fc = device.float32(cols)
    buf = device.shared_array(BLOCK, device.float32)
    s = device.float32(0.0)
    for c in range(t, cols, BLOCK):
        s += inp[row, c]
    buf[t] = s
    device.syncthreads()
    k = BLOCK // 2
    while k > 0:
        if t < k:
            buf[t] += buf[t + k]
        device.syncthreads()
        k //= 2
    mean = buf[0] / fc
    device.syncthreads()
    v = device.float32(0.0)
    for c in range(t, cols, BLOCK):
        d = inp[row, c] - mean
        v += d * d
    buf[t] = v
    device.syncthreads()
    k = BLOCK // 2
    while k > 0:
        if t < k:
            buf[t] += buf[t + k]
        device.syncthreads()
        k //= 2
    r = device.float32(1.0) / math.sqrt(buf[0] / fc + device.float32(1e-5))
    for c in range(t, cols, BLOCK):
        n = (inp[row, c] - mean) * r
        xhat[row, c] = n
        out[row, c] = n * gain[c] + bias[c]
    if t == 0:
        rstd[row] = r


@device.kernel
def layernorm_backward(dinp, dgain_rows, dbias_rows, dout, xhat, rstd, gain, rows, cols):
    """One block per row: the input gradient, and this row's share of the gain and bias
    gradients (summed over rows afterwards, in a fixed order, not by atomics)."""
    row = device.block_idx.x
    t = device.thread_idx.x
    fc = device.float32(cols)
    buf = device.shared_array((2, BLOCK), device.float32)
    a = device.float32(0.0)
    b = device.float32(0.0)
    for c in range(t, cols, BLOCK):
        dn = dout[row, c] * gain[c]
        a += dn
        b += dn * xhat[row, c]
        dgain_rows[row, c] = dout[row, c] * xhat[row, c]
        dbias_rows[row, c] = dout[row, c]
    buf[0, t] = a
    buf[1, t] = b
    device.syncthreads()
    k = BLOCK // 2
    while k > 0:
        if t < k:
            buf[0, t] += buf[0, t + k]
            buf[1, t] += buf[1, t + k]
        device.syncthreads()
        k //= 2
    mean_dn = buf[0, 0] / fc
    mean_dn_xhat = buf[1, 0] / fc
    r = rstd[row]
    for c in range(t, cols, BLOCK):
        dn = dout[row, c] * gain[c]
        dinp[row, c] = r * (dn - mean_dn - xhat[row, c] * mean_dn_xhat)


@device.kernel
def to_fixed(q, g, scale):
    """q = g * scale as int64 (truncated toward zero), the form the all-reduce sums. (Not
    `round`: in this dialect it returns the dialect's `int`, int32, docs/semantics.md.)"""
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i < g.shape[0]:
        q[i] = device.int64(device.float64(g[i]) * scale)


@device.kernel
def adamw_fixed(p, q, m, v, n, inv_scale, lr, beta1, beta2, c1, c2, eps, wd):
    """AdamW on the gradient ``q * inv_scale / n`` (the mean over the global batch's shards)."""
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i < p.shape[0]:
        g = device.float32(device.float64(q[i]) * inv_scale / n)
        mi = beta1 * m[i] + (device.float32(1.0) - beta1) * g
        vi = beta2 * v[i] + (device.float32(1.0) - beta2) * g * g
        m[i] = mi
        v[i] = vi
        p[i] -= lr * ((mi / c1) / (math.sqrt(vi / c2) + eps) + wd * p[i])


class Timer:
    """Host time spent inside pydevice launches."""

    def __init__(self):
        self.seconds = 0.0

    def launch(self, *args, **kw):
        t0 = time.perf_counter()
        device.launch(*args, **kw)
        self.seconds += time.perf_counter() - t0


def init_params(dim, hidden, dev):
    g = torch.Generator().manual_seed(1234)
    return {
        "w1": (torch.randn(dim, hidden, generator=g) / math.sqrt(dim)).to(dev),
        "gain": torch.ones(hidden).to(dev),
        "bias": torch.zeros(hidden).to(dev),
        "w2": (torch.randn(hidden, 1, generator=g) / math.sqrt(hidden)).to(dev),
    }


def batch(step, shard, world, per_rank, dim, dev):
    """Shard ``shard`` of the global batch of step ``step`` (the same data whoever asks: a
    generator on the GPU seeded by step and shard, so it costs no host time)."""
    g = torch.Generator(device=dev).manual_seed(step * 1000 + shard)
    x = torch.randn(per_rank, dim, generator=g, device=dev)
    t = torch.sin(x[:, :1] * 3.0) + 0.1 * x[:, 1:2]
    return x, t


def shard_grads(params, x, t, global_rows, timer):
    """The gradient of this shard's part of the global loss, flat float32, in params' order."""
    rows = x.shape[0]
    hidden = params["w1"].shape[1]
    h = x @ params["w1"]
    y = torch.empty_like(h)
    xhat = torch.empty_like(h)
    rstd = torch.empty(rows, device=x.device)
    timer.launch(layernorm_forward, y, xhat, rstd, h, params["gain"], params["bias"], rows, hidden,
                 grid=rows, block=BLOCK)
    out = y @ params["w2"]
    dout = 2.0 * (out - t) / global_rows
    dw2 = y.t() @ dout
    dy = dout @ params["w2"].t()
    dh = torch.empty_like(h)
    dgain_rows = torch.empty_like(h)
    dbias_rows = torch.empty_like(h)
    timer.launch(layernorm_backward, dh, dgain_rows, dbias_rows, dy, xhat, rstd, params["gain"], rows,
                 hidden, grid=rows, block=BLOCK)
    dw1 = x.t() @ dh
    grads = [dw1, dgain_rows.sum(0), dbias_rows.sum(0), dw2]
    loss = ((out - t) ** 2).sum() / global_rows
    return torch.cat([g.reshape(-1) for g in grads]), loss


def fixed(flat, timer):
    q = torch.empty(flat.shape[0], dtype=torch.int64, device=flat.device)
    timer.launch(to_fixed, q, flat, float(2**FRAC_BITS), grid=(flat.shape[0] + 255) // 256, block=256)
    return q


def apply(params, state, q, world, step, timer, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, wd=0.01):
    flat = torch.cat([p.reshape(-1) for p in params.values()])
    n = flat.shape[0]
    timer.launch(adamw_fixed, flat, q, state["m"], state["v"], float(world), 2.0**-FRAC_BITS,
                 np.float32(lr), np.float32(beta1), np.float32(beta2),
                 np.float32(1 - beta1**step), np.float32(1 - beta2**step), np.float32(eps),
                 np.float32(wd), grid=(n + 255) // 256, block=256)
    k = 0
    for name, p in params.items():
        p.copy_(flat[k:k + p.numel()].view_as(p))
        k += p.numel()


def digest(params):
    h = hashlib.sha256()
    for p in params.values():
        h.update(p.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--per-rank", type=int, default=16384)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--reference", action="store_true", help="run every shard on one GPU")
    ap.add_argument("--world", type=int, default=1, help="shards per step with --reference")
    args = ap.parse_args()
    # Deterministic cuBLAS (read when its handle is made, so before the first product).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.use_deterministic_algorithms(True)
    if args.reference:
        rank, world, dist = 0, args.world, None
        dev = torch.device("cuda", 0)
    else:
        import torch.distributed as dist

        dist.init_process_group("nccl")
        rank, world = dist.get_rank(), dist.get_world_size()
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    params = init_params(args.dim, args.hidden, dev)
    n = sum(p.numel() for p in params.values())
    state = {"m": torch.zeros(n, device=dev), "v": torch.zeros(n, device=dev)}
    timer = Timer()
    times, launch_share = [], []
    global_rows = args.per_rank * world
    for step in range(1, args.steps + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        timer.seconds = 0.0
        if dist is None:
            q = None
            for shard in range(world):
                x, t = batch(step, shard, world, args.per_rank, args.dim, dev)
                g, _ = shard_grads(params, x, t, global_rows, timer)
                qs = fixed(g, timer)
                q = qs if q is None else q + qs
        else:
            x, t = batch(step, rank, world, args.per_rank, args.dim, dev)
            g, loss = shard_grads(params, x, t, global_rows, timer)
            q = fixed(g, timer)
            dist.all_reduce(q)  # int64: the sum does not depend on NCCL's order
            dist.all_reduce(loss)  # for the log only
        # `apply` divides by `world` too: the gradients above are of the global mean already,
        # so pass 1 (kept as a parameter to show the usual mean-of-sums form).
        apply(params, state, q, 1, step, timer)
        torch.cuda.synchronize()
        if step > args.warmup:
            dt = time.perf_counter() - t0
            times.append(dt)
            launch_share.append(timer.seconds / dt)
    if rank == 0:
        print(json.dumps({
            "mode": "reference" if dist is None else "ddp",
            "world": world,
            "per_rank_rows": args.per_rank,
            "step_ms": round(statistics.median(times) * 1e3, 3),
            "pydevice_launch_share": round(statistics.median(launch_share), 4),
            "params_sha256": digest(params),
        }), flush=True)
    if dist is not None:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
