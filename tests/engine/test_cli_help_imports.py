"""The real `autocode --help` path (parse, print, exit) imports none of the heavy libraries."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("pydantic", "git", "lsprotocol")
PROBE = """
import runpy, sys
HEAVY = HEAVY_NAMES
sys.argv = ["autocode", *sys.argv[1:]]
try:
    runpy.run_module("autocode", run_name="__main__")
except SystemExit as exc:
    code = exc.code
sys.stderr.write(f"exit={code} heavy={','.join(m for m in HEAVY if m in sys.modules)}\\n")
"""


@pytest.mark.parametrize("argv", [["--help"], ["doctor", "--help"], ["forget", "--help"], ["unattended", "--help"]])
def test_help_imports_no_heavy_library(argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.replace("HEAVY_NAMES", repr(HEAVY)), *argv], capture_output=True, text=True, timeout=60
    )
    assert "usage: autocode" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "exit=0 heavy="
