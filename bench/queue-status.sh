#!/usr/bin/env bash
# The waiting room's read path under wrk, in one run: the public queue document of
# boxoffice against a bare axum GET of the same size (target >= 90 %), and the personal
# status call (queue ticket verified per request) — at 256 and 2,000 connections.
# Usage: bench/queue-status.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs="${1:-5}"
cargo build --release -q -p boxoffice --bin boxoffice --example bare_status
work=$(mktemp -d)
trap 'stop_servers; rm -rf "$work"' EXIT
key="bench-operator-key-0123456789"
# The per-buyer status limit is off: every wrk connection polls with the same ticket.
printf 'operator_key = "%s"\npayments = "fake"\n[http]\nmax_in_flight_per_address = 4096\n[engine.waiting.status_per_buyer]\nper_s = 0\nburst = 0\n[buyers]\nself_signup = true\n[buyers.signup_per_address]\nper_s = 0\nburst = 0\n' "$key" > "$work/boxoffice.toml"
BOX=$(start box env BOXOFFICE_LOG=warn "${CARGO_TARGET_DIR:-target}/release/boxoffice" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/boxoffice.toml")
BARE=$(start bare "${CARGO_TARGET_DIR:-target}/release/examples/bare_status" 127.0.0.1:0)
read -r event ticket < <(python3 bench/queue_prepare.py "$BOX" "$key" 2000)
echo "machine: $(machine)"
for conns in 256 2000; do
  for target in bare public status; do
    case $target in
      bare) args=("$BARE/v1/events/1/queue") ;;
      public) args=("$BOX/v1/events/$event/queue") ;;
      status) args=(-H "Authorization: Bearer $ticket" "$BOX/v1/queue/status") ;;
    esac
    out=$(wrk -t2 -c"$conns" -d"${secs}s" --timeout 10s --latency "${args[@]}")
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
    printf '%-7s c=%-5s %10s req/s  p99 %s  non-2xx %s\n' "$target" "$conns" "$rps" "$p99" "${non2xx:-0}"
    eval "rps_$target=$rps"
  done
  python3 -c "print(f'ratio c=$conns: public {float($rps_public)/float($rps_bare)*100:.1f} %, personal status {float($rps_status)/float($rps_bare)*100:.1f} % of bare axum')"
done
