"""pydevice launches inside CUDA graph capture (issue 35): CuPy's stream capture and
`torch.cuda.graph`. Each test captures launches on the framework's capturing stream, changes
the inputs in place, replays the graph and checks the outputs against NumPy. Without a GPU,
CuPy or PyTorch they skip, saying why.

The kernels are launched once before capture: the first launch compiles and loads the module,
which is not a stream operation and must not happen while a stream is being captured (CUDA
forbids module loading in global capture mode)."""

import numpy as np
import pytest

from cuda import device
import pydevice

N = 4099  # not a multiple of the block
BLOCK = 128
GRID = (N + BLOCK - 1) // BLOCK


@device.kernel
def _saxpy(a, x, y, out):
    i = device.tid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]


@device.kernel
def _square_inplace(v):
    i = device.tid(1)
    if i < v.shape[0]:
        v[i] = v[i] * v[i]


def _rand(rng, n=N):
    return rng.standard_normal(n).astype(np.float32)


@pytest.mark.gpu_only('CUDA graph capture (CuPy streams)')
def test_cupy_stream_capture_replays_pydevice_launches(real_gpu, cupy):
    rng = np.random.default_rng(35)
    x = cupy.asarray(_rand(rng))
    y = cupy.asarray(_rand(rng))
    out = cupy.zeros(N, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        # Warm-up: compile, load, and prepare the launcher outside capture.
        device.launch(_saxpy, np.float32(2.0), x, y, out, grid=GRID, block=BLOCK)
        device.launch(_square_inplace, out, grid=GRID, block=BLOCK)
        stream.synchronize()
        stream.begin_capture()
        device.launch(_saxpy, np.float32(2.0), x, y, out, grid=GRID, block=BLOCK)
        device.launch(_square_inplace, out, grid=GRID, block=BLOCK)
        graph = stream.end_capture()
    for _ in range(3):  # new inputs each replay, written in place
        hx, hy = _rand(rng), _rand(rng)
        x.set(hx)
        y.set(hy)
        out.fill(0)
        cupy.cuda.runtime.deviceSynchronize()
        graph.launch(stream)
        stream.synchronize()
        expect = (np.float32(2.0) * hx + hy) ** 2
        np.testing.assert_allclose(out.get(), expect, rtol=1e-6, atol=1e-6)


@pytest.mark.gpu_only('CUDA graph capture (CuPy streams)')
def test_cupy_stream_capture_of_a_cupyx_style_and_an_elementwise_kernel(real_gpu, cupy):
    from pydevice.cupyx import jit

    @jit.rawkernel()
    def scale(x, y, size):
        tid = jit.threadIdx.x + jit.blockIdx.x * jit.blockDim.x
        if tid < size:
            y[tid] = x[tid] * 3.0

    add_one = pydevice.ElementwiseKernel("float32 x", "float32 y", "y = x + 1", "pyd_graph_add_one")
    rng = np.random.default_rng(7)
    x = cupy.asarray(_rand(rng))
    y = cupy.zeros(N, dtype=cupy.float32)
    z = cupy.zeros(N, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        scale((GRID,), (BLOCK,), (x, y, cupy.int32(N)))
        add_one(y, z)
        stream.synchronize()
        stream.begin_capture()
        scale((GRID,), (BLOCK,), (x, y, cupy.int32(N)))
        add_one(y, z)
        graph = stream.end_capture()
    hx = _rand(rng)
    x.set(hx)
    cupy.cuda.runtime.deviceSynchronize()
    graph.launch(stream)
    stream.synchronize()
    np.testing.assert_allclose(z.get(), hx * np.float32(3.0) + np.float32(1.0), rtol=1e-6)


def test_torch_cuda_graph_replays_pydevice_launches(torch):
    rng = np.random.default_rng(11)
    x = torch.from_numpy(_rand(rng)).cuda()
    y = torch.from_numpy(_rand(rng)).cuda()
    out = torch.zeros(N, dtype=torch.float32, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch's docs ask
        device.launch(_saxpy, 0.5, x, y, out, grid=GRID, block=BLOCK)
        device.launch(_square_inplace, out, grid=GRID, block=BLOCK)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        device.launch(_saxpy, 0.5, x, y, out, grid=GRID, block=BLOCK)
        device.launch(_square_inplace, out, grid=GRID, block=BLOCK)
    for _ in range(3):
        hx, hy = _rand(rng), _rand(rng)
        x.copy_(torch.from_numpy(hx))
        y.copy_(torch.from_numpy(hy))
        out.zero_()
        g.replay()
        torch.cuda.synchronize()
        expect = (np.float32(0.5) * hx + hy) ** 2
        np.testing.assert_allclose(out.cpu().numpy(), expect, rtol=1e-6, atol=1e-6)


@pytest.mark.gpu_only('CUDA graph capture (CuPy streams)')
def test_a_launch_that_would_compile_during_capture_is_refused_or_captured(real_gpu, cupy):
    """A first launch inside capture must not corrupt the capture: either it is captured and
    replays correctly, or it raises a clear error and the capture can be ended."""

    @device.kernel
    def _fresh(v):
        i = device.tid(1)
        if i < v.shape[0]:
            v[i] = v[i] + 5.0

    v = cupy.zeros(N, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        err = None
        try:
            device.launch(_fresh, v, grid=GRID, block=BLOCK)
        except Exception as e:  # noqa: BLE001 (any error must be clear, checked below)
            err = e
        try:
            graph = stream.end_capture()
        except Exception as e:  # noqa: BLE001
            if err is None:
                raise AssertionError(f"capture broke after a launch that raised nothing: {e}") from e
            graph = None
    if err is not None:
        assert str(err), "the error must say something"
        return
    graph.launch(stream)
    stream.synchronize()
    np.testing.assert_array_equal(v.get(), np.full(N, 5.0, np.float32))
