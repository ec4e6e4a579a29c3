#!/usr/bin/env bash
# Platform builds of the VS Code extension, each carrying the AutoCode server:
# the server's wheel and its dependencies are installed for one platform and
# each supported Python (bundled/py311, py312, py313) with
#   pip install --target … --platform … --python-version … --only-binary=:all:
# then `vsce package --target TARGET` makes editors/vscode/dist/autocode-TARGET.vsix.
# The platform-neutral build (no server; autocode.importStrategy falls back to
# the interpreter's installation) is editors/vscode/dist/autocode-neutral.vsix.
#
# Usage: scripts/vscode-bundle.sh [TARGET…]   default: linux-x64 and neutral
#        scripts/vscode-bundle.sh all         every target below and neutral
# Targets: linux-x64 linux-arm64 darwin-arm64 darwin-x64 win32-x64 neutral
# Prints each .vsix's size; fails when one is over 25 MB.
# AUTOCODE_BUNDLE_PYTHONS overrides the Python versions ("3.11 3.12 3.13");
# AUTOCODE_BUNDLE_EXTRAS adds extras to the bundled server (e.g. "semantic").
# Each bundled folder carries the bytecode its Python compiled (python3.11, python3.12, python3.13
# on PATH or in pyenv); AUTOCODE_BUNDLE_ALLOW_NO_PYC=1 ships a folder without it when that Python is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
EXT="$ROOT/editors/vscode"
PY="${PY:-$ROOT/.venv/bin/python}"
PYTHONS="${AUTOCODE_BUNDLE_PYTHONS:-3.11 3.12 3.13}"
EXTRAS="${AUTOCODE_BUNDLE_EXTRAS:-}"
LIMIT_MB=25
ALL_TARGETS="linux-x64 linux-arm64 darwin-arm64 darwin-x64 win32-x64"

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(linux-x64 neutral)
[ "${targets[0]}" = all ] && targets=($ALL_TARGETS neutral)

platform_tags() {
  case "$1" in
    linux-x64) echo "manylinux2014_x86_64 manylinux_2_17_x86_64 manylinux_2_28_x86_64 musllinux_1_1_x86_64" ;;
    linux-arm64) echo "manylinux2014_aarch64 manylinux_2_17_aarch64 manylinux_2_28_aarch64" ;;
    darwin-arm64) echo "macosx_11_0_arm64 macosx_12_0_arm64 macosx_13_0_arm64 macosx_14_0_arm64" ;;
    darwin-x64) echo "macosx_10_9_x86_64 macosx_10_12_x86_64 macosx_10_13_x86_64 macosx_10_15_x86_64 macosx_11_0_x86_64" ;;
    win32-x64) echo "win_amd64" ;;
    *) echo "unknown target $1 (use: $ALL_TARGETS neutral)" >&2; return 1 ;;
  esac
}

# Bytecode for each bundled Python, made by that Python: without it the first start (and every
# start where the extension folder is read-only) compiles the whole server, about half a second
# more before `initialize`. Hash-checked without looking at the source (`unchecked-hash`): the
# .vsix is unpacked with new modification times, which would make timestamp-checked .pyc stale.
compile_bytecode() {
  local version="$1" dest="$2" python="" candidate
  # python3.X on PATH, else a pyenv installation of it (its shims answer only when selected).
  for candidate in "$(command -v "python$version" || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python"$version"; do
    if [ -x "$candidate" ] && "$candidate" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$version'.split('.'))))" 2>/dev/null; then
      python="$candidate"
      break
    fi
  done
  if [ -z "$python" ]; then
    if [ "${AUTOCODE_BUNDLE_ALLOW_NO_PYC:-}" = 1 ]; then
      echo "warning: no python$version here; bundled/py${version/./} ships without bytecode" >&2
      return 0
    fi
    echo "python$version is needed to compile bundled/py${version/./} (set AUTOCODE_BUNDLE_ALLOW_NO_PYC=1 to ship it without bytecode)" >&2
    return 1
  fi
  # Not the packages only a later, rarer path imports (git history, WebSocket transport, pydantic's
  # v1 layer): their bytecode would nearly double the .vsix for no start-up gain.
  "$python" -m compileall -q -j 0 --invalidation-mode unchecked-hash \
    -x '/(git|gitdb|smmap|websockets|pydantic/v1|pydantic/deprecated)/' "$dest" >/dev/null
}

work="$(mktemp -d)"
trap 'rm -rf "$work" "$EXT/bundled"' EXIT
started=$(date +%s)

echo "== the extension's bundle and the server wheel"
(cd "$EXT" && node esbuild.mjs --production >/dev/null)
"$PY" -m build --wheel --outdir "$work/wheel" "$ROOT" >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
wheel=$(ls "$work"/wheel/*.whl)
spec="$wheel"
[ -n "$EXTRAS" ] && spec="autocode-lsp[$EXTRAS] @ file://$wheel"

mkdir -p "$EXT/dist"
for target in "${targets[@]}"; do
  t0=$(date +%s)
  rm -rf "$EXT/bundled"
  if [ "$target" = neutral ]; then
    out="$EXT/dist/autocode-neutral.vsix"
    (cd "$EXT" && npx --no-install vsce package --no-dependencies --allow-missing-repository --skip-license -o "$out" >/dev/null)
  else
    tags=$(platform_tags "$target")
    for version in $PYTHONS; do
      dest="$EXT/bundled/py${version/./}"
      args=()
      for tag in $tags; do args+=(--platform "$tag"); done
      "$PY" -m pip install --quiet --disable-pip-version-check --no-compile --only-binary=:all: \
        --implementation cp --python-version "$version" "${args[@]}" --target "$dest" "$spec" \
        2> >(grep -v "^WARNING: Location" >&2)
      rm -rf "$dest/bin"
      find "$dest" -name __pycache__ -type d -prune -exec rm -rf {} +
      compile_bytecode "$version" "$dest"
    done
    out="$EXT/dist/autocode-$target.vsix"
    # vsce's own secret scan, on every text file the package holds; vsce would also read the
    # binaries (vendor libraries, bytecode of the scanned sources): minutes per platform.
    (cd "$EXT" && npx --no-install vsce ls --no-dependencies | grep -Ev '\.(so(\.[0-9]+)*|pyd|dll|dylib|pyc)$' \
      | node "$ROOT/scripts/vscode-scan-secrets.cjs" --known "$work/scanned")
    (cd "$EXT" && npx --no-install vsce package --target "$target" --no-dependencies --allow-missing-repository \
      --skip-license --allow-package-all-secrets --allow-package-env-file -o "$out" >/dev/null)
  fi
  size=$(stat -c %s "$out")
  mb=$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }')
  echo "$target: $(basename "$out") $mb MB ($(( $(date +%s) - t0 )) s)"
  if [ "$size" -gt $(( LIMIT_MB * 1048576 )) ]; then
    echo "$target: over the $LIMIT_MB MB goal" >&2
    exit 1
  fi
done
echo "== built ${#targets[@]} package(s) in $(( $(date +%s) - started )) s"
