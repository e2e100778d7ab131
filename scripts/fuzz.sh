#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz (clang, ASan+UBSan) and runs each on a copy of
# its seed corpus, so the committed corpus never grows from a run.
#   scripts/fuzz.sh [--smoke | --seconds N] [--runs N] [harness...]
# --smoke: 20 s per harness (CI); default 300 s. --runs N also stops a harness after N executions
# (e.g. --seconds 1800 --runs 10000000: 10 million executions or 30 minutes, whichever first).
# Harness names are the *_fuzz.cc stems
# (safetensors, config, ...); none means all. Env: G4_FUZZ_BUILD_DIR (default build-fuzz),
# G4_FUZZ_CXX / G4_FUZZ_CC (default clang++-14 / clang-14, else clang++ / clang),
# G4_FUZZ_KEEP=DIR keeps the grown corpora and crash files under DIR; G4_FUZZ_TIMEOUT=S is
# the seconds one input may take before it counts as a hang (default 10; raise it on a loaded
# machine, where a starved process can exceed 10 s on an input that takes milliseconds).
# Ends with "fuzz: N passed, M failed"; exits non-zero if any harness failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

seconds=300
runs=-1
harnesses=()
while (($#)); do
  case "$1" in
    --smoke) seconds=20 ;;
    --seconds) seconds="${2:?--seconds needs a number}"; shift ;;
    --runs) runs="${2:?--runs needs a number}"; shift ;;
    -h|--help) sed -n 2,10p "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) harnesses+=("$1") ;;
  esac
  shift
done
if ((${#harnesses[@]} == 0)); then
  for f in tests/fuzz/*_fuzz.cc; do
    n=$(basename "$f" .cc); harnesses+=("${n%_fuzz}")
  done
fi

pick() { for c in "$@"; do command -v "$c" >/dev/null 2>&1 && { echo "$c"; return 0; }; done; return 1; }
CXX_BIN=${G4_FUZZ_CXX:-$(pick clang++-14 clang++)} || { echo "fuzz.sh: clang++ not found (scripts/setup.sh installs clang-14)" >&2; exit 2; }
CC_BIN=${G4_FUZZ_CC:-$(pick clang-14 clang)} || { echo "fuzz.sh: clang not found" >&2; exit 2; }
BUILD=${G4_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=$CC_BIN CXX=$CXX_BIN cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DG4_FUZZ=ON -DG4_BUILD_TESTS=OFF -DG4_BUILD_BENCHMARKS=OFF -DG4_CUDA=OFF >/dev/null ||
    { echo "fuzz.sh: cmake configure failed" >&2; exit 2; }
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("g4_fuzz_$h"); done
if ! cmake --build "$BUILD" --target "${targets[@]}"; then
  echo "fuzz.sh: build failed" >&2
  echo "fuzz: 0 passed, ${#harnesses[@]} failed"
  exit 2
fi

# Longest input each harness may grow to: a little above its largest seed.
max_len() {
  case "$1" in
    config|tokenizer_json) echo 16384 ;;
    safetensors|chat_request|gguf) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

symbolizer=$(pick llvm-symbolizer-14 llvm-symbolizer || true)
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:symbolize=1}${symbolizer:+:external_symbolizer_path=$(command -v "$symbolizer")}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

work=$(mktemp -d "${TMPDIR:-/tmp}/g4_fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0; failed=0
for h in "${harnesses[@]}"; do
  bin="$BUILD/tests/fuzz/g4_fuzz_$h"
  seeds="$ROOT/tests/fuzz/corpus/$h"
  corpus="$work/$h/corpus"; artifacts="$work/$h/artifacts"
  mkdir -p "$corpus" "$artifacts"
  [ -d "$seeds" ] && cp "$seeds"/* "$corpus"/ 2>/dev/null
  log="$work/$h/log"
  start=$(date +%s)
  "$bin" -max_total_time="$seconds" -runs="$runs" -max_len="$(max_len "$h")" -timeout="${G4_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" >"$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - start))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    echo "fuzz: $h: ok, ${execs:-?} executions in ${elapsed} s (${cov:-no coverage line})"
  else
    failed=$((failed + 1))
    echo "fuzz: $h: FAILED (exit $rc) after ${execs:-?} executions; log tail:"
    tail -n 40 "$log" | sed 's/^/  /'
    for a in "$artifacts"/*; do
      [ -f "$a" ] && echo "  reproducer ($(wc -c <"$a") bytes): base64 $(head -c 4096 "$a" | base64 -w0)"
    done
  fi
  if [ -n "${G4_FUZZ_KEEP:-}" ]; then
    mkdir -p "$G4_FUZZ_KEEP/$h" && cp -r "$work/$h/." "$G4_FUZZ_KEEP/$h/"
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
