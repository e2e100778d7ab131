#!/usr/bin/env bash
# The main job for now: build, write a small synthetic Gemma 4 checkpoint, run one forward pass.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
OUT="${G4_DEMO_DIR:-/tmp/g4-demo-tiny}"
build/g4 make-model --preset tiny --dtype bf16 --seed 1 --out "$OUT"
build/g4 logits --model "$OUT" --ids 2,17,33,101,7 --out "$OUT/logits.f32"
