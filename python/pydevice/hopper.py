"""``cuda.device.hopper`` on the host: TMA tensor maps for Hopper kernels (docs/semantics.md
§18.4).

The device functions of the namespace (``mbarrier_init``, ``tma_load``, ``wgmma``, ...) exist
only in compiled device code; here they are placeholders. ``tensor_map`` encodes the
128-byte ``CUtensorMap`` of any CUDA array (CUDA Array Interface or DLPack: CuPy, PyTorch,
pydevice's own) through the driver's ``cuTensorMapEncodeTiled``; ``TensorMap`` is such a map
passed by value, and the annotation of a kernel parameter that receives one (a
``__grid_constant__``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import _native


def _describe(array):
    """(address, dtype name, shape, element strides) of a CUDA array."""
    if hasattr(array, "__dlpack__"):
        data, dtype, shape, strides, _dev, _ro = _native.dlpack_describe(array.__dlpack__())
        return data, dtype, list(shape), list(strides)
    if hasattr(array, "__cuda_array_interface__"):
        from ._core import _cai_fields

        dt, shape, strides, ptr, _ro = _cai_fields(array)
        return ptr, dt.name, list(shape), list(strides)
    raise TypeError(
        f"tensor_map needs a CUDA array (DLPack or __cuda_array_interface__), not {type(array).__name__}"
    )


def tensor_map(array, box: Sequence[int], swizzle: int = 0, device: int = 0) -> np.ndarray:
    """The TMA tensor map of ``array`` (on GPU ``device``) whose tiles have shape ``box``
    (in the array's order, outermost first), swizzled in shared memory by ``swizzle`` bytes
    (0, 32, 64 or 128): its 128 bytes as 16 ``uint64``. Copy it to the GPU (for example
    ``cupy.asarray(m)``) and pass it to the kernel, whose ``hopper.tma_load`` and
    ``tma_store`` take coordinates innermost first. The array must stay alive while kernels
    use the map.

    A NumPy array (host memory) gets the CPU back end's tensor map instead, for kernels
    launched with ``backend="cpu"`` (docs/semantics.md §22.1): pass it as a NumPy array."""
    if isinstance(array, np.ndarray):
        if array.dtype.itemsize and any(s % array.dtype.itemsize for s in array.strides):
            raise ValueError("tensor_map: the array's strides are not whole elements")
        words = _native.cpu_tensor_map_tiled(
            array.__array_interface__["data"][0], array.dtype.name, list(array.shape),
            [s // array.dtype.itemsize for s in array.strides], [int(b) for b in box], int(swizzle),
        )
        return np.array(words, dtype=np.uint64)
    data, dtype, shape, strides = _describe(array)
    words = _native.tensor_map_tiled(
        device, data, dtype, shape, strides, [int(b) for b in box], int(swizzle)
    )
    return np.array(words, dtype=np.uint64)


class TensorMap:
    """A TMA tensor map passed to a kernel by value (docs/semantics.md §18.4).

    ``TensorMap(array, box, swizzle=0, device=0)`` encodes the map as ``tensor_map`` does;
    ``TensorMap.from_words(words)`` wraps one already encoded (16 ``uint64``). In a kernel,
    ``hopper.TensorMap`` annotates the parameter (``def k(amap: hopper.TensorMap, ...)``;
    ``hopper.TensorMap`` in a signature string): the launch packs the map's 128 bytes into
    the kernel's parameter buffer (``.param .align 64 .b8 [128]``), where ``tma_load``,
    ``tma_store``, ``tma_reduce_add`` and ``tma_prefetch`` read it in place, so no device
    copy of the map is needed. The array must stay alive while kernels use the map."""

    __slots__ = ("_bytes",)
    _pydevice_tensor_map = True

    def __init__(self, array, box: Sequence[int], swizzle: int = 0, device: int = 0):
        self._bytes = tensor_map(array, box, swizzle, device).tobytes()

    @classmethod
    def from_words(cls, words) -> "TensorMap":
        """The map whose 128 bytes are ``words``: 16 ``uint64`` (as ``tensor_map`` returns)
        or 128 bytes."""
        if isinstance(words, (bytes, bytearray, memoryview)):
            raw = bytes(words)
        else:
            w = np.asarray(words)
            if w.dtype.kind not in "iu" or w.dtype.itemsize != 8 or w.size != 16:
                raise ValueError(
                    f"a tensor map is 16 64-bit words, not {w.size} of {w.dtype}"
                )
            raw = w.astype("<u8", copy=False).tobytes()
        if len(raw) != 128:
            raise ValueError(f"a tensor map is 128 bytes, not {len(raw)}")
        m = cls.__new__(cls)
        m._bytes = raw
        return m

    @property
    def words(self) -> np.ndarray:
        """The map's 16 ``uint64`` words (a copy)."""
        return np.frombuffer(self._bytes, dtype="<u8").astype(np.uint64)

    def __bytes__(self) -> bytes:
        return self._bytes

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorMap) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __repr__(self) -> str:
        return f"hopper.TensorMap({self._bytes[:16].hex()}...)"


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from . import _DeviceOnly

    return _DeviceOnly(f"hopper.{name}")
