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
