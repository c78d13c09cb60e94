# histogram: bins[v] += count of v in data, for uint8 data and 256 int32 bins. Each block
# counts its grid-stride slice into private bins in shared memory (shared atomics), then
# adds them to the global bins (one global atomic per bin per block). bins must hold 0
# before the launch. The atomics say what CUDA's atomicAdd is: relaxed, block scope for the
# shared bins and device scope for the global ones (the spec's default is seq_cst/system,
# which costs a fence.sc.sys per atomic).
# Benchmark: n = 2**27 bytes of uniform random values; 1-D launch, block 256, grid 1056.
from cuda import device

BINS = 256


@device.kernel
def histogram(data, bins):
    local = device.shared_array(BINS, device.int32)
    for b in range(device.thread_idx.x, BINS, device.block_dim.x):
        local[b] = 0
    device.syncthreads()

    for i in range(device.tid(1), len(data), device.grid_size(1)):
        device.atomic_ref(local, data[i]).add(1, memory='relaxed', scope='block')
    device.syncthreads()

    for b in range(device.thread_idx.x, BINS, device.block_dim.x):
        device.atomic_ref(bins, b).add(local[b], memory='relaxed', scope='device')
