#!/usr/bin/env bash
# Runs on the GPU machine with .carry/ beside the working tree (scripts/device_bundle.sh
# builds it): the GPU checks of issue 37's branch `robust` only. (1) The device `print` of
# floats (`%.Ng` and `.0`, docs/semantics.md §4.5.1) captured from a child process:
# `it gpu_debug::` (print, asserts, bounds, random). (2) python/tests/test_safety.py with the
# GPU present: read-only CUDA-array-interface arrays refused where the kernel stores, the
# Ctrl-C, print and redefinition tests. Without a GPU both skip, saying so. Logs go to $OUT.
# Device tool: carry [".carry"], command `bash scripts/gpu_issue37.sh`.
set -uo pipefail
cd "$(dirname "$0")/.."
work=/tmp/pydevice-37 && rm -rf $work && mkdir -p $work
out=${OUT:-$work}
unxz() { python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; }
[ -e .carry/it_tests.xz ] || { echo "no .carry/it_tests.xz: run scripts/device_bundle.sh first" >&2; exit 2; }
unxz .carry/it_tests.xz $work/it_tests && chmod +x $work/it_tests
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
export PYDEVICE_REPO=$PWD
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
echo "== it gpu_debug:: (device print of floats, asserts, bounds)"
$work/it_tests --test-threads=1 gpu_debug:: 2>&1 | tee "$out/gpu_debug.log" | grep -E "^test |test result|skipped|panicked|left|right"
whl=$(ls .carry/pydevice-*.whl.xz 2>/dev/null | head -1)
[ -n "$whl" ] || { echo "no .carry/pydevice-*.whl.xz" >&2; exit 2; }
unxz "$whl" "$work/$(basename "${whl%.xz}")"
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target $work/site "$work/$(basename "${whl%.xz}")" 2>&1 | grep -v WARNING
echo "== pytest python/tests/test_safety.py"
PYTHONPATH=$work/site python3 -m pytest -v -rs -p no:cacheprovider python/tests/test_safety.py 2>&1 | tee "$out/test_safety.log" | grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|error" | tail -50
