#!/usr/bin/env bash
# The package as a user gets it: build the wheel and sdist (the wheel is built
# from the sdist, so both are proven), check their metadata with twine, install
# the wheel (not editable) into a fresh virtual environment and run
# `autocode doctor`, the language server's --version and the whole demo flow
# from that environment, outside the source tree.
#
# Usage: scripts/package-check.sh [OUT_DIR]   (default: a temporary folder, removed at the end)
# Dependencies come from pip's cache when it has them, so repeated runs are quick.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
if [ $# -ge 1 ]; then OUT="$1"; mkdir -p "$OUT"; else OUT="$(mktemp -d)"; trap 'rm -rf "$OUT"' EXIT; fi
NAME="$("$PY" -c 'import tomllib,sys; print(tomllib.load(open(sys.argv[1],"rb"))["project"]["name"])' "$ROOT/pyproject.toml")"
PIP=(-q --disable-pip-version-check)
started=$(date +%s)

echo "== build $NAME (sdist, then the wheel from it)"
rm -rf "$OUT/dist"
"$PY" -m build --outdir "$OUT/dist" "$ROOT" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
ls -l "$OUT/dist"
"$PY" -m twine check --strict "$OUT"/dist/*

wheel=$(ls "$OUT"/dist/*.whl)
echo "== the wheel holds the import packages and nothing of the tests"
"$PY" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for must in ("autocode/__init__.py", "autocode/cli/__init__.py", "autocode_lsp/__main__.py", "autocode_lsp/protocol/__init__.py", "autocode/memory/static_lean.py", "autocode_mcp/__main__.py"):
    assert must in names, f"{must} is missing from the wheel"
assert not [n for n in names if n.startswith(("tests/", "fixtures/", "editors/"))], "the wheel carries test or editor files"
entry = [n for n in names if n.endswith("entry_points.txt")]
text = zipfile.ZipFile(sys.argv[1]).read(entry[0]).decode()
assert "autocode = autocode.cli:main" in text and "autocode-lsp = autocode_lsp.__main__:main" in text, text
assert "autocode-mcp = autocode_mcp.__main__:main" in text, text
print(f"{len(names)} files, commands autocode, autocode-lsp and autocode-mcp")
PY

echo "== a fresh environment with only the wheel (and its dependencies)"
rm -rf "$OUT/venv"
python3 -m venv "$OUT/venv"
"$OUT/venv/bin/python" -m pip install "${PIP[@]}" "$wheel"
cd "$OUT"  # nothing of the source tree on the path
"$OUT/venv/bin/python" - <<'PY'
import autocode, autocode_lsp, sys
for module in (autocode, autocode_lsp):
    assert module.__file__.startswith(sys.prefix), f"{module.__name__} came from {module.__file__}, not the installed wheel"
print("imports from", sys.prefix)
PY
"$OUT/venv/bin/autocode" --version
"$OUT/venv/bin/autocode-lsp" --version
"$OUT/venv/bin/autocode-mcp" --version  # the MCP SDK is an extra: --version needs none of it
HOME="$OUT/home" XDG_DATA_HOME="$OUT/home/data" XDG_STATE_HOME="$OUT/home/state" XDG_CONFIG_HOME="$OUT/home/config" \
  "$OUT/venv/bin/autocode" doctor --json >"$OUT/doctor.json"
"$OUT/venv/bin/python" -c 'import json,sys; d=json.load(open(sys.argv[1])); print("doctor: ok", sorted(d)[:6])' "$OUT/doctor.json"

echo "== the demo flow from the installed wheel"
HOME="$OUT/home" XDG_DATA_HOME="$OUT/home/data" XDG_STATE_HOME="$OUT/home/state" XDG_CONFIG_HOME="$OUT/home/config" \
  "$OUT/venv/bin/python" "$ROOT/scripts/demo.py" </dev/null >"$OUT/demo.log" 2>&1 || { tail -40 "$OUT/demo.log"; exit 1; }
tail -3 "$OUT/demo.log"
echo "== package check passed in $(( $(date +%s) - started )) s"
