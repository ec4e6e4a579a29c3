#!/usr/bin/env bash
# Installs what the editor tests need (Neovim comes with the dev extra; VS Code
# pieces come from scripts/vscode-setup.sh once that exists). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x scripts/vscode-setup.sh ]; then bash scripts/vscode-setup.sh; fi
