#!/usr/bin/env bash
# Makes sure a NATS server (with JetStream) answers at the given URL; starts one when it can; fails otherwise.
set -euo pipefail
url="${1:-nats://127.0.0.1:4222}"
hostport="${url#nats://}"
host="${hostport%%:*}"
port="${hostport##*:}"
up() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }
if up; then echo "== nats answers at $url"; exit 0; fi
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
  echo "== installing nats-server"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
  fi
fi
bin="$(command -v nats-server || echo /usr/sbin/nats-server)"
store="$(mktemp -d)"
"$bin" -a "$host" -p "$port" -js -sd "$store" >"$store/nats.log" 2>&1 &
for _ in $(seq 1 50); do
  if up; then echo "== started nats-server at $url"; exit 0; fi
  sleep 0.2
done
echo "error: no NATS server answers at $url and one could not be started (see $store/nats.log)" >&2
exit 1
