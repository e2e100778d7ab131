#!/usr/bin/env bash
# N g4 replicas on one machine behind nginx (Debian's package): one replica per NUMA node when
# numactl is installed and the machine has N nodes (each replica's threads and memory on its own
# node), else N replicas sharing the cores (give each --threads). Ctrl-C or SIGTERM drains every
# replica (each finishes its running requests) and stops nginx.
#   deploy/local/replicas.sh --model M [--replicas N] [--port 8080] [--g4 build/g4]
#                            [--prefix DIR] [-- extra g4 serve flags]
set -euo pipefail
G4=build/g4
MODEL=""
REPLICAS=2
PORT=8080
PREFIX="${TMPDIR:-/tmp}/g4-replicas"
while (($#)); do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --replicas) REPLICAS="$2"; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    --g4) G4="$2"; shift 2 ;;
    --prefix) PREFIX="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "replicas.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$MODEL" ] || { echo "replicas.sh: --model is required" >&2; exit 2; }
command -v nginx >/dev/null || { echo "replicas.sh: nginx not found (apt-get install nginx)" >&2; exit 1; }

mkdir -p "$PREFIX"
nodes=1
if command -v numactl >/dev/null; then
  nodes=$(numactl --hardware | sed -n 's/^available: \([0-9]*\) nodes.*/\1/p')
fi
pids=()
ports=()
for ((i = 0; i < REPLICAS; i++)); do
  port=$((PORT + 1 + i))
  pin=()
  ((nodes == REPLICAS)) && pin=(numactl --cpunodebind="$i" --membind="$i")
  "${pin[@]}" "$G4" serve --model "$MODEL" --port "$port" "$@" 2>"$PREFIX/replica$i.log" &
  pids+=($!)
  ports+=("$port")
done
conf=$("$(dirname "$0")/nginx-conf.sh" "$PREFIX" "$PORT" "${ports[@]}")
nginx -c "$conf" -g 'daemon off;' &
nginx_pid=$!
stop() {
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  kill -QUIT "$nginx_pid" 2>/dev/null || true
  wait "$nginx_pid" 2>/dev/null || true
}
trap stop INT TERM
echo "replicas.sh: nginx on :$PORT -> ${ports[*]} (logs: $PREFIX/replica*.log)" >&2
wait "$nginx_pid"
