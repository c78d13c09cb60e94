#!/usr/bin/env bash
# The cargo-fuzz targets (fuzz/fuzz_targets: signature, arrays, compile) on the GPU machine's
# CPU cores, which have no Rust toolchain: the targets are built here with
# `cargo fuzz build -O` (AddressSanitizer, optimized), stripped of debug info, xz'd into
# .carry/fuzz/<target>.xz, and run there in libFuzzer's fork mode, WORKERS processes per
# target, all three at once, for SECONDS. Seeds: fuzz/seeds/<target> and, for `compile`, the
# language fixtures (as scripts/fuzz.sh). A crash, a leak, an out-of-memory (4 GiB) or a
# timeout (-timeout=60) fails the run and leaves the input in $OUT/fuzz-<target>/.
#
#   bash scripts/fuzz_device.sh start SECONDS [WORKERS]   # starts them in the background
#   bash scripts/fuzz_device.sh wait                      # waits, prints a table, exit 1 on a finding
#   TARGETS=compile bash scripts/fuzz_device.sh start ...  # some targets only (same TARGETS for wait)
#
# Device tool: carry [".carry/fuzz"] (plus what the other commands of the call need), e.g.
# `bash scripts/fuzz_device.sh start 400 4; <GPU tests>; bash scripts/fuzz_device.sh wait`.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/pydevice-fuzz-out}
work=/tmp/pydevice-fuzz-device
targets=${TARGETS:-signature arrays compile}
case "${1:-}" in
  start)
    seconds=${2:?seconds}; workers=${3:-4}
    rm -rf $work && mkdir -p $work $out
    for t in $targets; do
      python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
        .carry/fuzz/$t.xz $work/$t || { echo "no .carry/fuzz/$t.xz"; exit 2; }
      chmod +x $work/$t
      mkdir -p $work/corpus-$t $out/fuzz-$t
      cp fuzz/seeds/$t/* $work/corpus-$t/ 2>/dev/null || true
      if [ $t = compile ]; then
        for f in tests/fixtures/*/*.py; do cp "$f" "$work/corpus-$t/$(basename "$(dirname "$f")")_$(basename "$f")"; done
      fi
      # ASan's leak check at exit is off: the compiler's caches live for the process.
      ASAN_OPTIONS=detect_leaks=0 nohup $work/$t $work/corpus-$t -fork=$workers -ignore_crashes=0 \
        -max_total_time=$seconds -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix=$out/fuzz-$t/ > $out/fuzz-$t.log 2>&1 &
      echo $! > $work/$t.pid
    done
    date +%s > $work/started
    echo "fuzzing $targets for ${seconds}s, $workers processes each ($(nproc) cores)"
    ;;
  wait)
    status=0
    echo "| target | seconds | workers x seconds | runs | corpus | findings |"
    echo "|---|---:|---:|---:|---:|---|"
    for t in $targets; do
      pid=$(cat $work/$t.pid 2>/dev/null) || { echo "| $t | not started | | | | |"; status=1; continue; }
      while kill -0 "$pid" 2>/dev/null; do sleep 2; done
      elapsed=$(( $(date +%s) - $(cat $work/started) ))
      runs=$(grep -oE "^#[0-9]+" $out/fuzz-$t.log | tail -1 | tr -d '#')
      workers=$(grep -oE "fork=[0-9]+|jobs: [0-9]+" $out/fuzz-$t.log | head -1 | grep -oE "[0-9]+")
      corpus=$(ls $work/corpus-$t | wc -l)
      found=$(ls $out/fuzz-$t | grep -v "^slow-unit-" | wc -l)
      if [ "$found" != 0 ] || grep -qE "==ERROR|deadly signal|panicked" $out/fuzz-$t.log; then
        status=1; what="FOUND: $(ls $out/fuzz-$t | grep -v '^slow-unit-' | head -3 | tr '\n' ' ')"
      else
        what="none"
      fi
      echo "| $t | $elapsed | ${workers:-?} x $elapsed | ${runs:-?} | $corpus | $what |"
    done
    exit $status
    ;;
  *) echo "usage: $0 start SECONDS [WORKERS] | wait"; exit 2 ;;
esac
