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
trap 'stop_servers; rm -rf "$work/data"' EXIT
key="bench-operator-key-0123456789"
printf 'operator_key = "%s"\npayments = "fake"\n[http]\ntrusted_proxies = ["127.0.0.1/32"]\n' "$key" > "$work/boxoffice.toml"
printf '%b\n' "${CONFIG_EXTRA:-}" >> "$work/boxoffice.toml"
base=$(start server "$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/boxoffice.toml")
echo "machine: $(machine); server $base"

"$bin" rehearse --target "$base" --operator-key "$key" --payments fake \
  --seats "$seats" --buyers "$buyers" --rush-share 0.5 --rush-s 10 --tail-tau-s "$tau" \
  --tail-s "$tail" --event-rate "${EVENT_RATE:-2000}" --max-duration-s "${MAX_DURATION_S:-600}" \
  ${REHEARSE_ARGS:-} --quiet --out "$out/report" > "$out/rehearse.out" 2>&1 &
gen=$!
tick=0
while kill -0 "$gen" 2>/dev/null; do
  g=$(awk '{print $14 + $15}' "/proc/$gen/stat" 2>/dev/null || echo -)
  echo "$(date +%s.%N) $(cpu server) $g $(head -1 /proc/stat)" >> "$out/cpu.txt"
  # The ledger writer thread (found once): nanoseconds on a CPU and waiting for one.
  if [ -z "${writer:-}" ]; then
    for t in /proc/"$(cat "$work/server.pid")"/task/*; do
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
echo "server CPU: $(cpu server) ticks"
cp "$work/server.out" "$out/server.out"
tail -3 "$out/rehearse.out"
echo "reports in $out"
