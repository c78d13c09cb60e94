"""`hopper.TensorMap` without a GPU (docs/semantics.md §18.4): the kernel parameter is a
128-byte, 64-aligned grid constant that the TMA copies read in place (`cvta.param`, no local
copy), the launcher describes a map as its 128 bytes, and misuse is a compile error."""

import numpy as np
import pytest

from cuda import device
from cuda.device import hopper

import hopper_kernels as H


def test_a_map_by_value_is_a_grid_constant_parameter():
    ptx = H.tma_double_by_value.ptx(types="hopper.TensorMap, hopper.TensorMap, uint64[::1]")
    assert ".param .align 64 .b8 tma_double_by_value_param_0[128]" in ptx
    assert ".param .align 64 .b8 tma_double_by_value_param_1[128]" in ptx
    assert ptx.count("cvta.param.u64") >= 2
    assert "prefetch.tensormap" in ptx
    assert ".local" not in ptx  # read in place, never copied to local memory


def test_a_tensor_map_argument_is_described_as_its_bytes():
    from pydevice import _core

    words = np.arange(16, dtype=np.uint64) * 0x0101
    m = hopper.TensorMap.from_words(words)
    assert bytes(m) == words.astype("<u8").tobytes()
    np.testing.assert_array_equal(m.words, words)
    assert m == hopper.TensorMap.from_words(bytes(m))
    key, value = _core._describe(m)
    assert _core._type_of_key(key, "device") == "hopper.TensorMap"
    assert value == bytes(m)
    # The example argument selects the by-value specialization.
    ptx = H.tma_double_by_value.ptx(m, m, np.zeros(16, np.uint64))
    assert "tma_double_by_value_param_0[128]" in ptx
    with pytest.raises(ValueError, match="16 64-bit words"):
        hopper.TensorMap.from_words(np.zeros(15, np.uint64))
    with pytest.raises(ValueError, match="128 bytes"):
        hopper.TensorMap.from_words(b"\0" * 64)


def test_writing_or_copying_a_grid_constant_map_is_refused():
    @device.kernel
    def k(amap: hopper.TensorMap, out):
        copy = amap  # noqa: F841
        out[0] = 1.0

    with pytest.raises(device.CompileError, match="grid constant"):
        k.ptx(types="hopper.TensorMap, float32[::1]")
