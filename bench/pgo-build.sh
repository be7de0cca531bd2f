#!/usr/bin/env bash
# A profile-guided release build of boxoffice and of the bare axum baseline: both built
# once instrumented, run under the on-sale's load (the hold path under wrk at both
# connection counts, then a small stadium: joins, polls, holds, checkouts, payments),
# their profiles merged into one, and both built again with it. The baseline gets the
# same treatment, so a ratio measured between the two builds still compares like with
# like. Leaves the binaries in $OUT/bin (boxoffice, examples/bare_axum), ready for
# `NO_BUILD=1 BIN_DIR=$OUT/bin bench/http-hold.sh`.
#
# Usage: bench/pgo-build.sh [out-dir]   (default target/pgo)
# Needs llvm-profdata of rustc's LLVM: `rustup component add llvm-tools`. TRAIN picks
# the workloads (default "hold stadium"). The two builds use target directories of
# their own under the out dir (a profile changes every crate's flags, so nothing is
# shared with the ordinary build).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mkdir -p "${1:-target/pgo}" && cd "${1:-target/pgo}" && pwd)"
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
[ -x "$profdata" ] || { echo "no llvm-profdata for rustc's LLVM: rustup component add llvm-tools" >&2; exit 1; }
raw="$out/raw"
rm -rf "$raw" "$out/bin" && mkdir -p "$raw" "$out/bin/examples"

build() { # target-dir rustflags
  RUSTFLAGS="$2" CARGO_TARGET_DIR="$1" cargo build --release -q -p boxoffice --bin boxoffice --example bare_axum
}

echo "1/4 instrumented build"
build "$out/target-gen" "-Cprofile-generate=$raw"
gen="$out/target-gen/release"

echo "2/4 the load"
# Every process of the instrumented binaries writes its profile when it exits (the
# servers on the SIGTERM the scripts end them with).
for train in ${TRAIN:-hold stadium}; do
  case $train in
    hold) NO_BUILD=1 BIN_DIR="$gen" SLICES=1 bench/http-hold.sh 3 ;;
    stadium) BOX_BIN="$gen/boxoffice" MAX_DURATION_S=300 bench/stadium.sh 5000 20000 5 10 ;;
    *) echo "unknown workload $train (hold, stadium)" >&2; exit 1 ;;
  esac
done
# The servers write their profiles after the scripts signalled them: wait for them.
for _ in $(seq 100); do
  pgrep -f "$gen/" >/dev/null || break
  sleep 0.1
done
! pgrep -f "$gen/" >/dev/null || { echo "an instrumented process is still running" >&2; exit 1; }
ls "$raw"/*.profraw >/dev/null 2>&1 || { echo "the load left no profile in $raw" >&2; exit 1; }

echo "3/4 merge"
"$profdata" merge -o "$out/merged.profdata" "$raw"

echo "4/4 optimised build"
build "$out/target-use" "-Cprofile-use=$out/merged.profdata"
cp "$out/target-use/release/boxoffice" "$out/bin/"
cp "$out/target-use/release/examples/bare_axum" "$out/bin/examples/"
echo "built: $out/bin/boxoffice and $out/bin/examples/bare_axum"
