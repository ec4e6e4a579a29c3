#!/usr/bin/env bash
# Installs the agent CLIs the engine tests and benchmark run for real, under .tools/ (never
# into the project's venv: Aider pins its own dependencies, which would fight ours):
#   .tools/aider     a venv of its own with aider-chat from PyPI (bin/aider)
#   .tools/npm       Claude Code, Codex, OpenCode and Gemini CLI from npm
#                    (node_modules/.bin/claude, codex, opencode, gemini)
# Needs python3 (with venv) and node/npm (scripts/proof-tools-setup.sh installs them). Skips what
# is already there at the pinned version. Idempotent. When an install cannot be made (no registry,
# no npm) it says so and goes on: the tests of that CLI then skip with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
AIDER_VERSION="0.86.2"
CLAUDE_CODE_VERSION="2.1.197"
CODEX_VERSION="0.169.0"
OPENCODE_VERSION="1.18.33"
GEMINI_CLI_VERSION="0.61.0"
TOOLS=".tools"
mkdir -p "$TOOLS"

if [ "$("$TOOLS/aider/bin/aider" --version 2>/dev/null || true)" != "aider $AIDER_VERSION" ]; then
  echo "[engines-setup] installing aider-chat $AIDER_VERSION into $TOOLS/aider"
  if ! { python3 -m venv "$TOOLS/aider" \
         && "$TOOLS/aider/bin/python" -m pip install -q --disable-pip-version-check "aider-chat==$AIDER_VERSION"; }; then
    echo "[engines-setup] aider-chat could not be installed; its engine tests will be skipped" >&2
  fi
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "[engines-setup] npm is missing (scripts/proof-tools-setup.sh installs it); the npm engine tests (Claude Code, Codex, OpenCode, Gemini CLI) will be skipped" >&2
  exit 0
fi
want="@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION @openai/codex@$CODEX_VERSION opencode-ai@$OPENCODE_VERSION @google/gemini-cli@$GEMINI_CLI_VERSION"
have_claude="$(node -p "require('./$TOOLS/npm/node_modules/@anthropic-ai/claude-code/package.json').version" 2>/dev/null || true)"
have_codex="$(node -p "require('./$TOOLS/npm/node_modules/@openai/codex/package.json').version" 2>/dev/null || true)"
have_opencode="$(node -p "require('./$TOOLS/npm/node_modules/opencode-ai/package.json').version" 2>/dev/null || true)"
have_gemini="$(node -p "require('./$TOOLS/npm/node_modules/@google/gemini-cli/package.json').version" 2>/dev/null || true)"
if [ "$have_claude" != "$CLAUDE_CODE_VERSION" ] || [ "$have_codex" != "$CODEX_VERSION" ] \
   || [ "$have_opencode" != "$OPENCODE_VERSION" ] || [ "$have_gemini" != "$GEMINI_CLI_VERSION" ]; then
  echo "[engines-setup] installing $want into $TOOLS/npm"
  mkdir -p "$TOOLS/npm"
  # shellcheck disable=SC2086
  if ! timeout 900 npm install --prefix "$TOOLS/npm" --no-audit --no-fund --loglevel=error $want; then
    echo "[engines-setup] npm could not install $want; those engine tests will be skipped" >&2
    exit 0
  fi
fi
echo "[engines-setup] ready: $("$TOOLS/aider/bin/aider" --version 2>/dev/null || echo 'no aider')," \
     "claude $("$TOOLS/npm/node_modules/.bin/claude" --version 2>/dev/null | head -1)," \
     "$("$TOOLS/npm/node_modules/.bin/codex" --version 2>/dev/null | head -1)," \
     "opencode $("$TOOLS/npm/node_modules/.bin/opencode" --version 2>/dev/null | head -1)," \
     "gemini $("$TOOLS/npm/node_modules/.bin/gemini" --version 2>/dev/null | head -1)"
