# The specification's examples, verbatim apart from imports (and the `a, b, c` that the
# spec's launch line leaves out, as issue 16 writes it). Used by test_gpu.py and test_cpu.py.
from cuda import device
from cuda import core
import cupy


@device.kernel
def vec_add(a, b, c):
  c[device.tid(1)] = a[device.tid(1)] + b[device.tid(1)]


def run_vec_add():
  dev = core.Device(0)
  dev.set_current()
  stm = dev.create_stream()

  N = 1024
  a = cupy.random.random(N)
  b = cupy.random.random(N)
  c = cupy.zeros_like(a)
  device.launch(vec_add, a, b, c, grid=4, block=256, stream=stm)
  stm.sync()
  return a, b, c
