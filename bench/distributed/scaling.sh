#!/usr/bin/env bash
# Weak scaling of examples/distributed/ddp_step.py (issue 36) on 1, 2 and 4 GPUs (as many as
# the machine has): step time, scaling efficiency (1-GPU step time over N-GPU step time, the
# per-rank batch fixed) and the share of the step the host spends in pydevice launches; then
# the bit-exactness check against one GPU for the largest N. Run on the GPU machine with the
# wheel installed (python/tests/gpu_run.sh installs it):
#     bash bench/distributed/scaling.sh [extra ddp_step.py arguments]
set -uo pipefail
cd "$(dirname "$0")/../.."
n=$(python3 -c 'import torch; print(torch.cuda.device_count())')
export PYDEVICE_CACHE_DIR=${PYDEVICE_CACHE_DIR:-$(mktemp -d)} OMP_NUM_THREADS=1
rows=()
for w in 1 2 4; do
  [ "$w" -le "$n" ] || continue
  line=$(python3 -m torch.distributed.run --standalone --nproc_per_node=$w examples/distributed/ddp_step.py "$@" 2>&1 | grep '^{' | tail -1)
  echo "$line"
  rows+=("$line")
  last=$w
done
ref=$(python3 examples/distributed/ddp_step.py --reference --world "$last" "$@" 2>&1 | grep '^{' | tail -1)
echo "$ref"
python3 - "${rows[@]}" "$ref" <<'PY'
import json, sys
rows = [json.loads(a) for a in sys.argv[1:-1]]
ref = json.loads(sys.argv[-1])
t1 = rows[0]["step_ms"]
print("\n| GPUs | step (ms) | scaling efficiency | pydevice launch share (host) |")
print("|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['world']} | {r['step_ms']} | {t1 / r['step_ms']:.1%} | {r['pydevice_launch_share']:.2%} |")
last = rows[-1]
same = last["params_sha256"] == ref["params_sha256"]
print(f"\nbit-exact against one GPU ({ref['world']} shards on one GPU): {'yes' if same else 'NO'}")
sys.exit(0 if same else 1)
PY
