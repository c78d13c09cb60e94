#!/usr/bin/env bash
# Runs the Hopper pipeline's GPU checks (docs/semantics.md §18.4, issue 32) on the GPU machine
# in a few minutes: the Rust GPU tests of tests/it/gpu/hopper.rs, the Python GPU tests of
# python/tests/test_gpu_hopper.py (CuPy and PyTorch) and the bf16 GEMM benchmark beside
# torch.matmul (bench/hopper/bench_gemm.py). Needs .carry/ from scripts/device_bundle.sh
# (it_tests and the wheel). Device tool: carry [".carry"], command `bash scripts/hopper_gpu.sh`.
set -uo pipefail
cd "$(dirname "$0")/.."
work=/tmp/pydevice-hopper && rm -rf $work && mkdir -p $work
out=${OUT:-$work}
unxz() { python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; }
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
status=0
if [ -e .carry/it_tests.xz ]; then
  unxz .carry/it_tests.xz $work/it_tests && chmod +x $work/it_tests
  export PYDEVICE_REPO=$PWD
  export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
  echo "== Rust GPU tests (gpu::hopper)"
  timeout 120 $work/it_tests --test-threads=1 gpu::hopper 2>&1 | tee "$out/hopper_rust.log" \
    | grep -E "^test |test result|skipped|panicked|assert" || status=1
  grep -q "test result: ok" "$out/hopper_rust.log" || status=1
else
  echo "no .carry/it_tests.xz: run scripts/device_bundle.sh first"; status=1
fi
whl=$(ls .carry/pydevice-*.whl.xz 2>/dev/null | head -1)
if [ -n "$whl" ]; then
  dest=$work/$(basename "${whl%.xz}")
  unxz "$whl" "$dest"
  python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target $work/site "$dest" 2>&1 | grep -v WARNING
  export PYTHONPATH=$work/site${PYTHONPATH:+:$PYTHONPATH}
  echo "== Python GPU tests (python/tests/test_gpu_hopper.py)"
  (cd python/tests && timeout 150 python3 -m pytest -q -rs test_gpu_hopper.py 2>&1 | tee "$out/hopper_python.log" | tail -15) || status=1
  echo "== bf16 GEMM vs torch.matmul (bench/hopper/bench_gemm.py)"
  timeout 120 python3 bench/hopper/bench_gemm.py 2>&1 | tee "$out/hopper_gemm.md" || status=1
else
  echo "no .carry/pydevice-*.whl.xz: run scripts/device_bundle.sh first"; status=1
fi
exit $status
