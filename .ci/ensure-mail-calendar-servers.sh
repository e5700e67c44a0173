#!/usr/bin/env bash
# Makes sure Dovecot (IMAP) and Radicale (CalDAV) are installed for the mail and calendar tests; the tests
# start their own instances on free loopback ports. Nothing is started here.
set -euo pipefail
missing=()
[ -x /usr/sbin/dovecot ] || missing+=(dovecot-imapd)
[ -x /usr/bin/radicale ] || missing+=(radicale)
if [ "${#missing[@]}" -eq 0 ]; then echo "== dovecot and radicale are installed"; exit 0; fi
echo "== installing ${missing[*]}"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
# On a systemd machine the packages start system instances on 143/993/5232; the tests need none of them.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  $sudo systemctl disable --now dovecot dovecot.socket radicale >/dev/null 2>&1 || true
fi
