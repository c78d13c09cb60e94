#!/usr/bin/env bash
# Runs the whole test suite (what CI runs). GPU tests skip, saying so, without a CUDA driver.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
export PYDEVICE_REQUIRE_PTXAS=1
cargo test 2>&1
# A short fuzzing run of every cargo-fuzz target (scripts/fuzz.sh; PYDEVICE_FUZZ_SECONDS=0
# skips it). Installs cargo-fuzz on first use.
fuzz_seconds=${PYDEVICE_FUZZ_SECONDS:-30}
if [ "$fuzz_seconds" != 0 ]; then
  bash scripts/fuzz.sh "$fuzz_seconds"
fi
if ! python3 -c 'import ctypes.util,sys; sys.exit(0 if ctypes.util.find_library("cuda") else 1)'; then
  echo "note: no CUDA driver here, so tests/gpu.rs skipped its launches (scripts/gpu_run.sh runs them on a GPU)"
fi
