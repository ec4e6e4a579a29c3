#!/usr/bin/env bash
# Installs what the Emacs tests need: Debian's emacs-nox and elpa-eglot (a stock
# third-party LSP client), and socat (the stdio bridge docs/editors.md describes for
# clients that only start a program). Skips what is already there. Idempotent.
set -euo pipefail
missing=()
for pkg in emacs-nox elpa-eglot socat; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[emacs-setup] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "[emacs-setup] ready"
