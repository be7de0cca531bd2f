#!/usr/bin/env bash
# Instructions per HTTP hold, counted by callgrind: a figure that does not move with
# whatever else the machine is doing, for comparing two builds of the hold path (wall
# clock and CPU time on a shared 2-core machine swing by a third between runs).
# The server runs under valgrind; counting is switched on only while wrk sends holds,
# so start-up and the preparation (buyers, queue, admission) are left out.
# Usage: bench/hold-instructions.sh [connections] [seconds]; BOX_BIN=path measures
# another boxoffice binary (e.g. one built from an earlier commit). Prints the total
# instructions, the holds answered, their quotient, and the top functions (inclusive).
set -euo pipefail
cd "$(dirname "$0")/.."
conns="${1:-8}"
secs="${2:-20}"
bin="${CARGO_TARGET_DIR:-target}/release"
if [ -z "${BOX_BIN:-}" ]; then
  cargo build --release -q -p boxoffice --bin boxoffice
fi
boxbin="${BOX_BIN:-$bin/boxoffice}"
work=$(mktemp -d)
trap 'kill $(cat "$work"/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
key="bench-operator-key-0123456789"
printf 'operator_key = "%s"\npayments = "fake"\n[engine]\nadmission_interval_ms = 100\n[engine.waiting.hold_per_buyer]\nper_s = 0\nburst = 0\n[buyers]\nself_signup = true\n[buyers.signup_per_address]\nper_s = 0\nburst = 0\n' "$key" > "$work/boxoffice.toml"

BOXOFFICE_LOG=warn valgrind --tool=callgrind --collect-atstart=no \
  --callgrind-out-file="$work/callgrind.out" \
  "$boxbin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/boxoffice.toml" \
  > "$work/box.out" 2> "$work/valgrind.err" &
echo $! > "$work/box.pid"
addr=""
for _ in $(seq 600); do
  addr=$(grep -o 'listening on http://[0-9.:]*' "$work/box.out" 2>/dev/null | head -1 | cut -d' ' -f3) || true
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "server did not start under valgrind" >&2; cat "$work/valgrind.err" >&2; exit 1; }
# 400 buyers at 50 tickets each: 20,000 holds before any buyer reaches the limit.
event=$(python3 bench/prepare.py "$addr" "$key" 250000 400 "$work/tokens")
pid=$(cat "$work/box.pid")
callgrind_control -i on "$pid" > /dev/null
out=$(TOKENS="$work/tokens" EVENT="$event" SECTION=GA wrk -t1 -c"$conns" -d"${secs}s" --timeout 30s -s bench/hold.lua "$addr")
callgrind_control -i off "$pid" > /dev/null
callgrind_control -d "$pid" > /dev/null
held=$(curl -s "$addr/v1/events/$event" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"]["held"])')
echo "$out" | grep '^p50'
file=$(ls -t "$work"/callgrind.out* | head -1)
total=$(callgrind_annotate "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
python3 -c "print(f'connections $conns: {$total:,} instructions for $held holds = {$total / max($held, 1):,.0f} per hold')"
callgrind_annotate --inclusive=yes "$file" 2>/dev/null | sed -n '/file:function/,$p' | head -45 | cut -c1-160
