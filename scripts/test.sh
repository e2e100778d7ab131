#!/usr/bin/env bash
# Builds g4 and runs the whole test suite with ctest; ends with ctest's summary line.
# Golden-logit tests read ../shared/golden when it exists beside the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR="${G4_BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${G4_JOBS:-$(nproc)}" "$@"
