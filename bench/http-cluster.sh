#!/usr/bin/env bash
# Holds or joins through HTTP in the embedded mode and in cluster mode with 1, 2 and 3
# nodes sharing PostgreSQL and Redis, against a bare axum endpoint answering a document
# of the same size, in one run; with each server's CPU time per request (user + system,
# from /proc), Redis's own, and the scripts Redis ran per request (INFO commandstats
# before and after, so it includes the nodes' background work in that time).
# Usage: bench/http-cluster.sh hold|join [seconds].
#   hold: best-available GA holds with admitted buyers' tokens (bench/hold.lua), a fresh
#         250,000-unit event per row (bench/prepare.py); then, unless REDIS_BASELINE=0,
#         `cargo bench -p boxoffice-store-redis --bench arbiter`, which runs
#         redis-benchmark EVALSHA of the hold script on the same Redis.
#   join: every join a distinct buyer's first (bench/join.lua), a fresh event per row;
#         the buyer tokens (BUYERS, default 40,000 a second of run) are made before the
#         runs by one node (bench/mint.lua) whose signing key every node shares.
# CONNS (256), NODES ("1 2 3"), NO_BUILD=1 with BIN_DIR as in bench/http-hold.sh;
# METRICS_OUT=dir keeps each server's /metrics after its row.
# Creates a throw-away database and key prefix and removes both on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
workload="${1:-}"
case "$workload" in hold | join) ;; *) echo "usage: bench/http-cluster.sh hold|join [seconds]" >&2; exit 2 ;; esac
secs="${2:-5}"
conns="${CONNS:-256}"
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -q -p boxoffice --bin boxoffice --example bare_axum
bin="${BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}"
buyers="${BUYERS:-$((40000 * secs))}"
ticks=$(getconf CLK_TCK)
work=$(mktemp -d)
. bench/lib.sh
db="boxoffice_bench_$(date +%s)_$$"
prefix="bj$$"
cleanup() {
  stop_servers
  sleep 0.5
  psql -q postgres://postgres@127.0.0.1:5432/test -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  redis-cli --scan --pattern "*$prefix*" | xargs -r -n 500 redis-cli del >/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
psql -q postgres://postgres@127.0.0.1:5432/test -c "CREATE DATABASE $db" >/dev/null
key="bench-operator-key-0123456789"
# Joins and holds from one address without the per-address and per-buyer rates (each
# prepared buyer holds again and again); sign-up open.
printf 'operator_key = "%s"\npayments = "fake"\nredis_prefix = "%s"\n[http]\nmax_in_flight_per_address = 4096\n[engine]\nadmission_interval_ms = 100\n[engine.waiting.hold_per_buyer]\nper_s = 0\nburst = 0\n[engine.waiting.join_per_ip]\nper_s = 0\nburst = 0\n[engine.waiting.join_per_buyer]\nper_s = 0\nburst = 0\n[buyers]\nself_signup = true\n[buyers.signup_per_address]\nper_s = 0\nburst = 0\n' "$key" "$prefix" > "$work/boxoffice.toml"
cluster=(--ledger "postgres://postgres@127.0.0.1:5432/$db" --hot redis://127.0.0.1:6379)
redis_pid=$(redis-cli INFO server | tr -d '\r' | awk -F: '$1 == "process_id" {print $2}')

serve() { # name args... -> base URL of a boxoffice node
  local name=$1; shift
  BOXOFFICE_LOG=warn start "$name" "$bin/boxoffice" serve --listen 127.0.0.1:0 --config "$work/boxoffice.toml" "$@"
}
scripts() { redis-cli INFO commandstats | tr -d '\r' | awk -F'[=:,]' '$1 ~ /^cmdstat_(evalsha|eval|fcall)(_ro)?$/ {s += $3} END {print s + 0}'; }
stop() { # name: stops that server and waits for it to go (a restart reuses its data dir)
  local pid; pid=$(cat "$work/$1.pid"); kill "$pid"; rm "$work/$1.pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

load() { # label event url... : one wrk per URL, connections split evenly, req/s summed
  local label=$1 event=$2; shift 2
  local per=$((conns / $#)) i=0 pids=() p threads=$(($# == 1 ? 2 : 1)) tokens
  for p in "$work"/*.pid; do pids+=("$(cat "$p")"); done
  local cpu0 rcpu0 s0
  cpu0=$(ticks_of "${pids[@]}"); rcpu0=$(ticks_of "$redis_pid"); s0=$(scripts)
  for url in "$@"; do
    # Joins: each node its own share of the buyers; holds: the admitted buyers, shared.
    tokens=$([ "$workload" = join ] && echo "$work/tokens.$i" || echo "$work/admitted")
    SALT="$RANDOM$i" THREADS=$threads TOKENS="$tokens" EVENT="$event" SECTION=GA \
      wrk -t$threads -c"$per" -d"${secs}s" --timeout 10s -s "bench/$workload.lua" "$url" > "$work/wrk.$i" &
    i=$((i + 1))
  done
  wait
  if [ -n "${METRICS_OUT:-}" ]; then # each server's /metrics after its row
    mkdir -p "$METRICS_OUT"; i=0
    for url in "$@"; do curl -s -m 5 "$url/metrics" > "$METRICS_OUT/${label// /_}.$i.txt" || true; i=$((i + 1)); done
  fi
  local cpu1 rcpu1 s1
  cpu1=$(ticks_of "${pids[@]}"); rcpu1=$(ticks_of "$redis_pid"); s1=$(scripts)
  local total
  total=$(awk '/^ *[0-9]+ requests in/ {s += $1} END {print s + 0}' "$work"/wrk.*)
  rps=$(awk '/Requests\/sec/ {s += $2} END {printf "%.0f", s}' "$work"/wrk.*)
  python3 - "$label" "$conns" "$rps" "$total" "$((cpu1 - cpu0))" "$((rcpu1 - rcpu0))" "$((s1 - s0))" "$ticks" "$(grep -h '^p50' "$work"/wrk.* | head -1)" <<'PY'
import sys
label, conns, rps, total, cpu, rcpu, scripts, ticks, lat = sys.argv[1:]
total = max(int(total), 1)
us = lambda t: int(t) / int(ticks) / total * 1e6
lat = lat.split("  requests")[0]
print(f"{label:<18} c={conns:<5} {int(rps):>8,} req/s  {total:>8,} requests  server CPU {us(cpu):6.1f} us/req  redis CPU {us(rcpu):5.1f} us/req  scripts/req {int(scripts) / total:4.2f}  {lat}")
PY
  rm -f "$work"/wrk.*
}

split_tokens() { # n -> tokens.0..n-1, the minted tokens dealt round robin
  awk -v n="$1" -v dir="$work" '{print > (dir "/tokens." (NR - 1) % n)}' "$work/tokens"
}

event_on() { # base URL -> a fresh event for the workload (holds: its buyers admitted)
  if [ "$workload" = join ]; then
    python3 bench/join_prepare.py "$1" "$key"
  else
    python3 bench/prepare.py "$1" "$key" 250000 6000 "$work/admitted"
  fi
}

echo "machine: $(machine); ${workload}s, $secs s a row, $conns connections"
BARE=$(start bare "$bin/examples/bare_axum" 127.0.0.1:0)
EMB=$(serve embedded --data-dir "$work/embedded")
if [ "$workload" = join ]; then
  # Buyer tokens, made once by the embedded node: every node of the run shares its
  # signing key, so each row's event is joined by buyers who have not joined it. wrk runs
  # until told to stop: stopped with SIGINT once the tokens are written.
  COUNT=$((buyers / 2 + 1)) OUT="$work/minted" wrk -t2 -c64 -d600s -s bench/mint.lua "$EMB" > /dev/null &
  mint=$!
  for _ in $(seq 1200); do
    [ "$(cat "$work"/minted.* 2>/dev/null | wc -l)" -ge "$buyers" ] && break
    sleep 0.5
  done
  kill -INT "$mint"; wait "$mint" || true
  cat "$work"/minted.* > "$work/tokens"; rm "$work"/minted.*
  [ "$(wc -l < "$work/tokens")" -ge "$buyers" ] || { echo "only $(wc -l < "$work/tokens") of $buyers buyers were made" >&2; exit 1; }
  echo "buyers: $(wc -l < "$work/tokens") tokens; a join answer is $(curl -s -X POST -H 'Idempotency-Key: probe-1' -H "Authorization: Bearer $(head -1 "$work/tokens")" -H 'Content-Type: application/json' -d '{}' "$EMB/v1/events/$(event_on "$EMB")/queue" | wc -c) bytes, bare's $(curl -s -X POST -H 'Content-Type: application/json' -d '{}' "$BARE/v1/events/1/queue" | wc -c)"
  split_tokens 1
else
  event_on "$EMB" > /dev/null # bare's requests need admission tokens of the same shape
fi
mkdir -p "$work/shared"; cp "$work/embedded/signing.key" "$work/shared/"
stop embedded
load "bare axum" 1 "$BARE"
stop bare
EMB=$(serve embedded --data-dir "$work/embedded")
load "embedded" "$(event_on "$EMB")" "$EMB"
stop embedded
urls=()
for n in ${NODES:-1 2 3}; do
  while [ "${#urls[@]}" -lt "$n" ]; do
    urls+=("$(serve "node${#urls[@]}" --data-dir "$work/shared" "${cluster[@]}")")
  done
  [ "$workload" = hold ] || split_tokens "$n"
  load "cluster, $n node$([ "$n" = 1 ] || echo s)" "$(event_on "${urls[0]}")" "${urls[@]}"
done
if [ "$workload" = hold ] && [ "${REDIS_BASELINE:-1}" = 1 ]; then
  stop_servers
  rm -f "$work"/*.pid
  echo "the hold script on the same Redis without HTTP:"
  cargo bench -q -p boxoffice-store-redis --bench arbiter 2>/dev/null | sed 's/^/  /'
fi
