#!/usr/bin/env bash
# Builds what the GPU machine runs (it has no Rust toolchain) into .carry/, which
# .git/info/exclude ignores: the integration-test binary (tests/it, GPU tests included) and the
# Python package's wheel, each linking LLVM statically, stripped and xz-compressed (with the
# x86 branch filter). The wheel also carries the `pydevice` command line (the extension runs
# the crate's clap main: `python -m pydevice`), so LLVM travels twice, not three times: about
# 30 MB in all, under the 40 MB that issue 34 asks and the 64 MiB a device call carries.
# scripts/carry_cli.py makes `$work/pydevice` from the wheel on the GPU machine. Then call the
# device tool with carry [".carry"] and command `bash scripts/gpu_run.sh` (Rust side) or
# `bash python/tests/gpu_run.sh` (the Python package: GPU pytest and the Python benchmarks).
# PYDEVICE_BUNDLE_ONLY_PYTHON=1 bundles only the Python package (the test binary in .carry/ is
# left as it is). PYDEVICE_BUNDLE_EXTRA=1 adds the runtime benchmark (benches/runtime.rs, for
# `gpu_run.sh` and scripts/compile_latency.sh) and examples/multi_gpu_stencil (for
# `gpu_all.sh tests`), two more copies of LLVM (about 13 MB each): the scripts skip them,
# saying so, when they are absent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
excl=$(git rev-parse --git-path info/exclude)
grep -qx '/.carry/' "$excl" 2>/dev/null || echo '/.carry/' >> "$excl"
# xz with the x86 branch filter packs LLVM-heavy code about 5% smaller than plain `xz -9`
# (measured on the 61 MB CLI: 13.7 against 14.3 MB); the GPU scripts unpack .xz with Python's
# lzma, which reads the filter, so the GPU machine needs no xz.
pack() { xz --x86 --lzma2=preset=9e -T1 "$@"; }
if [ -z "${PYDEVICE_BUNDLE_ONLY_PYTHON:-}" ]; then
  # The executable cargo built for target NAME of kind KIND (test or bench), from its JSON messages.
  artifact() {
    python3 -c 'import json,sys
name, kind = sys.argv[1], sys.argv[2]
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]==name and kind in m["target"]["kind"] and m.get("executable"): print(m["executable"])' "$1" "$2"
  }
  # One integration-test binary (tests/it) holds every GPU test module (gpu::, gpu_runtime::,
  # gpu_debug::, gpu_multi::), so LLVM travels once for them.
  it_test=$(cargo test --release --test it --no-run --message-format=json 2>/dev/null | artifact it test)
  # Only the binaries are replaced: .carry/numba_tests (numba-cuda's test files, a fallback for
  # scripts/numba_suite.py) stays. A CLI binary of an older bundle goes: the wheel carries it.
  mkdir -p .carry && rm -f .carry/pydevice .carry/pydevice.* .carry/gpu_tests* .carry/gpu_runtime_tests* .carry/gpu_debug_tests* .carry/gpu_multi_tests* .carry/it_tests* .carry/bench_runtime* .carry/multi_gpu_stencil*
  cp "$it_test" .carry/it_tests
  bins=(.carry/it_tests)
  if [ -n "${PYDEVICE_BUNDLE_EXTRA:-}" ]; then
    bench_runtime=$(cargo bench --bench runtime --no-run --message-format=json 2>/dev/null | artifact runtime bench)
    cargo build --release --example multi_gpu_stencil
    cp "$bench_runtime" .carry/bench_runtime
    cp target/release/examples/multi_gpu_stencil .carry/multi_gpu_stencil
    bins+=(.carry/bench_runtime .carry/multi_gpu_stencil)
  fi
  strip "${bins[@]}"
  pack "${bins[@]}"
fi
# The Python package: the abi3 wheel (one for every CPython >= 3.9; the GPU machine has 3.12),
# xz-compressed too (its zip is only deflated), and pytest's wheels in case the GPU machine
# lacks pytest (it cannot reach PyPI). python/tests/gpu_run.sh installs them.
mkdir -p .carry && rm -rf .carry/pydevice-*.whl* .carry/pywheels
wheel=$(bash scripts/python_package.sh --release | tail -1)
# maturin's wheel is deflated (19 MB); stored, then xz'd, it is about 13 MB. A stored zip
# is still a valid wheel, which gpu_run.sh gets back by unpacking the .xz.
python3 - "$wheel" ".carry/$(basename "$wheel")" <<'PY'
import sys, zipfile
src = zipfile.ZipFile(sys.argv[1])
with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_STORED) as dst:
    for info in src.infolist():
        dst.writestr(info, src.read(info.filename), compress_type=zipfile.ZIP_STORED)
PY
pack ".carry/$(basename "$wheel")"
mkdir -p .carry/pywheels
python3 -m pip download --quiet --disable-pip-version-check --only-binary=:all: --python-version 3.12 \
  -d .carry/pywheels pytest 2>/dev/null || echo "note: pytest wheels not downloaded (no network); the GPU machine needs pytest" >&2
# The TVM-FFI export's packages for scripts/tvm_ffi_gpu.sh (issue 35): apache-tvm-ffi and
# jax-tvm-ffi for CPython 3.12 on manylinux x86-64 (this folder is rebuilt above, so they are
# fetched here, not left from an earlier bundle).
python3 -m pip download --quiet --disable-pip-version-check --only-binary=:all: --no-deps \
  --python-version 3.12 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
  -d .carry/pywheels apache-tvm-ffi jax-tvm-ffi 2>/dev/null \
  || echo "note: TVM-FFI wheels not downloaded (no network); scripts/tvm_ffi_gpu.sh will skip" >&2
# CCCL's headers from the nvidia-cuda-cccl wheel (the version src/cccl.rs's NVRTC prelude is
# tested with, docs/semantics.md §15.5), for jit.thrust on the GPU machine: about 1.5 MB as
# .tar.xz, which scripts/cupy_suite_gpu.sh unpacks with Python's tarfile.
cccl=$(python3 -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13/include/cccl"))')
rm -f .carry/cccl.tar.xz
if [ -f "$cccl/thrust/sort.h" ]; then
  python3 - "$cccl" .carry/cccl.tar.xz <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[2], "w:xz") as t:
    for d in ("thrust", "cub", "cuda", "nv"):
        t.add(f"{sys.argv[1]}/{d}", arcname=f"cccl/{d}")
PY
fi
total=$(du -cb .carry/* | tail -1 | cut -f1)
echo "carry: $total bytes"
if [ "$total" -gt $((40 * 1000 * 1000)) ] && [ -z "${PYDEVICE_BUNDLE_EXTRA:-}" ]; then
  echo "warning: .carry is over 40 MB (issue 34's bound for the bundle)" >&2
fi
if [ "$total" -gt $((64 * 1024 * 1024 - 2 * 1024 * 1024)) ]; then
  echo "warning: .carry is within 2 MiB of the 64 MiB carry limit (the working tree travels too)" >&2
fi
ls -la .carry
