#!/usr/bin/env bash
# Diagnostics for scripts/cuda_gdb_check.sh when cuda-gdb does not stop at the Python line:
# stops at the kernel's launch instead and asks cuda-gdb what it knows of the kernel's
# debug information (sources, line table, the function's address), and dumps the debug
# cubin's sections.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${PYDEVICE_BIN:-$PWD/target/release/pydevice}
gdb=${CUDA_GDB:-/usr/local/cuda/bin/cuda-gdb}
work=$(mktemp -d /tmp/pydevice-cuda-gdb-probe.XXXXXX)
cp tests/fixtures/lang/debug_info.py "$work/debug_info.py"
line=$(grep -n 'w = square(v) \* f' "$work/debug_info.py" | cut -d: -f1)
python3 -c 'import numpy as np, sys; np.save(sys.argv[1], np.arange(64, dtype=np.float32))' "$work/a.npy"
cd "$work"
"$bin" compile debug_info.py --entry scale --sig "float32[::1], float32" --arch sm_90 -o k.ptx
/usr/local/cuda/bin/ptxas -g -arch=sm_90 k.ptx -o k.cubin && /usr/local/cuda/bin/cuobjdump -elf k.cubin | grep -E "^\s*\[|\.debug|\.nv_debug" | head -20
head -3 k.ptx; grep -m3 "\.file\|\.loc" k.ptx
timeout 120 "$gdb" -batch -nx \
  -ex 'set pagination off' \
  -ex 'set cuda break_on_launch application' \
  -ex 'run' \
  -ex 'info cuda kernels' \
  -ex 'info sources' \
  -ex "info line debug_info.py:$line" \
  -ex 'bt' \
  -ex 'info frame' \
  -ex "break debug_info.py:$line" \
  -ex 'continue' \
  -ex 'bt' \
  -ex 'info locals' \
  -ex 'continue' \
  --args "$bin" run debug_info.py --entry scale --grid 2 --block 32 --debug \
    --arg a=a.npy --arg f=float32:2.0 --out a=out.npy 2>&1 | grep -v "^\[New Thread\|^\[Thread" | head -80
