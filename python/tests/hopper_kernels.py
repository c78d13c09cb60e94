# Kernels of the Python tests of the §17 extensions: thread block clusters with distributed
# shared memory, inline PTX, and a launch from device code.
from cuda import device

BLOCK = 64


@device.kernel(cluster=(2, 1, 1))
def swap_halves(src, dst):
    # Each block reads the shared tile of the other block of its cluster.
    tile = device.shared_array(BLOCK, device.float32)
    t = device.thread_idx.x
    i = device.tid(1)
    tile[t] = src[i]
    device.cluster_sync()
    other = device.map_shared_rank(tile, 1 - device.block_rank_in_cluster)
    dst[i] = other[t]
    device.cluster_sync()


@device.kernel
def ranks(out):
    i = device.tid(1)
    out[i] = device.block_rank_in_cluster * 100 + device.cluster_size


@device.kernel
def xor3(a, b, c, out):
    i = device.tid(1)
    if i < len(out):
        out[i] = device.asm("lop3.b32 $0, $1, $2, $3, $4;", device.uint32, (a[i], b[i], c[i], 0x96), constraints="=r,r,r,r,n")


@device.kernel
def fill(out, start, stop, value):
    i = start + device.tid(1)
    if i < stop:
        out[i] = value


@device.kernel
def fill_from_device(out, per_block):
    if device.thread_idx.x == 0:
        start = device.block_idx.x * per_block
        stop = min(start + per_block, len(out))
        device.launch(fill, out, start, stop, device.int32(device.block_idx.x), grid=(per_block + 31) // 32, block=32)


# Hopper's asynchronous pipeline (§18.4): TMA through tensor maps built on the host.
from cuda.device import hopper

TR = 16
TC = 32


@device.kernel(max_threads=128)
def tma_double(amap, omap, rmap):
    # Each block: TMA-load its TR×TC float32 tile, double it, store it through `omap` and
    # add it into `rmap`'s array.
    tile = device.shared_array(TR * TC, device.float32, align=128)
    bars = device.shared_array(1, device.uint64)
    t = device.thread_idx.x
    col = device.block_idx.x * TC
    row = device.block_idx.y * TR
    if t == 0:
        hopper.mbarrier_init(bars[0], 1)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if t == 0:
        hopper.mbarrier_arrive_expect_tx(bars[0], TR * TC * 4)
        hopper.tma_load(tile[0], amap, (col, row), bars[0])
    hopper.mbarrier_wait_parity(bars[0], 0)
    for i in range(t, TR * TC, device.block_dim.x):
        tile[i] = tile[i] * 2.0
    hopper.fence_proxy_async()
    device.syncthreads()
    if t == 0:
        hopper.tma_store(omap, (col, row), tile[0])
        hopper.tma_reduce_add(rmap, (col, row), tile[0])
        hopper.bulk_commit_group()
        hopper.bulk_wait_group(0)


@device.kernel(max_threads=128)
def tma_double_by_value(amap: hopper.TensorMap, omap: hopper.TensorMap, rmap):
    # `tma_double` with the load's and the store's maps passed by value (grid constants in
    # the parameter space, §18.4); the reduction's map stays in global memory.
    tile = device.shared_array(TR * TC, device.float32, align=128)
    bars = device.shared_array(1, device.uint64)
    t = device.thread_idx.x
    col = device.block_idx.x * TC
    row = device.block_idx.y * TR
    if t == 0:
        hopper.tma_prefetch(amap)
        hopper.mbarrier_init(bars[0], 1)
        hopper.fence_mbarrier_init()
    device.syncthreads()
    if t == 0:
        hopper.mbarrier_arrive_expect_tx(bars[0], TR * TC * 4)
        hopper.tma_load(tile[0], amap, (col, row), bars[0])
    hopper.mbarrier_wait_parity(bars[0], 0)
    for i in range(t, TR * TC, device.block_dim.x):
        tile[i] = tile[i] * 2.0
    hopper.fence_proxy_async()
    device.syncthreads()
    if t == 0:
        hopper.tma_store(omap, (col, row), tile[0])
        hopper.tma_reduce_add(rmap, (col, row), tile[0])
        hopper.bulk_commit_group()
        hopper.bulk_wait_group(0)


@device.kernel(max_threads=64)
def elect_count(out):
    # Each warp elects one lane, which counts itself: out[b] == warps per block.
    if hopper.elect_one():
        device.atomic_ref(out, device.block_idx.x).add(1)
