#!/usr/bin/env bash
# Installs @modelcontextprotocol/inspector (a real MCP client nobody here wrote; its --cli mode
# drives autocode-mcp in tests/mcp/test_mcp_inspector.py) into .tools/mcp-inspector. Skips what is
# there already. Without npm or the registry it says so and exits 0: that test then skips with
# the reason. AUTOCODE_TEST_MCP_INSPECTOR names another install's launcher instead.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="2.12.0"
DEST=.tools/mcp-inspector
if [ -x "$DEST/node_modules/.bin/mcp-inspector" ] \
    && grep -q "\"version\": \"$VERSION\"" "$DEST/node_modules/@modelcontextprotocol/inspector/package.json" 2>/dev/null; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "mcp-setup: npm is not installed; the MCP Inspector test will be skipped (make proof-tools installs npm)" >&2
  exit 0
fi
mkdir -p "$DEST"
# --ignore-scripts: its one install script only sets up a source checkout's clients.
if timeout 300 npm install --no-audit --no-fund --ignore-scripts --prefix "$DEST" \
    "@modelcontextprotocol/inspector@$VERSION" >"$DEST/install.log" 2>&1; then
  echo "[mcp-setup] @modelcontextprotocol/inspector $VERSION ready"
else
  echo "mcp-setup: npm could not install @modelcontextprotocol/inspector (no registry? see $DEST/install.log);" \
       "the MCP Inspector test will be skipped" >&2
fi
