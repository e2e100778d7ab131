#!/usr/bin/env bash
# Runs the WHOLE CUDA backend end to end on the CPU emulation (cuda_runtime.h here), for machines
# without a GPU: every src/kernels/cuda/*.cu rewritten by xform.py, every src/kernels/cuda/*.cc
# and src/ops/*.cc built with G4_HAS_CUDA so Backend(kCuda) gets the CUDA op table (cuda::dev)
# and DeviceMemory(), linked with the rest of the library from a CPU build. Runs every
# tests/kernels/cuda/*_test.cc, the kCuda golden model tests (tests/model/golden_test.cc:
# logits and hidden states against the reference) and emu_decode_test.cc (cached decode on the
# CUDA backend: greedy continuations and chunked prefill == full forward), once per card.
# Evidence, NOT a substitute for a GPU run (see emu/README.md). The `emu` stage of
# scripts/test.sh runs it with H200,T4,none; the last line is "emu: N passed, M failed".
#   tests/kernels/cuda/emu/run_backend.sh BUILD_DIR [CARDS] [gtest filter]
# CARDS: comma-separated, of H200 (default), T4, L4, A100, none (no device: every GPU test must
# skip). T4 is SM 7.5: the f16 compute path (bf16 weights converted to f16). A gtest filter given
# applies to every card; by default the T4 runs fewer of the emulated decode cases (below), and no
# card runs the Gemma 3 4B-like case (a 1040-token prompt: 260 s emulated; the 270M-like case
# covers Gemma 3 on the device, and tiny_window a sliding window).
# BUILD_DIR: a CPU build (-DG4_CUDA=OFF) with these targets built: g4_core g4_loader
# g4_tokenizer g4_chat g4_kernels_ref g4_kernels_cpu g4_model g4_runtime g4_test_common. The emulated
# objects go to BUILD_DIR/cuda-emu, or EMU_OUT (a generated ninja file, so reruns rebuild only
# what changed). EMU_JOBS: parallel compiles (2).
set -euo pipefail
build=$(cd "${1:?usage: run_backend.sh BUILD_DIR [CARDS] [gtest filter]}" && pwd)
cards=${2:-H200}
# The H200 runs the cached greedy decode of five cases (hf-26b-a4b-like the MoE one: 88 s), and
# graphs, batches and the engine each on one (measured on a 2-core AVX2 VM, where each case
# costs 20-200 s emulated: the five others that ran took 455 s of the stage's 1186 s; engine on
# tiny-bf16 / tiny-window skips).
filter=${3:-'Cuda*:*_cuda:*EmuDecode*Cached*tiny_bf16:*EmuDecode*Cached*tiny_window:*EmuDecode*Cached*e2b_donors:*EmuDecode*Cached*26b_a4b_like:*EmuDecode*Cached*gemma3_270m*:*DecodeGraphs*tiny_bf16:*BatchedSteps*gemma3_270m*:*EngineServes*e2b_donors:-*Bandwidth*:*gemma3_4b_like*'}
# The T4 differs in its compute dtype (f16), tiles and launches (no PDL): the op tests, the golden
# logits and one cached decode cover that. Graphs and batches are the same host code as on the
# H200, and each emulated decode case costs a minute of the 90-minute CI.
t4_filter=${3:-'Cuda*:*_cuda:*EmuDecode*Cached*tiny_bf16:-*Bandwidth*:*gemma3_4b_like*'}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
out=${EMU_OUT:-$build/cuda-emu}
mkdir -p "$out"

# -O2 for the kernels and the library code they run under; tests at -O1 (they only compile).
cflags="-std=c++20 -pthread -w -DG4_HAS_CUDA -I$here -I$root/src -I$root/tests"
{
  echo "rule xform"
  echo "  command = python3 $here/xform.py \$in \$out"
  echo "rule cxx"
  echo "  command = g++ $cflags \$opt -MMD -MF \$out.d -c \$in -o \$out"
  echo "  depfile = \$out.d"
  echo "  deps = gcc"
  echo "rule link"
  echo "  command = g++ -pthread \$in -lhwy -lgtest -lgtest_main -o \$out"
  objs=()
  for f in "$root"/src/kernels/cuda/*.cu; do
    n=$(basename "$f" .cu)
    echo "build $out/$n.cu.cc: xform $f | $here/xform.py"
    echo "build $out/$n.cu.o: cxx $out/$n.cu.cc"
    echo "  opt = -O2"
    objs+=("$out/$n.cu.o")
  done
  for f in "$root"/src/kernels/cuda/*.cc "$root"/src/ops/*.cc "$here/fake_device.cc"; do
    n=$(basename "$(dirname "$f")")_$(basename "$f" .cc)
    echo "build $out/$n.o: cxx $f"
    echo "  opt = -O2"
    objs+=("$out/$n.o")
  done
  for f in "$root"/tests/kernels/cuda/*_test.cc "$root/tests/kernels/cuda/staged_ops.cc" \
           "$root/tests/model/golden_test.cc" "$here/emu_decode_test.cc"; do
    n=test_$(basename "$f" .cc)
    echo "build $out/$n.o: cxx $f"
    echo "  opt = -O1"
    objs+=("$out/$n.o")
  done
  libs=""
  for lib in g4_test_common g4_runtime g4_model g4_chat g4_tokenizer g4_loader g4_kernels_cpu \
             g4_kernels_ref g4_core; do
    libs+=" $build/lib$lib.a"
  done
  echo "build objs: phony ${objs[*]}"
  echo "build $out/emu_backend_tests: link ${objs[*]} $libs"
} > "$out/build.ninja.new"
# Only replace the ninja file when it changed (keeps ninja's view of what is up to date).
if cmp -s "$out/build.ninja.new" "$out/build.ninja"; then
  rm "$out/build.ninja.new"
else
  mv "$out/build.ninja.new" "$out/build.ninja"
fi
nice -n 5 ninja -C "$out" -j "${EMU_JOBS:-2}" "${EMU_TARGET:-$out/emu_backend_tests}"
[[ -z ${EMU_TARGET:-} ]] || exit 0  # EMU_TARGET: build that one target only

cd "$root"  # the golden cases are found from the repo root (../shared/golden)
status=0 passed=0 failed=0
IFS=, read -ra card_list <<< "$cards"
for card in "${card_list[@]}"; do
  echo "=== emulated card: $card ==="
  start=$(date +%s)
  log=$(mktemp)
  set +e  # a failing or crashing card is counted, and the next card still runs
  card_filter=$filter
  [[ $card == T4 ]] && card_filter=$t4_filter
  G4_EMU_CARD=$card "$out/emu_backend_tests" --gtest_filter="$card_filter" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\..*/\1/p' "$log" | tail -1)
  f=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' "$log" | tail -1)
  p=${p:-0} f=${f:-0}
  ((rc != 0 && f == 0)) && f=1  # a crash or abort: no gtest summary
  ((rc != 0)) && status=1
  passed=$((passed + p)) failed=$((failed + f))
  rm -f "$log"
  echo "=== $card: $(( $(date +%s) - start )) s: $p passed, $f failed ==="
done
echo "emu: $passed passed, $failed failed"
exit $status
