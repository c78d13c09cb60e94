"""``cuda.device.random``: pydevice's random numbers (see ``pydevice.random``)."""

from pydevice.random import *  # noqa: F401,F403
from pydevice.random import rand, randn, seed  # noqa: F401
