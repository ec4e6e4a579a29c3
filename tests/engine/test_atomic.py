"""`autocode.atomic`: the one atomic write, what a crashed writer leaves, and that it is the only one."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from autocode.atomic import KILL_ENV, TMP_SUFFIX, write_atomically

ROOT = Path(__file__).resolve().parents[2]

WRITER = r"""
import sys
from pathlib import Path
from autocode.atomic import write_atomically
write_atomically(Path(sys.argv[1]), b"new content\n" * 10_000)
"""


def test_a_writer_killed_before_its_rename_leaves_the_old_file_intact(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old content\n")
    env = {**os.environ, KILL_ENV: "write:state.json"}
    proc = subprocess.run([sys.executable, "-c", WRITER, str(target)], env=env, capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert target.read_bytes() == b"old content\n"
    # The killed writer's whole temporary file is left beside it, under a name readers skip.
    left = [p for p in tmp_path.iterdir() if p != target]
    assert len(left) == 1 and left[0].name.startswith(".state.json.") and left[0].name.endswith(TMP_SUFFIX)
    assert left[0].read_bytes() == b"new content\n" * 10_000

    write_atomically(target, b"next\n")  # the leftover is no obstacle to the next writer
    assert target.read_bytes() == b"next\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    target.write_bytes(b"old\n")

    with pytest.raises(TypeError):  # fails once its temporary file exists
        write_atomically(target, "text, not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


def test_the_mode_is_kept_unless_given(tmp_path: Path) -> None:
    kept = tmp_path / "script.sh"
    kept.write_bytes(b"#!/bin/sh\n")
    kept.chmod(0o750)
    write_atomically(kept, b"#!/bin/sh\necho new\n", durable=False)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o750

    given = tmp_path / "private.json"
    given.write_bytes(b"{}")
    given.chmod(0o644)
    write_atomically(given, b"{}\n", mode=0o600)
    assert stat.S_IMODE(given.stat().st_mode) == 0o600

    fresh = tmp_path / "fresh.txt"
    umask = os.umask(0o022)
    try:
        write_atomically(fresh, b"x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644


def test_a_link_at_the_path_is_replaced_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not yours\n")
    link = tmp_path / "report.json"
    link.symlink_to(outside)
    write_atomically(link, b"{}\n")
    assert not link.is_symlink() and link.read_bytes() == b"{}\n"
    assert outside.read_bytes() == b"not yours\n"


def test_no_other_module_replaces_files_itself() -> None:
    """Every atomic replacement of a file in the engine and the server is `write_atomically`."""
    own = ROOT / "engine" / "autocode" / "atomic.py"
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for base in (ROOT / "engine", ROOT / "server")
        for path in sorted(base.rglob("*.py"))
        if path != own
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bos\.replace\(|\.replace\(tmp\b|\bmkstemp\(", line)
    ]
    assert found == []
