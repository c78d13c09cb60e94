#!/usr/bin/env bash
# Builds the pydevice Python package (python/, PyO3 abi3, one wheel for CPython >= 3.9) with
# maturin into target/wheels and installs it. Usage: scripts/python_package.sh [--release|--dev]
# (default --release). Prints the wheel's path on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:---release}
python3 -m pip --version >/dev/null
if ! python3 -m maturin --version >/dev/null 2>&1 && ! command -v maturin >/dev/null; then
  echo "== installing maturin and pytest (pip)" >&2
  python3 -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2" pytest
fi
python3 -c 'import pytest' 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check pytest
mat=$(command -v maturin || echo "python3 -m maturin")
dir=target/wheels
if [ "$profile" = "--dev" ]; then args=(--profile dev); dir=target/wheels-dev; else args=(--release); fi
rm -f $dir/pydevice-*.whl
# auditwheel is skipped: the extension links only glibc, libstdc++, zlib, zstd and libffi,
# which the wheel's platforms have; repairing would need patchelf and copy them in.
(cd python && $mat build "${args[@]}" --auditwheel skip -o ../$dir >&2)
wheel=$(ls $dir/pydevice-*.whl)
python3 -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel" >&2
echo "$wheel"
