# Port of llm.c's permute_kernel and unpermute_kernel (attention's QKV to (B, NH, N, d) and back).
# Origin: github.com/karpathy/llm.c, dev/cuda/attention_forward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. floatX is float (the fp32 build).
#   Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original's attention_forward3: block 256, grid ceil(B*NH*N*d/256), with
# B = 8, T = N = 1024, C = 768, NH = 12 (d = 64) as its main().
#
# entry: permute_kernel
# sig: float32[::1], float32[::1], float32[::1], float32[::1], int32, int32, int32, int32
# entry: unpermute_kernel
# sig: float32[::1], float32[::1], int32, int32, int32, int32
import numpy as np

from cuda import device

B = 8
T = 1024
C = 768
NH = 12
BLOCK_SIZE = 256


@device.kernel
def permute_kernel(q, k, v, inp, B, N, NH, d):
    # okay so now, this kernel wants Q,K,V to all be of shape (B, NH, N, d)
    # but instead, we have a single tensor QKV (inp) of shape (B, N, 3, NH, d)
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    # Q[b][nh_][n][d_] = inp[b][n][0][nh_][d_]

    if idx < B * NH * N * d:
        b = idx // (NH * N * d)
        rest = idx % (NH * N * d)
        nh_ = rest // (N * d)
        rest = rest % (N * d)
        n = rest // d
        d_ = rest % d

        inp_idx = (b * N * 3 * NH * d) + (n * 3 * NH * d) + (0 * NH * d) + (nh_ * d) + d_

        q[idx] = inp[inp_idx]
        k[idx] = inp[inp_idx + NH * d]
        v[idx] = inp[inp_idx + 2 * (NH * d)]


@device.kernel
def unpermute_kernel(inp, out, B, N, NH, d):
    # out has shape (B, nh, N, d) but we need to unpermute it to (B, N, nh, d)
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x

    # out[b][n][nh_][d_] <- inp[b][nh_][n][d_]
    if idx < B * NH * N * d:
        b = idx // (NH * N * d)
        rest = idx % (NH * N * d)
        nh_ = rest // (N * d)
        rest = rest % (N * d)
        n = rest // d
        d_ = rest % d

        other_idx = (b * NH * N * d) + (n * NH * d) + (nh_ * d) + d_
        out[other_idx] = inp[idx]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_attention_permute.cu"
TOL = {"q": (0, 0), "k": (0, 0), "v": (0, 0), "out": (0, 0)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 2, "T": 4, "C": 24, "NH": 3}


def setup(rng):
    n = B * T * C
    return {"inp": rng.standard_normal(3 * n, dtype=np.float32), "q": np.zeros(n, np.float32),
            "k": np.zeros(n, np.float32), "v": np.zeros(n, np.float32), "out": np.zeros(n, np.float32)}


def run(launch, d):
    hs = C // NH
    total = B * NH * T * hs
    i32 = np.int32
    launch(permute_kernel, -(-total // BLOCK_SIZE), BLOCK_SIZE, d["q"], d["k"], d["v"], d["inp"], i32(B), i32(T), i32(NH), i32(hs))
    launch(unpermute_kernel, -(-total // BLOCK_SIZE), BLOCK_SIZE, d["q"], d["out"], i32(B), i32(T), i32(NH), i32(hs))


def reference(h):
    hs = C // NH
    qkv = h["inp"].reshape(B, T, 3, NH, hs)
    q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3).ravel() for i in range(3))
    return {"q": q, "k": k, "v": v, "out": qkv[:, :, 0].ravel()}
