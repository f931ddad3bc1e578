#!/usr/bin/env bash
# What tools/iceberg_walk.py needs: a python3 with the avro module, Debian's
# python3-avro (for /usr/bin/python3; a python3 that pyenv or a venv puts
# first on PATH does not see it, and the tests look for /usr/bin/python3
# first). `make deps` runs this after scripts/test-deps.sh, and so do
# `make test` and .ci/run. It does nothing when the module imports already;
# else it installs the package where it can (as root, or through sudo that
# asks no password) and otherwise stops at once, in one line naming the
# package and the command.
set -euo pipefail

fail() {
  echo "make deps: $*" >&2
  exit 1
}

has_avro() {
  local py
  for py in /usr/bin/python3 python3; do
    command -v "$py" >/dev/null && "$py" -c 'import avro.datafile' 2>/dev/null && return 0
  done
  return 1
}

has_avro && exit 0

how="sudo apt-get install -y python3-avro"
command -v apt-get >/dev/null ||
  fail "python3's avro module is missing (for tools/iceberg_walk.py) and this is no Debian system: install Apache Avro for python3 (pip install avro) with your system's python3"
if [ "$(id -u)" = 0 ]; then
  as=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  as=(sudo -n)
else
  fail "python3-avro (Debian's package, for tools/iceberg_walk.py) is not installed and installing it needs root: run '$how', then make test again"
fi

echo "make deps: installing Debian's python3-avro (the Iceberg spec walk, tools/iceberg_walk.py)"
install() {
  ${as[@]+"${as[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-avro >/dev/null
}
# The package lists may be missing on a fresh machine: update them only then.
if ! install; then
  ${as[@]+"${as[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    fail "apt-get update failed (see above): run '$how' yourself"
  install || fail "apt-get install python3-avro failed (see above): run '$how' yourself"
fi
has_avro || fail "python3-avro is installed but no python3 imports avro: is /usr/bin/python3 Debian's?"
