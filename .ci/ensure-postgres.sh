#!/usr/bin/env bash
# Makes sure PostgreSQL answers on 127.0.0.1:5432 with a `test` database the tests can use without a
# password; installs and starts Debian's server when it can; fails otherwise.
set -euo pipefail
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
if ! command -v pg_isready >/dev/null 2>&1 || ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  echo "== installing postgresql"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  # A throwaway CI machine: loopback connections need no password, as the tests expect.
  for hba in /etc/postgresql/*/main/pg_hba.conf; do
    as_root sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
  done
fi
if ! ready; then
  version="$(ls /etc/postgresql | sort -V | tail -1)"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || as_root pg_ctlcluster "$version" main start
  for _ in $(seq 1 50); do ready && break; sleep 0.2; done
fi
if ! ready; then
  echo "error: PostgreSQL does not answer on 127.0.0.1:5432 and could not be started" >&2
  exit 1
fi
if ! psql -h 127.0.0.1 -U postgres -d test -Atc 'select 1' >/dev/null 2>&1; then
  psql -h 127.0.0.1 -U postgres -d postgres -c 'CREATE DATABASE test' >/dev/null
fi
psql -h 127.0.0.1 -U postgres -d test -Atc 'select 1' >/dev/null
echo "== postgresql answers at 127.0.0.1:5432 (database test)"
