#!/usr/bin/env bash
# Run the whole kernel benchmark on a GPU machine and print the merged report.
#
#   bench/run_gpu_bench.sh [RESULTS_DIR]      (default: bench/results/<date-time>)
#
# Builds the CUDA C++ driver with nvcc, runs the nvcc, numba-cuda and cupyx.jit suites, the
# framework built-ins and Triton (peers/frameworks_suite.py) and, when $PYDEVICE names our
# CLI, bench/run_ours.py; each writes JSON lines to RESULTS_DIR, then bench/report.py merges
# them into RESULTS_DIR/report.md. Each step has a time limit (a whole run took 310 s on the
# H100, within one 10-minute command); a step that fails is reported and skipped (the
# kernels of a suite that ran out of time are missing from the table). The Python suites
# share their seeded inputs and numpy references through $BENCH_CACHE (/dev/shm when it has
# room), so they are drawn and computed once a run.
# Environment: BENCH_KERNELS (optional: space-separated case names, to run only those; the
# suites then skip their launch-overhead and compile probes), PYDEVICE (optional), BENCH_RUNTIME (optional: the benches/runtime.rs binary), NVCC (default /usr/local/cuda/bin/nvcc, else nvcc on
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

read -r -a kernels <<<"${BENCH_KERNELS:-}"

start=$SECONDS
log "results in $out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >&2 || true

# Inputs and references shared by the Python suites: about 20 GB for all the cases.
if [ -z "${BENCH_CACHE:-}" ]; then
  shm_free=$(df --output=avail -B1G /dev/shm 2>/dev/null | tail -1 | tr -d ' ')
  if [ "${shm_free:-0}" -gt 30 ]; then
    BENCH_CACHE=$(mktemp -d /dev/shm/pydevice-bench-cache.XXXXXX)
  else
    BENCH_CACHE=$(mktemp -d "$out/cache.XXXXXX")
  fi
  trap 'rm -rf "$BENCH_CACHE"' EXIT
fi
export BENCH_CACHE
log "inputs and references cached in $BENCH_CACHE"

step "build bench_cuda (nvcc -O3 -arch=sm_90)" 60 "$out/build.log" \
  "$nvcc" -O3 -arch=sm_90 -o "$out/bench_cuda" "$here/peers/cuda/bench_cuda.cu" -lcuda
if [ -x "$out/bench_cuda" ]; then
  step "nvcc suite" 100 "$out/nvcc.jsonl" "$out/bench_cuda" "${kernels[@]}"
fi
step "numba-cuda suite" 120 "$out/numba.jsonl" "$py" "$here/peers/numba_suite.py" "${kernels[@]}"
step "cupyx.jit suite" 100 "$out/cupyx.jsonl" "$py" "$here/peers/cupyx_suite.py" "${kernels[@]}"
step "frameworks and Triton" 70 "$out/frameworks.jsonl" "$py" "$here/peers/frameworks_suite.py" \
  "${kernels[@]}"
if [ -n "${BENCH_RUNTIME:-}" ]; then
  # Our in-process compile latency and host launch overhead (benches/runtime.rs).
  step "ours: compile latency and launch overhead" 120 "$out/ours_costs.log" env BENCH_JSON="$out/ours_costs.jsonl" "$BENCH_RUNTIME"
fi
if [ -n "${PYDEVICE:-}" ]; then
  step "ours ($PYDEVICE)" 160 "$out/ours.jsonl" env PYDEVICE="$PYDEVICE" "$py" "$here/run_ours.py" \
    "${kernels[@]}"
  if [ ${#kernels[@]} -eq 0 ] || [[ " ${kernels[*]} " == *" spmv_csr "* ]]; then
    # spmv_csr with Python's negative indices (its `wraparound=False` taken off): the
    # wrap's cost (bench/NOTES.md, "spmv_csr and the wrap").
    step "ours, spmv_csr without wraparound=False" 60 "$out/ours_wrap.jsonl" \
      env PYDEVICE="$PYDEVICE" PYDEVICE_BENCH_VARIANT=wraparound "$py" "$here/run_ours.py" spmv_csr
  fi
  if [ ${#kernels[@]} -eq 0 ] || [[ " ${kernels[*]} " == *" scan_block "* ]]; then
    # scan_block with %ntid.x read before %ctaid.x: nvcc's prologue (bench/NOTES.md,
    # "Session 17"), to tell whether that is its 2% against cupyx.jit.
    step "ours, scan_block with the special registers read in nvcc's order" 60 \
      "$out/ours_sreg.jsonl" env PYDEVICE="$PYDEVICE" PYDEVICE_BENCH_VARIANT=sreg_order "$py" \
      "$here/run_ours.py" scan_block
  fi
else
  log "PYDEVICE not set: skipping our compiler"
fi

"$py" "$here/report.py" "$out" | tee "$out/report.md"
log "all done in $((SECONDS - start))s; report in $out/report.md"
