#!/usr/bin/env bash
# Runs bench/cpu/scaling.py (the CPU back end's blocks over 1, 2, 4, ... threads, issue 33)
# on a machine without a Rust toolchain, such as the GPU host, from .carry/ beside the working
# tree: `PYDEVICE_BUNDLE_ONLY_PYTHON=1 bash scripts/device_bundle.sh` builds it. Installs the
# wheel into a private folder (no network), then runs the benchmark; the log goes to $OUT
# when it is set. Device tool: carry [".carry"], command `bash bench/cpu/run_scaling.sh`.
# Extra arguments go to scaling.py (say `--repeats 7`).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=/tmp/pydevice-scaling && rm -rf $work && mkdir -p $work/site
out=${OUT:-$work}
whl=$(ls .carry/pydevice-*.whl.xz 2>/dev/null | head -1)
if [ -z "$whl" ]; then echo "no .carry/pydevice-*.whl.xz: run scripts/device_bundle.sh first" >&2; exit 2; fi
dest=$work/$(basename "${whl%.xz}")
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$whl" "$dest"
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target $work/site "$dest" 2>&1 | grep -v WARNING || true
echo "== $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
PYTHONPATH=$work/site timeout 540 python3 bench/cpu/scaling.py "$@" 2>&1 | tee "$out/cpu_scaling.log"
