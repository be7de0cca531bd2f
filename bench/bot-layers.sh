#!/usr/bin/env bash
# What a bot gets, layer by layer: for each anti-bot layer, two rehearsals on a fresh
# event, the layer off then on, each with the adversary that layer is meant to meet,
# against one embedded server on loopback. Prints a Markdown table of what each
# adversary got over honest buyers (tickets per adversary ÷ per honest buyer, places in
# line gained) and what it spent (requests and proof-of-work CPU per adversary).
#
# Usage: bench/bot-layers.sh [buyers] [seats]   (default 2,000 buyers, 600 seats)
# BUILD=release builds and runs a release binary (debug by default: the figures are
# counts, not speeds); BOX_BIN=path runs a binary already built instead. LAYERS names
# the pairs to run (default "pow dpop velocity limit resale"); POW_DIFFICULTY the human
# check's (default 10: every buyer of the crowd solves on this machine, beside the
# server). Reports land in $OUT (default a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
buyers="${1:-2000}"
seats="${2:-600}"
build="${BUILD:-debug}"
layers="${LAYERS:-pow dpop velocity limit resale}"
difficulty="${POW_DIFFICULTY:-10}"
if [ -n "${BOX_BIN:-}" ]; then
  bin="$BOX_BIN"
else
  flag=$([ "$build" = release ] && echo --release || true)
  cargo build -q $flag -p boxoffice --bin boxoffice
  bin="${CARGO_TARGET_DIR:-target}/$build/boxoffice"
fi
work=$(mktemp -d)
out="${OUT:-$work/reports}"
trap 'stop_servers; rm -rf "$work/data"' EXIT
key="bench-operator-key-0123456789"
# Fast admission ticks and polls, payments that settle by themselves, the generator's
# forwarded client addresses believed (each buyer comes from a network of its own).
printf 'operator_key = "%s"\npayments = "fake"\n[engine]\nadmission_interval_ms = 200\npoll_after_ms = 500\nrecovery_after_s = 1\n[workers]\nrecovery_interval_ms = 300\nexpiry_interval_ms = 200\n[fake_payments]\nwebhook_url = "/v1/payments/webhook"\n[http]\ntrusted_proxies = ["127.0.0.1/32"]\nmax_in_flight_per_address = 4096\n' "$key" > "$work/boxoffice.toml"
BOXOFFICE_LOG=warn "$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/boxoffice.toml" > "$work/server.out" 2>/dev/null &
echo $! > "$work/server.pid"
base=$(listening "$work/server.out" 300) || { echo "the server did not start" >&2; exit 1; }

# Honest buyers pay with cards of their own that approve, so a card signal sees only
# what the adversaries share; no adversary unless a run names one.
common=(--target "$base" --operator-key "$key" --buyers "$buyers" --seats "$seats"
  --rush-share 0.3 --rush-s 2 --tail-tau-s 2 --tail-s 6 --event-rate 100 --hold-ttl-s 10
  --think-min-ms 50 --think-max-ms 300 --cards 1,0,0,0 --own-cards --settle-s 10
  --linger-s 5 --max-duration-s 240 --max-requests 400000 --quiet
  --aggressive-pollers 0 --no-backoff 0)
none=(--many-sessions 0 --pow-bots 0)

run() { # name layer-state profile args... -> a line of the table
  local name=$1 state=$2 profiles=$3; shift 3
  local dir="$out/$name-$state"
  "$bin" rehearse "${common[@]}" --out "$dir" "$@" > "$dir.log" 2>&1 ||
    { echo "rehearsal $name $state failed:" >&2; cat "$dir.log" >&2; exit 1; }
  RESALE="$work/resale.md" python3 - "$dir/report.json" "$name" "$state" "$profiles" <<'EOF'
import json, os, sys
path, name, state, profiles = sys.argv[1:]
r = json.load(open(path))
if r.get("stopped"):
    state += f" (stopped: {r['stopped']})"
rows = {p["profile"]: p for p in r["fairness"]["profiles"]}
honest = rows["honest"]
for profile in profiles.split(","):
    p = rows.get(profile)
    if p is None:
        print(f"| {name} | {state} | {profile} | none in the crowd | | | | | | |")
        continue
    a = p["advantage"] or {}
    ratio = a.get("ticket_ratio")
    ratio = "–" if ratio is None else f"{ratio:.2f}"
    each = lambda q: q["tickets"] / q["bought"] if q["bought"] else 0.0
    print(f"| {name} | {state} | {p['name']} ({p['buyers']}) | {p['tickets'] / p['buyers']:.2f} "
          f"| {ratio} | {each(p):.2f} ({each(honest):.2f}) | {a.get('position_gain_pct', 0):+.1f} "
          f"| {p['requests_per_person']:.0f} (honest {honest['requests_per_person']:.0f}) "
          f"| {p['solve_cpu_s_per_person'] * 1e3:.1f} (honest {honest['solve_cpu_s_per_person'] * 1e3:.1f}) "
          f"| {r['sold']['hot_store']}/{r['sold']['capacity']} |")
    # A reseller's second line, for the resale table printed at the end.
    s = p.get("resale")
    if s is not None:
        refused = ", ".join(f"{k} {v}" for k, v in sorted(s["refused"].items())) or "none"
        with open(os.environ["RESALE"], "a") as f:
            f.write(f"| {state} | {p['buyers']} | {s['tickets']} | {s['transferred']} | {s['renamed']} "
                    f"| {s['listed_above_face']} | {s['listed_at_face']} | {s['markup'] / 100:.2f} | {refused} |\n")
EOF
}

mkdir -p "$out"
echo "build: ${BOX_BIN:-$build}; $buyers buyers, $seats seats; $(date -u +%Y-%m-%d) on $(nproc) cores"
echo
echo "| layer | state | adversary (people) | tickets each | tickets ÷ honest | tickets per one who bought (honest) | places gained (pts) | requests each | proof-of-work CPU ms each | sold |"
echo "|---|---|---|---|---|---|---|---|---|---|"
on() { [[ " $layers " == *" $1 "* ]]; }
# Human check (proof of work): a bot that solves at machine speed and a person behind
# five identities; each identity pays its own challenge.
bots=(--pow-bots 0.05 --many-sessions 0.05 --sessions-each 5)
pow="human check (proof of work, difficulty $difficulty)"
if on pow; then
  run "$pow" off pow_bot,many_sessions "${bots[@]}"
  run "$pow" on pow_bot,many_sessions "${bots[@]}" --pow-difficulty "$difficulty"
fi
# Proof of possession: a line-sitter hands its admission to three clients of others.
sharers=(--token-sharers 0.05 --clients-each 3)
if on dpop; then
  run "proof of possession (DPoP)" off token_sharer "${none[@]}" "${sharers[@]}" --proofs off
  run "proof of possession (DPoP)" on token_sharer "${none[@]}" "${sharers[@]}" --proofs required
fi
# Velocity and buyer signals: farms of five accounts on one device and one card.
farms=(--pow-bots 0 --many-sessions 0 --farms 0.02 --sessions-each 5 --proofs required)
if on velocity; then
  run "velocity and buyer signals (defaults)" off farm "${farms[@]}"
  run "velocity and buyer signals (defaults)" on farm "${farms[@]}" --velocity '{}'
fi
# Per-buyer limit: a bot that takes ten when it may ("off": a limit of ten), or four.
if on limit; then
  run "per-buyer limit" "off (10)" pow_bot --many-sessions 0 --pow-bots 0.05 --max-per-buyer 10
  run "per-buyer limit" "on (4)" pow_bot --many-sessions 0 --pow-bots 0.05 --max-per-buyer 4
fi
# Names on tickets, the transfer policy and the exchange's face-value cap: scalpers take
# the most allowed, then try to move each ticket to another identity, rename it and list
# it above face value. "off": transfers free, no names, no exchange; "on": names at
# checkout, transfers only through the exchange, the exchange open (no fee).
scalpers=(--pow-bots 0 --many-sessions 0 --scalpers 0.05)
if on resale; then
  run "names, transfers, exchange" off scalper "${scalpers[@]}" --transfers free
  run "names, transfers, exchange" on scalper "${scalpers[@]}" --names at_checkout --transfers exchange_only --exchange
fi
if [ -s "$work/resale.md" ]; then
  echo
  echo "What the reselling scalpers did with their tickets (summed over the scalpers):"
  echo
  echo "| layers | scalpers | tickets | moved to another identity | renamed | listed above face | listed at face | markup asked | refused (step code count) |"
  echo "|---|---|---|---|---|---|---|---|---|"
  cat "$work/resale.md"
fi
echo
echo "reports: $out"
