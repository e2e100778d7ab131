#!/usr/bin/env bash
# The g4 binary's answers to what a new user mistypes: unknown commands and flags are named with
# the closest known one, out-of-range values name their flag, --version and --help say what they
# should, and a checkpoint without a tokenizer says so when written and when a text command
# opens it.
set -uo pipefail
G4="$1"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# expect_error "PATTERN" ARGS...: g4 ARGS must exit non-zero with PATTERN (grep -E) on stderr.
expect_error() {
  local pattern="$1"
  shift
  if "$G4" "$@" >"$TMP/out" 2>"$TMP/err"; then fail "g4 $* succeeded"; fi
  grep -Eq -- "$pattern" "$TMP/err" || fail "g4 $*: expected '$pattern', got: $(cat "$TMP/err")"
}

expect_error "unknown command 'sevre'; did you mean 'serve'\?" sevre --port 8080
expect_error "unknown command 'frobnicate' \(commands: logits, make-model" frobnicate
expect_error "g4 run: unknown flag '--promt'; did you mean '--prompt'\?" \
  run --model x --promt hi
expect_error "g4 serve: unknown flag '--prot'; did you mean '--port'\?" serve --model x --prot=1
expect_error "unknown flag '--zzzzzzzz'$" run --model x --zzzzzzzz
# Negative numbers are values, not flags: the range check answers, naming the flag.
expect_error "--max-tokens must be at least 1, got -5" run --model x --prompt hi --max-tokens -5
expect_error "--temperature must be >= 0" generate --model x --ids 2 --temperature -1
expect_error "--top-p must be in \(0, 1\]" run --model x --prompt hi --top-p 1.5
grep -q "SamplingParams" "$TMP/err" && fail "internal name in: $(cat "$TMP/err")"

"$G4" --version >"$TMP/version" 2>&1 || fail "--version: $(cat "$TMP/version")"
grep -Eq "^g4 [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{7,}(-dirty)?|unknown)\)$" "$TMP/version" \
  || fail "--version printed: $(cat "$TMP/version")"
"$G4" run --help >"$TMP/help" 2>&1 || fail "run --help: $(cat "$TMP/help")"
grep -Eq -- "--max-tokens .*=128" "$TMP/help" || fail "run --help shows no defaults: $(cat "$TMP/help")"
grep -Eq -- "--backend .*=cpu" "$TMP/help" || fail "run --help shows no --backend default"

# A checkpoint without a tokenizer: a warning when written, a clear error when a text command
# opens it, and token ids still work.
"$G4" make-model --preset tiny --dtype bf16 --out "$TMP/m" 2>"$TMP/make.err" \
  || fail "make-model: $(cat "$TMP/make.err")"
grep -q "has no tokenizer.*--tokenizer" "$TMP/make.err" || fail "make-model: $(cat "$TMP/make.err")"
expect_error "$TMP/m has no tokenizer.json" run --model "$TMP/m" --prompt hi --max-tokens 1
"$G4" generate --model "$TMP/m" --ids 2,5 --max-tokens 1 >/dev/null 2>"$TMP/gen.err" \
  || fail "generate --ids on a checkpoint without tokenizer: $(cat "$TMP/gen.err")"
echo "cli_args_test: ok"
