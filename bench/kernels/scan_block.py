# scan_block: inclusive prefix sum of int32 values within each run of 1024 elements (a
# per-block scan: block b writes out[1024*b + t] = x[1024*b] + ... + x[1024*b + t]; no
# carry between blocks). Hillis-Steele in shared memory: log2(1024) = 10 steps.
# Benchmark: n = 2**26 values in 0..9; 1-D launch, block 1024 (= BLOCK), grid n / 1024.
# n must be a multiple of BLOCK.
from cuda import device

BLOCK = 1024


@device.kernel
def scan_block(x, out):
    buf = device.shared_array(BLOCK, device.int32)
    t = device.thread_idx.x
    i = device.tid(1)

    v = x[i]
    buf[t] = v
    device.syncthreads()
    offset = 1
    while offset < BLOCK:
        if t >= offset:
            v += buf[t - offset]
        device.syncthreads()
        buf[t] = v
        device.syncthreads()
        offset *= 2
    out[i] = v
