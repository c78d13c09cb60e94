#!/usr/bin/env bash
# Runs the whole test suite (what CI runs): the Rust tests (the crate's, the C API's and the
# embedder example's), the crate without default features, the docs, the package, then the
# Python package built as a wheel, installed, and its pytest suite (fuzzing only when asked:
# PYDEVICE_FUZZ_SECONDS). GPU tests skip, saying so, without a CUDA driver. It prints each
# step's time at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's wall time, and the machine's load at the start and end, are printed at the end
# (also when a step fails): what a fresh clone spends where (README, "Testing").
t0=$SECONDS step_t=$SECONDS step_name="" step_times=()
step() {
  [ -n "$step_name" ] && step_times+=("$(printf '%5d s  %s' $((SECONDS - step_t)) "$step_name")")
  step_name=$1 step_t=$SECONDS
  [ -n "$1" ] && echo "== $1"
  return 0
}
step_summary() {
  step ""
  echo "== step times (wall), load at the start: $load0"
  printf '%s\n' "${step_times[@]}"
  printf '%5d s  total; load at the end: %s\n' $((SECONDS - t0)) "$(cut -d' ' -f1-3 /proc/loadavg)"
}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
trap step_summary EXIT
step "dependencies (scripts/deps.sh)"
source scripts/deps.sh
export PYDEVICE_REQUIRE_PTXAS=1
# In CI every build starts from nothing: incremental compilation's caches would only cost
# time and disk (about 2 GB of target/debug/incremental).
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}; fi
# The library's tests, the C API's (its header is current, its C test built with cc and
# run: issue 35) and examples/embedder's (a framework crate using only the public API, run
# as its binary's unit test) in one cargo invocation, so the library is built once for all. The Python
# extension (pydevice-python) is built by maturin below: as an extension module it cannot
# link a test binary.
step "cargo test (the crate, the C API: capi/, examples/embedder)"
cargo test --workspace --exclude pydevice-python 2>&1
# Without its default features (no LLVM, Cranelift or CUDA) the crate still builds, and its
# dependency tree holds none of them.
# (`cargo test --lib` builds the library itself; a separate `cargo check` only cost time.)
step "cargo test --lib and tree --no-default-features"
cargo test --no-default-features -p pydevice --lib 2>&1
if cargo tree --no-default-features -e normal -p pydevice | grep -Ei 'llvm-sys|inkwell|cranelift|cudarc'; then
  echo "error: the crate without default features depends on LLVM, Cranelift or CUDA (above)" >&2
  exit 1
fi
# The crate as crates.io and docs.rs see it: its public docs build without a warning (a
# broken or private intra-doc link fails), and `cargo publish --dry-run` packages it (no
# wildcard versions, the metadata present, the `include` list enough to build it) and
# builds the package, reusing the dependencies `cargo test` built. `--allow-dirty` lets it
# run on a work tree with uncommitted changes.
step "cargo doc --no-deps (RUSTDOCFLAGS=-D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p pydevice 2>&1
step "cargo publish --dry-run"
cargo publish --dry-run --allow-dirty -p pydevice 2>&1
# The public API against the last release, once a release tag (vX.Y.Z) exists: a change that
# breaks it needs the version bump CHANGELOG.md's policy asks for. There is no tag yet, so
# until the first release this only says so.
last_tag=$(git tag --list 'v[0-9]*' --sort=-v:refname 2>/dev/null | head -1)
if [ -n "$last_tag" ]; then
  step "cargo semver-checks against $last_tag"
  cargo semver-checks --version >/dev/null 2>&1 || cargo install cargo-semver-checks --locked
  cargo semver-checks check-release -p pydevice --baseline-rev "$last_tag" 2>&1
else
  echo "note: no release tag (vX.Y.Z) yet: cargo semver-checks runs against the newest one once it exists"
fi
# The wheel is built in the dev profile: the release build of the extension (all of LLVM's
# users optimized) took 3 min 46 s of a fresh clone's 21 min 49 s, and pytest exercises the
# same code either way (debug assertions and IR validation on, in fact). The GPU machine's
# wheel is the release one (scripts/device_bundle.sh); PYDEVICE_WHEEL_PROFILE=--release
# tests that one here.
step "the Python package: maturin build ${PYDEVICE_WHEEL_PROFILE:---dev}, pip install"
bash scripts/python_package.sh "${PYDEVICE_WHEEL_PROFILE:---dev}"
# From the repository root, so `import pydevice` is the installed wheel, not python/pydevice.
step "pytest python/tests"
set +e
python3 -m pytest -q -rs -p no:cacheprovider python/tests
rc=$?
set -e
case $rc in
  0) ;;
  5) echo "error: pytest collected no tests from python/tests" >&2; exit 1 ;;
  *) echo "error: pytest failed (exit status $rc)" >&2; exit 1 ;;
esac
# Fuzzing. Every `cargo test` above replays the fuzz targets' bodies (fuzz/src/lib.rs) over
# the kept seeds and the fixtures (tests/it/fuzz_replay.rs), which needs neither cargo-fuzz nor
# an instrumented build. New inputs come from scripts/fuzz.sh, run apart from the suite (an
# hour per target; fuzz/README.md records the runs). PYDEVICE_FUZZ_SECONDS=N adds a run of N
# seconds per target here. It is off by default: on a fresh machine it meant installing
# cargo-fuzz from source and an instrumented build of three LLVM-linked targets, a third of
# the suite's 16.5 minutes, for 20 seconds of fuzzing each.
fuzz_seconds=${PYDEVICE_FUZZ_SECONDS:-0}
if [ "$fuzz_seconds" != 0 ]; then
  step "fuzzing (scripts/fuzz.sh, build and ${fuzz_seconds} s per target)"
  FUZZ_BUILD_FLAGS=${FUZZ_BUILD_FLAGS:---dev --sanitizer none} bash scripts/fuzz.sh "$fuzz_seconds"
fi
if ! python3 -c 'import ctypes.util,sys; sys.exit(0 if ctypes.util.find_library("cuda") else 1)'; then
  echo "note: no CUDA driver here, so tests/gpu.rs skipped its launches, and the Python GPU tests ran their kernels on the CPU back end, skipping (saying why) only what needs a GPU (scripts/gpu_run.sh and python/tests/gpu_run.sh run them on a GPU)"
fi
