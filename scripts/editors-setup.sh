#!/usr/bin/env bash
# Installs what the editor tests need (Neovim comes with the dev extra; VS Code
# pieces come from scripts/vscode-setup.sh, Emacs + eglot from scripts/emacs-setup.sh). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x scripts/vscode-setup.sh ]; then bash scripts/vscode-setup.sh; fi
bash scripts/emacs-setup.sh
# lazy.nvim, for the test that installs the Neovim plugin with it as docs/editors.md
# says (AUTOCODE_TEST_LAZY_NVIM names another checkout). Optional: without the
# network that test is skipped with the reason, and nothing here fails.
if [ -z "${AUTOCODE_TEST_LAZY_NVIM:-}" ] && [ ! -d .tools/lazy.nvim/.git ]; then
  mkdir -p .tools
  if GIT_TERMINAL_PROMPT=0 timeout 60 git clone -q --depth 1 --branch stable \
      https://github.com/folke/lazy.nvim.git .tools/lazy.nvim.part 2>/dev/null; then
    mv .tools/lazy.nvim.part .tools/lazy.nvim
  else
    rm -rf .tools/lazy.nvim.part
    echo "editors-setup: lazy.nvim could not be cloned (no network?); its install test will be skipped" >&2
  fi
fi
# lualine.nvim, for the test of the Neovim plugin's lualine component (AUTOCODE_TEST_LUALINE
# names another checkout). Optional in the same way.
if [ -z "${AUTOCODE_TEST_LUALINE:-}" ] && [ ! -d .tools/lualine.nvim/.git ]; then
  mkdir -p .tools
  if GIT_TERMINAL_PROMPT=0 timeout 60 git clone -q --depth 1 \
      https://github.com/nvim-lualine/lualine.nvim.git .tools/lualine.nvim.part 2>/dev/null; then
    mv .tools/lualine.nvim.part .tools/lualine.nvim
  else
    rm -rf .tools/lualine.nvim.part
    echo "editors-setup: lualine.nvim could not be cloned (no network?); its component test will be skipped" >&2
  fi
fi
