#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/fuzz_targets: compile, signature, arrays) for SECONDS
# each (default 60) on one core, on the stable toolchain (RUSTC_BOOTSTRAP=1 lets cargo-fuzz
# use the nightly flags it needs), seeded from the corpus kept in fuzz/seeds/<target> and,
# for `compile`, the language fixtures. New inputs go to a scratch corpus, not the repository.
# Installs cargo-fuzz first if it is missing. A crash fails the script and leaves the input
# under fuzz/artifacts/<target>/.
#
#   bash scripts/fuzz.sh            # 60 s per target
#   bash scripts/fuzz.sh 3600       # an hour per target
#   TARGETS=arrays bash scripts/fuzz.sh 600
#   FUZZ_BUILD_FLAGS="--dev --sanitizer none" bash scripts/fuzz.sh 20   # as scripts/test.sh does
#
# FUZZ_BUILD_FLAGS are cargo-fuzz's build options (default: none, i.e. optimized with
# AddressSanitizer). The targets are built once, together, before any runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
seconds=${1:-60}
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
# The fuzz crate is outside the workspace: build it with the library's locked versions.
[ -e fuzz/Cargo.lock ] || cp Cargo.lock fuzz/Cargo.lock
read -ra build_flags <<< "${FUZZ_BUILD_FLAGS:-}"
scratch=${FUZZ_SCRATCH:-$(mktemp -d /tmp/pydevice-fuzz.XXXXXX)}
# Every target in one build (their links run in parallel); each run below finds it current.
if [ -z "${TARGETS:-}" ]; then
  echo "== cargo fuzz build ${build_flags[*]}"
  if ! cargo fuzz build "${build_flags[@]}" > "$scratch/build.log" 2>&1; then
    tail -30 "$scratch/build.log"
    echo "FAIL: cargo fuzz build (log: $scratch/build.log)"
    exit 1
  fi
fi
status=0
for target in ${TARGETS:-signature arrays compile}; do
  corpus=$scratch/$target
  mkdir -p "$corpus"
  [ -d fuzz/seeds/$target ] && cp fuzz/seeds/$target/* "$corpus"/ 2>/dev/null || true
  if [ "$target" = compile ]; then
    # Fixture names repeat across dialects: prefix each with its directory.
    for f in tests/fixtures/*/*.py; do cp "$f" "$corpus/$(basename "$(dirname "$f")")_$(basename "$f")"; done
  fi
  echo "== fuzz $target for ${seconds}s"
  # -rss_limit_mb: LLVM and Cranelift are large; 4 GiB leaves room and still catches blow-ups.
  set +e
  nice -n 19 cargo fuzz run "${build_flags[@]}" "$target" "$corpus" -- -max_total_time="$seconds" -rss_limit_mb=4096 \
    -print_final_stats=1 > "$scratch/$target.log" 2>&1
  rc=$?
  set -e
  grep -E "^#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|panicked|Test unit written" \
    "$scratch/$target.log" || tail -5 "$scratch/$target.log"
  # libFuzzer also writes a `slow-unit-*` for an input that took over 10 s: a speed finding
  # to look at (it is named here), not a crash. Crashes, timeouts, leaks and OOMs fail.
  if [ "$rc" != 0 ] || grep -q "==ERROR" "$scratch/$target.log" \
    || grep "Test unit written" "$scratch/$target.log" | grep -vq "/slow-unit-"; then
    echo "FAIL: fuzz $target found a crash (see fuzz/artifacts/$target and $scratch/$target.log)"
    status=1
  elif grep -q "/slow-unit-" "$scratch/$target.log"; then
    echo "warning: fuzz $target: an input took $(sed -n 's/^Slowest unit: //p' "$scratch/$target.log" | tail -1) (slow, not a crash):"
    grep -o "/[^ ]*slow-unit-[0-9a-f]*" "$scratch/$target.log" | sed 's/^/  /'
  fi
done
exit $status
