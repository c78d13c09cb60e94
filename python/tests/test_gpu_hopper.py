"""GPU tests of the §17 extensions through the Python package: a cluster kernel exchanging
shared tiles between blocks (the `cluster=` kernel option, and the launch attribute
`device.launch(..., cluster=...)`), a grid that is not a whole number of clusters refused,
inline PTX, and a kernel launched from device code. Skipped without a GPU and CuPy; the
cluster tests need sm_90."""

import numpy as np
import pytest

from cuda import device

import hopper_kernels as H


@pytest.fixture
def hopper(real_gpu, cupy):
    cc = cupy.cuda.Device().compute_capability
    if int(cc) < 90:
        pytest.skip(f"thread block clusters need sm_90, this GPU is sm_{cc}")
    return cupy


@pytest.mark.gpu_only('thread block clusters (sm_90)')
def test_cluster_blocks_swap_shared_tiles(hopper):
    cp = hopper
    n = H.BLOCK * 2 * 40
    rng = np.random.default_rng(19)
    src = rng.standard_normal(n).astype(np.float32)
    d_src = cp.asarray(src)
    d_dst = cp.full(n, np.nan, dtype=np.float32)
    device.launch(H.swap_halves, d_src, d_dst, grid=n // H.BLOCK, block=H.BLOCK)
    cp.cuda.Device().synchronize()
    want = src.reshape(-1, 2, H.BLOCK)[:, ::-1, :].reshape(-1)
    np.testing.assert_array_equal(cp.asnumpy(d_dst), want)


@pytest.mark.gpu_only('thread block clusters (sm_90)')
def test_cluster_launch_attribute_and_bad_grids(hopper):
    cp = hopper
    out = cp.full(8 * 32, -1, dtype=np.int32)
    device.launch(H.ranks, out, grid=8, block=32, cluster=(4, 1, 1))
    cp.cuda.Device().synchronize()
    want = np.repeat((np.arange(8) % 4) * 100 + 4, 32).astype(np.int32)
    np.testing.assert_array_equal(cp.asnumpy(out), want)
    # Not a whole number of clusters: refused, naming the numbers; the context survives.
    with pytest.raises(device.LaunchError, match="not a multiple"):
        device.launch(H.ranks, out, grid=6, block=32, cluster=(4, 1, 1))
    src = cp.zeros(3 * H.BLOCK, dtype=np.float32)
    with pytest.raises(device.LaunchError, match="cluster= option"):
        device.launch(H.swap_halves, src, src, grid=3, block=H.BLOCK)
    device.launch(H.ranks, out, grid=8, block=32, cluster=2)
    cp.cuda.Device().synchronize()
    want = np.repeat((np.arange(8) % 2) * 100 + 2, 32).astype(np.int32)
    np.testing.assert_array_equal(cp.asnumpy(out), want)


@pytest.mark.gpu_only('PTX (inline `asm`)')
def test_inline_ptx_lop3(real_gpu, cupy):
    cp = cupy
    n = 5000
    rng = np.random.default_rng(7)
    a, b, c = (rng.integers(0, 2**32, n, dtype=np.uint32) for _ in range(3))
    out = cp.zeros(n, dtype=np.uint32)
    device.launch(H.xor3, cp.asarray(a), cp.asarray(b), cp.asarray(c), out, grid=(n + 127) // 128, block=128)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(out), a ^ b ^ c)


@pytest.mark.gpu_only('the device runtime (a launch from device code)')
def test_launch_from_device_code(real_gpu, cupy):
    cp = cupy
    per_block, blocks = 100, 12
    out = cp.full(per_block * blocks, -1, dtype=np.int32)
    device.launch(H.fill_from_device, out, per_block, grid=blocks, block=32)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(out), np.repeat(np.arange(blocks), per_block).astype(np.int32))
