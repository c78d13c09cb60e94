# nbody: gravitational acceleration of every body by all bodies (softened), all pairs:
#   acc[i] = sum_j m_j * d_ij / (|d_ij|^2 + EPS2)^(3/2),  d_ij = p_j - p_i
# pos is n x 4 float32 (x, y, z, mass); acc is n x 3. Each block stages BLOCK positions at
# a time in a shared tile of float32x4 (read back as 16-byte vectors), and 1/sqrt is
# device.rsqrt, CUDA's rsqrtf (one rsqrt.approx.f32), as nvcc's and cupyx's versions call it;
# the rest is ordinary float32 arithmetic (no fastmath), as theirs is (numba's version uses
# fastmath=True, having no rsqrt).
# Benchmark: n = 32768 (2^30 interactions); 1-D launch, block 128 (= BLOCK), grid n / 128.
# n must be a multiple of BLOCK.
from cuda import device
from cuda.device import float32x4

BLOCK = 128
EPS2 = 0.01


@device.kernel
def nbody(pos, acc):
    tile = device.shared_array(BLOCK, float32x4)
    t = device.thread_idx.x
    i = device.tid(1)
    n = pos.shape[0]
    px = pos[i, 0]
    py = pos[i, 1]
    pz = pos[i, 2]

    ax = 0.0
    ay = 0.0
    az = 0.0
    for base in range(0, n, BLOCK):
        j = base + t
        tile[t] = float32x4(pos[j, 0], pos[j, 1], pos[j, 2], pos[j, 3])
        device.syncthreads()
        for k in range(BLOCK):
            p = tile[k]
            dx = p.x - px
            dy = p.y - py
            dz = p.z - pz
            d2 = dx * dx + dy * dy + dz * dz + EPS2
            inv = device.rsqrt(d2)
            s = p.w * inv * inv * inv
            ax += dx * s
            ay += dy * s
            az += dz * s
        device.syncthreads()
    acc[i, 0] = ax
    acc[i, 1] = ay
    acc[i, 2] = az
