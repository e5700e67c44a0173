#!/usr/bin/env bash
# Makes sure the tools of the cluster fault harness are installed: `faketime` (libfaketime) runs a daemon under
# a skewed wall clock, and the harness starts its own `nats-server` (even when NATS_URL names another server).
# Installs them with apt-get when missing; fails otherwise. (PostgreSQL's binaries come from ensure-postgres.sh.)
set -euo pipefail
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v faketime >/dev/null 2>&1; then
  echo "== installing faketime"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null
fi
if ! command -v faketime >/dev/null 2>&1; then
  echo "error: faketime is not installed and could not be installed (apt-get install faketime)" >&2
  exit 1
fi
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
  echo "== installing nats-server"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
fi
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
  echo "error: nats-server is not installed and could not be installed (apt-get install nats-server)" >&2
  exit 1
fi
# libfaketime must really shift the clock, or the skew fault would test nothing.
ahead="$(FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f '+90s' date +%s)"
now="$(date +%s)"
if [ $((ahead - now)) -lt 80 ] || [ $((ahead - now)) -gt 100 ]; then
  echo "error: faketime does not shift the clock (+90s gave $((ahead - now))s)" >&2
  exit 1
fi
echo "== faketime works ($(dpkg-query -W -f='${Version}' faketime 2>/dev/null || echo 'version unknown'))"
