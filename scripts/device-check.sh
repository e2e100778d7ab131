#!/usr/bin/env bash
# The CUDA backend's device check (issue #7), for a machine with an NVIDIA GPU; one call of at
# most ~9 minutes on a 16-core H200 box:
#   1. configure + build with CUDA for one architecture (default 90; G4_DC_ARCH=89 for an L4,
#      75 for a T4), Ninja -j$(nproc);
#   2. g4_cuda_tests (policy and tile tests, then every GPU kernel test against the ref kernels)
#      and the golden-logit tests on the cuda backend (they need ../shared/golden);
#   3. HBM copy bandwidth (g4_cuda_bandwidth), then `g4 bench --backend cuda` on synthetic e2b
#      checkpoints, bf16 and W4A16: prefill of a 521-token prompt, decode at batch 1 and 8 with
#      decode steps replayed from CUDA graphs, bf16 batch 1 op by op (--graphs=false), and
#      W4A16 batch 1 without programmatic dependent launch (G4_CUDA_PDL=0);
#   4. a short table: tok/s and decode as % of the HBM roofline (measured copy bandwidth /
#      weight bytes read per token).
# Each step has a time limit and the script goes on after a failure, so one broken step still
# leaves the others' results; the exit status is non-zero when any step failed.
# Env: G4_DC_BUILD (build dir, build-device), G4_DC_ARCH (90), G4_DC_TMP (/tmp/g4-device-check),
#      G4_DC_DECODE (decode steps, 32).
set -u
cd "$(dirname "$0")/.."
BUILD=${G4_DC_BUILD:-build-device}
ARCH=${G4_DC_ARCH:-90}
TMP=${G4_DC_TMP:-/tmp/g4-device-check}
DECODE=${G4_DC_DECODE:-32}
JOBS=$(nproc)
mkdir -p "$TMP"
failed=()
t0=$SECONDS
step() {  # step NAME LIMIT_S CMD...: runs CMD with a time limit, logs to $TMP/NAME.log
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit ${limit}s, at $((SECONDS - t0))s)"
  if timeout "$limit" "$@" >"$TMP/$name.log" 2>&1; then
    tail -n 3 "$TMP/$name.log"
  else
    echo "!! $name failed (exit $?); last lines of $TMP/$name.log:"
    tail -n 25 "$TMP/$name.log"
    failed+=("$name")
  fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true

step configure 120 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DG4_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH"
step build 300 cmake --build "$BUILD" -j "$JOBS" --target g4 g4_cuda_tests g4_model_tests \
  g4_cuda_bandwidth
step cuda_tests 120 "$BUILD/g4_cuda_tests"
grep -E "PASSED|FAILED|SKIPPED" "$TMP/cuda_tests.log" | head -20
if [ -d ../shared/golden ]; then
  step golden_cuda 120 "$BUILD/g4_model_tests" --gtest_filter='*GoldenTest*cuda*'
  grep -E "PASSED|FAILED|SKIPPED" "$TMP/golden_cuda.log" | head -10
else
  echo "== golden_cuda skipped: no ../shared/golden beside the repo"
fi
step bandwidth 60 "$BUILD/g4_cuda_bandwidth" 2048
cat "$TMP/bandwidth.log"
copy_gbs=$(sed -n 's/.*copy_gbs=\([0-9.]*\).*/\1/p' "$TMP/bandwidth.log")
theo_gbs=$(sed -n 's/.*theoretical_gbs=\([0-9.]*\).*/\1/p' "$TMP/bandwidth.log")

# Synthetic e2b checkpoints (random weights, real shapes): what is measured is speed only.
step make_bf16 180 "$BUILD/g4" make-model --preset e2b --out "$TMP/e2b-bf16"
step make_w4a16 180 "$BUILD/g4" make-model --preset e2b --quant w4a16 --out "$TMP/e2b-w4a16"
# --head bf16: the int8 head copy (the W4A16 default) would run on the CPU kernel.
for m in bf16 w4a16; do
  for b in 1 8; do
    if [ -d "$TMP/e2b-$m" ]; then
      step "bench_${m}_b$b" 150 "$BUILD/g4" bench --backend cuda --model "$TMP/e2b-$m" \
        --contexts 521 --decode "$DECODE" --batch "$b" --head bf16 --json "$TMP/bench_${m}_b$b.json"
      grep -E "policy|^ *521|decode steps" "$TMP/bench_${m}_b$b.log"
    fi
  done
done
if [ -d "$TMP/e2b-bf16" ]; then  # what the graphs gain: the same decode, op by op
  step bench_bf16_b1_ops 150 "$BUILD/g4" bench --backend cuda --model "$TMP/e2b-bf16" \
    --contexts 521 --decode "$DECODE" --batch 1 --head bf16 --graphs=false \
    --json "$TMP/bench_bf16_b1_ops.json"
  grep -E "^ *521|decode steps" "$TMP/bench_bf16_b1_ops.log"
fi
if [ -d "$TMP/e2b-w4a16" ]; then  # what programmatic dependent launch gains (SM 9.0): PDL off
  step bench_w4a16_b1_nopdl 150 env G4_CUDA_PDL=0 "$BUILD/g4" bench --backend cuda \
    --model "$TMP/e2b-w4a16" --contexts 521 --decode "$DECODE" --batch 1 --head bf16 \
    --json "$TMP/bench_w4a16_b1_nopdl.json"
  grep -E "policy|^ *521|decode steps" "$TMP/bench_w4a16_b1_nopdl.log"
fi

echo
echo "== summary (HBM copy ${copy_gbs:-?} GB/s measured, ${theo_gbs:-?} GB/s theoretical)"
python3 - "$TMP" "${copy_gbs:-0}" <<'PY' || echo "(python3 missing: see $TMP/bench_*.json)"
import json, os, sys
tmp, copy_gbs = sys.argv[1], float(sys.argv[2])
print(f"{'model':12} {'batch':>5} {'prefill521 t/s':>15} {'decode t/s':>11} {'GB/token':>9} "
      f"{'roofline t/s':>13} {'% roofline':>10}  decode steps")
# Batch 8: decode t/s counts all 8 sequences; % roofline is of the step rate (one weight read
# per step), so 100% means the weights stream at copy bandwidth whatever the batch.
for m, b, tag in (("bf16", 1, ""), ("bf16", 8, ""), ("w4a16", 1, ""), ("w4a16", 8, ""),
                  ("bf16", 1, "_ops"), ("w4a16", 1, "_nopdl")):
    p = os.path.join(tmp, f"bench_{m}_b{b}{tag}.json")
    if not os.path.exists(p):
        print(f"{m + tag:12} {b:5} (no result)")
        continue
    j = json.load(open(p))
    r = j["runs"][0]
    gb = j["decode_weight_bytes_per_token"] / 1e9
    roof = copy_gbs / gb if gb > 0 else 0
    pct = 100 * r["decode_tok_s"] / b / roof if roof > 0 else 0
    graphs = j.get("decode_graphs", {}).get("summary", "?")
    print(f"{m + tag:12} {b:5} {r['prefill_tok_s']:15.1f} {r['decode_tok_s']:11.2f} {gb:9.3f} "
          f"{roof:13.1f} {pct:9.1f}%  {graphs}")
PY
echo "total $((SECONDS - t0)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED steps: ${failed[*]}"
  exit 1
fi
