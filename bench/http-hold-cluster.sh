#!/usr/bin/env bash
# The HTTP hold path in cluster mode (PostgreSQL ledger + Redis hot store) with 1 and 2
# nodes, against the embedded mode, in one run. Usage: bench/http-hold-cluster.sh [seconds]
# EDGE_ALGORITHM=eddsa signs the admission tokens with Ed25519 instead of HS256.
# Needs the machine's PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379); creates a
# throw-away database and key prefix and removes both on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-4}"
cargo build --release -q -p boxoffice --bin boxoffice
work=$(mktemp -d)
db="boxoffice_bench_$(date +%s)_$$"
prefix="bb$$"
cleanup() {
  kill $(cat "$work"/*.pid 2>/dev/null) 2>/dev/null || true
  sleep 0.5
  psql -q postgres://postgres@127.0.0.1:5432/test -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  redis-cli --scan --pattern "*$prefix*" | xargs -r -n 500 redis-cli del >/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
psql -q postgres://postgres@127.0.0.1:5432/test -c "CREATE DATABASE $db" >/dev/null
key="bench-operator-key-0123456789"
printf 'operator_key = "%s"\npayments = "fake"\nredis_prefix = "%s"\n[engine]\nadmission_interval_ms = 100\n[tokens]\nedge_algorithm = "%s"\n[buyers]\nself_signup = true\n[buyers.signup_per_address]\nper_s = 0\nburst = 0\n' "$key" "$prefix" "${EDGE_ALGORITHM:-hs256}" > "$work/boxoffice.toml"
cluster=(--ledger "postgres://postgres@127.0.0.1:5432/$db" --hot redis://127.0.0.1:6379)

start() { # name args... -> base URL
  local name=$1; shift
  BOXOFFICE_LOG=warn "${CARGO_TARGET_DIR:-target}/release/boxoffice" serve --listen 127.0.0.1:0 --config "$work/boxoffice.toml" "$@" > "$work/$name.out" 2>/dev/null &
  echo $! > "$work/$name.pid"
  for _ in $(seq 200); do
    addr=$(grep -o 'listening on http://[0-9.:]*' "$work/$name.out" 2>/dev/null | head -1 | cut -d' ' -f3) || true
    [ -n "${addr:-}" ] && { echo "$addr"; return; }
    sleep 0.1
  done
  echo "server $name did not start" >&2; exit 1
}

load() { # label conns url... : one wrk per URL, connections split evenly, req/s summed
  local label=$1 conns=$2; shift 2
  local per=$((conns / $#)) i=0
  event=$(python3 bench/prepare.py "$1" "$key" 250000 6000 "$work/tokens")
  for url in "$@"; do
    SALT="$RANDOM$i" TOKENS="$work/tokens" EVENT="$event" SECTION=GA wrk -t1 -c"$per" -d"${secs}s" --timeout 10s -s bench/hold.lua "$url" > "$work/wrk.$i" &
    i=$((i + 1))
  done
  wait
  sleep 0.2
  total=$(awk '/Requests\/sec/ {s += $2} END {printf "%.0f", s}' "$work"/wrk.*)
  p99=$(grep -h '^p50' "$work"/wrk.* | head -1)
  printf '%-22s c=%-4s %8s req/s   %s\n' "$label" "$conns" "$total" "$p99"
  rm -f "$work"/wrk.*
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
EMB=$(start embedded --data-dir "$work/embedded")
load "embedded" 256 "$EMB"
kill "$(cat "$work/embedded.pid")"; rm "$work/embedded.pid"
N1=$(start node1 --data-dir "$work/shared" "${cluster[@]}")
load "cluster, 1 node" 256 "$N1"
N2=$(start node2 --data-dir "$work/shared" "${cluster[@]}")
load "cluster, 2 nodes" 256 "$N1" "$N2"
