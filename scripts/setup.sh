#!/usr/bin/env bash
# Installs every build and test dependency of g4. Idempotent: safe to run again.
# Engine deps are Debian 12 packages only; the optional oracle venv uses PyPI (see below).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS=(cmake ninja-build g++ pkg-config libhwy-dev nlohmann-json3-dev libcli11-dev
          libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev python3-venv)

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
echo "setup: ok"
