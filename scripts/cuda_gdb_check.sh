#!/usr/bin/env bash
# cuda-gdb stops at a Python line of a `debug=True` kernel (issue 18), in batch mode, on the GPU
# machine. It launches tests/fixtures/lang/debug_info.py's `scale` through the CLI
# (`pydevice run`), with a breakpoint on the kernel's line `w = square(v) * f`, and checks
# that cuda-gdb reports hitting it in `scale` at that line of the Python file, then prints
# the CUDA kernels, the backtrace and the locals there.
#
#   bash scripts/cuda_gdb_check.sh            # uses $PYDEVICE_BIN, else target/release/pydevice
#
# Exit status 0 when the breakpoint was hit at the Python line, 1 otherwise (the cuda-gdb
# transcript is printed either way), 77 when cuda-gdb or a GPU is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin=${PYDEVICE_BIN:-$repo/target/release/pydevice}
gdb=${CUDA_GDB:-/usr/local/cuda/bin/cuda-gdb}
if [ ! -x "$gdb" ]; then echo "skipped: no cuda-gdb at $gdb"; exit 77; fi
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi >/dev/null 2>&1; then
  echo "skipped: no GPU"; exit 77
fi
work=$(mktemp -d /tmp/pydevice-cuda-gdb.XXXXXX)
cp tests/fixtures/lang/debug_info.py "$work/debug_info.py"
line=$(grep -n 'w = square(v) \* f' "$work/debug_info.py" | cut -d: -f1)
python3 -c 'import numpy as np, sys; np.save(sys.argv[1], np.arange(64, dtype=np.float32))' "$work/a.npy"
cd "$work"
# cuda-gdb must start the process that loads the kernel. The bundle's command line
# (scripts/carry_cli.py) is a shell launcher that execs Python on the extension module: run
# that Python directly, with the launcher's own program text, rather than the launcher.
cli=("$bin")
if ! head -c4 "$bin" | grep -q ELF; then
  py=$(sed -n "s/^exec \([^ ]*\) -S -c '\$/\1/p" "$bin")
  native=$(tail -1 "$bin" | sed "s/^' \(.*\) \"\$@\"\$/\1/")
  sed -n "/-S -c '\$/,/^' /p" "$bin" | sed '1d;$d' > cli.py
  if [ -z "$py" ] || [ ! -e "$native" ] || [ ! -s cli.py ]; then
    echo "FAIL: $bin is neither an executable nor a launcher written by scripts/carry_cli.py"; exit 1
  fi
  cli=("$py" -S cli.py "$native")
  echo "debugging the launcher's process: ${cli[*]}"
fi
# The kernel's module is JIT-loaded after the process starts: the breakpoint is pending
# until then. `--debug` is not needed (the kernel says debug=True), but shows the CLI flag.
timeout 300 "$gdb" -batch -nx \
  -ex 'set breakpoint pending on' \
  -ex 'set pagination off' \
  -ex "break debug_info.py:$line" \
  -ex 'run' \
  -ex 'info cuda kernels' \
  -ex 'bt' \
  -ex 'info locals' \
  -ex 'print v' \
  -ex 'print f' \
  -ex 'delete' \
  -ex 'continue' \
  --args "${cli[@]}" run debug_info.py --entry scale --grid 2 --block 32 --debug \
    --arg a=a.npy --arg f=float32:2.0 --out a=out.npy > gdb.log 2>&1
status=$?
cat gdb.log
echo "---- cuda-gdb exit status $status"
ok=1
grep -Eq "Breakpoint 1, .*scale.* at .*debug_info\.py:$line" gdb.log || { echo "FAIL: no stop at debug_info.py:$line in scale"; ok=0; }
grep -Eq "^$line[[:space:]]+w = square\(v\) \* f" gdb.log || echo "note: the source line was not listed (source not found?)"
grep -q "scale" <(grep -A3 "Kernel" gdb.log) || echo "note: info cuda kernels did not name scale"
if [ -e out.npy ]; then
  python3 -c 'import numpy as np; o = np.load("out.npy"); a = np.arange(64, dtype=np.float32); assert (o == a * a * 2).all(), o; print("kernel result OK after the breakpoint")' || ok=0
else
  echo "FAIL: the run did not finish (no out.npy)"; ok=0
fi
if [ $ok = 1 ]; then
  echo "PASS: cuda-gdb stopped at debug_info.py:$line (a Python line of a debug=True kernel)"
  exit 0
fi
exit 1
