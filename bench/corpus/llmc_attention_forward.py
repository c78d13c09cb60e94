# Port of llm.c's attention_forward1: attention_query_key_kernel1, attention_softmax_kernel1,
# attention_value_kernel1 (causal self-attention, a thread per score / row / output row).
# Origin: github.com/karpathy/llm.c, dev/cuda/attention_forward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. Ported to the cuda.device dialect for
#   pydevice's corpus.
# Launch as the original's attention_forward1 with block_size 256: grids ceil(B*NH*T*T/256)
# and ceil(B*T*NH/256) (twice). B = 4, T = 256, C = 768, NH = 12 (its main() has B = 8,
# T = 1024).
#
# entry: attention_query_key_kernel1
# sig: float32[::1], float32[::1], int32, int32, int32, int32
# entry: attention_softmax_kernel1
# sig: float32[::1], float32[::1], int32, int32, int32
# entry: attention_value_kernel1
# sig: float32[::1], float32[::1], float32[::1], int32, int32, int32, int32
import math

import numpy as np

from cuda import device

B = 4
T = 256
C = 768
NH = 12
BLOCK_SIZE = 256


@device.kernel
def attention_query_key_kernel1(preatt, inp, B, T, C, NH):
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    total_threads = B * NH * T * T

    if idx < total_threads:
        t2 = idx % T
        t = (idx // T) % T
        if t2 > t:
            # autoregressive mask
            preatt[idx] = -math.inf
            return
        h = (idx // (T * T)) % NH
        b = idx // (NH * T * T)

        C3 = C * 3
        hs = C // NH  # head size
        query_t = inp[b * T * C3 + t * C3 + h * hs:]
        key_t2 = inp[b * T * C3 + t2 * C3 + h * hs + C:]  # +C because it's key

        # (query_t) dot (key_t2)
        val = 0.0
        for i in range(hs):
            val += query_t[i] * key_t2[i]
        val *= 1.0 / math.sqrt(float(hs))

        preatt[idx] = val


@device.kernel
def attention_softmax_kernel1(att, preatt, B, T, NH):
    idx = int(device.block_idx.x * device.block_dim.x + device.thread_idx.x)  # C: int idx
    total_threads = B * T * NH

    if idx < total_threads:
        h = idx % NH
        t = (idx // NH) % T
        b = idx // (NH * T)

        preatt_bth = preatt[b * NH * T * T + h * T * T + t * T:]
        att_bth = att[b * NH * T * T + h * T * T + t * T:]

        # find maxval
        maxval = -3.4028234663852886e38  # -FLT_MAX
        for t2 in range(t + 1):
            if preatt_bth[t2] > maxval:
                maxval = preatt_bth[t2]

        # calculate the exp and keep track of sum
        expsum = 0.0
        for t2 in range(t + 1):
            expv = math.exp(preatt_bth[t2] - maxval)
            expsum += expv
            att_bth[t2] = expv
        expsum_inv = 0.0 if expsum == 0.0 else 1.0 / expsum

        # normalize to get the softmax
        for t2 in range(T):
            if t2 <= t:
                att_bth[t2] *= expsum_inv
            else:
                # causal attention mask. not strictly necessary to set to zero here
                # only doing this explicitly for debugging and checking to PyTorch
                att_bth[t2] = 0.0


@device.kernel
def attention_value_kernel1(out, att, inp, B, T, C, NH):
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    total_threads = B * T * NH

    if idx < total_threads:
        h = idx % NH
        t = (idx // NH) % T
        b = idx // (NH * T)

        C3 = C * 3
        hs = C // NH  # head size

        out_bth = out[b * T * C + t * C + h * hs:]
        att_bth = att[b * NH * T * T + h * T * T + t * T:]

        for i in range(hs):
            out_bth[i] = 0.0
        for t2 in range(t + 1):
            value_t2 = inp[b * T * C3 + t2 * C3 + h * hs + C * 2:]  # +C*2 because it's value
            att_btht2 = att_bth[t2]
            for i in range(hs):
                out_bth[i] += att_btht2 * value_t2[i]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_attention_forward.cu"
TOL = {"att": (1e-4, 1e-6), "out": (1e-4, 1e-5)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 1, "T": 8, "C": 24, "NH": 3, "BLOCK_SIZE": 64}


def setup(rng):
    return {
        "inp": rng.standard_normal(B * T * 3 * C, dtype=np.float32),
        "preatt": np.zeros(B * NH * T * T, np.float32),
        "att": np.zeros(B * NH * T * T, np.float32),
        "out": np.zeros(B * T * C, np.float32),
    }


def run(launch, d):
    i32 = np.int32
    launch(attention_query_key_kernel1, -(-B * NH * T * T // BLOCK_SIZE), BLOCK_SIZE, d["preatt"], d["inp"], i32(B), i32(T), i32(C), i32(NH))
    launch(attention_softmax_kernel1, -(-B * T * NH // BLOCK_SIZE), BLOCK_SIZE, d["att"], d["preatt"], i32(B), i32(T), i32(NH))
    launch(attention_value_kernel1, -(-B * T * NH // BLOCK_SIZE), BLOCK_SIZE, d["out"], d["att"], d["inp"], i32(B), i32(T), i32(C), i32(NH))


def reference(h):
    hs = C // NH
    qkv = h["inp"].reshape(B, T, 3, NH, hs).astype(np.float64)
    q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # (B, NH, T, hs)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hs)
    s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    att = e / e.sum(axis=-1, keepdims=True)
    out = (att @ v).transpose(0, 2, 1, 3).reshape(B * T * C)
    return {"att": att.ravel(), "out": out}
