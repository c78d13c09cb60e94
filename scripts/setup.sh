#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install what is missing, build pydevice (the CLI
# and the Python package), compile the example kernel to PTX (checked by ptxas), and launch
# it, through the CLI and through Python, where a GPU exists.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cargo build --release --bins
echo "== building and installing the Python package (python/, maturin)"
bash scripts/python_package.sh --release
bin=target/release/pydevice
sig="float32[::1], float32[::1], float32[::1]"
$bin compile examples/vector_add.py --entry vector_add --sig "$sig" -o target/vector_add.ptx
site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$site/nvidia/cu13/bin/ptxas" -arch=sm_90 target/vector_add.ptx -o target/vector_add.cubin
echo "compiled examples/vector_add.py -> target/vector_add.ptx (accepted by ptxas for sm_90)"
if python3 - <<'PY'
import ctypes.util, sys
sys.exit(0 if ctypes.util.find_library("cuda") else 1)
PY
then
  python3 scripts/run_example.py "$bin"
  python3 scripts/python_example.py
else
  echo "no CUDA driver on this machine: skipping the launch (the PTX above is what would run)"
  python3 -c 'from cuda import device; print("pydevice Python package installed:", device.kernel)' 
fi
