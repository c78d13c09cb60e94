# spmv_csr: y = A @ x for a float32 CSR matrix (indptr, indices, data), one warp a row
# ("vector CSR"): the warp's lanes stride through the row's nonzeros, then fold their 32
# partial sums with xor shuffles; lane 0 writes y[row].
# Benchmark: 2^20 x 2^20 with 16..47 nonzeros a row (about 2^25 in all); 1-D launch,
# block 256 (8 rows a block), grid rows / 8.
# `wraparound=False` (§5.1, §12): a CSR matrix's column indices are in range by construction,
# so the gather `x[indices[k]]` need not test for Python's negative indices, as in the CUDA
# C++ and cupyx.jit versions (numba's wraps). Without it the loop is versioned on its start
# and only the gather keeps the wrap (bench/NOTES.md, "spmv_csr and the wrap";
# PYDEVICE_BENCH_VARIANT=wraparound times that).
from cuda import device

FULL = 0xFFFFFFFF


@device.kernel(wraparound=False)
def spmv_csr(indptr, indices, data, x, y):
    row = device.tid(1) // 32
    lane = device.thread_idx.x % 32
    if row < len(y):  # the same for the whole warp
        s = 0.0
        for k in range(indptr[row] + lane, indptr[row + 1], 32):
            s += data[k] * x[indices[k]]
        offset = 16
        while offset > 0:
            s += device.shfl_xor_sync(FULL, s, offset)
            offset //= 2
        if lane == 0:
            y[row] = s
