#!/usr/bin/env bash
# Installs what the editor tests need (Neovim comes with the dev extra; VS Code
# pieces come from scripts/vscode-setup.sh, Emacs + eglot from scripts/emacs-setup.sh). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x scripts/vscode-setup.sh ]; then bash scripts/vscode-setup.sh; fi
bash scripts/emacs-setup.sh
