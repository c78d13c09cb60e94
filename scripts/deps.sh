#!/usr/bin/env bash
# Installs what building and testing pydevice needs on Debian 12, skipping what is present:
# LLVM 19 (static libraries, for the NVPTX back end), g++ (for the back end's small C++
# part), and the PyPI wheel nvidia-cuda-nvcc, which carries ptxas (to validate PTX),
# libdevice (math functions) and nvcc (to check ABI layouts), with nvidia-cuda-cccl (the
# headers nvcc needs for cuda/std), plus numpy, and nvidia-cuda-nvrtc (NVRTC, for the test
# that compiles CUDA C++ at run time).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ ! -x /usr/lib/llvm-19/bin/llvm-config ] || [ ! -f /usr/lib/llvm-19/lib/libPolly.a ] || ! command -v g++ >/dev/null || ! command -v mold >/dev/null; then
  echo "== installing LLVM 19 and g++ (apt)" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq llvm-19-dev libpolly-19-dev zlib1g-dev libzstd-dev g++ mold >/dev/null
fi

site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ ! -x "$site/nvidia/cu13/bin/ptxas" ] || [ ! -f "$site/nvidia/cu13/include/cccl/cuda/std/cstdint" ] || ! python3 -c 'import numpy' 2>/dev/null; then
  echo "== installing nvidia-cuda-nvcc, nvidia-cuda-cccl and numpy (pip)" >&2
  python3 -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvcc nvidia-cuda-cccl numpy
fi
# NVRTC (libnvrtc), which tests/interop_link.rs uses to compile CUDA C++ at run time.
if ! ls "$site"/nvidia/cu13/lib/libnvrtc.so* >/dev/null 2>&1; then
  echo "== installing nvidia-cuda-nvrtc (pip)" >&2
  python3 -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvrtc || echo "warning: nvidia-cuda-nvrtc not installed; the NVRTC test will be skipped" >&2
fi
export LLVM_SYS_191_PREFIX=/usr/lib/llvm-19
