"""Every GPU of a host, from Python: the launch follows its stream (then its arrays), arrays
of another GPU raise DeviceMismatchError naming both, `pydevice.copy` between GPUs, and the
two-GPU stencil example against one GPU. Two-GPU tests skip with one GPU, saying so; what one
GPU can check (the stencil with both halves on GPU 0, copies, the GPU of a stream) it does;
without a GPU those run on the CPU back end, whose device memory is host memory."""

import os
import sys

import numpy as np
import pytest

from cuda import device

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import multi_gpu_stencil as stencil  # noqa: E402

import kernels as K  # noqa: E402


@pytest.fixture
def two_gpus(real_gpu, cupy):
    n = cupy.cuda.runtime.getDeviceCount()
    if n < 2:
        pytest.skip(f"needs two GPUs, {n} present")
    assert device.device_count() == n
    return cupy


def test_stencil_halves_on_one_gpu_match_the_whole(cupy):
    # Without a GPU: both halves on the CPU back end's device, the halos copied in host memory.
    g = stencil.initial(130, 200)
    single = stencil.run_single(cupy, 0, g, 40)
    split, paths = stencil.run_decomposed(cupy, [0, 0], g, 40)
    assert paths == {"same_device"}
    np.testing.assert_array_equal(single.view(np.uint32), split.view(np.uint32))
    assert not np.array_equal(single, g)


def test_copy_paths_on_one_gpu(cupy):
    a = cupy.arange(1000, dtype=cupy.float32)
    b = cupy.zeros_like(a)
    c = cupy.zeros_like(a)
    assert device.copy(b, a) == "same_device"
    assert device.copy(c, a, via_host=True) == "host"
    cupy.cuda.Device().synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(b), cupy.asnumpy(a))
    np.testing.assert_array_equal(cupy.asnumpy(c), cupy.asnumpy(a))
    with pytest.raises(ValueError, match="bytes"):
        device.copy(b[:10], a)


@pytest.mark.gpu_only('two GPUs (peer copies)')
def test_stencil_on_two_gpus_matches_one(two_gpus):
    cp = two_gpus
    g = stencil.initial(258, 512)
    single = stencil.run_single(cp, 0, g, 100)
    split, paths = stencil.run_decomposed(cp, [0, 1], g, 100)
    print("halo copies:", paths)
    assert paths <= {"peer", "host"} and len(paths) == 1
    np.testing.assert_array_equal(single.view(np.uint32), split.view(np.uint32))


@pytest.mark.gpu_only('two GPUs')
def test_the_launch_follows_the_stream_and_the_arrays(two_gpus):
    cp = two_gpus
    n = 1000
    with cp.cuda.Device(1):
        a = cp.arange(n, dtype=cp.float32)
        b = cp.ones(n, dtype=cp.float32)
        c = cp.zeros(n, dtype=cp.float32)
        s1 = cp.cuda.Stream(non_blocking=True)
    # Arrays of GPU 1, no stream: runs on GPU 1 (the default device is 0).
    device.launch(K.vec_add, a, b, c, grid=4, block=256)
    device.synchronize(device=1)
    np.testing.assert_array_equal(cp.asnumpy(c), np.arange(n, dtype=np.float32) + 1)
    # A stream of GPU 1: runs there, through the fast path too.
    for _ in range(3):
        device.launch(K.vec_add, a, a, c, grid=4, block=256, stream=s1)
    s1.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(c), np.arange(n, dtype=np.float32) * 2)
    # Arrays of GPU 0 on a stream of GPU 1, and arrays of both GPUs: refused, naming both.
    with cp.cuda.Device(0):
        a0 = cp.arange(n, dtype=cp.float32)
    for args, stream in (((a0, b, c), None), ((a0, a0, a0), s1), ((a, b, a0), None)):
        for _ in range(2):  # the first and the repeated launch alike
            with pytest.raises(device.DeviceMismatchError) as e:
                device.launch(K.vec_add, *args, grid=4, block=256, stream=stream)
            assert "GPU 0" in str(e.value) and "GPU 1" in str(e.value), str(e.value)
            assert isinstance(e.value, TypeError)


@pytest.mark.gpu_only('two GPUs (peer copies)')
def test_copies_between_two_gpus(two_gpus):
    cp = two_gpus
    with cp.cuda.Device(0):
        a = cp.arange(4096, dtype=cp.float32) - 7.5
    with cp.cuda.Device(1):
        b = cp.zeros(4096, dtype=cp.float32)
        c = cp.zeros(4096, dtype=cp.float32)
    path = device.copy(b, a)
    peer = cp.cuda.runtime.deviceCanAccessPeer(1, 0) and cp.cuda.runtime.deviceCanAccessPeer(0, 1)
    assert path == ("peer" if peer else "host")
    assert device.copy(c, a, via_host=True) == "host"
    with cp.cuda.Device(1):
        cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(b), cp.asnumpy(a))
    np.testing.assert_array_equal(cp.asnumpy(c), cp.asnumpy(a))


sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "distributed"))
import peer_halo  # noqa: E402


def test_halo_read_inside_the_kernel_over_peer_memory_matches_one_gpu(two_gpus):
    """`peer=True` admits the other GPU's arrays (peer access enabled once per pair); the
    stencil whose kernels read the neighbour's rows in place gives one GPU's bits."""
    cp = two_gpus
    if not device.can_access_peer(0, 1):
        pytest.skip("GPUs 0 and 1 cannot access each other's memory")
    g = stencil.initial(130, 200)
    single = stencil.run_single(cp, 0, g, 40)
    peer, _ = peer_halo.run_peer(cp, [0, 1], g, 40)
    np.testing.assert_array_equal(single.view(np.uint32), peer.view(np.uint32))


def test_another_gpus_array_needs_peer_true(two_gpus):
    cp = two_gpus
    with cp.cuda.Device(0):
        a = cp.zeros(64, dtype=cp.float32)
    with cp.cuda.Device(1):
        b = cp.ones(64, dtype=cp.float32)
    with pytest.raises(device.DeviceMismatchError, match="GPU 1"):
        device.launch(K.vec_add, a, b, a, grid=1, block=64)
    if device.can_access_peer(0, 1):
        device.launch(K.vec_add, a, b, a, grid=1, block=64, peer=True)
        with cp.cuda.Device(0):
            cp.cuda.runtime.deviceSynchronize()
        np.testing.assert_array_equal(a.get(), np.ones(64, np.float32))
