#!/usr/bin/env bash
# Installs the MCP clients nobody here wrote that tests/mcp drives autocode-mcp with, into
# .tools/mcp-inspector: @modelcontextprotocol/inspector (its --cli mode, test_mcp_inspector.py)
# and Claude Code (`claude -p` against a scripted endpoint on 127.0.0.1, test_mcp_claude_code.py).
# Skips what is there already. Without npm or the registry it says so and exits 0: those tests
# then skip with the reason. AUTOCODE_TEST_MCP_INSPECTOR and AUTOCODE_TEST_CLAUDE name other installs.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="2.12.0"
CLAUDE_VERSION="2.1.197"
DEST=.tools/mcp-inspector
installed() {  # PACKAGE VERSION
  grep -q "\"version\": \"$2\"" "$DEST/node_modules/$1/package.json" 2>/dev/null
}
if installed @modelcontextprotocol/inspector "$VERSION" && installed @anthropic-ai/claude-code "$CLAUDE_VERSION"; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "mcp-setup: npm is not installed; the tests that drive autocode-mcp with these clients will be skipped (make proof-tools installs npm)" >&2
  exit 0
fi
mkdir -p "$DEST"
# --ignore-scripts: the Inspector's one install script only sets up a source checkout's clients;
# Claude Code's (it puts the binary of this platform's optional package in place) is run on its own.
if timeout 600 npm install --no-audit --no-fund --ignore-scripts --prefix "$DEST" \
    "@modelcontextprotocol/inspector@$VERSION" "@anthropic-ai/claude-code@$CLAUDE_VERSION" >"$DEST/install.log" 2>&1 \
    && (cd "$DEST/node_modules/@anthropic-ai/claude-code" && node install.cjs) >>"$DEST/install.log" 2>&1 \
    && "$DEST/node_modules/.bin/claude" --version >>"$DEST/install.log" 2>&1; then
  echo "[mcp-setup] @modelcontextprotocol/inspector $VERSION and Claude Code $CLAUDE_VERSION ready"
else
  echo "mcp-setup: npm could not install the MCP clients (no registry? see $DEST/install.log);" \
       "the tests that drive autocode-mcp with them will be skipped" >&2
fi
