#!/usr/bin/env bash
# Installs the test runners the per-test results tests run for real (tests/engine/test_proof_*.py):
# Debian's golang-go (go test -json), nodejs (node --test, npm) and perl (prove). Those tests
# skip, saying why, when a runner is absent. Skips what is already there. Idempotent.
set -euo pipefail
missing=()
for pair in golang-go:go nodejs:node npm:npm perl:prove; do
  pkg="${pair%%:*}"; tool="${pair##*:}"
  command -v "$tool" >/dev/null 2>&1 && continue  # installed, by Debian or another way
  missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[proof-tools-setup] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "[proof-tools-setup] ready"
