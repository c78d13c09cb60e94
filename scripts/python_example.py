"""The spec's vec_add through the pydevice Python package: on CuPy arrays with a cuda.core
stream where those are installed, else on NumPy arrays (copied to the GPU and back).
scripts/setup.sh runs it where a GPU exists."""
import numpy as np
from cuda import device


@device.kernel
def vec_add(a, b, c):
    c[device.tid(1)] = a[device.tid(1)] + b[device.tid(1)]


N = 1024
try:
    import cupy
    from cuda import core

    dev = core.Device(0)
    dev.set_current()
    stm = dev.create_stream()
    a, b = cupy.random.random(N), cupy.random.random(N)
    c = cupy.zeros_like(a)
    device.launch(vec_add, a, b, c, grid=4, block=256, stream=stm)
    stm.sync()
    a, b, c = cupy.asnumpy(a), cupy.asnumpy(b), cupy.asnumpy(c)
    how = "CuPy arrays, a cuda.core stream"
except ImportError:
    a, b = np.random.random(N), np.random.random(N)
    c = np.zeros_like(a)
    device.launch(vec_add, a, b, c, grid=4, block=256)  # host arrays: copied in and out
    how = "NumPy arrays copied in and out"
assert np.array_equal(c, a + b), "vec_add differs from NumPy"
print(f"vec_add through Python ({how}): {N} elements match NumPy")
