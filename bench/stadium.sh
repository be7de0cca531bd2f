#!/usr/bin/env bash
# The whole on-sale through HTTP against one embedded server on loopback: a fresh
# event of SEATS units sold to BUYERS, half of them in a 10-second rush before the
# opening (docs/BENCHMARKS.md, "A stadium"). The server runs the default config but
# for its operator key, the stand-in provider and 127.0.0.1/32 as a trusted proxy (so
# each buyer counts as an address of its own). Every second the server's and the
# generator's CPU time and the machine's are sampled, and the ledger writer thread's
# time on a CPU and waiting for one, and every 5 s the server's
# /metrics, so where the time went can be read afterwards.
#
# Usage: bench/stadium.sh [seats] [buyers] [tail_tau_s] [tail_s]
#   (default 51,000 seats, 200,000 buyers, 30, 120)
# NODES=n (n >= 1) runs cluster mode instead: n nodes sharing a throw-away PostgreSQL
# database (127.0.0.1:5432, dropped on exit) and Redis (127.0.0.1:6379, under a key
# prefix of the run's, deleted on exit); the crowd spreads over the nodes, and cpu.txt's
# server column sums the nodes, every PostgreSQL process and Redis (run nothing else on
# them meanwhile).
# BOX_BIN=path runs a binary already built (default: a release build of this tree).
# MAX_DURATION_S bounds the run (default 600). EVENT_RATE is the event's admission rate
# (default 2000 a second); REHEARSE_ARGS adds arguments to `boxoffice rehearse` (for
# example "--max-active-shoppers 3000"); CONFIG_EXTRA is appended to the server's
# config file (for example "[engine]\nmax_poll_after_ms = 3000"). Everything lands in $OUT (default a
# temporary directory): the report (report.html, report.json), cpu.txt (time, server
# ticks, generator ticks, the machine's /proc/stat line), writer.txt (time, the writer's
# nanoseconds running and waiting to run, its time slices), metrics.*.txt, server.out.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
seats="${1:-51000}"
buyers="${2:-200000}"
tau="${3:-30}"
tail="${4:-120}"
if [ -n "${BOX_BIN:-}" ]; then
  bin="$BOX_BIN"
else
  cargo build -q --release -p boxoffice --bin boxoffice
  bin="${CARGO_TARGET_DIR:-target}/release/boxoffice"
fi
work=$(mktemp -d)
out="${OUT:-$work/out}"
mkdir -p "$out"
nodes="${NODES:-0}"
db="boxoffice_stadium_$(date +%s)_$$"
prefix="stadium$$"
cleanup() {
  stop_servers
  if [ "$nodes" -gt 0 ]; then
    sleep 0.5
    psql -q postgres://postgres@127.0.0.1:5432/test -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    redis-cli --scan --pattern "$prefix*" | xargs -r -n 500 redis-cli del >/dev/null || true
  fi
  rm -rf "$work/data"
}
trap cleanup EXIT
key="bench-operator-key-0123456789"
printf 'operator_key = "%s"\npayments = "fake"\nredis_prefix = "%s"\n[http]\ntrusted_proxies = ["127.0.0.1/32"]\nmax_in_flight_per_address = 4096\n' "$key" "$prefix" > "$work/boxoffice.toml"
printf '%b\n' "${CONFIG_EXTRA:-}" >> "$work/boxoffice.toml"
targets=()
if [ "$nodes" -gt 0 ]; then
  psql -q postgres://postgres@127.0.0.1:5432/test -c "CREATE DATABASE $db" >/dev/null
  cluster=(--ledger "postgres://postgres@127.0.0.1:5432/$db" --hot redis://127.0.0.1:6379)
  for i in $(seq 0 $((nodes - 1))); do
    url=$(start "node$i" "$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/boxoffice.toml" "${cluster[@]}")
    targets+=(--target "$url")
    [ "$i" = 0 ] && base=$url
  done
  redis_pid=$(redis-cli INFO server | tr -d '\r' | awk -F: '$1 == "process_id" {print $2}')
else
  base=$(start server "$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/boxoffice.toml")
  targets=(--target "$base")
fi
server_ticks() { # the server's CPU so far: the embedded process, or the nodes, PostgreSQL and Redis
  if [ "$nodes" -eq 0 ]; then cpu server; return; fi
  local pids=() p
  for p in "$work"/node*.pid; do pids+=("$(cat "$p")"); done
  pids+=("$redis_pid")
  pids+=($(pgrep -x postgres || true))
  local t=0
  for p in "${pids[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo "$t"
}
echo "machine: $(machine); server $base"

"$bin" rehearse "${targets[@]}" --operator-key "$key" --payments fake \
  --seats "$seats" --buyers "$buyers" --rush-share 0.5 --rush-s 10 --tail-tau-s "$tau" \
  --tail-s "$tail" --event-rate "${EVENT_RATE:-2000}" --max-duration-s "${MAX_DURATION_S:-600}" \
  ${REHEARSE_ARGS:-} --quiet --out "$out/report" > "$out/rehearse.out" 2>&1 &
gen=$!
tick=0
while kill -0 "$gen" 2>/dev/null; do
  g=$(awk '{print $14 + $15}' "/proc/$gen/stat" 2>/dev/null || echo -)
  echo "$(date +%s.%N) $(server_ticks) $g $(head -1 /proc/stat)" >> "$out/cpu.txt"
  # The ledger writer thread (found once): nanoseconds on a CPU and waiting for one.
  if [ -z "${writer:-}" ]; then
    for t in /proc/"$(cat "$work"/server.pid "$work"/node0.pid 2>/dev/null | head -1)"/task/*; do
      [ "$(cat "$t/comm" 2>/dev/null)" = ledger-writer ] && writer=$t
    done
  fi
  [ -n "${writer:-}" ] && echo "$(date +%s.%N) $(cat "$writer/schedstat" 2>/dev/null)" >> "$out/writer.txt"
  if [ $((tick % 5)) -eq 0 ]; then
    curl -s -m 4 "$base/metrics" > "$out/metrics.$(date +%s).txt" || true
  fi
  tick=$((tick + 1))
  sleep 1
done
wait "$gen" || true
curl -s -m 10 "$base/metrics" > "$out/metrics.final.txt" || true
echo "server CPU: $(server_ticks) ticks"
cp "$work"/*.out "$out/"
tail -3 "$out/rehearse.out"
echo "reports in $out"
