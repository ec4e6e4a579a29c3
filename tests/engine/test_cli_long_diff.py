"""A long diff is summarised in the terminal, or paged through $PAGER on a TTY (issue 31)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from autocode.cli.task import DIFF_LINES_SHOWN, diff_for_terminal

ENGINE = str(Path(__file__).resolve().parents[2] / "engine")


def _big_diff(path: Path) -> str:
    hunk = "".join(f"+line {n} of a generated file that the task wrote\n" for n in range(100_000))
    text = "diff --git a/big.txt b/big.txt\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,100000 @@\n" + hunk
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size > 5_000_000
    return text


def test_a_5_mb_diff_is_summarised_with_the_path_of_the_whole(tmp_path: Path) -> None:
    full = tmp_path / "run" / "evidence" / "changes.diff"
    diff = _big_diff(full)
    shown = diff_for_terminal(diff[:200_000], full)  # what a snapshot carries
    assert len(shown) < 25_000
    assert str(full) in shown and f"{full.stat().st_size:,} bytes" in shown
    assert len(shown.splitlines()) == DIFF_LINES_SHOWN + 1
    small = "diff --git a/x b/x\n+one line\n"
    assert diff_for_terminal(small, tmp_path / "nowhere.diff") == small


PAGED = r"""
import sys
from pathlib import Path
from autocode.cli.task import diff_for_terminal
full = Path(sys.argv[1])
print(diff_for_terminal(full.read_text()[:200000], full))
"""


def test_on_a_terminal_a_long_diff_goes_through_the_pager(tmp_path: Path) -> None:
    full = tmp_path / "run" / "evidence" / "changes.diff"
    _big_diff(full)
    marker = tmp_path / "paged"
    pager = tmp_path / "pager.sh"
    pager.write_text(f"#!/bin/sh\nwc -c < \"$1\" > {marker}\n", encoding="utf-8")
    pager.chmod(0o755)
    leader, follower = pty.openpty()
    try:
        process = subprocess.run([sys.executable, "-c", PAGED, str(full)], stdout=follower, stderr=subprocess.PIPE,
                                 env={**os.environ, "PYTHONPATH": ENGINE, "PAGER": str(pager)}, timeout=60)
        os.close(follower)
        follower = -1
        out = b""
        try:
            while chunk := os.read(leader, 65536):
                out += chunk
        except OSError:
            pass
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert process.returncode == 0, process.stderr
    assert marker.read_text().strip() == str(full.stat().st_size), "the pager did not get the whole diff"
    assert len(out) < 1000 and b"was shown in" in out, out[:300]
    # Not a terminal (a pipe): never the pager, the summary instead.
    marker.unlink()
    piped = subprocess.run([sys.executable, "-c", PAGED, str(full)], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": ENGINE, "PAGER": str(pager)}, timeout=60)
    assert not marker.exists() and str(full) in piped.stdout and len(piped.stdout) < 25_000
