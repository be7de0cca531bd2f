#!/usr/bin/env bash
# Runs one test binary under an overall time bound; scripts/test.sh makes it cargo's
# target runner, so cargo starts every test binary (and every bench in test mode)
# through it.
#
# Each async test already has its own deadline (#[boxoffice_testkit::test], 120 s unless
# it says otherwise); this is the backstop for what those cannot reach: a plain #[test]
# or a proptest that loops, a bench run as a test, a process stuck while exiting. cargo
# test has no timeout of its own (libtest's --ensure-time is unstable and only reports),
# so the bound is per binary, and generous: the longest test allows itself 10 minutes,
# and the largest binary (the server's `api` tests, every in-process and single-process
# test of the server in one binary) runs for several minutes even on a quiet machine.
# BOXOFFICE_TEST_BINARY_TIMEOUT overrides it (a duration for timeout(1): 90s, 45m, 1h).
#
# In CI, timeout(1) runs the binary in a process group of its own and ends the whole
# group, servers the tests started included. At a terminal it stays in the foreground
# group so that Ctrl-C still reaches the tests.
set -uo pipefail

limit=${BOXOFFICE_TEST_BINARY_TIMEOUT:-45m}
mode=()
[ -t 0 ] && mode=(--foreground)
timeout "${mode[@]}" --kill-after=30s "$limit" "$@"
status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "test binary $(basename "$1") was still running after $limit and was stopped:" \
    "something in it hangs (run it alone to see which test)" >&2
fi
exit "$status"
