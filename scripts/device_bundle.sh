#!/usr/bin/env bash
# Builds what the GPU machine runs (it has no Rust toolchain) into .carry/, which
# .git/info/exclude ignores: the CLI and the GPU test binary, LLVM linked statically,
# stripped and gzipped to fit the 64 MiB carry limit. Then call the device tool with
# carry [".carry"] and command `bash scripts/gpu_run.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
grep -qx '/.carry/' .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
cargo build --release --bins
gpu_test=$(cargo test --release --test gpu --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="gpu" and m.get("executable"): print(m["executable"])')
rm -rf .carry && mkdir -p .carry
cp target/release/pydevice .carry/pydevice
cp "$gpu_test" .carry/gpu_tests
strip .carry/pydevice .carry/gpu_tests
site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
gzip -9 .carry/pydevice .carry/gpu_tests
ls -la .carry
