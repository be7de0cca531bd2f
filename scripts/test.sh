#!/usr/bin/env bash
# The test command: builds and runs every test of the workspace, backend suites
# included. Under CI (CI=true) a missing PostgreSQL, Redis or NATS JetStream (or the
# server binaries the TLS tests start, and PgBouncer) is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

# PgBouncer for the ledger-behind-a-pooler tests (crates/store-postgres/tests/pgbouncer.rs):
# installed when missing and this is root with apt-get (CI), as the browser is.
if ! [ -x /usr/sbin/pgbouncer ] && ! command -v pgbouncer >/dev/null 2>&1 \
  && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null || true
  # Debian's package starts a pgbouncer service on 6432; the tests start their own.
  (service pgbouncer stop || pkill -x pgbouncer) >/dev/null 2>&1 || true
fi

need_services() {
  local missing=()
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -h 127.0.0.1 -p 5432 || missing+=("PostgreSQL on 127.0.0.1:5432")
  else
    missing+=("PostgreSQL client tools (pg_isready)")
  fi
  if command -v redis-cli >/dev/null 2>&1; then
    [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ] || missing+=("Redis on 127.0.0.1:6379")
  else
    missing+=("redis-cli")
  fi
  # The outbox relay's tests publish to NATS with JetStream on (`nats-server -js`): its
  # greeting must say so.
  nats_info=$(timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222 && read -r line <&3 && echo "$line"' 2>/dev/null || true)
  case "$nats_info" in
    *'"jetstream":true'*) ;;
    INFO*) missing+=("JetStream on the NATS server at 127.0.0.1:4222 (start it with -js)") ;;
    *) missing+=("NATS on 127.0.0.1:4222") ;;
  esac
  # The TLS tests start their own servers: a PostgreSQL cluster from the server binaries
  # and a redis-server with TLS built in.
  if ! command -v pg_config >/dev/null 2>&1 || [ ! -x "$(pg_config --bindir)/initdb" ]; then
    missing+=("PostgreSQL server binaries (pg_config --bindir with initdb and pg_ctl)")
  fi
  command -v redis-server >/dev/null 2>&1 || missing+=("redis-server")
  [ -x /usr/sbin/pgbouncer ] || command -v pgbouncer >/dev/null 2>&1 || missing+=("pgbouncer")
  if [ ${#missing[@]} -gt 0 ]; then
    printf 'missing: %s\n' "${missing[@]}" >&2
    return 1
  fi
}

if ! need_services; then
  if [ "${CI:-}" = "true" ]; then
    echo "CI needs PostgreSQL, Redis and NATS JetStream running (and their server binaries); refusing to skip the backend suites" >&2
    exit 1
  fi
  echo "warning: backend services missing; suites that need them will fail" >&2
fi

# Every test binary runs under an overall bound (scripts/test-bounded.sh says why), so
# the run as a whole cannot hang: each async test fails at its own deadline, and any
# binary still running after BOXOFFICE_TEST_BINARY_TIMEOUT (default 45m) is stopped.
runner="$PWD/scripts/test-bounded.sh"
cargo --config "target.'cfg(all())'.runner = ['$runner']" test --workspace --all-targets "$@"

# The web app in a real browser (headless Chromium): see scripts/test-web.sh.
scripts/test-web.sh
