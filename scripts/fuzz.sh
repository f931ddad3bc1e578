#!/usr/bin/env bash
# fuzz.sh FUZZTIME PKG:TARGET ...: runs each fuzz target for FUZZTIME, one
# after another (go test -fuzz takes one target at a time).
#
# Go before 1.27 can fail a target whose time ran out while a worker was
# mid-input, with nothing but "context deadline exceeded" and no failing
# input written (golang/go#75804). Such a run found nothing: it is run
# once more. Any other failure, and a failing input above all, fails at
# once.
set -uo pipefail
GO=${GO:-go}
fuzztime=$1; shift
for t in "$@"; do
  pkg=${t%%:*}; name=${t#*:}
  for try in 1 2; do
    echo "== $name ($pkg) for $fuzztime"
    log=$(mktemp)
    "$GO" test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" = 0 ]; then rm -f "$log"; break; fi
    if [ "$try" = 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written\|panic:\|_test.go:[0-9]' "$log"; then
      echo "== $name: the fuzz time ran out mid-input (golang/go#75804), nothing found; once more"
      rm -f "$log"; continue
    fi
    rm -f "$log"; exit "$rc"
  done
done
