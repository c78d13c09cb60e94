# Port of llm.c's adamw_kernel1 and adamw_kernel2 (AdamW step; kernel2 through lerp).
# Origin: github.com/karpathy/llm.c, dev/cuda/adamw.cu, commit f1e2ace651495b74ae22d45d1723443fd00ecd3a.
#   MIT License, Copyright (c) 2024 Andrej Karpathy. floatX is float (the fp32 build).
#   Ported to the cuda.device dialect for pydevice's corpus.
# Launch as the original's adamw_dispatch1/2: block 512, grid ceil(num_parameters/512),
# num_parameters = 1048576, the hyperparameters of its main().
#
# entry: adamw_kernel1
# sig: float32[::1], float32[::1], float32[::1], float32[::1], int64, float32, float32, float32, float32, float32, float32, float32
# entry: adamw_kernel2
# sig: float32[::1], float32[::1], float32[::1], float32[::1], int64, float32, float32, float32, float32, float32, float32, float32
import math

import numpy as np

from cuda import device

NUM_PARAMETERS = 1048576
BLOCK_SIZE = 512


@device.func
def lerp(start: float, end: float, weight: float) -> float:
    return device.fma(weight, end, device.fma(-weight, start, start))


@device.kernel
def adamw_kernel1(params_memory, grads_memory, m_memory, v_memory, num_parameters,
                  learning_rate, beta1, beta2, beta1_correction, beta2_correction, eps, weight_decay):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i >= num_parameters:
        return  # guard
    # update the first moment (momentum)
    m_memory[i] = beta1 * m_memory[i] + (1.0 - beta1) * grads_memory[i]
    # update the second moment (RMSprop)
    v_memory[i] = beta2 * v_memory[i] + (1.0 - beta2) * grads_memory[i] * grads_memory[i]
    m_hat = m_memory[i] / beta1_correction
    v_hat = v_memory[i] / beta2_correction
    params_memory[i] -= learning_rate * (m_hat / (math.sqrt(v_hat) + eps) + weight_decay * params_memory[i])


@device.kernel
def adamw_kernel2(params_memory, grads_memory, m_memory, v_memory, num_parameters,
                  learning_rate, beta1, beta2, beta1_correction, beta2_correction, eps, weight_decay):
    i = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if i >= num_parameters:
        return  # guard
    grad = grads_memory[i]
    m = m_memory[i]
    v = v_memory[i]
    # update the first moment (momentum)
    m = lerp(grad, m, beta1)
    m_memory[i] = m
    # update the second moment (RMSprop)
    v = lerp(grad * grad, v, beta2)
    v_memory[i] = v
    m /= beta1_correction  # m_hat
    v /= beta2_correction  # v_hat
    params_memory[i] -= learning_rate * (m / (math.sqrt(v) + eps) + weight_decay * params_memory[i])


# ---- harness (bench/corpus/run.py) ----
ORIGINAL = "llmc_adamw.cu"
TOL = {"p1": (1e-5, 1e-6), "m1": (1e-5, 1e-7), "v1": (1e-5, 1e-7),
       "p2": (1e-5, 1e-6), "m2": (1e-5, 1e-7), "v2": (1e-5, 1e-7)}
# Sizes for bench/corpus/emulate.py (the CPU check without a GPU).
SMALL = {"NUM_PARAMETERS": 1000}
LR, BETA1, BETA2, EPS, WD, STEP = 1e-3, 0.9, 0.999, 1e-8, 0.0, 1


def setup(rng):
    n = NUM_PARAMETERS
    p = rng.standard_normal(n, dtype=np.float32)
    g = rng.standard_normal(n, dtype=np.float32)
    m = rng.standard_normal(n, dtype=np.float32) * np.float32(0.1)
    v = rng.random(n, dtype=np.float32) * np.float32(0.1)
    return {"p1": p, "g": g, "m1": m, "v1": v, "p2": p.copy(), "m2": m.copy(), "v2": v.copy()}


def hyper():
    c1 = np.float32(1.0 - BETA1 ** STEP)
    c2 = np.float32(1.0 - BETA2 ** STEP)
    return [np.float32(LR), np.float32(BETA1), np.float32(BETA2), c1, c2, np.float32(EPS), np.float32(WD)]


def run(launch, d):
    n = NUM_PARAMETERS
    grid = -(-n // BLOCK_SIZE)
    launch(adamw_kernel1, grid, BLOCK_SIZE, d["p1"], d["g"], d["m1"], d["v1"], np.int64(n), *hyper())
    launch(adamw_kernel2, grid, BLOCK_SIZE, d["p2"], d["g"], d["m2"], d["v2"], np.int64(n), *hyper())


def reference(h):
    lr, b1, b2, c1, c2, eps, wd = (float(x) for x in hyper())
    g = h["g"].astype(np.float64)
    m = b1 * h["m1"] + (1 - b1) * g
    v = b2 * h["v1"] + (1 - b2) * g * g
    p = h["p1"] - lr * ((m / c1) / (np.sqrt(v / c2) + eps) + wd * h["p1"])
    return {"p1": p, "m1": m, "v1": v, "p2": p, "m2": m, "v2": v}
