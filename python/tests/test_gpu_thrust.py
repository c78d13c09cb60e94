"""jit.thrust on the GPU (docs/semantics.md §15.5): random inputs against NumPy. The kernels'
shims are compiled by NVRTC with CCCL's headers and linked at load time; skipped without a
GPU, CuPy, NVRTC or CCCL (saying which)."""

import numpy as np
import pytest

from pydevice.cupyx import jit


@jit.rawkernel()
def sort_rows(x):
    i = jit.threadIdx.x
    row = x[i]
    jit.thrust.sort(jit.thrust.device, row.begin(), row.end())


@jit.rawkernel()
def row_stats(x, counts, firsts, sums, scans):
    i = jit.threadIdx.x
    row = x[i]
    counts[i] = jit.thrust.count(jit.thrust.seq, row.begin(), row.end(), 3)
    it = jit.thrust.find(jit.thrust.seq, row.begin(), row.end(), 3)
    firsts[i] = it - row.begin()
    sums[i] = jit.thrust.reduce(jit.thrust.device, row.begin(), row.end(), 10)
    out = scans[i]
    jit.thrust.exclusive_scan(jit.thrust.seq, row.begin(), row.end(), out.begin(), 5)


@pytest.mark.gpu_only("jit.thrust (NVRTC-compiled CUDA C++ linked into the kernel)")
@pytest.mark.parametrize("order", ["C", "F"])
def test_thrust_on_strided_rows_matches_numpy(real_gpu, cupy, order):
    rng = np.random.default_rng(7 if order == "C" else 8)
    h, w = 64, 97
    x = rng.integers(0, 8, (h, w)).astype(np.int32)
    xd = cupy.asarray(np.asfortranarray(x) if order == "F" else x)
    counts = cupy.zeros(h, np.int64)
    firsts = cupy.zeros(h, np.int64)
    sums = cupy.zeros(h, np.int64)
    scans = cupy.zeros((h, w), np.int32, order=order)
    row_stats[1, h](xd, counts, firsts, sums, scans)
    found = np.where((x == 3).any(axis=1), (x == 3).argmax(axis=1), w)
    np.testing.assert_array_equal(cupy.asnumpy(counts), (x == 3).sum(axis=1))
    np.testing.assert_array_equal(cupy.asnumpy(firsts), found)
    np.testing.assert_array_equal(cupy.asnumpy(sums), x.sum(axis=1) + 10)
    scan = np.concatenate([np.full((h, 1), 5), 5 + np.cumsum(x, axis=1)[:, :-1]], axis=1)
    np.testing.assert_array_equal(cupy.asnumpy(scans), scan)
    sort_rows[1, h](xd)
    np.testing.assert_array_equal(cupy.asnumpy(xd), np.sort(x, axis=1))


@jit.rawkernel()
def unique_rows(keys, values, sizes):
    # An in-place algorithm returning two iterators: the call must run once (its value is
    # the pair; before, each iterator of the pair re-ran it).
    i = jit.threadIdx.x
    k = keys[i]
    v = values[i]
    it0, it1 = jit.thrust.unique_by_key(jit.thrust.device, k.begin(), k.end(), v.begin())
    sizes[i, 0] = it0 - k.begin()
    sizes[i, 1] = it1 - v.begin()


def test_pair_results_call_the_shim_once():
    ptx = unique_rows.ptx(types=["int64[:, ::1]", "int64[:, ::1]", "int32[:, ::1]"])
    assert ptx.count("call.uni") == 1


@pytest.mark.gpu_only("jit.thrust (NVRTC-compiled CUDA C++ linked into the kernel)")
def test_unique_by_key_in_place_matches_numpy(real_gpu, cupy):
    rng = np.random.default_rng(11)
    h, w = 32, 41
    keys = rng.integers(0, 3, (h, w)).astype(np.int64)
    values = rng.integers(0, 1000, (h, w)).astype(np.int64)
    kd, vd = cupy.asarray(keys), cupy.asarray(values)
    sizes = cupy.zeros((h, 2), np.int32)
    unique_rows[1, h](kd, vd, sizes)
    got_k, got_v, got_n = cupy.asnumpy(kd), cupy.asnumpy(vd), cupy.asnumpy(sizes)
    for r in range(h):
        starts = np.concatenate([[True], keys[r, 1:] != keys[r, :-1]])
        n = int(starts.sum())
        assert list(got_n[r]) == [n, n]
        np.testing.assert_array_equal(got_k[r, :n], keys[r][starts])
        np.testing.assert_array_equal(got_v[r, :n], values[r][starts])
