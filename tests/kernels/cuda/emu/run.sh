#!/usr/bin/env bash
# Runs the GPU tests of the heavy CUDA kernels (matmul, matmul_quant, attention) on a CPU
# emulation of the CUDA execution model, for machines without a GPU. NOT a substitute for the
# real run: it checks indexing, bounds, barriers and the math, not memory ordering beyond
# __syncthreads/__syncwarp, timing, or anything arch-specific.
#   tests/kernels/cuda/emu/run.sh BUILD_DIR [CARD] [gtest filter]
# BUILD_DIR must hold libg4_core.a and libg4_kernels_ref.a (any configuration builds them).
# How: xform.py rewrites each .cu into plain C++ (kernel<<<g, b, smem, s>>>(args) becomes
# EmuLaunch(kernel, g, b, smem, s, args); extern __shared__ arrays point at one static buffer),
# and cuda_runtime.h here runs each block's threads as fibers switching at __syncthreads /
# __syncwarp / __shfl_xor_sync, blocks one after another (so function-static "__shared__" arrays
# are per block). Device memory is host memory. The whole backend: run_backend.sh.
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [CARD] [gtest filter]}
card=${2:-H200}
filter=${3:-'-*Bandwidth*'}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
out=$(mktemp -d)
for f in matmul matmul_quant attention; do
  python3 "$here/xform.py" "$root/src/kernels/cuda/$f.cu" "$out/$f.cc"
done
g++ -std=c++20 -O2 -pthread -w -DG4_EMU_CARD="$card" -I "$here" -I "$root/src" -I "$root/tests" \
  "$out"/matmul.cc "$out"/matmul_quant.cc "$out"/attention.cc \
  "$root"/tests/kernels/cuda/{matmul,matmul_quant,attention}_test.cc \
  "$root"/src/kernels/cuda/{tiles,policy,device}.cc "$here/fake_device.cc" \
  "$build/libg4_kernels_ref.a" "$build/libg4_core.a" -lgtest -lgtest_main -o "$out/emu_tests"
"$out/emu_tests" --gtest_filter="$filter"
