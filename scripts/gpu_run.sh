#!/usr/bin/env bash
# Runs on the GPU machine (see scripts/device_bundle.sh): every GPU test, the CLI end to end,
# and a short summary table. Output files go to $OUT when it is set.
set -uo pipefail
cd "$(dirname "$0")/.."
work=/tmp/pydevice-gpu && rm -rf $work && mkdir -p $work
for f in .carry/*.gz; do [ -e "$f" ] || continue; gunzip -c "$f" > "$work/$(basename "${f%.gz}")"; done
for f in .carry/*.xz; do
  [ -e "$f" ] || continue
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" "$work/$(basename "${f%.xz}")"
done
chmod +x $work/*
# The command line travels inside the wheel (scripts/device_bundle.sh): $work/pydevice runs it.
[ -e $work/pydevice ] || python3 scripts/carry_cli.py $work > /dev/null || exit 2
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
out=${OUT:-$work}
# Tests that run the CLI find it here (the path cargo baked in does not exist on this machine).
export PYDEVICE_BIN=$work/pydevice
# Tests find their fixtures from here (tests/support/mod.rs), not from the build machine's path.
export PYDEVICE_REPO=$PWD
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
echo "== cargo GPU tests (tests/it: gpu::, gpu_runtime::)"
$work/it_tests --test-threads=1 gpu:: gpu_runtime:: 2>&1 | tee "$out/gpu_tests.log" | grep -E "^test |test result|skipped|panicked"
if [ -x $work/bench_runtime ]; then
  echo "== runtime benchmark (benches/runtime.rs)"
  $work/bench_runtime 2>&1 | tee "$out/bench_runtime.log"
else
  echo "skipped the runtime benchmark: not in the bundle (PYDEVICE_BUNDLE_EXTRA=1 scripts/device_bundle.sh adds it)"
fi
echo "== CLI: pydevice run examples/vector_add.py"
python3 scripts/run_example.py $work/pydevice 2>&1 | tail -3
echo "== math accuracy in ulps against float64 (Python's math)"
python3 scripts/math_accuracy.py $work/pydevice "$out/math_accuracy.md" > /dev/null 2>&1
echo "math functions within their ulp bounds: $(grep -c '| yes |' "$out/math_accuracy.md"), outside: $(grep -c '| NO |' "$out/math_accuracy.md")"
grep '| NO |' "$out/math_accuracy.md"
echo "== dialect differential (tests/fixtures/{numba,cupyx}: numba-cuda / cupyx.jit vs pydevice on the same inputs)"
python3 scripts/dialect_differential.py $work/pydevice 2>&1 | grep -v "Warning\|warn(\|experimental" | tail -30
echo "== ptxas (CUDA 13) on every language fixture"
fails=0; n=0
for f in tests/fixtures/lang/*.py; do
  # A fixture with several entries is checked through its first (tests/fixtures.rs checks all).
  entry=$(sed -n 's/^# entry: //p' "$f" | head -1); sig=$(sed -n 's/^# sig: //p' "$f" | head -1); arch=$(sed -n 's/^# arch: //p' "$f"); arch=${arch:-sm_90}
  # `# const: a=1, b=2.5`: the ConstExpr values, one --const each.
  consts=(); IFS=',' read -ra cs <<< "$(sed -n 's/^# const: //p' "$f")"
  for c in "${cs[@]}"; do c=${c// /}; [ -n "$c" ] && consts+=(--const "$c"); done
  n=$((n+1))
  # PTX calling `extern` (CUDA C++) functions is relocatable: ptxas takes it with -c.
  if ! $work/pydevice compile "$f" --entry "$entry" --sig "$sig" "${consts[@]}" --arch "$arch" -o $work/k.ptx || ! /usr/local/cuda/bin/ptxas -arch=$arch $(grep -q '^\.extern \.func' $work/k.ptx && echo -c) $work/k.ptx -o $work/k.cubin; then
    echo "FAIL $f"; fails=$((fails+1))
  fi
done
echo "fixtures: $((n-fails)) of $n accepted by ptxas"
echo "== a C++ host program launches a Python kernel (scripts/interop_host.cpp)"
if [ -x /usr/local/cuda/bin/nvcc ]; then
  $work/pydevice abi tests/interop/interop.py --header > $work/interop.h \
    && $work/pydevice compile tests/interop/interop.py --entry py_axpy --arch sm_90 -o $work/py_axpy.ptx \
    && /usr/local/cuda/bin/nvcc -std=c++17 -I$work scripts/interop_host.cpp -o $work/interop_host -lcuda \
    && $work/interop_host $work/py_axpy.ptx || echo "FAIL: interop_host"
else
  echo "skipped: no /usr/local/cuda/bin/nvcc"
fi
if [ -n "${PYDEVICE_EXTRA:-}" ]; then bash -c "$PYDEVICE_EXTRA"; fi
