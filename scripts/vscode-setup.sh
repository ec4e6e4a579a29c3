#!/usr/bin/env bash
# Installs and builds everything the VS Code tests need, skipping what is
# already there: Debian packages (once), code-server 4.100.3 under .tools/,
# the extension's npm packages, its bundle and its .vsix. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CODE_SERVER_VERSION=4.100.3
TOOLS=$ROOT/.tools
CS_DIR=$TOOLS/code-server-$CODE_SERVER_VERSION
EXT=$ROOT/editors/vscode
export npm_config_unsafe_perm=true npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

log() { printf '[vscode-setup] %s\n' "$*"; }

# 1. Debian packages: code-server's native modules need the -dev packages,
#    VS Code search needs ripgrep, the tests drive Debian's chromium.
missing=()
for pkg in build-essential pkg-config libkrb5-dev libsecret-1-dev ripgrep chromium; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. code-server, built without its download steps (they cannot reach the
#    network here): the recipe in RECIPES.md, stamped when complete.
if [ ! -f "$CS_DIR/.complete" ]; then
  log "installing code-server $CODE_SERVER_VERSION into ${CS_DIR#$ROOT/}"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR"
  (
    cd "$CS_DIR"
    printf '{"name":"autocode-code-server","private":true}\n' > package.json
    npm install --no-save --ignore-scripts --loglevel=error "code-server@$CODE_SERVER_VERSION" >/dev/null
    npm rebuild --loglevel=error argon2 >/dev/null
    cd node_modules/code-server/lib/vscode
    npm install --omit=dev --ignore-scripts --loglevel=error >/dev/null
    mkdir -p node_modules/@vscode/ripgrep/bin
    ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
    npm_config_yes=true npm rebuild --loglevel=error >/dev/null
    rm -rf node_modules.asar && ln -s node_modules node_modules.asar
    (cd bin/remote-cli && ln -sf code-linux.sh code-server)
    (cd bin/helpers && ln -sf browser-linux.sh browser.sh)
    (cd extensions && npm_config_yes=true npm install --omit=dev --loglevel=error >/dev/null)
  )
  touch "$CS_DIR/.complete"
fi
ln -sfn "$CS_DIR/node_modules/code-server/out/node/entry.js" "$TOOLS/code-server-entry.js"

# 3. The extension: npm packages from the lock file, bundle, package.
if [ -f "$EXT/package.json" ]; then
  cd "$EXT"
  lock_sum=$(cksum package-lock.json | cut -d' ' -f1)
  if [ ! -f "node_modules/.autocode-$lock_sum" ]; then
    log "npm ci for editors/vscode"
    npm ci --loglevel=error >/dev/null
    touch "node_modules/.autocode-$lock_sum"
  fi
  newest_src=$(find src package.json esbuild.mjs tsconfig.json -newer dist/autocode.vsix 2>/dev/null | head -1 || true)
  if [ ! -f dist/autocode.vsix ] || [ -n "$newest_src" ]; then
    log "building and packaging the extension"
    npm run --silent package
  fi
fi
log "ready"
