#!/usr/bin/env bash
# Run the whole kernel benchmark on a GPU machine and print the merged report.
#
#   bench/run_gpu_bench.sh [RESULTS_DIR]      (default: bench/results/<date-time>)
#
# Builds the CUDA C++ driver with nvcc, runs the nvcc, numba-cuda and cupyx.jit suites and,
# when $PYDEVICE names our CLI, bench/run_ours.py; each writes JSON lines to RESULTS_DIR,
# then bench/report.py merges them into RESULTS_DIR/report.md. Each step has a time limit
# so that the whole run stays under 8 minutes; a step that fails is reported and skipped.
# Environment: PYDEVICE (optional), BENCH_RUNTIME (optional: the benches/runtime.rs binary), NVCC (default /usr/local/cuda/bin/nvcc, else nvcc on
# PATH), PYTHON (default python3).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
py=${PYTHON:-python3}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || nvcc=nvcc
export PYTHONUNBUFFERED=1

log() { echo "[bench $(date +%T)] $*" >&2; }

# step NAME SECONDS OUTFILE COMMAND...: run with a time limit, stdout to OUTFILE
step() {
  local name=$1 limit=$2 file=$3
  shift 3
  log "$name (limit ${limit}s)"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$file"
  local rc=$?
  if [ $rc -ne 0 ]; then
    log "$name FAILED (exit $rc; 124 = time limit); its partial results are kept"
  fi
  log "$name done in $((SECONDS - t0))s"
}

start=$SECONDS
log "results in $out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >&2 || true

step "build bench_cuda (nvcc -O3 -arch=sm_90)" 90 "$out/build.log" \
  "$nvcc" -O3 -arch=sm_90 -o "$out/bench_cuda" "$here/peers/cuda/bench_cuda.cu" -lcuda
if [ -x "$out/bench_cuda" ]; then
  step "nvcc suite" 90 "$out/nvcc.jsonl" "$out/bench_cuda"
fi
step "numba-cuda suite" 120 "$out/numba.jsonl" "$py" "$here/peers/numba_suite.py"
step "cupyx.jit suite" 120 "$out/cupyx.jsonl" "$py" "$here/peers/cupyx_suite.py"
if [ -n "${BENCH_RUNTIME:-}" ]; then
  # Our in-process compile latency and host launch overhead (benches/runtime.rs).
  step "ours: compile latency and launch overhead" 120 "$out/ours_costs.log" env BENCH_JSON="$out/ours_costs.jsonl" "$BENCH_RUNTIME"
fi
if [ -n "${PYDEVICE:-}" ]; then
  step "ours ($PYDEVICE)" 120 "$out/ours.jsonl" env PYDEVICE="$PYDEVICE" "$py" "$here/run_ours.py"
else
  log "PYDEVICE not set: skipping our compiler"
fi

"$py" "$here/report.py" "$out" | tee "$out/report.md"
log "all done in $((SECONDS - start))s; report in $out/report.md"
