#!/usr/bin/env bash
# Every GPU check and benchmark, on the GPU machine, from the .carry/ bundle that
# scripts/device_bundle.sh builds. One part per call keeps each inside the device tool's
# 10-minute limit; with no argument all parts run in order (a machine with no such limit).
#
#   bash scripts/gpu_all.sh tests      # Rust GPU tests, CLI, math, dialects, debugging features
#   bash scripts/gpu_all.sh python     # the Python package: GPU pytest and its two benchmarks
#   bash scripts/gpu_all.sh bench      # the kernel benchmark (all suites) and the SASS check
#   bash scripts/gpu_all.sh sanitize   # compute-sanitizer (memcheck, synccheck, racecheck), short soak
#   bash scripts/gpu_all.sh            # all of them
#
# Each part ends with a short summary; logs go to $OUT when it is set.
set -uo pipefail
cd "$(dirname "$0")/.."
parts=${*:-tests python bench sanitize}
work=/tmp/pydevice-gpu-all && rm -rf $work && mkdir -p $work
for f in .carry/*.xz; do
  [ -e "$f" ] || continue
  case "$f" in *.whl.xz) continue ;; esac
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" "$work/$(basename "${f%.xz}")"
done
chmod +x $work/* 2>/dev/null
# The command line travels inside the wheel (scripts/device_bundle.sh): $work/pydevice runs it.
[ -e $work/pydevice ] || python3 scripts/carry_cli.py $work > /dev/null || exit 2
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
export PYDEVICE_REPO=$PWD PYDEVICE_BIN=$work/pydevice PYTHONUNBUFFERED=1
out=${OUT:-$work}
summary=$work/summary.txt
: > "$summary"
t0=$SECONDS

for part in $parts; do
  case $part in
    tests)
      echo "######## tests"
      bash scripts/gpu_run.sh 2>&1 | tee "$out/gpu_run.log" | tail -60
      if [ -x $work/it_tests ]; then
        echo "== debugging features (tests/it/gpu_debug.rs)"
        $work/it_tests --test-threads=1 gpu_debug:: 2>&1 | tee "$out/gpu_debug.log" | grep -E "^test |test result|panicked"
      fi
      echo "== cuda-gdb at a Python line of a debug=True kernel (scripts/cuda_gdb_check.sh)"
      bash scripts/cuda_gdb_check.sh > "$out/cuda_gdb.log" 2>&1; echo "exit $?" >> "$out/cuda_gdb.log"
      tail -25 "$out/cuda_gdb.log"
      if [ -x $work/it_tests ]; then
        echo "== every GPU of the host (tests/it/gpu_multi.rs; two-GPU tests skip with one)"
        $work/it_tests --nocapture gpu_multi:: 2>&1 | tee "$out/gpu_multi.log" | grep -E "^test |test result|panicked|skipped|halo|CanAccessPeer"
      fi
      if [ -x $work/multi_gpu_stencil ]; then
        gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
        echo "== examples/multi_gpu_stencil.rs (GPUs 0 and $((gpus > 1 ? 1 : 0)))"
        $work/multi_gpu_stencil 0 $((gpus > 1 ? 1 : 0)) 2>&1 | tee "$out/multi_gpu_stencil.log" | tail -3
      else
        echo "skipped examples/multi_gpu_stencil.rs: not in the bundle (PYDEVICE_BUNDLE_EXTRA=1 scripts/device_bundle.sh adds it; python/tests/gpu_run.sh runs the .py twin)"
      fi
      {
        echo "cuda-gdb:          $(grep -hE '^(PASS|FAIL|skipped)' "$out/cuda_gdb.log" | tr '\n' ' ')"
        echo "rust GPU tests:    $(grep -h 'test result' "$out/gpu_run.log" | head -2 | tr '\n' ' ')"
        [ -e "$out/gpu_multi.log" ] && echo "multi-GPU tests:   $(grep -h 'test result' "$out/gpu_multi.log" | tail -1) ($(grep -c 'skipped' "$out/gpu_multi.log") skipped for GPUs)"
        [ -e "$out/gpu_debug.log" ] && echo "debug GPU tests:   $(grep -h 'test result' "$out/gpu_debug.log" | tail -1)"
        echo "ptxas fixtures:    $(grep -h 'accepted by ptxas' "$out/gpu_run.log")"
        echo "math:              $(grep -h 'within their ulp' "$out/gpu_run.log")"
      } >> "$summary"
      ;;
    python)
      echo "######## python"
      bash python/tests/gpu_run.sh 2>&1 | tee "$out/python_gpu.log" | tail -60
      echo "python (pytest):   $(grep -hE '[0-9]+ (passed|failed)' "$out/python_gpu.log" | tail -1)" >> "$summary"
      ;;
    bench)
      echo "######## bench"
      PYDEVICE=$work/pydevice BENCH_RUNTIME=${BENCH_RUNTIME:-} bash bench/run_gpu_bench.sh "$work/bench" 2>&1 \
        | tee "$out/bench.log" | tail -80
      cp "$work/bench/report.md" "$out/bench_report.md" 2>/dev/null
      echo "== SASS of the histogram's shared-memory atomics"
      $work/pydevice compile bench/kernels/histogram.py --entry histogram --sig "uint8[::1], int32[::1]" \
        --arch sm_90 -o $work/h.ptx && /usr/local/cuda/bin/ptxas -arch=sm_90 $work/h.ptx -o $work/h.cubin \
        && /usr/local/cuda/bin/cuobjdump -sass $work/h.cubin | grep -oE "ATOMS\.[A-Z.0-9]+|ATOMG?\.[A-Z.0-9]+|RED\.[A-Z.0-9]+" | sort | uniq -c
      echo "bench: $(grep -c '' "$out/bench_report.md" 2>/dev/null) report lines (bench_report.md)" >> "$summary"
      ;;
    sanitize)
      echo "######## sanitize"
      for tool in memcheck synccheck racecheck; do
        TOOLS=$tool timeout 160 bash scripts/sanitize.sh 2>&1 | tee "$out/sanitize-$tool.out" | tail -8
        echo "sanitize $tool: $(tail -3 "$out/sanitize-$tool.out" | tr '\n' ' ')" >> "$summary"
      done
      timeout 100 bash scripts/soak.sh 60 2>&1 | tail -8 | tee "$out/soak.out"
      echo "soak (60 s): $(tail -2 "$out/soak.out" | tr '\n' ' ')" >> "$summary"
      ;;
    *) echo "unknown part $part (tests, python, bench, sanitize)" >&2; exit 2 ;;
  esac
done
echo "######## summary ($((SECONDS - t0)) s)"
cat "$summary"
