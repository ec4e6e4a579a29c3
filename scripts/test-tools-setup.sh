#!/usr/bin/env bash
# Installs the Debian tools some engine and server tests use to make real conditions:
# bubblewrap (a small tmpfs that fills up, a read-only file system) and util-linux's setpriv
# (a client of another user). Skips what is already there; without them those tests skip
# with the reason, so a failed install only warns. Idempotent.
set -uo pipefail
missing=()
for pkg in bubblewrap util-linux; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  echo "[test-tools-setup] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  { $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null; } ||
    echo "[test-tools-setup] could not install ${missing[*]}: the tests that need them skip"
fi
echo "[test-tools-setup] ready"
