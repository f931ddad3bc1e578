#!/usr/bin/env bash
# What the web console's tests need: a headless Chromium, Debian's chromium
# package (with fonts-liberation, so the pages' text in scripts/screenshots.sh
# renders in the same fonts on every machine), found on PATH as `chromium` (internal/browsertest drives it over
# the DevTools protocol; cmd/sluice's console test and scripts/screenshots.sh
# go through it). `make deps` runs this after scripts/test-deps.sh, and so do
# `make test` and .ci/run. It does nothing when chromium is on PATH already;
# else it installs the package where it can (as root, or through sudo that
# asks no password) and otherwise stops at once, in one line naming the
# package and the command.
#
# SLUICE_CHROMIUM (the path of a Chromium or Chrome binary to use instead)
# makes the package unneeded.
set -euo pipefail

fail() {
  echo "make deps: $*" >&2
  exit 1
}

if [ -n "${SLUICE_CHROMIUM:-}" ]; then
  [ -x "$SLUICE_CHROMIUM" ] || fail "SLUICE_CHROMIUM=$SLUICE_CHROMIUM is not an executable file"
  exit 0
fi
command -v chromium >/dev/null && exit 0

how="sudo apt-get install -y chromium fonts-liberation"
command -v apt-get >/dev/null ||
  fail "chromium (for the web console's browser tests) is not on PATH and this is no Debian system: install Chromium with your system's packages, or set SLUICE_CHROMIUM to a Chromium or Chrome binary"
if [ "$(id -u)" = 0 ]; then
  as=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  as=(sudo -n)
else
  fail "chromium (Debian's package, for the web console's browser tests) is not installed and installing it needs root: run '$how', then make test again"
fi

echo "make deps: installing Debian's chromium (the web console's browser tests)"
install() {
  ${as[@]+"${as[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
}
# The package lists may be missing or stale on a fresh machine: update them
# only when the first try fails.
if ! install; then
  ${as[@]+"${as[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    fail "apt-get update failed (see above): run '$how' yourself"
  install || fail "apt-get install chromium fonts-liberation failed (see above): run '$how' yourself"
fi
command -v chromium >/dev/null || fail "chromium is installed but not on PATH: is /usr/bin in PATH?"
