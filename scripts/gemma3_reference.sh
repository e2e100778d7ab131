#!/usr/bin/env bash
# The ctest fixture of the real-checkpoint tests (tests/model/gemma3_real_test.cc): writes
# transformers' reference for the real Gemma 3 270M GGUF into OUT with
# scripts/gemma3_real_reference.py, unless OUT already holds one made by the same script from
# the same file. Without .venv-test (scripts/setup.sh) or the model it says so and succeeds, so
# the tests skip, except under CI (env CI set), where it fails.
#   scripts/gemma3_reference.sh REPO OUT
set -euo pipefail
repo="$1"
out="$2"
py="$repo/.venv-test/bin/python"
script="$repo/scripts/gemma3_real_reference.py"
model="${G4_GEMMA3_GGUF:-${XDG_CACHE_HOME:-$HOME/.cache}/g4/models/gemma-3-270m-q4_k_m.gguf}"
missing=""
[ -x "$py" ] || missing="$repo/.venv-test (run scripts/setup.sh)"
[ -f "$model" ] || missing="$model (run scripts/setup.sh or scripts/real_model.sh)"
if [ -n "$missing" ]; then
  echo "gemma3_reference: $missing is missing; the real-checkpoint tests skip"
  [ -z "${CI:-}" ]
  exit $?
fi
stamp="$out/.g4-stamp"
want="$(cat "$script" "$repo/scripts/oracle_common.py" | sha256sum | cut -c1-16) $(stat -L -c %s "$model")"
if [ -f "$out/manifest.json" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "gemma3_reference: $out is up to date"
  exit 0
fi
rm -rf "$out"
mkdir -p "$out"
"$py" "$script" --gguf "$model" --out "$out"
echo "$want" >"$stamp"
