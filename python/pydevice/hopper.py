"""``cuda.device.hopper`` on the host: TMA tensor maps for Hopper kernels (docs/semantics.md
§18.4).

The device functions of the namespace (``mbarrier_init``, ``tma_load``, ``wgmma``, ...) exist
only in compiled device code; here they are placeholders. ``tensor_map`` encodes the
128-byte ``CUtensorMap`` of any CUDA array (CUDA Array Interface or DLPack: CuPy, PyTorch,
pydevice's own) through the driver's ``cuTensorMapEncodeTiled``.
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


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from . import _DeviceOnly

    return _DeviceOnly(f"hopper.{name}")
