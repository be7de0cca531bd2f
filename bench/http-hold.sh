#!/usr/bin/env bash
# The HTTP hold path under wrk, as a ratio to a bare axum JSON endpoint measured in the
# same run, at 256 and 2,000 connections, with each server's CPU time per request (user +
# system, from /proc). Usage: bench/http-hold.sh [seconds]; CONNS="256" picks the
# connection counts and BUYERS the admitted buyers (6,000); BOX_BIN=path runs another
# boxoffice binary (e.g. one built from an earlier commit) against the same bare baseline.
# EDGE_ALGORITHM=eddsa signs the admission tokens with Ed25519 instead of HS256 (the
# `[tokens] edge_algorithm` setting), to measure the hold path with EdDSA tokens.
# PROOFS=1 makes the event require proofs of possession (docs/ARCHITECTURE.md §14): every
# hold carries a fresh Ed25519 DPoP proof, signed ahead by bench/prepare.py (python's
# `cryptography` package; wrk cannot sign) right before the boxoffice run, one per
# request (PROOFS_PER_S × seconds of them, default 40,000 a second), each used once.
# SLICES=k measures each server k times, in turns (bare, hold, bare, hold, …), each slice
# the given seconds, and gives the ratio of the totals: on a shared machine whose speed
# drifts from second to second, the two servers then see the same machine, where one
# slice each sees whatever the machine was doing at the time. The event (250,000 units)
# must hold every slice's holds: at 50-80 K holds a second, `SLICES=3 … http-hold.sh 1`.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs="${1:-5}"
# NO_BUILD=1 with BIN_DIR=dir uses binaries built before (boxoffice and examples/bare_axum).
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -q -p boxoffice --bin boxoffice --example bare_axum
bin="${BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}"
boxbin="${BOX_BIN:-$bin/boxoffice}"
ticks=$(getconf CLK_TCK)
work=$(mktemp -d)
trap 'stop_servers; rm -rf "$work"' EXIT
key="bench-operator-key-0123456789"
edge="${EDGE_ALGORITHM:-hs256}"
proofs="${PROOFS:-0}"
if [ "$proofs" = 1 ]; then
  python3 -c 'import cryptography' 2>/dev/null || { echo "PROOFS=1 needs python3's cryptography package" >&2; exit 1; }
fi
# Self sign-up without a rate: prepare.py makes thousands of buyers from one address.
# Holds without a per-buyer rate: each prepared buyer holds again and again, and refusals
# (cheap) would otherwise fill the run and flatter the faster server.
printf 'operator_key = "%s"\npayments = "fake"\n[http]\nmax_in_flight_per_address = 4096\n[engine]\nadmission_interval_ms = 100\n[engine.waiting.hold_per_buyer]\nper_s = 0\nburst = 0\n[tokens]\nedge_algorithm = "%s"\n[buyers]\nself_signup = true\n[buyers.signup_per_address]\nper_s = 0\nburst = 0\n' "$key" "$edge" > "$work/boxoffice.toml"

BOX=$(BOXOFFICE_LOG="${BOXOFFICE_LOG:-warn}" start boxoffice "$boxbin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/boxoffice.toml")
BARE=$(start bare "$bin/examples/bare_axum" 127.0.0.1:0)
echo "machine: $(machine); admission tokens: $edge; proofs of possession: $([ "$proofs" = 1 ] && echo required || echo off)"
for conns in ${CONNS:-256 2000}; do
  keys=$([ "$proofs" = 1 ] && echo "$work/keys" || echo "")
  event=$(python3 bench/prepare.py "$BOX" "$key" 250000 "${BUYERS:-6000}" "$work/tokens" $keys)
  declare -A rps_sum=([bare]=0 [boxoffice]=0) n_sum=([bare]=0 [boxoffice]=0) used_sum=([bare]=0 [boxoffice]=0)
  for slice in $(seq "${SLICES:-1}"); do
    for target in bare boxoffice; do
      url=$([ $target = bare ] && echo "$BARE" || echo "$BOX")
      proof_file=""
      if [ "$proofs" = 1 ] && [ $target = boxoffice ]; then
        # Signed now, so every proof is fresh (iat within the server's 60 s) for the run.
        proof_file="$work/proofs"
        python3 bench/prepare.py proofs "$keys" "$event" $(( ${PROOFS_PER_S:-40000} * secs )) "$proof_file"
      fi
      before=$(cpu "$target")
      # Each slice's Idempotency-Keys are its own (SALT), so no slice replays another's.
      out=$(SALT="$conns-$slice" TOKENS="$work/tokens" PROOFS="$proof_file" THREADS=2 EVENT="$event" SECTION=GA wrk -t2 -c"$conns" -d"${secs}s" --timeout 10s -s bench/hold.lua "$url")
      used=$(( $(cpu "$target") - before ))
      measured "$target" "c=$conns" "$out" "$used"
      rps_sum[$target]=$(python3 -c "print(${rps_sum[$target]} + $rps)")
      n_sum[$target]=$(( ${n_sum[$target]} + n ))
      used_sum[$target]=$(( ${used_sum[$target]} + used ))
    done
  done
  if [ "${SLICES:-1}" -gt 1 ]; then
    for target in bare boxoffice; do
      python3 -c "print(f'{\"$target\":<9} c=$conns   {${rps_sum[$target]} / ${SLICES}:10.2f} req/s over ${SLICES} slices  requests ${n_sum[$target]}  cpu {${used_sum[$target]} / $ticks / max(${n_sum[$target]}, 1) * 1e6:.1f} us/req')"
    done
  fi
  sold=$(curl -s "$BOX/v1/events/$event" | python3 -c 'import json,sys; c=json.load(sys.stdin)["counts"]; print(c["held"], "held of", c["capacity"])')
  python3 -c "print(f'ratio c=$conns: {${rps_sum[boxoffice]} / ${rps_sum[bare]} * 100:.1f} % of bare axum ($sold)')"
done
