#!/usr/bin/env bash
# Installs the Debian packages the engine runs while a task works: ripgrep, the
# agent's search engine (linear-time regular expressions; without it the search
# falls back to Python's re in a child process killed at its time limit).
# Skips what is already there. Idempotent.
set -euo pipefail
missing=()
for pkg in ripgrep; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "[engine-setup] not a Debian system: install ${missing[*]} with your package manager" >&2
    exit 1
  fi
  echo "[engine-setup] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "[engine-setup] ready"
