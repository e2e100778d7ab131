#!/usr/bin/env bash
# deploy/docker without a Docker engine (none runs on these machines): the CPU image's runtime
# stage installs the Debian package of every shared library the built g4 needs (its NEEDED
# entries; libc, libstdc++ and libgcc come with debian:12-slim), each Dockerfile builds with
# the CMake options that exist, and both run g4 as a non-root user.
set -uo pipefail
G4="$1"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
CPU="$ROOT/deploy/docker/Dockerfile.cpu"
CUDA="$ROOT/deploy/docker/Dockerfile.cuda"

# The runtime stage: everything after the last FROM.
runtime=$(awk '/^FROM /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$CPU")
base="libc6 libstdc++6 libgcc-s1"
for lib in $(objdump -p "$G4" | awk '/NEEDED/ {print $2}'); do
  # A sanitizer build (scripts/test.sh's asan stage) also needs its runtime; an image never does.
  [[ "$lib" =~ ^lib(a|ub|t|l)san\. ]] && continue
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
  [ -n "$path" ] || fail "cannot find $lib"
  pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)
  [ -n "$pkg" ] || pkg=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1)
  [ -n "$pkg" ] || fail "no Debian package owns $lib ($path)"
  [[ " $base " == *" $pkg "* ]] && continue
  grep -Eq "(^|[[:space:]])$pkg([[:space:]]|\\\\|$)" <<<"$runtime" \
    || fail "Dockerfile.cpu's runtime stage does not install $pkg (for $lib)"
done

for f in "$CPU" "$CUDA"; do
  for opt in $(grep -oE -- '-D(G4_[A-Z_]+)=' "$f" | sort -u | sed 's/^-D//; s/=$//'); do
    grep -rqE "(option|set)\\($opt\\b" "$ROOT/CMakeLists.txt" "$ROOT/cmake" \
      || fail "$(basename "$f") sets $opt, which CMake does not define"
  done
  grep -q '^USER 10001' "$f" || fail "$(basename "$f") does not run as the non-root user"
  grep -q -- '--target g4' "$f" || fail "$(basename "$f") builds more than g4"
done
echo "docker_test: ok"
