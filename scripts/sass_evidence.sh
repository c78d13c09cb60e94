#!/usr/bin/env bash
# Collects the machine code of the benchmark kernels from every implementation, so that the
# kernels where we lose can be compared instruction by instruction off the GPU machine:
#   $OUT/nvcc/{bench_cuda.ptx,bench_cuda.sass,ptxas.txt}   nvcc -O3 -arch=sm_90
#   $OUT/ours/<kernel>.{sass,ptxas.txt}                     bench/kernels/<kernel>.ptx through ptxas
#   $OUT/numba/<kernel>.{ptx,sass}                          numba-cuda's PTX of the bench kernels
#   $OUT/cupyx/                                             CuPy's saved CUDA sources (cupyx.jit)
# Needs a GPU machine with the CUDA toolkit, numba-cuda and CuPy (the H100 image).
#
#   bash scripts/sass_evidence.sh [kernel ...]     (default: every kernel)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/sass-evidence}
cuda=/usr/local/cuda/bin
mkdir -p "$out"/{nvcc,ours,numba,cupyx}
kernels=("$@")
[ ${#kernels[@]} -eq 0 ] && kernels=($(ls bench/kernels/*.py | xargs -n1 basename | sed 's/\.py$//'))

"$cuda/nvcc" -O3 -arch=sm_90 -ptx -o "$out/nvcc/bench_cuda.ptx" bench/peers/cuda/bench_cuda.cu
"$cuda/nvcc" -O3 -arch=sm_90 -cubin -Xptxas -v -o /tmp/nvcc.cubin bench/peers/cuda/bench_cuda.cu \
  2>"$out/nvcc/ptxas.txt"
"$cuda/cuobjdump" -sass /tmp/nvcc.cubin >"$out/nvcc/bench_cuda.sass"

for k in "${kernels[@]}"; do
  p=bench/kernels/$k.ptx
  [ -e "$p" ] || continue
  "$cuda/ptxas" -O3 -arch=sm_90 -v -o "/tmp/$k.cubin" "$p" 2>"$out/ours/$k.ptxas.txt" \
    && "$cuda/cuobjdump" -sass "/tmp/$k.cubin" >"$out/ours/$k.sass"
done

# numba-cuda: run its suite on the chosen kernels, then ask each dispatcher for its PTX.
python3 - "$out/numba" "${kernels[@]}" <<'EOF' >"$out/numba/run.jsonl" 2>"$out/numba/run.log"
import sys
sys.path.insert(0, "bench/peers")
dest, names = sys.argv[1], sys.argv[2:]
import numba_suite as s
s.main(names)
for name in names:
    d = getattr(s, name, None)
    if d is None or not hasattr(d, "inspect_asm"):
        continue
    for i, ptx in enumerate(d.inspect_asm().values()):
        with open(f"{dest}/{name}.{i}.ptx", "w") as f:
            f.write(ptx)
EOF
for p in "$out"/numba/*.ptx; do
  [ -e "$p" ] || continue
  b=${p%.ptx}
  "$cuda/ptxas" -O3 -arch=sm_90 -v -o "$b.cubin" "$p" 2>"$b.ptxas.txt" \
    && "$cuda/cuobjdump" -sass "$b.cubin" >"$b.sass"
  rm -f "$b.cubin"
done

# cupyx.jit: CuPy keeps the CUDA C++ it generated when asked to.
CUPY_CACHE_DIR=/tmp/cupy-evidence CUPY_CACHE_SAVE_CUDA_SOURCE=1 \
  python3 bench/peers/cupyx_suite.py "${kernels[@]}" >"$out/cupyx/run.jsonl" 2>"$out/cupyx/run.log"
find /tmp/cupy-evidence -name '*.cu' -exec cp {} "$out/cupyx/" \;
ls "$out"/* | head -100
