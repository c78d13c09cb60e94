from pydevice import *  # noqa: F401,F403
from pydevice import __getattr__ as __getattr__
