# scan_lookback: inclusive prefix sum of an int32 vector in one pass with decoupled
# look-back (Merrill & Garland 2016). Block b scans tile b (TILE = 256 threads x 8
# elements, staged in shared memory with one pad word every 32), publishes its tile sum,
# then its thread 0 walks back over the predecessors' published values until it meets an
# inclusive prefix, and publishes its own; tiles are taken in block order (as CUB does:
# blocks start in index order).
#   status[b]: flag in the high 32 bits (2e+1: tile sum only, 2e+2: inclusive prefix, for
#              launch number e; anything else: not yet), the value in the low 32 bits.
#   state[0]:  launches completed (e); state[1]: blocks finished in this launch. The last
#              block to finish advances e, so the arrays need zeroing only once.
# Benchmark: n = 2^26 values in 0..9; 1-D launch, block 256, grid n / 2048.
# n must be a multiple of TILE; status (uint64, one a tile) and state (uint32[2]) start 0.
from cuda import device
from cuda.device import int32, uint64

BLOCK = 256
WARPS = 8
ITEMS = 8
TILE = 2048  # BLOCK * ITEMS
PADDED = 2112  # TILE + TILE // 32
FULL = 0xFFFFFFFF
LOW = 0xFFFFFFFF


@device.kernel
def scan_lookback(x, out, status, state):
    buf = device.shared_array(PADDED, device.int32)
    sums = device.shared_array(WARPS, device.int32)
    carry = device.shared_array(1, device.int32)
    t = device.thread_idx.x
    lane = t % 32
    warp = t // 32
    tile = device.block_idx.x
    base = tile * TILE

    for k in range(ITEMS):
        e = k * BLOCK + t
        buf[e + e // 32] = x[base + e]
    device.syncthreads()

    own = 0
    for k in range(ITEMS):
        e = t * ITEMS + k
        own += buf[e + e // 32]
    v = own  # inclusive scan of the threads' sums: within the warp ...
    d = 1
    while d < 32:
        up = device.shfl_up_sync(FULL, v, d)
        if lane >= d:
            v += up
        d *= 2
    if lane == 31:
        sums[warp] = v
    device.syncthreads()
    if warp == 0:  # ... then across the warps
        w = 0
        if lane < WARPS:
            w = sums[lane]
        d = 1
        while d < WARPS:
            up = device.shfl_up_sync(FULL, w, d)
            if lane >= d:
                w += up
            d *= 2
        if lane < WARPS:
            sums[lane] = w
    device.syncthreads()
    before = v - own  # sum of this tile before this thread's elements
    if warp > 0:
        before += sums[warp - 1]

    if t == 0:
        total = sums[WARPS - 1]
        epoch = state[0]
        aggregate = uint64(2 * epoch + 1)
        inclusive = uint64(2 * epoch + 2)
        prefix = 0
        if tile > 0:
            device.atomic_ref(status, tile).store(
                (aggregate << 32) | uint64(total), memory='relaxed', scope='device')
            j = tile - 1
            while True:
                word = device.atomic_ref(status, j).load(memory='relaxed', scope='device')
                flag = word >> 32
                if flag == inclusive:
                    prefix += int32(word & LOW)
                    break
                if flag == aggregate:
                    prefix += int32(word & LOW)
                    j -= 1
        device.atomic_ref(status, tile).store(
            (inclusive << 32) | uint64(prefix + total), memory='relaxed', scope='device')
        carry[0] = prefix
    device.syncthreads()

    run = carry[0] + before
    for k in range(ITEMS):
        e = t * ITEMS + k
        run += buf[e + e // 32]
        buf[e + e // 32] = run
    device.syncthreads()
    for k in range(ITEMS):
        e = k * BLOCK + t
        out[base + e] = buf[e + e // 32]

    if t == 0:
        done = device.atomic_ref(state, 1).add(1, memory='relaxed', scope='device')
        if done == device.grid_dim.x - 1:  # the last block of this launch
            state[1] = 0
            state[0] = epoch + 1
