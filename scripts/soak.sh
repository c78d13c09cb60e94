#!/usr/bin/env bash
# The soak test on the GPU machine: 16 threads compiling (through a KernelCache with a disk
# directory) and launching random specializations for SECONDS (default 600), sampling host
# RSS and free device memory; fails on any error or on growth after warm-up. It is the
# ignored test `soak_compile_and_launch_from_16_threads` of tests/gpu_runtime.rs, run from
# the .carry binaries that scripts/device_bundle.sh builds.
#
#   bash scripts/soak.sh          # 10 minutes
#   bash scripts/soak.sh 300      # 5 minutes
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
work=/tmp/pydevice-soak && rm -rf $work && mkdir -p $work
f=.carry/it_tests.xz
if [ -e "$f" ]; then
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" $work/it_tests
elif [ -e .carry/it_tests.gz ]; then
  gunzip -c .carry/it_tests.gz > $work/it_tests
else
  echo "no .carry/it_tests.{xz,gz}: run scripts/device_bundle.sh first" >&2
  exit 1
fi
chmod +x $work/it_tests
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
out=${OUT:-$work}
PYDEVICE_SOAK_SECONDS=$seconds $work/it_tests --ignored --exact \
  gpu_runtime::soak_compile_and_launch_from_16_threads --nocapture 2>&1 | tee "$out/soak.log" \
  | grep -E "soak|test result|panicked|errors|grew"
exit "${PIPESTATUS[0]}"
