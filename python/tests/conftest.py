"""Shared fixtures: the tests' own modules are imported from this directory, and the GPU
fixture skips (saying why) without a CUDA driver, a GPU or CuPy."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def _gpu_reason():
    import pydevice

    if not pydevice.driver_available():
        return "no CUDA driver on this machine (libcuda.so.1 not found)"
    try:
        from pydevice import _native

        _native.device_arch(0)
    except Exception as e:  # noqa: BLE001 (any failure to open GPU 0 means: skip)
        return f"GPU 0 cannot be opened: {e}"
    return None


@pytest.fixture(scope="session")
def gpu():
    reason = _gpu_reason()
    if reason:
        pytest.skip(reason)
    return 0


@pytest.fixture(scope="session")
def cupy(gpu):
    return pytest.importorskip("cupy", reason="CuPy is not installed")


@pytest.fixture(scope="session")
def torch(gpu):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA support here")
    return torch
