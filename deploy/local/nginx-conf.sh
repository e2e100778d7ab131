#!/usr/bin/env bash
# Writes PREFIX/nginx.conf from nginx.conf.in: nginx listening on LISTEN ([host:]port) in front
# of the g4 replicas at the given ports on 127.0.0.1. PREFIX also holds nginx's pid, log and
# temp folders.
#   deploy/local/nginx-conf.sh PREFIX LISTEN PORT [PORT ...]
set -euo pipefail
if (($# < 3)); then
  echo "usage: $0 PREFIX LISTEN PORT [PORT ...]" >&2
  exit 2
fi
prefix="$(realpath -m "$1")"
listen="$2"
shift 2
mkdir -p "$prefix"
servers=""
for port in "$@"; do
  # One failure takes a replica out for 10 s: a draining or dead replica is not retried per request.
  servers+="    server 127.0.0.1:$port max_fails=1 fail_timeout=10s;"$'\n'
done
template="$(dirname "$0")/nginx.conf.in"
while IFS= read -r line; do
  if [[ "$line" == "@SERVERS@" ]]; then
    printf '%s' "$servers"
  else
    line="${line//@PREFIX@/$prefix}"
    printf '%s\n' "${line//@LISTEN@/$listen}"
  fi
done <"$template" >"$prefix/nginx.conf"
echo "$prefix/nginx.conf"
