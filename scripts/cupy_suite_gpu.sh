#!/usr/bin/env bash
# Runs on the GPU machine: installs the pydevice wheel from .carry/ (scripts/device_bundle.sh
# builds it), runs CuPy's own jit, fuse and user-kernel tests on CuPy and on pydevice
# (scripts/cupy_suite.py; the tests from .peers/cupy, which scripts/fetch_cupy_tests.sh
# extracts). Reports go to $OUT (cupy_suite.md, cupy_suite.json, logs). pydevice's own GPU
# tests of fuse are in python/tests/test_kernels_gpu.py (python/tests/gpu_run.sh runs them).
# Device tool: carry [".carry", ".peers/cupy"], command `bash scripts/cupy_suite_gpu.sh`.
set -uo pipefail
cd "$(dirname "$0")/.."
work=/tmp/pydevice-cupy-suite && rm -rf $work && mkdir -p $work
out=${OUT:-$work}
whl=$(ls .carry/pydevice-*.whl.xz 2>/dev/null | head -1)
if [ -z "$whl" ]; then echo "no .carry/pydevice-*.whl.xz: run scripts/device_bundle.sh first" >&2; exit 2; fi
if [ ! -f .peers/cupy/VERSION ]; then echo "no .peers/cupy: run scripts/fetch_cupy_tests.sh first" >&2; exit 2; fi
dest=$work/$(basename "${whl%.xz}")
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$whl" "$dest"
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --force-reinstall "$dest" 2>&1 | grep -v WARNING
if ! python3 -c 'import pytest' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check --no-index --find-links .carry/pywheels pytest 2>&1 | grep -v WARNING
fi
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
# jit.thrust kernels compile CUDA C++ shims with NVRTC and CCCL's headers (docs/semantics.md
# §15.5): the toolkit's include/cccl, else the nvidia-cuda-cccl wheel's. NVRTC's PTX is cached
# on disk across the suite's processes.
if [ -z "${PYDEVICE_CCCL:-}" ] && [ -f .carry/cccl.tar.xz ]; then
  # The wheel's headers that scripts/device_bundle.sh packed: the version the prelude is tested with.
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .carry/cccl.tar.xz "$work"
  export PYDEVICE_CCCL=$work/cccl
fi
if [ -z "${PYDEVICE_CCCL:-}" ]; then
  for d in /usr/local/cuda/include/cccl /usr/local/cuda/include \
           "$(python3 -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13/include/cccl"))' 2>/dev/null)"; do
    if [ -f "$d/thrust/sort.h" ]; then export PYDEVICE_CCCL=$d; break; fi
  done
fi
echo "CCCL headers: ${PYDEVICE_CCCL:-none found (jit.thrust tests will fail to link)}"
export PYDEVICE_NVRTC_CACHE=${PYDEVICE_NVRTC_CACHE:-$work/nvrtc-cache}
python3 -c 'import cupy, numpy; print("cupy", cupy.__version__, "numpy", numpy.__version__)'
echo "== CuPy's own tests (scripts/cupy_suite.py)"
timeout 590 python3 scripts/cupy_suite.py --tests .peers/cupy --out "$out" --jobs "$(nproc)" --deadline 540 "$@" \
  | grep -v "^\["
