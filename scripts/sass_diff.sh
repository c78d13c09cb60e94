#!/usr/bin/env bash
# Compares the machine code (SASS) of every PTX golden between a base commit and the working
# tree: the test for a compiler change whose PTX differs but whose GPU code must not.
#
#   bash scripts/sass_diff.sh [--all] [BASE]     # BASE: a commit, default HEAD
#
# For each PTX golden (tests/fixtures/**/*.ptx and bench/kernels/*.ptx) whose text in the
# working tree differs from BASE's (`--all`: every golden), both versions are assembled with
# `ptxas -O3 -v` for the architecture on their `.target` line (`-c` when the PTX calls an
# external function, `-g` for a `debug=True` kernel, as `toolkit::ptxas_compile` does) and
# disassembled with `nvdisasm -c`. The comparison drops what names the place rather than the
# code: nvdisasm's `/*0040*/` addresses, and the temporary file names in ptxas's resource
# report (registers, shared and local memory, spills, which are compared). Goldens new in
# the working tree or gone from it are listed apart. Prints one line per differing golden
# (the diff with `-v`... see SASS_DIFF_SHOW) and the counts; exits 1 if any SASS differs.
#
# Typical use: change the back end, re-bless the goldens (`PYDEVICE_BLESS=1 cargo test --test
# fixtures`), run this against the commit before the change; then either commit the goldens
# (SASS identical: same GPU code) or `git checkout` them.
#
# Environment: PTXAS (default: the nvidia-cuda-nvcc wheel's), NVDISASM (default:
# /work/notes/bin/nvdisasm, else on PATH), SASS_DIFF_SHOW=1 prints each differing SASS diff.
set -euo pipefail
cd "$(dirname "$0")/.."

all=0
if [ "${1:-}" = "--all" ]; then all=1; shift; fi
base=${1:-HEAD}
git rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "sass_diff: no commit $base" >&2; exit 2; }

if [ -z "${PTXAS:-}" ]; then
  site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  PTXAS=$site/nvidia/cu13/bin/ptxas
  command -v "$PTXAS" >/dev/null || PTXAS=$(command -v ptxas || true)
fi
if [ -z "${NVDISASM:-}" ]; then
  NVDISASM=/work/notes/bin/nvdisasm
  [ -x "$NVDISASM" ] || NVDISASM=$(command -v nvdisasm || true)
fi
[ -x "$PTXAS" ] || { echo "sass_diff: ptxas not found (set PTXAS)" >&2; exit 2; }
[ -x "$NVDISASM" ] || { echo "sass_diff: nvdisasm not found (set NVDISASM)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/sass_diff.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# sass PTX_FILE OUT_FILE: the normalized SASS and resource report of one PTX file.
sass() {
  local ptx=$1 out=$2 arch flags=()
  arch=$(sed -n 's/^[[:space:]]*\.target[[:space:]]*\([a-z0-9_]*\).*/\1/p' "$ptx" | head -1)
  [ -n "$arch" ] || arch=sm_90
  grep -q '\.extern \.func' "$ptx" && flags+=(-c)
  head -c 23 "$ptx" | grep -q '^// pydevice: debug=True' && flags+=(-g)
  if ! "$PTXAS" -arch="$arch" -O3 -v "${flags[@]}" "$ptx" -o "$tmp/k.cubin" >"$tmp/v.txt" 2>&1; then
    { echo "PTXAS FAILED"; cat "$tmp/v.txt"; } >"$out"
    return
  fi
  {
    grep -E 'Used|spill|stack frame|Compiling entry|Function properties' "$tmp/v.txt" |
      sed -e 's/ for .*\.ptx//' -e "s|$tmp/[^ ]*||g" || true
    "$NVDISASM" -c "$tmp/k.cubin" | sed -e 's|/\*[0-9a-f]\{4,\}\*/||' -e 's/[[:space:]]*$//'
  } >"$out"
}

same=0 differ=0 checked=0 unchanged=0 added=0 removed=0
differing=()
mapfile -t goldens < <( { git ls-files -- 'tests/fixtures/*.ptx' 'bench/kernels/*.ptx';
  git ls-tree -r --name-only "$base" -- tests/fixtures bench/kernels | grep '\.ptx$'; } | sort -u)
for g in "${goldens[@]}"; do
  if ! git cat-file -e "$base:$g" 2>/dev/null; then added=$((added + 1)); echo "new:      $g"; continue; fi
  if [ ! -f "$g" ]; then removed=$((removed + 1)); echo "removed:  $g"; continue; fi
  git show "$base:$g" >"$tmp/old.ptx"
  if [ "$all" = 0 ] && cmp -s "$tmp/old.ptx" "$g"; then unchanged=$((unchanged + 1)); continue; fi
  checked=$((checked + 1))
  sass "$tmp/old.ptx" "$tmp/old.sass"
  sass "$g" "$tmp/new.sass"
  if cmp -s "$tmp/old.sass" "$tmp/new.sass"; then
    same=$((same + 1))
  else
    differ=$((differ + 1)); differing+=("$g")
    echo "DIFFERS:  $g ($(diff "$tmp/old.sass" "$tmp/new.sass" | grep -c '^[<>]') lines)"
    if [ -n "${SASS_DIFF_SHOW:-}" ]; then diff "$tmp/old.sass" "$tmp/new.sass" || true; fi
  fi
done
total=$((unchanged + checked))
echo "sass_diff against $base: $total goldens; PTX unchanged $unchanged; PTX changed $checked, of which SASS identical $same, SASS differs $differ; new $added, removed $removed"
echo "=> SASS identical: $((unchanged + same))/$total"
[ "$differ" = 0 ]
