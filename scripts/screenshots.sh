#!/usr/bin/env bash
# Remakes the web console's screenshots in docs/console/ (jobs, runs, run,
# tables, table: full pages, 1280 wide), from the repository root:
#
#   bash scripts/screenshots.sh
#
# They are taken by the console's own end-to-end test (TestConsole in
# cmd/sluice/console_test.go) in headless Chromium, over the lake that
# test writes with a real pipeline run: succeeded, failed, running and
# cancelled runs, a table with a quarantined record and small files.
# The test saves them when SLUICE_SCREENSHOTS names a folder, and checks
# the pages as it always does, so a screenshot of a broken page fails
# here. Chromium comes from scripts/browser-deps.sh (what `make deps` runs).
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
out="$PWD/docs/console"

bash scripts/browser-deps.sh
echo "== go build ./cmd/sluice"
"$GO" build -buildvcs=auto -o bin/sluice ./cmd/sluice
mkdir -p "$out"
rm -f "$out"/*.png
echo "== the console's test, saving screenshots in docs/console/"
SLUICE_SCREENSHOTS="$out" "$GO" test -count=1 -run '^TestConsole$' ./cmd/sluice
for page in jobs runs run tables table; do
  [ -s "$out/$page.png" ] || { echo "screenshots: $out/$page.png was not written" >&2; exit 1; }
done
ls -l "$out"/*.png
