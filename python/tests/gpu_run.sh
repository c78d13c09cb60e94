#!/usr/bin/env bash
# Runs on the GPU machine with .carry/ beside the working tree (scripts/device_bundle.sh
# builds it): installs the pydevice wheel (no network: --no-index --no-deps), runs the
# Python tests (GPU part included) and the two Python benchmarks, and prints a short summary.
# Logs go to $OUT when it is set. Device tool: carry [".carry"], command
# `bash python/tests/gpu_run.sh`.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=/tmp/pydevice-py && rm -rf $work && mkdir -p $work
out=${OUT:-$work}
whl=$(ls .carry/pydevice-*.whl.xz 2>/dev/null | head -1)
if [ -z "$whl" ]; then echo "no .carry/pydevice-*.whl.xz: run scripts/device_bundle.sh first" >&2; exit 2; fi
dest=$work/$(basename "${whl%.xz}")
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$whl" "$dest"
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --force-reinstall "$dest" 2>&1 | grep -v WARNING
if ! python3 -c 'import pytest' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check --no-index --find-links .carry/pywheels pytest 2>&1 | grep -v WARNING
fi
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
# CCCL's headers for jit.thrust (test_gpu_thrust.py), as scripts/cupy_suite_gpu.sh does.
if [ -z "${PYDEVICE_CCCL:-}" ] && [ -f .carry/cccl.tar.xz ]; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .carry/cccl.tar.xz "$work"
  export PYDEVICE_CCCL=$work/cccl
fi
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
python3 -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
python3 - <<'PY'
import importlib
for m in ("cupy", "torch", "cuda.core", "cuda.bindings", "numba"):
    try:
        if m == "numba":
            import numpy as np; np.row_stack = np.vstack
        mod = importlib.import_module(m)
        print(f"{m}: {getattr(mod, '__version__', 'present')}")
    except Exception as e:
        print(f"{m}: not importable ({type(e).__name__}: {e})")
PY
echo "== pytest python/tests (CPU and GPU parts)"
python3 -m pytest -v -rs -p no:cacheprovider python/tests 2>&1 | tee "$out/python_pytest.log" | grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|error" | tail -60
echo "== the spec's vec_add through Python (scripts/python_example.py)"
python3 scripts/python_example.py 2>&1 | tail -3
echo "== host time per launch (bench/python/launch_overhead.py)"
timeout 300 python3 bench/python/launch_overhead.py 2>&1 | tee "$out/python_launch_overhead.log" | grep -v "^{" | tail -12
echo "== host cost per launch, driver call left out (bench/python/launch_host_cost.py)"
timeout 200 python3 bench/python/launch_host_cost.py --n 100000 --repeats 5 2>&1 | tee "$out/python_launch_host_cost.log" | tail -8
echo "== host time per launch by argument kind: Python numbers, NumPy scalars, @struct (bench/python/launch_arg_kinds.py)"
timeout 300 python3 bench/python/launch_arg_kinds.py --n 20000 --repeats 7 2>&1 | tee "$out/python_launch_arg_kinds.log" | grep -v "^{" | tail -14
echo "== host cost per call of ElementwiseKernel / ReductionKernel / fuse, driver call left out (bench/python/kernels_host_cost.py)"
timeout 300 python3 bench/python/kernels_host_cost.py --n 20000 --repeats 5 2>&1 | tee "$out/python_kernels_host_cost.log" | tail -7
echo "== two-GPU stencil example (examples/multi_gpu_stencil.py; \`0 0\` with one GPU)"
if [ "$(python3 -c 'import cupy; print(cupy.cuda.runtime.getDeviceCount())' 2>/dev/null)" -ge 2 ] 2>/dev/null; then
  timeout 120 python3 examples/multi_gpu_stencil.py 0 1 2>&1 | tail -3
else
  timeout 120 python3 examples/multi_gpu_stencil.py 0 0 2>&1 | tail -3
fi
echo "== time to first result in a fresh process (bench/python/first_result.py)"
timeout 400 python3 bench/python/first_result.py 2>&1 | tee "$out/python_first_result.log" | grep -v "^{" | tail -12
echo "== ElementwiseKernel / ReductionKernel / fuse against CuPy (bench/python/elementwise_bench.py)"
timeout 300 python3 bench/python/elementwise_bench.py 2>&1 | tee "$out/python_elementwise_bench.log" | tail -80
echo "== summary"
grep -E "^(=+ .* =+)$|passed|failed" "$out/python_pytest.log" | tail -2
