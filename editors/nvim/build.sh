#!/bin/sh
# The plugin's build step: install the AutoCode server from this checkout into
# a plugin-local environment, editors/nvim/server, where the plugin finds it
# without any setting. lazy.nvim runs it as `build`; packer as `run`; with
# vim.pack or a manual clone, run it once yourself:  sh editors/nvim/build.sh
#
# AUTOCODE_PYTHON names the Python (3.11 or newer) to build it with (default python3);
# AUTOCODE_EXTRAS the extras (default: semantic; empty for none).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${AUTOCODE_PYTHON:-python3}
extras=${AUTOCODE_EXTRAS-semantic}
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "AutoCode needs Python 3.11 or newer; set AUTOCODE_PYTHON")'
if [ ! -x "$here/server/bin/python" ]; then
  "$python" -m venv "$here/server"
fi
spec="$root"
[ -n "$extras" ] && spec="$root[$extras]"
"$here/server/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
"$here/server/bin/autocode-lsp" --version
