#!/usr/bin/env bash
# Issue 31's and issue 35's launch figures on the GPU machine, in one call: the launch fast-path
# tests (python/tests/test_launch_fast*.py: NumPy scalars, @struct instances, their conversion
# rules, real launches checked against NumPy), then bench/python/launch_3us.py (Python numbers,
# NumPy scalars, @struct, CuPy RawKernel, PyTorch and the driver floor, side by side in one run)
# and bench/python/launch_arg_kinds.py (host time per argument kind). No network: the pydevice
# wheel comes from .carry (scripts/device_bundle.sh; PYDEVICE_BUNDLE_ONLY_PYTHON=1 bundles only
# the wheel), installed with pip --target into a scratch folder. Logs go to $OUT when set.
# Device tool: carry [".carry"], command `bash scripts/launch_gpu.sh`.
# Without a GPU (here) the tests run their CPU parts and skip the rest, and the benchmarks run
# their dry-run modes (host part only, no driver call), saying so.
set -uo pipefail
cd "$(dirname "$0")/.."
work=/tmp/pydevice-launch && rm -rf $work && mkdir -p $work
out=${OUT:-$work}
site=$work/site
whl=$(ls .carry/pydevice-*.whl.xz 2>/dev/null | head -1)
if [ -n "$whl" ]; then
  dest=$work/$(basename "${whl%.xz}")
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$whl" "$dest"
  python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$site" "$dest" 2>&1 | grep -v WARNING
  export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
else
  echo "no .carry/pydevice-*.whl.xz: using the pydevice already importable here"
fi
if ! python3 -c 'import pytest' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check --no-index --target "$site" --find-links .carry/pywheels pytest 2>&1 | grep -v WARNING
fi
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi: no GPU here"
python3 - <<'PY'
import importlib, sys
print("python", sys.version.split()[0])
for m in ("numpy", "cupy", "torch", "pydevice"):
    try:
        mod = importlib.import_module(m)
        print(f"{m}: {getattr(mod, '__version__', 'present')} ({getattr(mod, '__file__', '')})")
    except Exception as e:  # noqa: BLE001
        print(f"{m}: not importable ({type(e).__name__}: {e})")
try:
    import cupy
    print("cupy.ndarray has the DLPack C exchange API:", hasattr(cupy.ndarray, "__dlpack_c_exchange_api__"))
except Exception:  # noqa: BLE001
    pass
PY
echo "== launch fast-path tests (python/tests/test_launch_fast*.py)"
python3 -m pytest -q -rs -p no:cacheprovider python/tests/test_launch_fast.py python/tests/test_launch_fast_scalars.py \
  python/tests/test_launch_dlpack_exchange.py 2>&1 | tee "$out/launch_tests.log" | tail -15
echo "== issue 35 / 31: 3 arrays + 1 scalar, every argument kind and the peers side by side (bench/python/launch_3us.py)"
timeout 420 python3 bench/python/launch_3us.py --launches 20000 --repeats 7 2>&1 | tee "$out/launch_3us.log" | grep -v '^{"case.*median' | tail -32
echo "== host time per launch by argument kind (bench/python/launch_arg_kinds.py)"
timeout 150 python3 bench/python/launch_arg_kinds.py --n 20000 --repeats 5 2>&1 | tee "$out/launch_arg_kinds.log" | grep -v '^{' | tail -14
