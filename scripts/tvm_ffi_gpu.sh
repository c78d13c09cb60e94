#!/usr/bin/env bash
# Runs the TVM-FFI export (pydevice.tvm_ffi, issue 35) on the GPU machine: one pydevice kernel,
# c = a * s + b (examples/tvm_ffi), called from C++, from PyTorch and from JAX, then the
# pytest file python/tests/test_tvm_ffi.py; prints a short table. No network: the wheels come
# from .carry/pywheels (apache-tvm-ffi and jax-tvm-ffi, installed with pip --target) and the
# pydevice wheel from .carry (scripts/device_bundle.sh). Then issue 35's launch figure
# (bench/python/launch_3us.py, also with the GIL released per launch, the old behaviour) and
# the kernel builders' host cost (bench/python/kernels_host_cost.py). With a C++ compiler the library and
# the C++ caller are built here from the kernel; without one, the copies built on the build
# machine (.carry/pywheels/tvm_ffi_example: axpb.so, main, axpb.cc) are used, saying so.
# Device tool: carry [".carry"], command `bash scripts/tvm_ffi_gpu.sh`. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
work=/tmp/pydevice-tvm-ffi && rm -rf $work && mkdir -p $work/build
out=${OUT:-$work}
site=$work/site
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$site" \
  .carry/pywheels/apache_tvm_ffi-*cp312*.whl .carry/pywheels/jax_tvm_ffi-*.whl 2>&1 | grep -v WARNING
whl=$(ls .carry/pydevice-*.whl.xz 2>/dev/null | head -1)
if [ -n "$whl" ]; then
  dest=$work/$(basename "${whl%.xz}")
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$whl" "$dest"
  python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$site" "$dest" 2>&1 | grep -v WARNING
else
  echo "no .carry/pydevice-*.whl.xz: the kernel cannot be rebuilt here; using the prebuilt library"
fi
if ! python3 -c 'import pytest' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check --no-index --target "$site" --find-links .carry/pywheels pytest 2>&1 | grep -v WARNING
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
export LD_LIBRARY_PATH=$site/tvm_ffi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 - <<'PY'
import importlib
for m in ("tvm_ffi", "jax_tvm_ffi", "torch", "jax", "pydevice"):
    try:
        mod = importlib.import_module(m)
        print(f"{m}: {getattr(mod, '__version__', 'present')}")
    except Exception as e:  # noqa: BLE001
        print(f"{m}: not importable ({type(e).__name__}: {e})")
PY
lib=$work/build/axpb.so main=$work/build/main
echo "== build: the kernel exported as build/axpb.so (pydevice.tvm_ffi) and the C++ caller"
if python3 -c 'import pydevice' 2>/dev/null && { [ -n "${CXX:-}" ] || command -v c++ >/dev/null || command -v g++ >/dev/null; }; then
  python3 examples/tvm_ffi/axpb.py build --out $work/build 2>&1 | tail -3 | cut -c1-300
else
  echo "no C++ compiler (or no pydevice wheel) here"
fi
for f in axpb.so main; do
  if [ ! -f $work/build/$f ]; then
    echo "using .carry/pywheels/tvm_ffi_example/$f (built on the build machine)"
    cp .carry/pywheels/tvm_ffi_example/$f $work/build/ && chmod +x $work/build/$f
  fi
done
echo "== calls"
# The last JSON line of a caller, or a failure line (its output's tail to stderr).
result() {
  local name=$1; shift
  local o line
  o=$("$@" 2>&1)
  line=$(printf '%s\n' "$o" | grep '^{' | tail -1)
  if [ -n "$line" ]; then echo "$line"; else
    echo "{\"caller\": \"$name\", \"ok\": false, \"error\": \"no result\"}"
    printf '%s\n' "$o" | tail -8 >&2
  fi
}
{
  result "C++" $main $lib 2000
  result "PyTorch" python3 examples/tvm_ffi/axpb.py torch --lib $lib
  result "JAX" python3 examples/tvm_ffi/axpb.py jax --lib $lib
} | tee $out/tvm_ffi_calls.jsonl
echo "== pytest python/tests/test_tvm_ffi.py"
python3 -m pytest -q -rs -p no:cacheprovider python/tests/test_tvm_ffi.py 2>&1 | tee $out/tvm_ffi_pytest.log | tail -15
echo "== issue 35's launch figure: 3 arrays + 1 scalar, CuPy / PyTorch / RawKernel / custom op / TVM-FFI (bench/python/launch_3us.py)"
timeout 400 python3 bench/python/launch_3us.py --tvm-ffi-lib $lib 2>&1 | tee $out/launch_3us.log | grep -v '^{' | tail -16
echo "== the same with the GIL released around each launch (PYDEVICE_LAUNCH_RELEASE_GIL=1, the old behaviour)"
PYDEVICE_LAUNCH_RELEASE_GIL=1 timeout 400 python3 bench/python/launch_3us.py --launches 10000 --repeats 5 --tvm-ffi-lib $lib 2>&1 | tee $out/launch_3us_gil.log | grep -E '^\| pydevice device.launch|^target' 
echo "== kernel builders' host cost, driver call left out (bench/python/kernels_host_cost.py)"
timeout 300 python3 bench/python/kernels_host_cost.py --n 20000 --repeats 5 2>&1 | tee $out/kernels_host_cost.log | tail -7
echo "== summary"
python3 - "$out/tvm_ffi_calls.jsonl" <<'PY'
import json, sys
print("| caller | result | max abs err | µs per call (4096 elements) |")
print("|---|---|---:|---:|")
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    res = "skipped: " + r["skipped"] if "skipped" in r else ("ok" if r.get("ok") else "FAILED " + r.get("error", ""))
    print(f"| {r['caller']} | {res} | {r.get('max_abs_err', '')} | {r.get('us_per_call', '')} |")
PY
