#!/usr/bin/env bash
# The Hopper kernels of bench/hopper beside their PyTorch baselines on the GPU machine, in one
# call of a few minutes (issue 32): the bf16 GEMM variants at 4096³ and 8192³ vs torch.matmul,
# the FP8 GEMM vs torch._scaled_mm, flash-attention forward vs scaled_dot_product_attention
# (flash backend), each output checked first; one Markdown table at the end (also in
# $OUT/hopper_bench.md). Each section runs in its own process under a timeout, so a kernel
# that faults or hangs loses its section only.
# Needs only the wheel: device tool carry [".carry"] (scripts/device_bundle.sh puts
# .carry/pydevice-*.whl.xz there), command `bash scripts/hopper_bench_gpu.sh`.
# Triton's tutorial kernels (bench/hopper/triton_ref.py: the TMA persistent matmul, bf16 and
# FP8, tutorial 03's matmul, the fused-attention forward) are the variants named triton*, each
# a row beside PyTorch's in the same table; a machine without Triton gets a row saying so.
# Optional environment: GEMM_VARIANTS (default tmastore,persistent,cluster,pingpong,base,
# triton,triton_mm), FP8_VARIANTS (tmastore,persistent,cluster,pingpong,triton),
# ATTN_VARIANTS (vn,pp,ov_vn,ov,vt,triton; also vn_swap, ov_vn_swap: the wrong descriptor
# order, which fail), SIZES (4096,8192), SEQS (4096,16384), ITERS (20), BUDGET (280: seconds
# after which the remaining sections are skipped, saying so).
set -uo pipefail
cd "$(dirname "$0")/.."
work=/tmp/pydevice-hopper-bench && rm -rf $work && mkdir -p $work
out=${OUT:-$work}
unxz() { python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; }
nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.max.sm --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
whl=$(ls .carry/pydevice-*.whl.xz 2>/dev/null | head -1)
if [ -n "$whl" ]; then
  dest=$work/$(basename "${whl%.xz}")
  unxz "$whl" "$dest"
  python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target $work/site "$dest" 2>&1 | grep -v WARNING
  export PYTHONPATH=$work/site${PYTHONPATH:+:$PYTHONPATH}
elif ! python3 -c 'import pydevice' 2>/dev/null; then
  echo "no .carry/pydevice-*.whl.xz and no pydevice installed: run scripts/device_bundle.sh first"; exit 1
fi
rows=$out/hopper_rows.jsonl && rm -f "$rows"
common=(--rows "$rows" --sizes "${SIZES:-4096,8192}" --seqs "${SEQS:-4096,16384}" --iters "${ITERS:-20}")
budget=${BUDGET:-280}
section() {  # NAME TIMEOUT ARGS...: skipped once the run has used $budget seconds
  local name=$1 limit=$2; shift 2
  if [ $((SECONDS + 10)) -gt "$budget" ]; then
    echo "== $name: skipped (the run has used ${SECONDS} of its ${budget} s)"
    python3 -c 'import json, sys; print(json.dumps([sys.argv[1], "-", "-", 0, 0, 0, 0, float("nan"), False, "skipped: time budget"]))' "$name" >>"$rows"
    return
  fi
  [ $((SECONDS + limit)) -gt "$budget" ] && limit=$((budget - SECONDS))
  echo "== $name"
  timeout "$limit" python3 bench/hopper/bench_all.py "${common[@]}" "$@" 2>&1 | tee "$out/hopper_$name.log" | grep -v "^|"
  if [ "${PIPESTATUS[0]}" = 124 ]; then
    python3 -c 'import json, sys; print(json.dumps([sys.argv[1], "-", "-", 0, 0, 0, 0, float("nan"), False, "timed out"]))' "$name" >>"$rows"
  fi
}
# Round robin over the three kinds, most telling variants first, so that a run cut short by
# the budget still has each kind's main figures; the original GEMM (78.8% and 80.6% of cuBLAS
# at 06:11) and Triton's kernels come last. Triton's sections get more time: they compile
# and autotune three configurations per kernel first.
read -ra gemm <<<"$(echo "${GEMM_VARIANTS:-tmastore,persistent,cluster,pingpong,base,triton,triton_mm}" | tr , ' ')"
read -ra fp8 <<<"$(echo "${FP8_VARIANTS:-tmastore,persistent,cluster,pingpong,triton}" | tr , ' ')"
read -ra attn <<<"$(echo "${ATTN_VARIANTS:-vn,pp,ov_vn,ov,vt,triton}" | tr , ' ')"
n=${#gemm[@]}; [ ${#fp8[@]} -gt "$n" ] && n=${#fp8[@]}; [ ${#attn[@]} -gt "$n" ] && n=${#attn[@]}
limit() { case $1 in triton*) echo "$2";; *) echo "$3";; esac; }
for ((i = 0; i < n; i++)); do
  v=${gemm[i]:-}; [ -n "$v" ] && section "gemm_$v" "$(limit "$v" 90 40)" --skip fp8,attn --gemm "$v"
  v=${fp8[i]:-}; [ -n "$v" ] && section "fp8_$v" "$(limit "$v" 90 40)" --skip gemm,attn --fp8 "$v"
  v=${attn[i]:-}; [ -n "$v" ] && section "attn_$v" "$(limit "$v" 100 45)" --skip gemm,fp8 --attn "$v"
done
echo "== table"
python3 bench/hopper/bench_all.py --table "$rows" | tee "$out/hopper_bench.md"
