#!/usr/bin/env bash
# Extracts the original CUDA C++ kernels that bench/corpus/*.py port, from the mirrors the
# `fetch` tool brings to /work/.mirror/<owner>+<name>/repo (or $MIRRORS), pinned to the
# commits the ports cite, into .peers/corpus/<port>.cu (an ignored folder: the originals are
# never committed). Each output is a small prelude of our own (sizes, floatX, NVRTC stand-ins
# for libc macros), the original header (.cuh) where the kernels need its macros, and the
# original functions the port's `# entry:` lines name (plus the helpers they call), cut out
# by extract_functions.awk. run.py compiles these with nvcc -O3 -arch=sm_90 and with NVRTC.
#
#   bash bench/corpus/fetch_originals.sh            # then carry .peers/corpus to the GPU
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mirrors=${MIRRORS:-/work/.mirror}
out=$root/.peers/corpus
mkdir -p "$out"

POLYBENCH=$mirrors/sgrauerg+polybenchGpu/repo
POLYBENCH_COMMIT=5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c
LLMC=$mirrors/karpathy+llm.c/repo
LLMC_COMMIT=f1e2ace651495b74ae22d45d1723443fd00ecd3a

entries() { grep '^# entry:' "$here/$1.py" | sed 's/^# entry: *//' | tr '\n' ' '; }
show() { git --git-dir="$1" show "$2:$3"; }
cut_functions() { awk -v names="$1" -f "$here/extract_functions.awk"; }

# Definitions the originals get from libc headers, which NVRTC does not have.
rtc_prelude() {
  cat <<'PRE'
#ifdef __CUDACC_RTC__
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#else
#define _USE_MATH_DEFINES
#include <math.h>
#include <float.h>
#endif
PRE
}

polybench() {  # polybench PORT DIR/FILE [EXTRA_DEFINES]
  local port=$1 src=$2 extra=${3:-}
  {
    echo "// $port: extracted from github.com/sgrauerg/polybenchGpu CUDA/$src.cu (+ .cuh) at $POLYBENCH_COMMIT"
    rtc_prelude
    echo "#define POLYBENCH_LOOP_BOUND(x, y) y"
    printf '%b' "$extra"
    show "$POLYBENCH" "$POLYBENCH_COMMIT" "CUDA/$src.cuh"
    echo
    show "$POLYBENCH" "$POLYBENCH_COMMIT" "CUDA/$src.cu" | cut_functions "$(entries "$port")" \
      | grep -v '^#define \(M_PI\|GPU_DEVICE\|RUN_ON_CPU\|POLYBENCH_TIME\)'
  } > "$out/$port.cu"
}

llmc() {  # llmc PORT FILE [HELPERS] [COMMON_HELPERS]
  local port=$1 src=$2 helpers=${3:-} common=${4:-}
  {
    echo "// $port: extracted from github.com/karpathy/llm.c dev/cuda/$src.cu at $LLMC_COMMIT"
    rtc_prelude
    echo "#include <cooperative_groups.h>"
    echo "#include <cooperative_groups/reduce.h>"
    echo "typedef float floatX;"
    if [ -n "$common" ]; then
      show "$LLMC" "$LLMC_COMMIT" dev/cuda/common.h | cut_functions "$common" | grep -v '^#define'
    fi
    show "$LLMC" "$LLMC_COMMIT" "dev/cuda/$src.cu" | cut_functions "$helpers $(entries "$port")" \
      | grep -v '^#define \(ENABLE_BF16\|CUDNN_16BIT\|checkCud\|_USE_MATH_DEFINES\)'
  } > "$out/$port.cu"
}

RODINIA=$mirrors/yuhc+gpu-rodinia/repo
RODINIA_COMMIT=9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4

rodinia() {  # rodinia PORT "FILE ..." PRELUDE [SED_RANGE_OF_TYPES FILE]
  local port=$1 files=$2 prelude=$3 types=${4:-} typesrc=${5:-}
  {
    echo "// $port: extracted from github.com/yuhc/gpu-rodinia ($files) at $RODINIA_COMMIT"
    rtc_prelude
    printf '%b' "$prelude"
    if [ -n "$types" ]; then show "$RODINIA" "$RODINIA_COMMIT" "$typesrc" | sed -n "$types"; fi
    for f in $files; do
      show "$RODINIA" "$RODINIA_COMMIT" "$f" | cut_functions "$(entries "$port")" | grep -v '^[ \t]*#'
    done
  } > "$out/$port.cu"
}

rodinia rodinia_nn cuda/nn/nn_cuda.cu "" '/^typedef struct latLong/,/} LatLong;/p' cuda/nn/nn_cuda.cu
rodinia rodinia_gaussian cuda/gaussian/gaussian.cu ""
rodinia rodinia_bfs "cuda/bfs/kernel.cu cuda/bfs/kernel2.cu" '#define MAX_THREADS_PER_BLOCK 512\n' '/^struct Node/,/^};/p' cuda/bfs/bfs.cu

SAMPLES=$mirrors/NVIDIA+cuda-samples/repo
SAMPLES_COMMIT=c94ff366aed18c797b8a85dfaac7817b0228b420

samples() {  # samples PORT FILE [EPILOGUE]
  local port=$1 src=$2 epilogue=${3:-}
  {
    echo "// $port: extracted from github.com/NVIDIA/cuda-samples $src at $SAMPLES_COMMIT"
    rtc_prelude
    echo "#include <cooperative_groups.h>"
    echo "namespace cg = cooperative_groups;"
    show "$SAMPLES" "$SAMPLES_COMMIT" "$src" | cut_functions "$(entries "$port")" | grep -v '^#define \(FLOOR\|CEIL\)'
    printf '%b' "$epilogue"
  } > "$out/$port.cu"
}

samples samples_transpose Samples/6_Performance/transpose/transpose.cu
# The sample instantiates MatrixMulCUDA<32> through its launch; here one line of ours does.
samples samples_matrixMul Samples/0_Introduction/matrixMul/matrixMul.cu \
  'template __global__ void MatrixMulCUDA<32>(float *, float *, float *, int, int);\n'
samples samples_vectorAdd Samples/0_Introduction/vectorAdd/vectorAdd.cu
# The macros the next two use, written out (the originals choose BLOCK_SIZE under #ifdefs).
rodinia rodinia_pathfinder cuda/pathfinder/pathfinder.cu \
  '#define BLOCK_SIZE 256\n#define HALO 1\n#define IN_RANGE(x, min, max) ((x)>=(min) && (x)<=(max))\n#define MIN(a, b) ((a)<=(b) ? (a) : (b))\n'
rodinia rodinia_hotspot cuda/hotspot/hotspot.cu \
  '#define BLOCK_SIZE 16\n#define IN_RANGE(x, min, max) ((x)>=(min) && (x)<=(max))\n'
rodinia rodinia_backprop cuda/backprop/backprop_cuda_kernel.cu \
  '#define WIDTH 16\n#define HEIGHT 16\n#define ETA 0.3\n#define MOMENTUM 0.3\n'
rodinia rodinia_srad cuda/srad/srad_v2/srad_kernel.cu '#define BLOCK_SIZE 16\n'

polybench polybench_2mm 2MM/2mm
polybench polybench_3mm 3MM/3mm
polybench polybench_atax ATAX/atax
polybench polybench_bicg BICG/bicg
polybench polybench_gemm GEMM/gemm
polybench polybench_gesummv GESUMMV/gesummv
polybench polybench_mvt MVT/mvt
polybench polybench_syrk SYRK/syrk
polybench polybench_syr2k SYR2K/syr2k
polybench polybench_correlation CORR/correlation '#define M 1024\n#define N 1024\n'
polybench polybench_covariance COVAR/covariance '#define M 1024\n#define N 1024\n'
polybench polybench_fdtd2d FDTD-2D/fdtd2d
polybench polybench_jacobi2d JACOBI2D/jacobi2D
polybench polybench_2dconv 2DCONV/2DConvolution

llmc llmc_encoder_forward encoder_forward
llmc llmc_gelu_forward gelu_forward
llmc llmc_residual_forward residual_forward
llmc llmc_adamw adamw lerp
llmc llmc_crossentropy_forward crossentropy_forward
llmc llmc_layernorm_forward layernorm_forward
llmc llmc_softmax_forward softmax_forward warpReduceMax warpReduceSum
llmc llmc_attention_forward attention_forward
llmc llmc_matmul_forward matmul_forward "ld_vec st_vec"
llmc llmc_gelu_backward gelu_backward
llmc llmc_attention_flash attention_forward

echo "wrote $(ls "$out"/*.cu | wc -l) originals to $out" >&2
