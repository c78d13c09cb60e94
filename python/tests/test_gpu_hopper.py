"""GPU tests of the §17 extensions through the Python package: a cluster kernel exchanging
shared tiles between blocks (the `cluster=` kernel option, and the launch attribute
`device.launch(..., cluster=...)`), a grid that is not a whole number of clusters refused,
inline PTX, and a kernel launched from device code. On a GPU the cluster tests need sm_90;
without one they run on the CPU back end (it runs a cluster's blocks together); the others
need a real GPU."""

import numpy as np
import pytest

from cuda import device

import hopper_kernels as H


@pytest.fixture
def hopper(gpu, cupy):
    """CuPy on an sm_90 GPU; without a GPU, the CPU back end (it runs a cluster's blocks
    together, docs/semantics.md §22.1)."""
    if gpu != "cpu":
        cc = cupy.cuda.Device().compute_capability
        if int(cc) < 90:
            pytest.skip(f"thread block clusters need sm_90, this GPU is sm_{cc}")
    return cupy


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
    dst = cp.zeros(3 * H.BLOCK, dtype=np.float32)
    with pytest.raises(device.LaunchError, match="cluster= option"):
        device.launch(H.swap_halves, src, dst, grid=3, block=H.BLOCK)
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


# Hopper's asynchronous pipeline (§18.4): tensor maps from CuPy (CUDA Array Interface) and
# PyTorch (DLPack) arrays, TMA loads, stores and reductions, elect_one, and the bf16 GEMM of
# bench/hopper (TMA + mbarriers + wgmma, warp-specialized).


def _sm90(cc: str) -> None:
    if int(cc) < 90:
        pytest.skip(f"TMA and mbarriers need sm_90, this GPU is sm_{cc}")


def test_tma_tiles_from_a_cupy_array(gpu, cupy):
    """On a GPU, the driver's tensor maps of CuPy arrays; without one, the CPU back end's of
    the stand-in's NumPy arrays (``hopper.tensor_map`` of a NumPy array)."""
    cp = cupy
    if gpu != "cpu":
        _sm90(cp.cuda.Device().compute_capability)
    from cuda.device import hopper

    rows, cols = 64, 128
    rng = np.random.default_rng(32)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    r0 = rng.integers(-50, 50, (rows, cols)).astype(np.float32)
    d_a, d_o, d_r = cp.asarray(a), cp.full((rows, cols), np.nan, np.float32), cp.asarray(r0)
    maps = [cp.asarray(hopper.tensor_map(x, (H.TR, H.TC))) for x in (d_a, d_o, d_r)]
    device.launch(H.tma_double, *maps, grid=(cols // H.TC, rows // H.TR), block=128)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(d_o), a * 2)
    np.testing.assert_array_equal(cp.asnumpy(d_r), r0 + a * 2)


def test_tma_tiles_from_a_torch_tensor(torch):
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs sm_90")
    from cuda.device import hopper

    rows, cols = 32, 64
    g = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(rows, cols, device="cuda", generator=g)
    o = torch.full_like(a, float("nan"))
    r = torch.zeros_like(a)
    maps = [
        torch.from_numpy(hopper.tensor_map(x, (H.TR, H.TC)).view(np.int64)).cuda()
        for x in (a, o, r)
    ]
    device.launch(H.tma_double, *maps, grid=(cols // H.TC, rows // H.TR), block=128)
    torch.cuda.synchronize()
    assert torch.equal(o, a * 2)
    assert torch.equal(r, a * 2)


@pytest.mark.gpu_only('TMA through grid-constant tensor maps (sm_90)')
def test_tma_tiles_through_grid_constant_maps(real_gpu, cupy):
    # The load's and the store's maps passed by value (`hopper.TensorMap` parameters), the
    # reduction's in global memory; random tiles against NumPy.
    cp = cupy
    _sm90(cp.cuda.Device().compute_capability)
    from cuda.device import hopper

    rows, cols = 96, 64
    rng = np.random.default_rng(3232)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    r0 = rng.integers(-50, 50, (rows, cols)).astype(np.float32)
    d_a, d_o, d_r = cp.asarray(a), cp.full((rows, cols), np.nan, np.float32), cp.asarray(r0)
    amap = hopper.TensorMap(d_a, (H.TR, H.TC))
    omap = hopper.TensorMap.from_words(hopper.tensor_map(d_o, (H.TR, H.TC)))
    rmap = cp.asarray(hopper.tensor_map(d_r, (H.TR, H.TC)))
    grid = (cols // H.TC, rows // H.TR)
    device.launch(H.tma_double_by_value, amap, omap, rmap, grid=grid, block=128)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(d_o), a * 2)
    np.testing.assert_array_equal(cp.asnumpy(d_r), r0 + a * 2)
    # Launched again through the kernel's own syntax: the same maps, the sums add up.
    H.tma_double_by_value[grid, 128](amap, omap, rmap)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(d_r), r0 + a * 4)


def test_tensor_map_refuses_a_bad_box(gpu, cupy):
    """The driver's checks, and the CPU back end's (the same) without a GPU."""
    cp = cupy
    if gpu != "cpu":
        _sm90(cp.cuda.Device().compute_capability)
    from cuda.device import hopper

    a = cp.zeros((64, 64), np.float32)
    with pytest.raises(Exception, match="not 1 to 256"):
        hopper.tensor_map(a, (512, 8))
    with pytest.raises(Exception, match="multiple of 16"):
        hopper.tensor_map(a, (8, 2))


def test_elect_one_picks_one_lane_per_warp(gpu, cupy):
    # On a GPU it needs sm_90 (elect.sync); the CPU back end elects the warp's lowest lane.
    cp = cupy
    if gpu != "cpu":
        _sm90(cp.cuda.Device().compute_capability)
    out = cp.zeros(10, np.int32)
    device.launch(H.elect_count, out, grid=10, block=64)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(out), np.full(10, 2, np.int32))


def _bench_gemm_module():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "bench" / "hopper" / "gemm.py"
    spec = importlib.util.spec_from_file_location("gemm", path)
    G = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(G)
    return G


def test_bench_gemm_bf16_matches_torch(torch):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma needs compute capability 9.0 (sm_90a)")
    from cuda.device import hopper

    G = _bench_gemm_module()
    m, n, k = 256, 512, 320
    g = torch.Generator(device="cuda").manual_seed(32)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    am = torch.from_numpy(hopper.tensor_map(a, (G.BM, G.BK), 128).view(np.int64)).cuda()
    bm = torch.from_numpy(hopper.tensor_map(b, (G.BN, G.BK), 128).view(np.int64)).cuda()
    device.launch(
        G.gemm_bf16, am, bm, c, k // G.BK,
        grid=(n // G.BN, m // G.BM), block=384, shared=G.SHARED_BYTES,
    )
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
    assert err < 1e-2, f"max relative error {err}"


@pytest.mark.parametrize("variant,fp8", [("tmastore", False), ("tmastore", True), ("persistent", True)])
def test_bench_gemm_variants_match_torch(torch, variant, fp8):
    # The GEMMs of bench/hopper/gemm.py (persistent, TMA-store epilogue; bf16 and e4m3 instances
    # of one body) on 2 × 2 tiles of random inputs, against a float32 reference.
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma needs compute capability 9.0 (sm_90a)")
    from cuda.device import hopper

    G = _bench_gemm_module()
    m, n, k = 256, 512, 384
    bk = G.BK_FP8 if fp8 else G.BK
    g = torch.Generator(device="cuda").manual_seed(33)
    a = torch.randn(m, k, device="cuda", generator=g)
    b = torch.randn(n, k, device="cuda", generator=g)
    dt = torch.float8_e4m3fn if fp8 else torch.bfloat16
    a, b = (a * 2).to(dt), (b * 2).to(dt)
    scale = 0.125 if fp8 else 1.0
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)

    def tmap(t, box):
        return torch.from_numpy(hopper.tensor_map(t, box, 128).view(np.int64)).cuda()

    a_, b_ = (a.view(torch.uint8), b.view(torch.uint8)) if fp8 else (a, b)
    out = tmap(c, (64, 64)) if variant == "tmastore" else c.view(torch.int32)
    shared = G.TS_SHARED_BYTES if variant == "tmastore" else G.SHARED_BYTES
    kern = getattr(G, f"gemm_{'fp8' if fp8 else 'bf16'}_{variant}")
    tail = (np.float32(scale),) if fp8 else ()
    tm, tn = m // G.BM, n // G.BN
    device.launch(
        kern, tmap(a_, (G.BM, bk)), tmap(b_, (G.BN, bk)), out, np.int32(k // bk), np.int32(tm), np.int32(tn), *tail,
        grid=tm * tn, block=384, shared=shared,
    )
    torch.cuda.synchronize()
    ref = (a.float() @ b.float().T) * scale
    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
    assert err < 1e-2, f"{kern.__name__}: max relative error {err}"
