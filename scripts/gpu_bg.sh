#!/usr/bin/env bash
# Runs one part of scripts/gpu_all.sh (or any command) in the background on the GPU machine,
# so that a part longer than the device tool's 10-minute call can finish across two calls
# while the machine stays warm: the first call starts it and waits up to WAIT seconds; a
# later call with the same NAME only waits and collects. Logs and the part's files are copied
# to $OUT.
#
#   bash scripts/gpu_bg.sh start NAME WAIT -- bash scripts/gpu_all.sh tests
#   bash scripts/gpu_bg.sh wait  NAME WAIT
set -uo pipefail
cd "$(dirname "$0")/.."
mode=$1 name=$2 wait=$3
shift 3
dir=/tmp/pydevice-bg/$name
if [ "$mode" = start ]; then
  [ "${1:-}" = "--" ] && shift
  rm -rf "$dir" && mkdir -p "$dir/out"
  (OUT=$dir/out setsid nohup bash -c "$*; echo \"exit \$?\" > $dir/done" > "$dir/log" 2>&1 < /dev/null &)
fi
t0=$SECONDS
while [ ! -e "$dir/done" ] && [ $((SECONDS - t0)) -lt "$wait" ]; do sleep 5; done
if [ -n "${OUT:-}" ]; then
  cp "$dir/log" "$OUT/$name.log" 2>/dev/null
  cp -r "$dir/out" "$OUT/$name-files" 2>/dev/null
fi
if [ -e "$dir/done" ]; then
  echo "== $name finished: $(cat "$dir/done")"
else
  echo "== $name still running after ${wait}s (call 'wait' again)"
fi
tail -n "${TAIL:-40}" "$dir/log"
