#!/usr/bin/env bash
# Runs the GPU test suites (the .carry binaries that scripts/device_bundle.sh builds:
# gpu_tests and gpu_runtime_tests) under compute-sanitizer's memcheck, racecheck and synccheck
# on the GPU machine, and prints one summary line per tool and suite. The goal is 0 errors;
# every exclusion is listed here with its reason (docs/sanitizer.md explains each).
#
#   bash scripts/sanitize.sh                       # all three tools, both suites
#   TOOLS=memcheck bash scripts/sanitize.sh        # one tool (racecheck is the slowest)
#   SUITES=gpu_runtime_tests bash scripts/sanitize.sh
#   FILTER=sync bash scripts/sanitize.sh           # only tests whose names contain `sync`
#
# Logs go to $OUT (when set) as sanitize-TOOL-SUITE.log. Exit status: 0 when every run had 0
# errors (excluded hazards aside) and every test passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
work=/tmp/pydevice-sanitize && rm -rf $work && mkdir -p $work
for f in .carry/*.gz; do [ -e "$f" ] || continue; gunzip -c "$f" > "$work/$(basename "${f%.gz}")"; done
for f in .carry/*.xz; do
  [ -e "$f" ] || continue
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" "$work/$(basename "${f%.xz}")"
done
chmod +x $work/* 2>/dev/null
# The command line travels inside the wheel (scripts/device_bundle.sh): $work/pydevice runs it.
[ -e $work/pydevice ] || python3 scripts/carry_cli.py $work > /dev/null || exit 2
export PYDEVICE_LIBDEVICE=${PYDEVICE_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
export PYDEVICE_BIN=$work/pydevice
out=${OUT:-$work}
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [ ! -x "$cs" ]; then
  echo "no compute-sanitizer (looked for $cs; set COMPUTE_SANITIZER)" >&2
  exit 1
fi
"$cs" --version | tail -1
TOOLS=${TOOLS:-memcheck racecheck synccheck}
SUITES=${SUITES:-it_tests}
FILTER=${FILTER:-}

# racecheck only: tests whose shared-memory hazards are the tool not seeing synchronization
# through atomics (acquire/release), not races. Each runs separately and its hazard count is
# reported as excluded. docs/sanitizer.md gives the reasoning for each.
RACECHECK_EXCLUDED=(ticket_mutex_struct_in_shared_memory_guards_struct_cells)
# Every tool: tests whose point is a fault, a trap or a launch the driver rejects; the
# sanitizer reports exactly that error (an illegal address, `trap`, an invalid launch), so
# these run separately, their error counts are shown as expected, and they must still pass.
INTENDED_FAULTS=(
  reshape_of_a_padded_matrix_traps                               # gpu_tests: a reshape that must trap
  an_illegal_address_is_an_error_naming_the_kernel               # gpu_runtime_tests: faults on purpose
  fault_child                                                    # the child process of that test
  rejected_launches_name_the_kernel_and_leave_the_context_usable # invalid grid/block/shared memory
  launch_errors_are_values                                       # gpu_tests: a launch the driver rejects
  launch_bounds_and_bounds_checking                              # gpu_tests: a block over the launch bounds
)

status=0
summary=()
# Errors in one sanitizer log: memcheck and synccheck print "ERROR SUMMARY: N errors",
# racecheck "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
count_errors() {
  python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
n = 0
for m in re.finditer(r"ERROR SUMMARY: (\d+) errors?\s*$", text, re.M):
    n += int(m.group(1))
for m in re.finditer(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text):
    n += int(m.group(1)) + int(m.group(2))
print(n)
PY
}
tests_line() { grep -E "^test result" "$1" | tail -1; }

for tool in $TOOLS; do
  for suite in $SUITES; do
    bin=$work/$suite
    if [ ! -x "$bin" ]; then
      summary+=("$tool $suite: MISSING ($bin; run scripts/device_bundle.sh first)"); status=1; continue
    fi
    log=$out/sanitize-$tool-$suite.log
    skips=()
    for t in "${INTENDED_FAULTS[@]}"; do skips+=(--skip "$t"); done
    if [ "$tool" = racecheck ]; then
      for t in "${RACECHECK_EXCLUDED[@]}"; do skips+=(--skip "$t"); done
    fi
    echo "== $tool: $suite"
    start=$(date +%s)
    "$cs" --tool "$tool" --target-processes all --print-limit 50 \
      "$bin" --test-threads=1 ${FILTER:+"$FILTER"} "${skips[@]}" > "$log" 2>&1
    rc=$?
    errors=$(count_errors "$log")
    line="$tool $suite: $errors errors, $(tests_line "$log" || echo 'no test result'), exit $rc, $(( $(date +%s) - start )) s"
    summary+=("$line"); echo "$line"
    if [ "$errors" != 0 ] || [ "$rc" != 0 ]; then status=1; fi
    if [ "$tool" = memcheck ] && [ -z "$FILTER" ]; then
      for t in "${INTENDED_FAULTS[@]}"; do
        [ "$t" = fault_child ] && continue # runs as the child of its parent test
        full=$("$bin" --list 2>/dev/null | sed -n "s/^\(\(.*::\)\{0,1\}$t\): test\$/\1/p" | head -1)
        [ -n "$full" ] || continue
        xlog=$out/sanitize-$tool-intended-$t.log
        "$cs" --tool "$tool" --target-processes all --print-limit 5 "$bin" --test-threads=1 --exact "$full" > "$xlog" 2>&1
        xrc=$?
        line="$tool $t (intended fault): $(count_errors "$xlog") errors reported as expected, $(tests_line "$xlog" || echo 'no test result'), exit $xrc"
        summary+=("$line"); echo "$line"
        if ! grep -q "test result: ok" "$xlog"; then status=1; fi
      done
    fi
    if [ "$tool" = racecheck ] && [ "$suite" = gpu_tests ]; then
      for t in "${RACECHECK_EXCLUDED[@]}"; do
        [ -n "$FILTER" ] && [[ "$t" != *"$FILTER"* ]] && continue
        xlog=$out/sanitize-racecheck-excluded-$t.log
        full=$("$bin" --list 2>/dev/null | sed -n "s/^\(\(.*::\)\{0,1\}$t\): test\$/\1/p" | head -1)
        "$cs" --tool racecheck --print-limit 20 "$bin" --test-threads=1 --exact "${full:-$t}" > "$xlog" 2>&1
        xrc=$?
        line="racecheck $t (excluded, docs/sanitizer.md): $(count_errors "$xlog") hazards, $(tests_line "$xlog" || echo 'no test result'), exit $xrc"
        summary+=("$line"); echo "$line"
        if [ "$xrc" != 0 ] && ! grep -q "test result: ok" "$xlog"; then status=1; fi
      done
    fi
  done
done
echo
echo "== compute-sanitizer summary"
printf '%s\n' "${summary[@]}"
exit $status
