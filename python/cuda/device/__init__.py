"""``cuda.device``: the spec's namespace, provided by the pydevice package.

This directory is a portion of the PEP 420 namespace package ``cuda`` (there is no
``cuda/__init__.py``), so cuda-python's ``cuda.core`` and ``cuda.bindings`` import beside it.
"""

from pydevice import *  # noqa: F401,F403
from pydevice import __getattr__, _SCALARS, _VECTORS  # noqa: F401
import pydevice as _pydevice

globals().update({k: getattr(_pydevice, k) for k in dir(_pydevice) if not k.startswith("__")})
