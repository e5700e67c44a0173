#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium for the console's browser tests; installs it when it
# can; fails otherwise (the tests fail without it, they never skip).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then echo "== chromium: $(/usr/bin/chromium --version 2>/dev/null | tail -1)"; exit 0; fi
echo "== installing chromium"
if [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if [ ! -x /usr/bin/chromium ]; then
  echo "error: /usr/bin/chromium is missing and could not be installed (apt-get install chromium)" >&2
  exit 1
fi
echo "== installed chromium: $(/usr/bin/chromium --version 2>/dev/null | tail -1)"
