#!/usr/bin/env bash
# Builds the C API's cdylib and its C test (capi/tests/c/test_capi.c) with the system cc and
# runs it, without the Rust test harness (so without cbindgen): the command for a GPU machine.
# With --require-gpu, a skipped launch (no driver, no GPU) is a failure.
#
#     bash scripts/capi_c_test.sh [--require-gpu]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cargo build -p pydevice-capi 2>&1
lib="$PWD/target/debug"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"${CC:-cc}" -std=c11 -Wall -Wextra -Werror -o "$out/test_capi" capi/tests/c/test_capi.c \
  -Iinclude "$lib/libpydevice_capi.so" "-Wl,-rpath,$lib" -ldl -lm
"$out/test_capi" | tee "$out/log"
if [[ "${1:-}" == "--require-gpu" ]] && [[ "$(tail -n 1 "$out/log")" != "launch: ok" ]]; then
  echo "error: a GPU was required, but the launch was skipped" >&2
  exit 1
fi
