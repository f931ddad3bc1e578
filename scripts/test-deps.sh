#!/usr/bin/env bash
# What the tests need beyond Go and Node.js: PostgreSQL's server binaries,
# for internal/testenv starts a server of its own with initdb (it looks
# under /usr/lib/postgresql/*/bin, Debian's layout, then on PATH). `make
# deps` runs this, and so do `make test` and .ci/run: it installs Debian's
# postgresql where it can (as root, or through sudo that asks no password)
# and otherwise stops at once, in one line naming the package and the
# command, rather than letting the warehouse tests fail minutes in.
#
# SLUICE_TEST_POSTGRES (a superuser URL of a server to use instead) makes
# the binaries unneeded.
set -euo pipefail

fail() {
  echo "make deps: $*" >&2
  exit 1
}

has_initdb() {
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null
}

# The tests refuse to start the server as root (PostgreSQL does), so as
# root they run it as the postgres user, which Debian's package creates.
check_user() {
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    fail "running as root, the test server runs as the postgres user, and there is none: apt-get install -y postgresql creates it"
  fi
}

[ -n "${SLUICE_TEST_POSTGRES:-}" ] && exit 0
if has_initdb; then
  check_user
  exit 0
fi

how="sudo apt-get install -y postgresql"
command -v apt-get >/dev/null ||
  fail "PostgreSQL's server (initdb) is not installed and this is no Debian system: install it with your system's packages (initdb under /usr/lib/postgresql/*/bin or on PATH), or set SLUICE_TEST_POSTGRES to a superuser URL"
if [ "$(id -u)" = 0 ]; then
  as=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  as=(sudo -n)
else
  fail "PostgreSQL (Debian's postgresql package) is not installed and installing it needs root: run '$how', then make test again (or set SLUICE_TEST_POSTGRES to a superuser URL)"
fi

echo "make deps: installing Debian's postgresql (the tests start their own server with its initdb)"
${as[@]+"${as[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
  fail "apt-get update failed (see above): run '$how' yourself"
${as[@]+"${as[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null ||
  fail "apt-get install postgresql failed (see above): run '$how' yourself"
has_initdb || fail "postgresql is installed but no initdb is under /usr/lib/postgresql/*/bin"
check_user
