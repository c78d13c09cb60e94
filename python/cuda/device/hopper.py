"""``cuda.device.hopper``: Hopper's asynchronous pipeline (see ``pydevice.hopper``)."""

from pydevice.hopper import *
from pydevice.hopper import TensorMap, __getattr__, tensor_map  # noqa: F401
