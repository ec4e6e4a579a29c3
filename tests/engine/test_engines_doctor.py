"""`autocode doctor --json` (the installed console script, a process of its own) with the real agent
CLIs that `make engines` installs put on PATH: each engine is listed with the program found, the
version its real `--version` printed (a fresh version cache, so nothing is remembered from an earlier
run), and whether AutoCode reads that version. Skips, saying so, when no engine CLI is installed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import make_repo

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools"
NPM_BIN = TOOLS / "npm" / "node_modules" / ".bin"
PROGRAMS = {"claude-code": NPM_BIN / "claude", "codex": NPM_BIN / "codex", "opencode": NPM_BIN / "opencode",
            "gemini": NPM_BIN / "gemini", "aider": TOOLS / "aider" / "bin" / "aider"}
# The versions scripts/engines-setup.sh pins, by the name of its variable.
PINNED = {"claude-code": "CLAUDE_CODE_VERSION", "codex": "CODEX_VERSION", "opencode": "OPENCODE_VERSION",
          "gemini": "GEMINI_CLI_VERSION", "aider": "AIDER_VERSION"}
INSTALLED = {name: path for name, path in PROGRAMS.items() if path.exists()}


def pinned_versions() -> dict[str, str]:
    script = (ROOT / "scripts" / "engines-setup.sh").read_text(encoding="utf-8")
    out = {}
    for engine, variable in PINNED.items():
        found = re.search(rf'^{variable}="([^"]+)"', script, re.MULTILINE)
        assert found, f"{variable} is not in scripts/engines-setup.sh"
        out[engine] = found.group(1)
    return out


@pytest.mark.skipif(not INSTALLED, reason="no engine CLI is installed here: run `make engines` (scripts/engines-setup.sh)")
def test_doctor_lists_each_installed_engine_with_the_version_it_prints(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    folders = list(dict.fromkeys(str(p.parent) for p in INSTALLED.values()))
    # The engines' folders and what node and git need; nothing else that could hold another copy.
    path = os.pathsep.join([*folders, str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    env = {**os.environ, "PATH": path, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("AUTOCODE_EXTENSIONS", None)
    autocode = Path(sys.executable).parent / "autocode"
    proc = subprocess.run([str(autocode), "doctor", "--json", "--workspace", str(repo)], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert proc.stdout, proc.stderr
    section = json.loads(proc.stdout)["engines"]
    assert section["chosen"] is None
    listed = {e["engine"]: e for e in section["engines"]}
    assert set(PROGRAMS) <= set(listed)  # every registered engine has a row, found or not
    pinned = pinned_versions()
    for engine, program in INSTALLED.items():
        row = listed[engine]
        assert row["path"] and Path(row["path"]).resolve() == program.resolve(), row
        # The version the real CLI printed, read as AutoCode reads it: the release the setup pins.
        assert row["version"] == pinned[engine], row
        assert re.fullmatch(r"\d+\.\d+\.\d+", row["version"]), row
        assert row["supported"] is True and row["tested"] is True, row
        assert "problem" not in row, row
    for engine in set(PROGRAMS) - set(INSTALLED):
        assert listed[engine]["path"] is None and listed[engine]["remedy"], listed[engine]
    # The cache now holds what each program said, so a task does not ask again.
    cache = json.loads((tmp_path / "cache" / "autocode" / "engines.json").read_text(encoding="utf-8"))
    assert sorted(cache.values()) == sorted(pinned[e] for e in INSTALLED)

    # The text report names each one with its version too.
    text = subprocess.run([str(autocode), "doctor", "--workspace", str(repo)], capture_output=True, text=True,
                          env=env, timeout=300, check=False).stdout
    for engine in INSTALLED:
        assert f"  {engine}: {pinned[engine]} at " in text, text
