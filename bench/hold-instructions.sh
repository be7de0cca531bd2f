#!/usr/bin/env bash
# What one HTTP hold costs in counts that do not move with whatever else the machine is
# doing, for comparing two builds of the hold path (wall clock and CPU time on a shared
# 2-core machine swing by a third between runs):
#   COUNT=instructions (default): user-space instructions, counted by callgrind. The
#     server runs under valgrind with instrumentation switched on only while wrk sends
#     holds, so start-up and the preparation (buyers, queue, admission) are left out.
#     Valgrind does not run the CPU's SHA extensions: SHA-256 is counted at its portable
#     cost, several times what it costs on a CPU with them.
#   COUNT=syscalls: system calls, counted by strace attached to every thread of the
#     server only while wrk sends holds (the kernel's share, which callgrind leaves out).
# Usage: bench/hold-instructions.sh [connections] [seconds]; BOX_BIN=path measures
# another boxoffice binary (e.g. one built from an earlier commit); KEEP=file keeps the
# callgrind profile. Prints the holds answered and the count per hold, with the top
# functions (inclusive) or the system calls. BARE=1 counts the bare axum baseline of
# bench/http-hold.sh instead (BARE_BIN=path for a build of it elsewhere), under the
# same wrk script, per request.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
conns="${1:-8}"
secs="${2:-20}"
count="${COUNT:-instructions}"
bin="${CARGO_TARGET_DIR:-target}/release"
bare="${BARE:-0}"
if [ "$bare" = 1 ] && [ -z "${BARE_BIN:-}" ]; then
  cargo build --release -q -p boxoffice --example bare_axum
elif [ "$bare" != 1 ] && [ -z "${BOX_BIN:-}" ]; then
  cargo build --release -q -p boxoffice --bin boxoffice
fi
boxbin="${BOX_BIN:-$bin/boxoffice}"
work=$(mktemp -d)
trap 'stop_servers; rm -rf "$work"' EXIT
key="bench-operator-key-0123456789"
printf 'operator_key = "%s"\npayments = "fake"\n[engine]\nadmission_interval_ms = 100\n[engine.waiting.hold_per_buyer]\nper_s = 0\nburst = 0\n[buyers]\nself_signup = true\n[buyers.signup_per_address]\nper_s = 0\nburst = 0\n[http]\nrequest_timeout_ms = 600000\nmax_in_flight_per_address = 4096\n' "$key" > "$work/boxoffice.toml"

case "$count" in
  instructions) wrap=(valgrind --tool=callgrind --instr-atstart=no "--callgrind-out-file=$work/callgrind.out") ;;
  syscalls) wrap=() ;;
  *) echo "COUNT is instructions or syscalls, not $count" >&2; exit 2 ;;
esac
if [ "$bare" = 1 ]; then
  "${wrap[@]}" "${BARE_BIN:-$bin/examples/bare_axum}" 127.0.0.1:0 > "$work/box.out" 2> "$work/box.err" &
else
  BOXOFFICE_LOG="${BOXOFFICE_LOG:-warn}" "${wrap[@]}" "$boxbin" serve --listen 127.0.0.1:0 --data-dir "$work/data" \
    --config "$work/boxoffice.toml" > "$work/box.out" 2> "$work/box.err" &
fi
echo $! > "$work/box.pid"
pid=$(cat "$work/box.pid")
addr=$(listening "$work/box.out" 600) || { echo "the server did not start" >&2; cat "$work/box.err" >&2; exit 1; }
if [ "$bare" = 1 ]; then
  # Bare axum reads no token: 400 of an admission token's length, and any event.
  python3 -c 'for i in range(400): print(f"t{i:03d}" + "x" * 287)' > "$work/tokens"
  event=1
  held() { echo 0; }
else
  # Under valgrind the start-up work after the listener opens takes seconds: wait for ready.
  for _ in $(seq 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$addr/readyz")" = 200 ] && break
    sleep 0.2
  done
  # 400 buyers at 50 tickets each: 20,000 holds before any buyer reaches the limit, in an
  # event of 30,000 units (making a larger one takes minutes under valgrind).
  event=$(python3 bench/prepare.py "$addr" "$key" 30000 400 "$work/tokens")
  held() { curl -s "$addr/v1/events/$event" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"]["held"])'; }
fi
before=$(held)
if [ "$count" = instructions ]; then
  callgrind_control -i on "$pid" > /dev/null 2>&1
else
  strace -f -c -p "$pid" -o "$work/strace.out" 2> /dev/null &
  echo $! > "$work/strace.pid"
  sleep 1
fi
out=$(TOKENS="$work/tokens" EVENT="$event" SECTION=GA wrk -t1 -c"$conns" -d"${secs}s" --timeout 30s -s bench/hold.lua "$addr")
if [ "$count" = instructions ]; then
  callgrind_control -i off "$pid" > /dev/null 2>&1
  callgrind_control -d "$pid" > /dev/null 2>&1
  # The dump is written at the server's next scheduled valgrind check: wait for it.
  for _ in $(seq 300); do
    ls "$work"/callgrind.out.* > /dev/null 2>&1 && break
    sleep 0.2
  done
  sleep 1
else
  kill -INT "$(cat "$work/strace.pid")"
  wait "$(cat "$work/strace.pid")" 2> /dev/null || true
  rm "$work/strace.pid"
fi
holds=$(( $(held) - before ))
echo "$out" | grep '^p50'
requests=$(echo "$out" | sed -n 's/.*requests \([0-9][0-9]*\).*/\1/p')
# Bare axum keeps no count of its own: each answered request is its "hold".
[ "$bare" = 1 ] && holds=$requests
[ "$requests" = "$holds" ] || echo "warning: $requests requests but $holds holds (a buyer at the limit?): shorten the run" >&2
if [ "$count" = instructions ]; then
  file=$(ls -t "$work"/callgrind.out.* | head -1)
  [ -n "${KEEP:-}" ] && cp "$file" "$KEEP"
  total=$(callgrind_annotate "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  python3 -c "print(f'connections $conns: {$total:,} instructions for $holds holds = {$total / max($holds, 1):,.0f} per hold')"
  callgrind_annotate --inclusive=yes "$file" 2>/dev/null | sed -n '/file:function/,$p' | head -45 | cut -c1-160
else
  total=$(awk '$NF == "total" {print $4}' "$work/strace.out")
  python3 -c "print(f'connections $conns: {$total:,} system calls for $holds holds = {$total / max($holds, 1):.2f} per hold')"
  awk -v n="$holds" 'NR > 2 && $NF != "total" && $1 !~ /^-/ { printf "  %-16s %8d calls  %.2f per hold\n", $NF, $4, $4 / n }' "$work/strace.out" | sort -k2 -n -r | head -12
fi
