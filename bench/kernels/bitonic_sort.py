# bitonic_sort: sorts each run of SEG = 2048 uint32 keys (ascending) with a bitonic
# network in shared memory: each block loads one run, 1024 threads do one compare-exchange
# each per step (66 steps, a barrier after each), and write the run back.
# Benchmark: 2^24 keys; 1-D launch, block 1024 (= SEG / 2), grid n / 2048.
# n must be a multiple of SEG.
from cuda import device

SEG = 2048
HALF = 1024  # threads a block


@device.kernel
def bitonic_sort(keys, out):
    s = device.shared_array(SEG, device.uint32)
    t = device.thread_idx.x
    base = device.block_idx.x * SEG
    s[t] = keys[base + t]
    s[t + HALF] = keys[base + t + HALF]
    device.syncthreads()

    k = 2
    while k <= SEG:
        j = k // 2
        while j > 0:
            i = 2 * t - (t & (j - 1))  # the pair (i, i + j), bit j of i clear
            a = s[i]
            b = s[i + j]
            up = (i & k) == 0
            if (a > b) == up:
                s[i] = b
                s[i + j] = a
            device.syncthreads()
            j //= 2
        k *= 2

    out[base + t] = s[t]
    out[base + t + HALF] = s[t + HALF]
