#!/usr/bin/env bash
# Installs the Debian tools a task and its tests need: bubblewrap (bwrap, the sandbox every
# task program runs in; the tests also make small full or read-only disks with it), ripgrep
# (rg, the agent's linear-time search) and util-linux (setpriv: a client of another user).
# Skips what is already there, so a repeated run costs one dpkg query. Idempotent.
set -euo pipefail
missing=()
for pkg in bubblewrap ripgrep util-linux; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "[sandbox-setup] please install: ${missing[*]} (no apt-get here)" >&2
    exit 1
  fi
  echo "[sandbox-setup] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# bwrap needs user namespaces (or root); say so here rather than in the middle of the tests.
if ! bwrap --ro-bind / / --unshare-pid --unshare-net --die-with-parent true 2>/dev/null; then
  echo "[sandbox-setup] bwrap is installed but cannot make a sandbox here: enable user namespaces" \
       "(sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0)" >&2
  exit 1
fi
echo "[sandbox-setup] ready"
