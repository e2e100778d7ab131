#!/usr/bin/env bash
# Builds g4 and runs the test suite in stages; each prints its ctest summary, and the last line
# is "ci: N passed, M failed" (the sum over stages). Exit status 1 if anything failed.
#   main  the normal build (scripts/build.sh, into $G4_BUILD_DIR or build/) + the whole ctest
#   asan  ASan build of every test program (build-asan/, target g4_test_programs: not the g4
#         binary, no benchmarks), UBSan on g4's own code, ctest with leak detection; this
#         includes the fuzz harnesses replaying their corpora and mutants of them (label fuzz,
#         tests/fuzz/replay_main.cc). Left out: the tests that drive the g4 binary (labels cli,
#         e2e) and the real-checkpoint tests (label real: a 270M model and transformers); under
#         ASan they take minutes and the code they drive is covered by the unit suites
#   tsan  ThreadSanitizer build (-O1) of just the runtime (scheduler) and server test binaries
#         (build-tsan/), ctest on those two suites
#   fuzz  scripts/fuzz.sh --smoke: libFuzzer (clang) builds of the harnesses, 20 s each; not in
#         the default list (a third build of the parser folders, 88 files with clang: 296 s of
#         a passing CI run in stop 34; the asan stage replays the same harnesses)
#   emu   the CUDA backend end to end on the CPU emulation (tests/kernels/cuda/emu/
#         run_backend.sh, cards H200, T4 and none: every .cu as host C++, the CUDA op tests,
#         golden logits and cached decode on Backend(kCuda)), on the main stage's libraries;
#         CI machines have no GPU, so this is what keeps the device code honest between GPU runs
# Pick stages with G4_CI_STAGES (default "main asan tsan emu"), e.g. G4_CI_STAGES=main.
# Time budget: CI stops the whole run at 90 minutes, and these machines differ up to 3x in
# build speed. Within G4_CI_BUDGET_S (default 4800 s: the 90 minutes less the setup and a
# margin; 0: no limit) a stage after main starts only if its estimate fits in what is left: a
# multiple of the main stage's own time on this machine (STAGE_COST).
# A stage left out for time says so ("ci: NAME: SKIPPED ...") and is listed in the last lines.
# Extra arguments go to the main stage's ctest. Golden-logit tests read ../shared/golden
# when it exists beside the repo. The sanitizer builds never compile CUDA (-DG4_CUDA=OFF).
set -uo pipefail
cd "$(dirname "$0")/.."
STAGES="${G4_CI_STAGES:-main asan tsan emu}"
JOBS="${G4_JOBS:-$(nproc)}"
total_passed=0
total_failed=0
timing=""  # "main 512 s, asan ..." for the closing lines: CI has a 90-minute limit
skipped=""
BUDGET="${G4_CI_BUDGET_S:-4800}"
# Each stage's time as a multiple of main's (build + tests), rounded up from a clean-clone run
# on a 2-core AVX2 VM (2026-12-05: main 1820 s, asan 1701, tsan 780, emu 699; fuzz is older).
declare -A STAGE_COST=([asan]=1.0 [tsan]=0.5 [emu]=0.45 [fuzz]=0.5)
main_seconds=0

# fits STAGE: whether STAGE's estimate fits in the budget left (always, without a budget or
# before main has run).
fits() {
  local stage="$1"
  [[ $BUDGET -eq 0 || $main_seconds -eq 0 || -z "${STAGE_COST[$stage]:-}" ]] && return 0
  local need left
  need=$(awk -v m="$main_seconds" -v c="${STAGE_COST[$stage]}" 'BEGIN { printf "%d", m * c }')
  left=$((BUDGET - SECONDS))
  if ((need > left)); then
    echo "=== ci stage: $stage ==="
    echo "ci: $stage: SKIPPED for time: ~$need s expected (${STAGE_COST[$stage]} x main's" \
      "$main_seconds s), $left s left of G4_CI_BUDGET_S=$BUDGET"
    skipped+=" $stage"
    return 1
  fi
}

# Adds a stage's counts from ctest's "NN% tests passed, F tests failed out of T" line; a
# stage without that line (a build that broke, a crash) counts as one failure.
count() {
  local stage="$1" log="$2" summary
  summary=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [[ -z "$summary" ]]; then
    echo "ci: $stage: no ctest summary (build or run failed)"
    total_failed=$((total_failed + 1))
    return
  fi
  local failed total
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")
  total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$summary")
  echo "ci: $stage: $summary"
  total_passed=$((total_passed + total - failed))
  total_failed=$((total_failed + failed))
}

# run_stage NAME COMMAND...: runs it with output shown and kept for count().
run_stage() {
  local name="$1"
  shift
  local log
  log=$(mktemp)
  echo "=== ci stage: $name ==="
  local start=$SECONDS
  "$@" 2>&1 | tee "$log"
  count "$name" "$log"
  stage_seconds=$((SECONDS - start))  # main's is the machine's speed for fits()
  timing+=" $name $stage_seconds s,"
  rm -f "$log"
}

stage_main() {
  bash scripts/build.sh || return 1
  ctest --test-dir "${G4_BUILD_DIR:-build}" --output-on-failure -j "$JOBS" "$@"
}

# ASan at -O1, as its documentation advises: with UBSan, -O3 compiled 2.6x slower (bench_command.cc:
# 142 s against 55 s on a 2-core machine) and its build alone took half the 90-minute CI limit.
stage_asan() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DG4_CUDA=OFF -DG4_SANITIZE=address \
    -DG4_BUILD_BENCHMARKS=OFF >/dev/null || return 1
  cmake --build build-asan -j "$JOBS" --target g4_test_programs || return 1
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS" -LE '^(e2e|real|cli)$'
}

stage_tsan() {
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DG4_CUDA=OFF -DG4_SANITIZE=thread \
    -DG4_BUILD_BENCHMARKS=OFF >/dev/null || return 1
  cmake --build build-tsan -j "$JOBS" --target g4_runtime_tests g4_server_tests || return 1
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure -j "$JOBS" -L '^(runtime|server)$'
}

# run_counted NAME COMMAND...: a stage whose command prints "... N passed, M failed" (or, failing
# that, is judged by its exit status).
run_counted() {
  local name="$1" log rc line p f
  shift
  echo "=== ci stage: $name ==="
  local start=$SECONDS
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  if [[ -n "$line" ]]; then
    p=$(sed -E 's/^/ /; s/.*[^0-9]([0-9]+) passed, ([0-9]+) failed.*/\1/' <<<"$line")
    f=$(sed -E 's/^/ /; s/.*[^0-9]([0-9]+) passed, ([0-9]+) failed.*/\2/' <<<"$line")
    ((rc != 0 && f == 0)) && f=1
  elif ((rc == 0)); then
    p=1 f=0
  else
    p=0 f=1
  fi
  echo "ci: $name: $p passed, $f failed (exit $rc)"
  timing+=" $name $((SECONDS - start)) s,"
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  rm -f "$log"
}

stage_emu() {
  local build="${G4_BUILD_DIR:-build}"
  cmake --build "$build" -j "$JOBS" --target g4_core g4_loader g4_tokenizer g4_chat g4_kernels_ref \
    g4_kernels_cpu g4_model g4_runtime g4_test_common || return 1
  EMU_JOBS="$JOBS" tests/kernels/cuda/emu/run_backend.sh "$build" H200,T4,none
}

for stage in $STAGES; do
  fits "$stage" || continue
  case "$stage" in
    main)
      run_stage main stage_main "$@"
      main_seconds=$stage_seconds
      ;;
    asan) run_stage asan stage_asan ;;
    tsan) run_stage tsan stage_tsan ;;
    fuzz)
      if [[ -x scripts/fuzz.sh ]]; then
        run_counted fuzz scripts/fuzz.sh --smoke
      else
        echo "ci: fuzz: skipped (no executable scripts/fuzz.sh)"
      fi
      ;;
    emu)
      if [[ -f "${G4_BUILD_DIR:-build}/build.ninja" ]] || bash scripts/build.sh; then
        run_counted emu stage_emu
      else
        echo "ci: emu: no build (scripts/build.sh failed)"
        total_failed=$((total_failed + 1))
      fi
      ;;
    *)
      echo "ci: unknown stage '$stage' (main asan tsan fuzz emu)"
      total_failed=$((total_failed + 1))
      ;;
  esac
done

echo "ci: stage times:${timing%,} (total $SECONDS s)"
[[ -z "$skipped" ]] || echo "ci: SKIPPED for time (G4_CI_BUDGET_S=$BUDGET):$skipped"
echo "ci: $total_passed passed, $total_failed failed"
((total_failed == 0))
