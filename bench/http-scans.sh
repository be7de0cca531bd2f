#!/usr/bin/env bash
# The door under wrk: scans through HTTP (a gate's credential, a fresh Idempotency-Key,
# the barcode's Ed25519 signature checked, the admit written to the ledger) as a ratio to
# a bare axum JSON endpoint measured in the same run, with each server's CPU time per
# request (user + system, from /proc). Two phases over the same sold-out event: first
# scans (each barcode once: every answer an admit) and repeat scans (the same barcodes
# again: every answer 409 already_scanned, counted by wrk as status errors; a first
# phase with status errors ran past the sold tickets and its figure does not count).
# Usage: bench/http-scans.sh [seconds] [tickets]; BOX_BIN=path runs another build.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs="${1:-5}"
tickets="${2:-30000}"
conns="${CONNS:-64}"
cargo build --release -q -p boxoffice --bin boxoffice --example bare_axum
bin="${CARGO_TARGET_DIR:-target}/release"
boxbin="${BOX_BIN:-$bin/boxoffice}"
work=$(mktemp -d)
trap 'stop_servers; rm -rf "$work"' EXIT
key="bench-operator-key-0123456789"
# Sign-up and holds without a rate: the preparation makes hundreds of buyers from one address.
printf 'operator_key = "%s"\npayments = "fake"\n[http]\nmax_in_flight_per_address = 4096\n[engine]\nadmission_interval_ms = 100\n[engine.waiting.hold_per_buyer]\nper_s = 0\nburst = 0\n[buyers]\nself_signup = true\n[buyers.signup_per_address]\nper_s = 0\nburst = 0\n' "$key" > "$work/boxoffice.toml"

BOX=$(BOXOFFICE_LOG=warn start boxoffice "$boxbin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/boxoffice.toml")
BARE=$(start bare "$bin/examples/bare_axum" 127.0.0.1:0)
echo "machine: $(machine); load $(cut -d' ' -f1-3 /proc/loadavg); $conns connections"
read -r event gate < <(python3 bench/scans_prepare.py "$BOX" "$key" "$tickets" "$work/barcodes")
run() { # target phase -> one line; sets rps_<target>
  local target=$1 phase=$2 url # $3: the barcode file
  url=$([ "$target" = bare ] && echo "$BARE" || echo "$BOX")
  local before out used
  before=$(cpu "$target")
  out=$(BARCODES="$work/$3" EVENT="$event" GATE="$gate" wrk -t2 -c"$conns" -d"${secs}s" --timeout 10s -s bench/scan.lua "$url")
  used=$(( $(cpu "$target") - before ))
  measured "$target" "$phase" "$out" "$used"
  eval "rps_$target=$rps"
}
run bare - barcodes
run boxoffice first barcodes
python3 -c "print(f'ratio first scans: {float($rps_boxoffice)/float($rps_bare)*100:.1f} % of bare axum')"
# Only barcodes the first phase surely scanned (it made more than 1,000 requests).
head -n 1000 "$work/barcodes" > "$work/scanned"
run boxoffice repeat scanned
python3 -c "print(f'ratio repeat scans: {float($rps_boxoffice)/float($rps_bare)*100:.1f} % of bare axum')"
