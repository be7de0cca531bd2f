#!/usr/bin/env bash
# What one outbox claim costs on PostgreSQL while a webhook endpoint is down: 5,000
# orders of 20 events each (100,000 deliveries), every order's first event failed and
# waiting for its retry. "due" leaves the other 95,000 due, as a failed attempt did
# before e6d2455 (each waits for its order's first anyway); "waiting" moves them to the
# retry with it, as a failed attempt does now. Prints the claim statement's execution
# time (EXPLAIN ANALYZE, three runs each). Needs PostgreSQL at 127.0.0.1:5432 (user
# postgres) and a built boxoffice (BOX_BIN, default target/debug/boxoffice) to create the
# schema; the database it makes is dropped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
box="${BOX_BIN:-${CARGO_TARGET_DIR:-target}/debug/boxoffice}"
db="bo_outbox_claim_$$"
work=$(mktemp -d)
psql_() { psql -h 127.0.0.1 -U postgres -q "$@"; }
trap 'stop_servers; psql_ -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null; rm -rf "$work"' EXIT
psql_ -d postgres -c "CREATE DATABASE $db"
printf 'operator_key = "outbox-claim-bench-operator-key"\npayments = "fake"\nledger = "postgres://postgres@127.0.0.1:5432/%s"\n' "$db" > "$work/c.toml"
start schema "$box" serve --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/c.toml" > /dev/null
stop_servers
sleep 1
psql_ -d "$db" <<'SQL'
SET session_replication_role = replica; -- rows of their own, without orders behind them
INSERT INTO outbox_sinks (id, kind, url, secret, created_at) VALUES ('we_a', 'webhook', 'http://127.0.0.1:9/', 's', 0);
INSERT INTO outbox (order_id, kind, payload, created_at, seq, sale_event_id)
  SELECT 'o' || (n / 20), 'order.moved', '{}', 0, n % 20 + 1, 1 FROM generate_series(0, 99999) n;
INSERT INTO outbox_deliveries (sink, outbox_id, order_id, created_at, next_attempt_at)
  SELECT 'we_a', id, order_id, 0, 0 FROM outbox;
UPDATE outbox_deliveries d SET next_attempt_at = 1000000000000, attempts = 1
  FROM outbox o WHERE o.id = d.outbox_id AND o.seq = 1;
ANALYZE outbox_deliveries;
SQL
# The claim's choice of deliveries, as store-postgres/src/outbox.rs runs it (`CLAIM`).
claim="BEGIN;
EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON)
SELECT d.sink, d.outbox_id FROM outbox_deliveries d
WHERE d.dead_at IS NULL AND d.next_attempt_at <= 1000 AND d.lease_until <= 1000
  AND (true OR d.sink <> 'nats')
  AND NOT EXISTS (SELECT 1 FROM outbox_deliveries e
                  WHERE e.sink = d.sink AND e.order_id = d.order_id
                    AND e.outbox_id < d.outbox_id AND e.dead_at IS NULL)
ORDER BY d.outbox_id LIMIT 100 FOR UPDATE SKIP LOCKED;
ROLLBACK;"
echo "machine: $(machine); $(psql_ -d "$db" -tA -c 'SHOW server_version')"
for state in due waiting; do
  if [ "$state" = waiting ]; then
    psql_ -d "$db" -c "UPDATE outbox_deliveries SET next_attempt_at = 1000000000000" -c "ANALYZE outbox_deliveries"
  fi
  for _ in 1 2 3; do
    echo "$state: $(psql_ -d "$db" -c "$claim" | grep -o 'Execution Time: .*')"
  done
done
