#!/usr/bin/env bash
# The GPU checks of branch `cpu` (issues 33 and 37), in one call on the H200 with .carry/
# beside the working tree (scripts/device_bundle.sh builds it): the Hopper tests on both back
# ends (clusters, TMA, wgmma: the GPU is the reference for the CPU's emulation, and
# `wgmma_bf16_with_128_byte_swizzle_matches_the_cpu` checks the swizzled layout the CPU
# reads), the Python tests that now also run on the CPU stand-in, the Ctrl-C test, and the
# CPU scaling benchmark with block_sum's cost split (sync_only, shared_only). Logs go to
# $OUT when it is set. Device tool: carry [".carry"], command `bash scripts/gpu_cpu_branch.sh`.
# Without .carry (no GPU machine) it says so and exits 2.
set -uo pipefail
cd "$(dirname "$0")/.."
if ! ls .carry/*.whl.xz >/dev/null 2>&1; then
  echo "no .carry/: run scripts/device_bundle.sh first (this script is for the GPU machine)" >&2
  exit 2
fi
work=/tmp/pydevice-gpu && rm -rf $work && mkdir -p $work/site
out=${OUT:-$work}
for f in .carry/*.gz; do [ -e "$f" ] || continue; gunzip -c "$f" > "$work/$(basename "${f%.gz}")"; done
for f in .carry/*.xz; do
  [ -e "$f" ] || continue
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" "$work/$(basename "${f%.xz}")"
done
chmod +x $work/* 2>/dev/null
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
export PYDEVICE_REPO=$PWD
if [ -x $work/it_tests ]; then
  echo "== gpu::hopper:: and cpu:: (GPU and CPU arms)"
  $work/it_tests --test-threads=1 gpu::hopper:: cpu:: 2>&1 | tee "$out/hopper_tests.log" \
    | grep -E "^test |test result|runs on|skipped|panicked"
fi
whl=$(ls $work/pydevice-*.whl | head -1)
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target $work/site "$whl" 2>&1 | grep -v WARNING
echo "== Python: Hopper tests, the b128 atomics test, Ctrl-C during a CPU launch"
PYTHONPATH=$work/site timeout 540 python3 -m pytest -q -rs -p no:cacheprovider \
  python/tests/test_gpu_hopper.py python/tests/test_cpu_interrupt.py \
  "python/tests/test_gpu.py::test_atomic_b128_complex128_load_store" 2>&1 | tee "$out/hopper_py.log" | tail -15
echo "== CPU scaling (bench/cpu/scaling.py)"
PYTHONPATH=$work/site timeout 400 python3 bench/cpu/scaling.py --repeats 3 \
  --kernels block_sum,sync_only,shared_only,warp_sum 2>&1 | tee "$out/cpu_scaling.log" | tail -25
