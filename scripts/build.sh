#!/usr/bin/env bash
# Configures and builds g4 (Release, Ninja) into build/. Extra arguments go to the configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${G4_BUILD_DIR:-build}"
JOBS="${G4_JOBS:-$(nproc)}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${G4_BUILD_TYPE:-Release}" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
