"""The compile half of CuPy's own cupyx.jit tests, on a machine without a GPU.

CuPy's jit test files (from `.peers/cupy`, `scripts/fetch_cupy_tests.sh`) are rewritten as
`scripts/cupy_suite.py` rewrites them (import lines only) and run by pytest against a stand-in
`cupy` built on NumPy (arrays on the host; `testing.shaped_random` and the decorators the
files use). Each kernel launch compiles the kernel for its arguments instead of running it:
pydevice's PTX, then, for kernels with `jit.thrust` calls, their CUDA C++ shims through NVRTC
with CCCL's headers; both are assembled with `ptxas -c` and linked with `nvlink -arch=sm_90`.
A launch that gets that far ends its test as skipped with reason `compile+link ok` (nothing
ran, so the test's assertions cannot be checked here); a compile or link failure fails it.

Usage: python3 scripts/cupy_jit_compile_check.py [--tests .peers/cupy] [-k EXPR] [--keep]
Prints per file: launches compiled and linked, compile/link failures (with the first line of
each), tests that passed without a launch, and other failures (the stand-in's limits).
Needs the pydevice package importable (PYTHONPATH) and the CUDA wheels of scripts/deps.sh.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cupy_suite import rewrite_source  # noqa: E402

FAKE_CUPY = r'''
"""A stand-in for CuPy over NumPy (scripts/cupy_jit_compile_check.py)."""
import numpy
from numpy import *  # noqa: F401,F403
from numpy import bool_, dtype, inf, nan  # noqa: F401
import importlib as _importlib

testing = _importlib.import_module(__name__ + ".testing")
cuda = _importlib.import_module(__name__ + ".cuda") if __name__ == "cupy" else None


def asnumpy(a):
    return numpy.asarray(a)


class _Random:
    def shuffle(self, a):
        numpy.random.default_rng(0).shuffle(a)

    def __getattr__(self, name):
        return getattr(numpy.random, name)


random = _Random()
'''

FAKE_TESTING = r'''
import functools
import inspect
import numpy
import pytest
from numpy.testing import assert_allclose, assert_array_equal  # noqa: F401


def shaped_random(shape, xp=None, dtype=numpy.float32, scale=10, seed=0, order="C"):
    rng = numpy.random.RandomState(seed)
    dtype = numpy.dtype(dtype)
    if dtype == numpy.bool_:
        a = rng.randint(2, size=shape).astype(dtype)
    elif dtype.kind == "c":
        a = (rng.rand(*numpy.atleast_1d(shape)) * scale + 1j * rng.rand(*numpy.atleast_1d(shape)) * scale)
        a = a.astype(dtype).reshape(shape)
    else:
        a = numpy.asarray(rng.rand(*tuple(numpy.atleast_1d(shape))) * scale).astype(dtype).reshape(shape)
    return numpy.asfortranarray(a) if order == "F" else numpy.ascontiguousarray(a)


_ALL = [numpy.float16, numpy.float32, numpy.float64, numpy.int8, numpy.int16, numpy.int32,
        numpy.int64, numpy.uint8, numpy.uint16, numpy.uint32, numpy.uint64, numpy.bool_,
        numpy.complex64, numpy.complex128]


def for_dtypes(dtypes, name="dtype"):
    def deco(f):
        @functools.wraps(f)
        def run(*args, **kw):
            for d in dtypes:
                kw[name] = numpy.dtype(d).type
                f(*args, **kw)
        sig = inspect.signature(f)
        run.__signature__ = sig.replace(parameters=[p for p in sig.parameters.values() if p.name != name])
        return run
    return deco


def for_all_dtypes(name="dtype", no_float16=False, no_bool=False, no_complex=False):
    ds = [d for d in _ALL if not (no_float16 and d is numpy.float16)
          and not (no_bool and d is numpy.bool_)
          and not (no_complex and numpy.dtype(d).kind == "c")]
    return for_dtypes(ds, name)


def for_CF_orders(name="order"):
    return pytest.mark.parametrize(name, ["C", "F"])


def multi_gpu(n):
    return pytest.mark.skip(reason="multi-GPU")
'''

CONFTEST = r'''
import ctypes, os, subprocess, tempfile
import numpy, pytest
import importlib
from pydevice import _core

_cupyx = importlib.import_module("pydevice.cupyx")
from pydevice.errors import CompileError

NVRTC = os.environ["CHECK_NVRTC"]
PTXAS = os.environ["CHECK_PTXAS"]
NVLINK = os.environ["CHECK_NVLINK"]
OPTS = os.environ["CHECK_NVRTC_OPTS"].split("\x1f")


def _nvrtc(src, name):
    lib = ctypes.CDLL(NVRTC)
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None) == 0
    opts = [o.encode() for o in ["--gpu-architecture=compute_90", "-rdc=true"] + OPTS]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc != 0:
        raise RuntimeError("NVRTC: " + log.value.decode(errors="replace")[:2000])
    lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetPTX(prog, buf)
    return buf.value.decode()


_CACHE = {}


def _check(kernel, args):
    try:
        ptx = kernel.ptx(*args, arch="sm_90")
        cuda = kernel.cuda(*args, arch="sm_90")
    except CompileError as e:
        # As a launch raises it: the cupyx dialect's exception class.
        if isinstance(kernel, _cupyx.RawKernel) and not isinstance(
            e, (_cupyx.JitNameError, _cupyx.JitTypeError, _cupyx.JitValueError)
        ):
            raise _cupyx._cupyx_error(e, kernel._unusable()) from None
        raise
    with tempfile.TemporaryDirectory() as d:
        pieces = [("kernel", ptx)]
        for name, src in cuda:
            if src not in _CACHE:
                _CACHE[src] = _nvrtc(src, name)
            pieces.append((name, _CACHE[src]))
        cubins = []
        for i, (name, text) in enumerate(pieces):
            p = os.path.join(d, f"{i}.ptx")
            open(p, "w").write(text)
            c = os.path.join(d, f"{i}.cubin")
            r = subprocess.run([PTXAS, "-arch=sm_90", "-c", p, "-o", c], capture_output=True, text=True)
            if r.returncode:
                raise RuntimeError(f"ptxas {name}: {r.stderr[:2000]}")
            cubins.append(c)
        r = subprocess.run([NVLINK, "-arch=sm_90", *cubins, "-o", os.path.join(d, "l.cubin")],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"nvlink: {r.stderr[:2000]}")
    pytest.skip("compile+link ok" + (" (thrust)" if cuda else ""))


def _launch(self, args, grid, block, stream, shared, *rest, **kw):
    _check(self, tuple(args))


# Every launch (`k[grid, block](*args)`, `k(grid, block, args)`) reaches `_launch` when no
# GPU launcher exists.
_cupyx.RawKernel._launch = _launch
_core.Kernel._launch = _launch
'''


def tool(name: str) -> str:
    import nvidia  # the CUDA wheels of scripts/deps.sh

    root = Path(nvidia.__path__[0]) / "cu13"
    found = shutil.which(name) or (str(root / "bin" / name) if (root / "bin" / name).exists() else None)
    if not found:
        sys.exit(f"{name} not found")
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", default=".peers/cupy")
    ap.add_argument("-k", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    import nvidia

    root = Path(nvidia.__path__[0]) / "cu13"
    cccl = root / "include" / "cccl"
    stubs = Path(tempfile.mkdtemp(prefix="pyd-stubs-"))
    for h in ["cstdio", "stdlib.h", "stdint.h", "cstdlib", "cstring", "string.h"]:
        (stubs / h).write_text("// empty\n")
    env = dict(os.environ)
    env.update(
        CHECK_NVRTC=str(root / "lib" / "libnvrtc.so.13"),
        CHECK_PTXAS=tool("ptxas"),
        CHECK_NVLINK=tool("nvlink"),
        CHECK_NVRTC_OPTS="\x1f".join(["-std=c++17", "-default-device", f"-I{stubs}", f"-I{root / 'include'}", f"-I{cccl}"]),
    )
    work = Path(tempfile.mkdtemp(prefix="pyd-jitcheck-"))
    (work / "_pydevice_cupy").mkdir()
    (work / "_pydevice_cupy" / "__init__.py").write_text(FAKE_CUPY)
    (work / "_pydevice_cupy" / "testing.py").write_text(FAKE_TESTING)
    (work / "cupy").mkdir()
    (work / "cupy" / "__init__.py").write_text(FAKE_CUPY)
    (work / "cupy" / "testing.py").write_text(FAKE_TESTING)
    rt = work / "cupy_backends" / "cuda" / "api"
    rt.mkdir(parents=True)
    for p in [work / "cupy_backends", work / "cupy_backends" / "cuda", rt]:
        (p / "__init__.py").write_text("")
    (rt / "runtime.py").write_text(
        "is_hip = False\ncudaDevAttrCooperativeLaunch = 95\n\n\n"
        "def deviceGetAttribute(attr, device):\n    return 1\n\n\n"
        "def runtimeGetVersion():\n    return 13000\n\n\n"
        "def _getLocalRuntimeVersion():\n    return 13000\n"
    )
    (work / "cupy" / "cuda").mkdir()
    (work / "cupy" / "cuda" / "__init__.py").write_text(
        "from . import device, runtime  # noqa: F401\n\n\ndef get_current_stream():\n    return None\n"
    )
    (work / "cupy" / "cuda" / "runtime.py").write_text(
        "from cupy_backends.cuda.api.runtime import *  # noqa: F401,F403\n"
        "from cupy_backends.cuda.api.runtime import _getLocalRuntimeVersion  # noqa: F401\n"
    )
    (work / "cupy" / "cuda" / "device.py").write_text(
        "class Device:\n    def __init__(self, i=0):\n        self.id = i\n\n"
        "    def __enter__(self):\n        return self\n\n    def __exit__(self, *a):\n        return False\n"
    )
    (work / "conftest.py").write_text(CONFTEST)
    src = Path(a.tests) / "tests" / "cupyx_tests" / "jit_tests"
    files = sorted(src.glob("test_*.py"))
    for f in files:
        (work / f.name).write_text(rewrite_source(f.read_text(), keep_cupy=True))
    junit = work / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "--continue-on-collection-errors", f"--junitxml={junit}", str(work)]
    if a.k:
        cmd += ["-k", a.k]
    env["PYTHONPATH"] = os.pathsep.join([str(work), env.get("PYTHONPATH", "")])
    subprocess.run(cmd, env=env, cwd=work, stdout=subprocess.DEVNULL)
    import xml.etree.ElementTree as ET

    per = collections.defaultdict(collections.Counter)
    fails = collections.defaultdict(list)
    for tc in ET.parse(junit).iter("testcase"):
        f = tc.get("classname", "").split(".")[0]
        name = tc.get("name")
        sk, fl, er = tc.find("skipped"), tc.find("failure"), tc.find("error")
        if sk is not None and "compile+link ok" in (sk.get("message") or ""):
            per[f]["linked"] += 1
        elif sk is not None:
            per[f]["skipped"] += 1
        elif fl is not None or er is not None:
            node = fl if fl is not None else er
            msg = (node.get("message") or "").strip().splitlines()
            first = msg[0][:160] if msg else ""
            kind = "compile/link" if any(w in first for w in ("CompileError", "error[", "NVRTC", "ptxas", "nvlink", "Error: error")) else "other"
            per[f][kind] += 1
            fails[f].append(f"{kind}: {name}: {first}")
        else:
            per[f]["passed (no launch)"] += 1
    total = collections.Counter()
    for f in sorted(per):
        total.update(per[f])
        print(f"{f}: " + ", ".join(f"{k} {v}" for k, v in sorted(per[f].items())))
        for line in fails[f]:
            print("   ", line)
    print("TOTAL: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    print(json.dumps(dict(total)))
    print("(`linked`: the launch compiled and linked, nothing ran; `compile/link`: refused, which "
          "tests expecting an error may want; `other`: the stand-in's limits)")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(stubs, ignore_errors=True)


if __name__ == "__main__":
    main()
