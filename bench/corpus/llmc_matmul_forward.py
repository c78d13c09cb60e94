# Port of llm.c's matmul_forward_kernel1 (naive, a thread an output) and matmul_forward_kernel4 (128x128
# block tiles in shared memory, 8x8 outputs a thread in a per-thread array).
# Origin: github.com/karpathy/llm.c, dev/cuda/matmul_forward.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. Ported to the cuda.device dialect for
#   pydevice's corpus.
# Launch as the original's matmul_forward1 (sqrt_block_size 16: block (16, 16), grid
# (ceil(BT/16), ceil(OC/16))) and matmul_forward4 (block (16, 16), grid (ceil(BT/128),
# ceil(OC/128))). B = 8, T = 128 (its main() has B = 32, T = 1024), C = 768, OC = 3072.
# ld_vec/st_vec (float4 through reinterpret_cast) become four scalar accesses.
#
# entry: matmul_forward_kernel1
# sig: float32[::1], float32[::1], float32[::1], float32[::1], int32, int32, int32
# entry: matmul_forward_kernel4
# sig: float32[::1], float32[::1], float32[::1], float32[::1], int32, int32
import numpy as np

from cuda import device

B = 8
T = 128
C = 768
OC = 3072


@device.kernel
def matmul_forward_kernel1(out, inp, weight, bias, BT, C, OC):
    # out is (B,T,OC). OC is short for "output channels", e.g. OC = 4 * C
    # inp is (B,T,C), weight is (OC, C), bias is (OC)
    # in the naive kernel, every thread handles one element of out
    bt = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    oc = device.block_idx.y * device.block_dim.y + device.thread_idx.y
    if bt < BT and oc < OC:
        val = bias[oc]
        wrow = weight[oc * C:]
        inp_bt = inp[bt * C:]
        for i in range(C):
            val += inp_bt[i] * wrow[i]
        out[bt * OC + oc] = val


@device.kernel(max_threads=256)
def matmul_forward_kernel4(out, inp, weight, bias, C, OC):
    # each thread handles 8x8 elements; each block 128 by 128 elements.
    tx = device.thread_idx.x
    ty = device.thread_idx.y
    oc = 8 * (device.block_idx.y * device.block_dim.y + ty)

    # buffers to cache chunks of the input matrices
    lhs_s = device.shared_array((128, 32), device.float32)
    rhs_s = device.shared_array((128, 32), device.float32)

    # adjust our pointers for the current block
    inp = inp[128 * device.block_idx.x * C:]
    weight = weight[128 * device.block_idx.y * C:]
    out = out[128 * device.block_idx.x * OC + 128 * device.block_idx.y:]

    vals = device.local_array((8, 8), device.float32)
    for i in range(8):
        for j in range(0, 8, 4):
            vals[i, j + 0] = bias[oc + j + 0]
            vals[i, j + 1] = bias[oc + j + 1]
            vals[i, j + 2] = bias[oc + j + 2]
            vals[i, j + 3] = bias[oc + j + 3]

    si_start = 4 * (16 * ty + tx)
    rhs = device.local_array((8, 4), device.float32)
    for so in range(0, C, 32):
        device.syncthreads()
        xmod8 = tx % 8
        xby8 = tx // 8
        xo = 4 * xmod8
        for y in range(2 * ty + xby8, 128, 32):
            for q in range(4):
                lhs_s[y, xo + q] = inp[y * C + so + xo + q]
                rhs_s[y, xo + q] = weight[y * C + so + xo + q]
        device.syncthreads()

        for si in range(si_start, si_start + 32, 4):
            for u in range(8):
                for q in range(4):
                    rhs[u, q] = rhs_s[u + 8 * ty, si % 32 + q]

            for ii in range(8):
                lx = lhs_s[ii + 8 * tx, si % 32 + 0]
                ly = lhs_s[ii + 8 * tx, si % 32 + 1]
                lz = lhs_s[ii + 8 * tx, si % 32 + 2]
                lw = lhs_s[ii + 8 * tx, si % 32 + 3]
                for ji in range(8):
                    vals[ii, ji] += lx * rhs[ji, 0]
                    vals[ii, ji] += ly * rhs[ji, 1]
                    vals[ii, ji] += lz * rhs[ji, 2]
                    vals[ii, ji] += lw * rhs[ji, 3]

    for i in range(8):
        for j in range(0, 8, 4):
            for q in range(4):
                out[(8 * tx + i) * OC + 8 * ty + j + q] = vals[i, j + q]


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_matmul_forward.cu"
TOL = {"out1": (1e-4, 1e-3), "out4": (1e-4, 1e-3)}  # sums of 768 products of N(0, 1) values
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"B": 1, "T": 128, "C": 64, "OC": 128}


def setup(rng):
    return {
        "inp": rng.standard_normal(B * T * C, dtype=np.float32),
        "weight": rng.standard_normal(OC * C, dtype=np.float32),
        "bias": rng.standard_normal(OC, dtype=np.float32),
        "out1": np.zeros(B * T * OC, np.float32),
        "out4": np.zeros(B * T * OC, np.float32),
    }


def run(launch, d):
    bt = B * T
    launch(matmul_forward_kernel1, (-(-bt // 16), -(-OC // 16)), (16, 16), d["out1"], d["inp"], d["weight"], d["bias"], np.int32(bt), np.int32(C), np.int32(OC))
    launch(matmul_forward_kernel4, (-(-bt // 128), -(-OC // 128)), (16, 16), d["out4"], d["inp"], d["weight"], d["bias"], np.int32(C), np.int32(OC))


def reference(h):
    x = h["inp"].reshape(B * T, C).astype(np.float64)
    w = h["weight"].reshape(OC, C).astype(np.float64)
    out = (x @ w.T + h["bias"]).ravel()
    return {"out1": out, "out4": out}
