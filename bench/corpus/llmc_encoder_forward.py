# Port of llm.c's encoder_forward_kernel1 and encoder_forward_kernel2 (token + position embeddings).
# Origin: github.com/karpathy/llm.c, dev/cuda/encoder_forward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. floatX is float (the fp32 build).
#   Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original's encoder_forward1/2: block 512, grid ceil(B*T/512) (kernel1) or
# ceil(B*T*C/512) (kernel2). B = 8, T = 1024, C = 768, V = 50257 as its main().
#
# entry: encoder_forward_kernel1
# sig: float32[::1], int32[::1], float32[::1], float32[::1], int32, int32, int32
# entry: encoder_forward_kernel2
# sig: float32[::1], int32[::1], float32[::1], float32[::1], int32, int32, int32
import numpy as np

from cuda import device

B = 8
T = 1024
C = 768
V = 50257
BLOCK_SIZE = 512


@device.kernel
def encoder_forward_kernel1(out, inp, wte, wpe, B, T, C):
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    N = B * T

    if idx < N:
        b = idx // T
        t = idx % T
        out_bt = out[b * T * C + t * C:]
        ix = inp[b * T + t]
        wte_ix = wte[ix * C:]
        wpe_t = wpe[t * C:]
        for i in range(C):
            out_bt[i] = wte_ix[i] + wpe_t[i]


@device.kernel
def encoder_forward_kernel2(out, inp, wte, wpe, B, T, C):
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    N = B * T * C

    if idx < N:
        bt = idx // C
        b = bt // T
        t = bt % T
        c = idx % C

        ix = inp[b * T + t]

        out[b * T * C + t * C + c] = wte[ix * C + c] + wpe[t * C + c]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_encoder_forward.cu"
TOL = {"out1": (0, 0), "out2": (0, 0)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 2, "T": 8, "C": 16, "V": 50}


def setup(rng):
    return {
        "out1": np.zeros(B * T * C, np.float32),
        "out2": np.zeros(B * T * C, np.float32),
        "inp": rng.integers(0, V, B * T, dtype=np.int32),
        "wte": rng.standard_normal(V * C, dtype=np.float32),
        "wpe": rng.standard_normal(T * C, dtype=np.float32),
    }


def run(launch, d):
    b, t, c = np.int32(B), np.int32(T), np.int32(C)
    launch(encoder_forward_kernel1, -(-B * T // BLOCK_SIZE), BLOCK_SIZE, d["out1"], d["inp"], d["wte"], d["wpe"], b, t, c)
    launch(encoder_forward_kernel2, -(-B * T * C // BLOCK_SIZE), BLOCK_SIZE, d["out2"], d["inp"], d["wte"], d["wpe"], b, t, c)


def reference(h):
    out = h["wte"].reshape(V, C)[h["inp"]].reshape(B, T, C) + h["wpe"].reshape(T, C)[None]
    return {"out1": out.ravel(), "out2": out.ravel()}
