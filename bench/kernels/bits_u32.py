# bits_u32: integer bit twiddling on uint32: four rounds of xorshift32 mixing
# (h ^= h << 13; h ^= h >> 17; h ^= h << 5, all modulo 2**32), then
#   out[i] = brev(h) ^ popc(x[i])
# Benchmark: n = 2**26 random uint32; 1-D launch, block 256, grid n / 256.
from cuda import device

ROUNDS = 4


@device.kernel
def bits_u32(x, out):
    i = device.tid(1)
    if i < len(out):
        h = x[i]
        for _ in range(ROUNDS):
            h ^= h << 13
            h ^= h >> 17
            h ^= h << 5
        out[i] = device.brev(h) ^ device.popc(x[i])
