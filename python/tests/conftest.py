"""Shared fixtures: the tests' own modules are imported from this directory.

The GPU tests take the `gpu` fixture (or `cupy`/`torch`, which take it). With a GPU they run
there. Without one (CI), their kernels run on the CPU back end instead, with the same
assertions (docs/semantics.md §22): for the duration of each such test the default backend is
the CPU (as with ``PYDEVICE_BACKEND=cpu``), `cupy` is `host_cupy` (CuPy's array API over
NumPy) where CuPy cannot reach a GPU, and the numba dialect's device arrays are host arrays,
as under numba's ``NUMBA_ENABLE_CUDASIM=1``. Tests that need a real GPU (the driver, timing,
PTX loaded on a device, streams, peer copies, PyTorch's CUDA tensors) take `real_gpu` and
are skipped without one, saying why."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

_REASON = []


def _gpu_reason():
    if _REASON:
        return _REASON[0]
    import pydevice

    reason = None
    if not pydevice.driver_available():
        reason = "no CUDA driver on this machine (libcuda.so.1 not found)"
    else:
        try:
            from pydevice import _native

            _native.device_arch(0)
        except Exception as e:  # noqa: BLE001 (any failure to open GPU 0 means: no GPU)
            reason = f"GPU 0 cannot be opened: {e}"
    _REASON.append(reason)
    return reason


def on_cpu() -> bool:
    """Whether the GPU tests run on the CPU back end here (there is no GPU)."""
    return _gpu_reason() is not None


_GPU_FIXTURES = {"gpu", "cupy", "real_gpu", "torch"}


@pytest.fixture(autouse=True)
def _cpu_backend_without_a_gpu(request, monkeypatch):
    """Selects the CPU back end for the tests that take a GPU fixture, when there is no GPU."""
    if on_cpu() and _GPU_FIXTURES & set(request.fixturenames):
        from pydevice import _core

        monkeypatch.setattr(_core, "_BACKEND", "cpu")
    yield


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu_only(why): the test needs a real GPU for `why` (with `real_gpu`)"
    )


@pytest.fixture
def real_gpu(request):
    """GPU 0; skips without one, saying what the test needs a GPU for (its `gpu_only` mark)
    and why there is none. For what only a GPU has."""
    reason = _gpu_reason()
    if reason:
        mark = request.node.get_closest_marker("gpu_only")
        need = mark.args[0] if mark and mark.args else "a GPU"
        pytest.skip(f"needs {need}: {reason}")
    return 0


@pytest.fixture(scope="session")
def gpu():
    """GPU 0 where there is one; else ``"cpu"``: the test's launches run on the CPU back end."""
    return "cpu" if on_cpu() else 0


@pytest.fixture(scope="session")
def cupy(gpu):
    """CuPy on a GPU; without a GPU, `host_cupy` (its API over NumPy, for the CPU back end)."""
    if gpu == "cpu":
        import host_cupy

        return host_cupy
    return pytest.importorskip("cupy", reason="CuPy is not installed")


@pytest.fixture
def torch():
    """PyTorch with CUDA; skips without a GPU (its CUDA tensors need one)."""
    reason = _gpu_reason()
    if reason:
        pytest.skip(f"needs PyTorch's CUDA tensors: {reason}")
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA support here")
    return torch
