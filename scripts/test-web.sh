#!/usr/bin/env bash
# The web app's browser tests (web/tests): the boxoffice binary serving the demo, driven
# in headless Chromium (Debian's chromium, through playwright-core from npm, pinned in
# web/package-lock.json). Installs what is missing when it can (as root: apt-get);
# under CI (CI=true) a missing browser or Node fails the run, elsewhere it warns and
# skips. Run by scripts/test.sh after the cargo tests; on its own: scripts/test-web.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

missing() {
  if [ "${CI:-}" = "true" ]; then
    echo "CI needs $1 for the browser tests; refusing to skip them" >&2
    exit 1
  fi
  echo "warning: $1 missing; the browser tests (web/tests) are skipped" >&2
  exit 0
}

apt_install() {
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  fi
}

[ -x "$CHROMIUM" ] || apt_install chromium || true
[ -x "$CHROMIUM" ] || missing "Chromium ($CHROMIUM; apt-get install chromium)"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || apt_install nodejs npm || true
command -v node >/dev/null 2>&1 || missing "Node.js 18 or later"
command -v npm >/dev/null 2>&1 || missing "npm"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' ||
  missing "Node.js 18 or later (found $(node --version))"

(cd web && npm ci --no-audit --no-fund --loglevel=error)

# The server under test is the debug binary of this checkout.
cargo build -p boxoffice --bin boxoffice
export BOXOFFICE_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/boxoffice"
export CHROMIUM
# Each test and the file have deadlines of their own; this bounds the run as a whole.
timeout 600 node --test web/tests/*.test.mjs
