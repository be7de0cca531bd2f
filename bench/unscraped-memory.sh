#!/usr/bin/env bash
# The memory a node keeps per request when nobody scrapes /metrics: the server's
# anonymous resident memory (/proc/PID/status RssAnon) before and after wrk sends
# GET /healthz for a while, after a 3-second warm-up. Every request records a latency
# sample, which the metrics recorder keeps until it is folded into its histogram.
# Usage: bench/unscraped-memory.sh [seconds] (default 30); BOX_BIN=path measures another
# boxoffice binary; NO_BUILD=1 skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs="${1:-30}"
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -q -p boxoffice --bin boxoffice
boxbin="${BOX_BIN:-${CARGO_TARGET_DIR:-target}/release/boxoffice}"
work=$(mktemp -d)
trap 'stop_servers; rm -rf "$work"' EXIT
printf 'operator_key = "bench-operator-key-0123456789"\npayments = "fake"\n' > "$work/boxoffice.toml"
BOX=$(BOXOFFICE_LOG=warn start boxoffice "$boxbin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/boxoffice.toml")
pid=$(cat "$work/boxoffice.pid")
rss() { awk '/^RssAnon/ {print $2}' "/proc/$pid/status"; }
wrk -t2 -c64 -d3s "$BOX/healthz" > /dev/null
before=$(rss)
requests=$(wrk -t2 -c64 -d"${secs}s" "$BOX/healthz" | awk '/requests in/ {print $1}')
after=$(rss)
echo "machine: $(machine)"
python3 -c "print(f'$requests requests in ${secs} s: RssAnon $before -> $after kB, {($after - $before) * 1024 / $requests:.1f} bytes a request')"
