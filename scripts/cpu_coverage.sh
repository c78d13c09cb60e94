#!/usr/bin/env bash
# How many of the project's GPU tests pass on the CPU back end (issue 33's 95% figure), on a
# machine without a GPU (CI) or with PYDEVICE_TEST_BACKEND=cpu / the CPU stand-in forced:
#   Rust:   `tests/it/gpu/` run with PYDEVICE_TEST_BACKEND=cpu; a test counts as passing on
#           the CPU when it printed "runs on the CPU back end" and passed; the tests that
#           launch no kernel (they print neither "runs on" nor "skipped") are left out.
#   Python: the tests that take a GPU fixture (`gpu`, `cupy`, `real_gpu`, `torch`); without
#           a GPU they run on the CPU stand-in (python/tests/conftest.py) or skip saying why.
# Usage: bash scripts/cpu_coverage.sh [--rust-only|--python-only]; PYTHONPATH must reach the
# wheel to test (as for pytest). Writes the lists to ${OUT:-/tmp/pydevice-cpu-coverage}.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/pydevice-cpu-coverage}
mkdir -p "$out"
rust=0; rust_total=0; py=0; py_total=0
if [ "${1:-}" != "--python-only" ]; then
  PYDEVICE_TEST_BACKEND=cpu cargo test --test it gpu:: -- --nocapture --test-threads 1 \
    > "$out/rust.log" 2>&1
  python3 - "$out/rust.log" > "$out/rust.txt" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
ran = set(re.findall(r"(\w+): runs on the CPU back end", text))
skipped = set(re.findall(r"skipped (\w+):", text))
# With --nocapture the tests' lines interleave with libtest's: the failures are taken from
# its closing list, and a run that did not finish counts nothing.
tail = text.split("\nfailures:\n")[-1] if "\nfailures:\n" in text else ""
failed = set(re.findall(r"^    gpu::\S*::(\w+)$", tail, re.M))
if "test result:" not in text:
    failed = ran
passed = sorted(ran - failed)
failed = sorted(failed & ran)
total = len(ran | skipped)
print(f"rust {len(passed)} {total}")
for t in failed:
    print(f"  failed on the CPU: {t}")
for t in sorted(skipped - ran):
    print(f"  GPU only: {t}")
PY
  read -r _ rust rust_total < <(head -1 "$out/rust.txt")
  cat "$out/rust.txt"
fi
if [ "${1:-}" != "--rust-only" ]; then
  PYTHONPATH="scripts:${PYTHONPATH:-}" PYDEVICE_COVERAGE_OUT="$out/python.txt" PYDEVICE_COVERAGE_ONLY_GPU=1 \
    python3 -m pytest python/tests -q -p cpu_coverage_plugin -p no:cacheprovider > "$out/python.log" 2>&1
  cat "$out/python.txt"
  read -r py_total py < <(sed -n 's/^python GPU tests: \([0-9]*\), passed on this machine: \([0-9]*\)$/\1 \2/p' "$out/python.txt")
fi
total=$((rust_total + py_total)); pass=$((rust + py))
python3 -c "import sys; p,t=int(sys.argv[1]),int(sys.argv[2]); print(f'GPU tests passing on the CPU back end: {p}/{t} = {100*p/max(t,1):.1f}% (Rust {sys.argv[3]}/{sys.argv[4]}, Python {sys.argv[5]}/{sys.argv[6]})')" \
  "$pass" "$total" "$rust" "$rust_total" "$py" "$py_total"
