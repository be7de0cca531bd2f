#!/usr/bin/env bash
# Redis's own cost of a hot hold script, per call, on a throw-away redis-server on a free
# loopback port: usec_per_call from INFO commandstats (bench/script_cost.py), or with
# COUNT=instructions the redis-server's instructions per hold under callgrind, which do
# not depend on what else the machine runs.
# Usage: bench/redis-script-cost.sh [claimed-hold|hold] [holds]
#   claimed-hold (default): ClaimedHolds::hold's script and the replay's finish after it;
#   hold: SeatArbiter::hold's (the script the arbiter bench gives redis-benchmark).
# SOURCE=file measures that script source instead of this checkout's (another build's,
# printed by its `script_source` example). WARM and FINISH as in bench/script_cost.py.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-claimed-hold}"
holds="${2:-20000}"
work=$(mktemp -d)
pid=
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if [ -z "${SOURCE:-}" ]; then
  cargo build -q -p boxoffice-store-redis --example script_source
  "${CARGO_TARGET_DIR:-target}/debug/examples/script_source" "$kind" > "$work/script.lua"
  SOURCE="$work/script.lua"
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=(redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work")
if [ "${COUNT:-}" = instructions ]; then
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "${server[@]}" > "$work/vg.log" 2>&1 &
else
  "${server[@]}" > "$work/redis.log" 2>&1 &
fi
pid=$!
for _ in $(seq 300); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.1; done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(redis-server --version | cut -d' ' -f1-3)"
if [ "${COUNT:-}" = instructions ]; then
  CALLGRIND_PID=$pid python3 bench/script_cost.py "$port" "$SOURCE" "$kind" "$holds"
  # The last dump holds the measured holds only (each dump starts where the last ended).
  last=$(ls -t "$work"/cg.out.* | head -1)
  total=$(callgrind_annotate "$last" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  echo "redis-server instructions per hold: $((total / holds)) (callgrind, $holds holds)"
else
  python3 bench/script_cost.py "$port" "$SOURCE" "$kind" "$holds"
fi
