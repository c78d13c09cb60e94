"""The `pydevice` command line on the GPU machine, from the bundle's wheel.

scripts/device_bundle.sh ships the command line inside the Python wheel (the extension
module carries the crate's clap command line, `python/src/cli.rs`) rather than as a third
copy of LLVM. This unpacks `.carry/pydevice-*.whl.xz` into DIR/site (no index, no
dependencies) and writes DIR/pydevice, an executable that runs that command line, so every
GPU script keeps calling `$work/pydevice ...` (and `PYDEVICE_BIN`) as it did the binary.
DIR/pydevice loads the extension module by its path, without importing the package (and
NumPy): a call costs a Python start-up, not a package import.

    python3 scripts/carry_cli.py DIR     # prints DIR/pydevice

Where DIR/pydevice exists already (a bundle that still carries the binary), it is left as
it is.
"""

from __future__ import annotations

import glob
import lzma
import os
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAUNCHER = """#!/bin/sh
# The pydevice command line from the bundle's wheel (scripts/carry_cli.py).
exec {python} -S -c '
import importlib.util, sys
spec = importlib.util.spec_from_file_location("pydevice._native", sys.argv[1])
native = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native)
sys.exit(native.cli_main(["pydevice", *sys.argv[2:]]))
' {native} "$@"
"""


def install(work: str, carry: str = os.path.join(ROOT, ".carry")) -> str:
    """Installs the bundle's wheel into WORK/site and writes WORK/pydevice; returns its path."""
    exe = os.path.join(work, "pydevice")
    if os.path.exists(exe):
        return exe
    wheels = sorted(glob.glob(os.path.join(carry, "pydevice-*.whl.xz")))
    if not wheels:
        raise SystemExit(f"no {carry}/pydevice-*.whl.xz: run scripts/device_bundle.sh first")
    os.makedirs(work, exist_ok=True)
    whl = os.path.join(work, os.path.basename(wheels[-1])[: -len(".xz")])
    with lzma.open(wheels[-1]) as src, open(whl, "wb") as dst:
        shutil.copyfileobj(src, dst)
    site = os.path.join(work, "site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-index", "--no-deps", "--target", site, whl],
        check=True,
    )
    native = glob.glob(os.path.join(site, "pydevice", "_native*.so"))
    if not native:
        raise SystemExit(f"the wheel {whl} has no pydevice/_native*.so")
    with open(exe, "w") as f:
        f.write(LAUNCHER.format(python=shlex.quote(sys.executable), native=shlex.quote(native[0])))
    os.chmod(exe, 0o755)
    return exe


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python3 scripts/carry_cli.py DIR")
    print(install(sys.argv[1]))
