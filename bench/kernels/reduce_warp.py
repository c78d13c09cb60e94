# reduce_warp: out[0] += sum(x) over a float32 vector with warp shuffles. Each thread sums a
# grid-stride slice; each warp folds its 32 sums with shfl_down_sync; the first warp folds
# the block's 8 warp sums the same way, and lane 0 adds the block's sum to out[0] with one
# atomic add. out must hold 0 before the launch.
# Benchmark: n = 2**26; 1-D launch, block 256 (= 32 * WARPS), grid 1056 (8 blocks per SM).
from cuda import device

WARPS = 8


@device.kernel
def reduce_warp(x, out):
    warp_sums = device.shared_array(WARPS, device.float32)
    lane = device.thread_idx.x % 32
    warp = device.thread_idx.x // 32

    acc = 0.0
    for i in range(device.tid(1), len(x), device.grid_size(1)):
        acc += x[i]
    delta = 16
    while delta > 0:
        acc += device.shfl_down_sync(0xFFFFFFFF, acc, delta)
        delta //= 2
    if lane == 0:
        warp_sums[warp] = acc
    device.syncthreads()

    if warp == 0:
        acc = 0.0
        if lane < WARPS:
            acc = warp_sums[lane]
        delta = WARPS // 2
        while delta > 0:
            acc += device.shfl_down_sync(0xFFFFFFFF, acc, delta)
            delta //= 2
        if lane == 0:
            device.atomic_ref(out, 0).add(acc, memory='relaxed', scope='device')
