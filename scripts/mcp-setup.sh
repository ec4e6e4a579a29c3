#!/usr/bin/env bash
# Installs @modelcontextprotocol/inspector, the MCP client nobody here wrote that tests/mcp drives
# autocode-mcp with (its --cli mode, test_mcp_inspector.py), into .tools/mcp-inspector. Claude Code,
# the other real client (test_mcp_claude_code.py), comes from scripts/engines-setup.sh.
# Skips what is there already. Without npm or the registry it says so and exits 0: those tests
# then skip with the reason. AUTOCODE_TEST_MCP_INSPECTOR names another install.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="2.12.0"
DEST=.tools/mcp-inspector
if grep -q "\"version\": \"$VERSION\"" "$DEST/node_modules/@modelcontextprotocol/inspector/package.json" 2>/dev/null; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "mcp-setup: npm is not installed; the tests that drive autocode-mcp with the Inspector will be skipped (make proof-tools installs npm)" >&2
  exit 0
fi
mkdir -p "$DEST"
# --ignore-scripts: the Inspector's one install script only sets up a source checkout's clients.
if timeout 600 npm install --no-audit --no-fund --ignore-scripts --prefix "$DEST" \
    "@modelcontextprotocol/inspector@$VERSION" >"$DEST/install.log" 2>&1; then
  echo "[mcp-setup] @modelcontextprotocol/inspector $VERSION ready"
else
  echo "mcp-setup: npm could not install the MCP Inspector (no registry? see $DEST/install.log);" \
       "the tests that drive autocode-mcp with it will be skipped" >&2
fi
