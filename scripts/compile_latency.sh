#!/usr/bin/env bash
# Issue 21's compile-latency figures on this machine's CPU, alone (~15 s): `vector_add` source
# → PTX warm (median of 1000 compiles after 50) and as the first compile of a fresh process
# (40 processes), each pinned to one CPU and not pinned, then the 50-kernel throughput on 1 / 2
# / 4 threads. It runs the benches/runtime.rs binary with `--compile`: $BENCH_RUNTIME if set,
# else .carry/bench_runtime(.xz) from `PYDEVICE_BUNDLE_EXTRA=1 scripts/device_bundle.sh`. BENCH_CPU picks the CPU to pin
# to (default: the one the process starts on). Nothing else should run meanwhile.
#
#   bash scripts/compile_latency.sh            # on the GPU machine, from the .carry/ bundle
#   BENCH_RUNTIME=target/release/deps/runtime-<hash> bash scripts/compile_latency.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BENCH_RUNTIME:-}
if [ -z "$bin" ]; then
  if [ -x .carry/bench_runtime ]; then
    bin=.carry/bench_runtime
  elif [ -e .carry/bench_runtime.xz ]; then
    bin=/tmp/pydevice-bench-runtime
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
      .carry/bench_runtime.xz "$bin"
    chmod +x "$bin"
  else
    echo "no benches/runtime.rs binary: set BENCH_RUNTIME or run PYDEVICE_BUNDLE_EXTRA=1 scripts/device_bundle.sh" >&2
    exit 2
  fi
fi
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" --compile
