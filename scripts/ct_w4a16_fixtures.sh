#!/usr/bin/env bash
# The ctest fixture of tests/model/ct_w4a16_test.cc: writes checkpoints quantized and compressed
# by compressed-tensors, with transformers' logits, into OUT (scripts/make_ct_w4a16_fixtures.py;
# about 20 s, remade only when the scripts change). Without .venv-test or compressed_tensors in it
# (scripts/setup.sh installs both) it says so and exits 77, which ctest reports as Skipped; under
# CI (env CI set) it fails instead.
#   scripts/ct_w4a16_fixtures.sh REPO OUT
set -uo pipefail
repo="$1"
out="$2"
py="$repo/.venv-test/bin/python"
script="$repo/scripts/make_ct_w4a16_fixtures.py"
skip() {
  echo "ct_w4a16: $1; the compressed-tensors W4A16 tests skip"
  [ -z "${CI:-}" ] && exit 77
  exit 1
}
[ -x "$py" ] || skip "$repo/.venv-test is missing (run scripts/setup.sh)"
"$py" -c "import compressed_tensors" 2>/dev/null ||
  skip ".venv-test lacks compressed_tensors (run scripts/setup.sh)"
stamp="$out/.g4-stamp"
want="$(cat "$script" "$repo/scripts/make_reference.py" "$repo/scripts/oracle_common.py" |
  sha256sum | cut -c1-16)"
if [ -f "$out/channel/logits.f32" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "ct_w4a16: $out is up to date"
  exit 0
fi
rm -rf "$out"
mkdir -p "$out"
"$py" "$script" "$out" || exit 1
echo "$want" >"$stamp"
