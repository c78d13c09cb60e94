#!/usr/bin/env bash
# Runs on the GPU machine with .carry/ beside the working tree (scripts/device_bundle.sh
# builds it): the GPU checks of issue 33's branch `midend` (cmath, complex division and
# Philox as IR expansions shared by the back ends). (1) `it gpu::` (every Rust GPU test,
# each comparing the device with a CPU reference; among them
# host_and_device_agree_on_complex_functions, numba_cmath_inverse_random,
# numba_pow_builtin_random) and `it gpu_debug::` (rand_on_the_device_is_the_host_reference_bit_for_bit:
# the device's Philox stream equals `pydevice::random` bit for bit). (2) python/tests/test_gpu.py
# and test_cpu.py with the GPU present. Without a GPU the GPU tests skip, saying so. Logs go
# to $OUT. Device tool: carry [".carry"], command `bash scripts/gpu_midend.sh`.
set -uo pipefail
cd "$(dirname "$0")/.."
work=/tmp/pydevice-midend && rm -rf $work && mkdir -p $work
out=${OUT:-$work}
unxz() { python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; }
[ -e .carry/it_tests.xz ] || { echo "no .carry/it_tests.xz: run scripts/device_bundle.sh first" >&2; exit 2; }
unxz .carry/it_tests.xz $work/it_tests && chmod +x $work/it_tests
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
export PYDEVICE_REPO=$PWD
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
echo "== it gpu:: gpu_debug::"
$work/it_tests --test-threads=1 gpu:: gpu_debug:: 2>&1 | tee "$out/gpu_midend.log" | grep -E "test result|skipped|panicked|FAILED|left|right"
whl=$(ls .carry/pydevice-*.whl.xz 2>/dev/null | head -1)
[ -n "$whl" ] || { echo "no .carry/pydevice-*.whl.xz" >&2; exit 2; }
unxz "$whl" "$work/$(basename "${whl%.xz}")"
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target $work/site "$work/$(basename "${whl%.xz}")" 2>&1 | grep -v WARNING
echo "== pytest python/tests/test_gpu.py python/tests/test_cpu.py"
PYTHONPATH=$work/site python3 -m pytest -q -rs -p no:cacheprovider python/tests/test_gpu.py python/tests/test_cpu.py 2>&1 | tee "$out/pytest_midend.log" | tail -15
