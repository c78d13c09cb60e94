"""CuPy's own fuse tests on the host, without a GPU or CuPy: a NumPy-backed stand-in for the
`cupy` module (its `fuse` is `pydevice.fuse`, its arrays NumPy's) runs
`tests/cupy_tests/core_tests/fusion_tests` from `.peers/cupy` (scripts/fetch_cupy_tests.sh).

Every fused call then takes pydevice's host path (Cranelift), on both of CuPy's sides of
`check_fusion` (NumPy's and "CuPy's"), so this measures tracing, typing and the plans of
kernels, not the device. It is a development aid, not CuPy's figure: scripts/cupy_suite.py on
the GPU machine is. Tests that need CuPy's internals or a device (`cupy.cuda.Device.use`,
mocks of CuPy's private classes) fail here for the stand-in's sake.

  python3 scripts/cupy_fuse_host.py [--tests .peers/cupy] [--only test_array] [-- PYTEST ARGS]

The stand-in and a copy of the tests live in a temporary folder (CuPy's `cupy/testing`
helpers are copied there from `.peers/cupy`, never into the repository).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

STANDIN = {
    "cupy/__init__.py": '''import numpy as _np
from numpy import *  # noqa: F401,F403
del testing, random, exceptions  # noqa: F821 (NumPy's, replaced by the stand-in's below)
import pydevice as _pd

ndarray = _np.ndarray
fuse = _pd.fuse
ElementwiseKernel = _pd.ElementwiseKernel
ReductionKernel = _pd.ReductionKernel


def asnumpy(a, *args, **kw):
    return _np.asarray(a)


def get_array_module(*args):
    return _np


from . import cuda, exceptions, random, _core  # noqa: E402
from . import testing  # noqa: E402


def __getattr__(name):
    return getattr(_np, name)
''',
    "cupy/exceptions.py": "from numpy.exceptions import *  # noqa: F401,F403\n",
    "cupy/cuda/__init__.py": '''from . import runtime, device  # noqa: F401


class Device:
    def __init__(self, i=0):
        self.id = i

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def synchronize(self):
        pass

    def use(self):
        pass
''',
    "cupy/cuda/runtime.py": '''is_hip = False
cudaDevAttrCooperativeLaunch = 95


def deviceGetAttribute(a, d):
    return 1


def runtimeGetVersion():
    return 12080
''',
    "cupy/cuda/device.py": 'def get_compute_capability():\n    return "90"\n',
    "cupy/random/__init__.py": '''import numpy as _np
from . import _generator  # noqa: F401


def seed(s=None):
    _np.random.seed(s)


def reset_states():
    pass
''',
    "cupy/random/_generator.py": "_random_states = {}\n",
    "cupy/_core/__init__.py": "from . import internal, _fusion_trace, _fusion_kernel  # noqa: F401\n",
    "cupy/_core/internal.py": "import math\n\n\ndef prod(shape):\n    return math.prod(shape)\n",
    "cupy/_core/_fusion_trace.py": "class TraceImpl:\n    pass\n",
    "cupy/_core/_fusion_kernel.py": "class FusedKernel:\n    pass\n",
    "cupy_backends/__init__.py": "",
    "cupy_backends/cuda/__init__.py": "",
    "cupy_backends/cuda/api/__init__.py": "",
    "cupyx/__init__.py": "from . import scipy  # noqa: F401\n",
    "cupyx/scipy/__init__.py": "from . import sparse  # noqa: F401\n",
    "cupyx/scipy/sparse/__init__.py": "class _spbase:\n    pass\n\n\ndef issparse(x):\n    return False\n",
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", default=".peers/cupy")
    ap.add_argument("--only", default=None, help="run only the test files whose name contains this")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_args(argv)
    root = Path(args.tests).resolve()
    if not (root / "cupy" / "testing").is_dir():
        ap.error(f"{root} has no cupy/testing: run scripts/fetch_cupy_tests.sh first")
    work = Path(tempfile.mkdtemp(prefix="cupy_fuse_host_"))
    try:
        for rel, text in STANDIN.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
        (work / "cupy_backends/cuda/api/runtime.py").write_text(STANDIN["cupy/cuda/runtime.py"])
        shutil.copytree(root / "cupy" / "testing", work / "cupy" / "testing")
        shutil.copytree(root / "tests", work / "tests")
        folder = Path("cupy_tests/core_tests/fusion_tests")
        files = sorted(str(f.relative_to(work / "tests")) for f in (work / "tests" / folder).glob("test_*.py")
                       if args.only is None or args.only in f.name)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(work)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
               "-rf", *files, *args.pytest_args]
        return subprocess.run(cmd, cwd=work / "tests", env=env).returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
