# Port of the CUDA samples' vectorAdd: kernel vectorAdd.
# Origin: github.com/NVIDIA/cuda-samples, Samples/0_Introduction/vectorAdd/vectorAdd.cu, commit c94ff366aed18c797b8a85dfaac7817b0228b420.
#   Copyright (c) 2022, NVIDIA CORPORATION, BSD-3-Clause license (LICENSE in that
#   repository). Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the sample: block 256, grid ceil(numElements/256); numElements = 2^24 (the
# sample's is 50000).
#
# entry: vectorAdd
# sig: float32[::1], float32[::1], float32[::1], int32
import numpy as np

from cuda import device

NUM_ELEMENTS = 1 << 24


@device.kernel
def vectorAdd(A, B, C, numElements):
    i = device.block_dim.x * device.block_idx.x + device.thread_idx.x

    if i < numElements:
        C[i] = A[i] + B[i] + 0.0


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "samples_vectorAdd.cu"
TOL = {"C": (0, 0)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NUM_ELEMENTS": 1000}


def setup(rng):
    n = NUM_ELEMENTS
    return {"A": rng.random(n, dtype=np.float32), "B": rng.random(n, dtype=np.float32), "C": np.zeros(n, np.float32)}


def run(launch, d):
    threads = 256
    launch(vectorAdd, (NUM_ELEMENTS + threads - 1) // threads, threads, d["A"], d["B"], d["C"], np.int32(NUM_ELEMENTS))


def reference(h):
    return {"C": h["A"] + h["B"]}
