#!/usr/bin/env bash
# Extract CuPy's own tests of cupyx.jit, cupy.fuse and the user-defined kernels (plus the
# cupy.testing helpers they import, for reading) from a mirror of github.com/cupy/cupy into
# .peers/cupy/ (ignored by git; CuPy's code is never committed). scripts/cupy_suite.py runs them.
#
#   scripts/fetch_cupy_tests.sh [GIT_DIR] [TAG] [DEST]
#
# GIT_DIR defaults to the `fetch` tool's mirror /work/.mirror/cupy+cupy/repo, TAG to v14.2.0
# (the CuPy installed on the GPU machine), DEST to .peers/cupy.
set -euo pipefail
GIT_DIR=${1:-/work/.mirror/cupy+cupy/repo}
TAG=${2:-v14.2.0}
DEST=${3:-$(git rev-parse --show-toplevel)/.peers/cupy}
PATHS=(
  tests/cupyx_tests/jit_tests
  tests/cupy_tests/core_tests/fusion_tests
  tests/cupy_tests/core_tests/test_userkernel.py
  tests/cupy_tests/core_tests/test_raw.py
  tests/cupy_tests/core_tests/test_elementwise.py
  tests/cupy_tests/core_tests/test_reduction.py
  tests/conftest.py
  tests/__init__.py
  tests/cupy_tests/__init__.py
  tests/cupy_tests/core_tests/__init__.py
  tests/cupyx_tests/__init__.py
  cupy/testing
)
rm -rf "$DEST"
mkdir -p "$DEST"
for p in "${PATHS[@]}"; do
  # A path missing at this tag is skipped with a note, not an error.
  files=$(git --git-dir="$GIT_DIR" ls-tree -r --name-only "$TAG" -- "$p") || true
  if [ -z "$files" ]; then echo "not at $TAG: $p" >&2; continue; fi
  while IFS= read -r f; do
    mkdir -p "$DEST/$(dirname "$f")"
    git --git-dir="$GIT_DIR" show "$TAG:$f" > "$DEST/$f"
  done <<< "$files"
done
echo "$TAG $(git --git-dir="$GIT_DIR" rev-parse "$TAG^{commit}")" > "$DEST/VERSION"
echo "extracted $(find "$DEST/tests" -name 'test_*.py' | wc -l) test files of CuPy $TAG into $DEST"
