# reduce_block: out[0] += sum(x) over a float32 vector. Each thread sums a grid-stride
# slice, the block combines its 256 partial sums by a tree in shared memory, and thread 0
# adds the block's sum to out[0] with one atomic add. out must hold 0 before the launch.
# Benchmark: n = 2**26; 1-D launch, block 256 (= BLOCK), grid 1056 (8 blocks per SM).
from cuda import device

BLOCK = 256


@device.kernel
def reduce_block(x, out):
    partial = device.shared_array(BLOCK, device.float32)
    t = device.thread_idx.x

    acc = 0.0
    for i in range(device.tid(1), len(x), device.grid_size(1)):
        acc += x[i]
    partial[t] = acc
    device.syncthreads()

    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            partial[t] += partial[t + stride]
        device.syncthreads()
        stride //= 2

    if t == 0:
        device.atomic_ref(out, 0).add(partial[0], memory='relaxed', scope='device')
