"""`.autocode` is never followed: every writer refuses a link (or a file) there, with the remedy.

Each test points `.autocode` at a folder outside the workspace that holds a
record; after the refused command that folder is byte-identical and the
workspace gained nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from autocode.errors import AutoCodeError
from autocode.prep import make_prep_copy
from autocode.record import ObservedFacts, ensure_gitignore, forget_record, merge_record
from autocode.record.location import AutocodeFolderUnsafe
from autocode.tasks import TaskRun
from support import git, make_repo
from support.tasks import autocode, build_sample, cli_env


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            out[rel] = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else "dir"
    return out


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose `.autocode` is a link to a folder outside it that holds a record."""
    ws, _patch = build_sample("pytest", tmp_path / "ws")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "project.json").write_text('{"version": 1}\n', encoding="utf-8")
    (outside / "runs").mkdir()
    os.symlink(outside, ws / ".autocode")
    return ws, outside


WRITERS: dict[str, Callable[[Path], object]] = {
    "record": lambda ws: merge_record(ws, ObservedFacts(framework="pytest", test_command="python -m pytest"), []),
    "gitignore": ensure_gitignore,
    "forget": forget_record,
    "prep": make_prep_copy,
    "runs": lambda ws: TaskRun.start(ws, "Add total_with_tax. Patch: patches/add-tax.patch"),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_writer_refuses_a_linked_autocode(writer: str, linked: tuple[Path, Path]) -> None:
    ws, outside = linked
    before_outside, before_ws = _snapshot(outside), _snapshot(ws)
    if writer == "record":
        result = merge_record(ws, ObservedFacts(framework="pytest", test_command="python -m pytest"), [])
        assert not result.written
        assert any("symbolic link" in p and "Remedy" in p for p in result.errors), result.errors
    else:
        with pytest.raises(AutoCodeError) as info:
            WRITERS[writer](ws)
        assert info.value.exit_code == 2
        assert "symbolic link" in info.value.message and "Remedy" in info.value.message
    assert _snapshot(outside) == before_outside
    assert _snapshot(ws) == before_ws


@pytest.mark.parametrize("inner", ["runs"])
def test_a_linked_folder_inside_autocode_is_refused_too(inner: str, tmp_path: Path) -> None:
    ws, patch = build_sample("pytest", tmp_path / "ws")
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / ".autocode").mkdir()
    os.symlink(outside, ws / ".autocode" / inner)
    with pytest.raises(AutocodeFolderUnsafe) as info:
        TaskRun.start(ws, f"Add total_with_tax. Patch: {patch}")
    assert info.value.kind == "autocodeFolderUnsafe"
    assert os.listdir(outside) == []


def test_a_file_named_autocode_is_refused(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    (ws / ".autocode").write_text("not a folder\n", encoding="utf-8")
    result = merge_record(ws, ObservedFacts(framework="pytest"), [])
    assert not result.written and any("not a folder" in p for p in result.errors)
    with pytest.raises(AutocodeFolderUnsafe):
        ensure_gitignore(ws)
    assert (ws / ".autocode").read_text() == "not a folder\n"


def test_cli_forget_and_task_start_refuse_with_exit_2(linked: tuple[Path, Path]) -> None:
    ws, outside = linked
    before = _snapshot(outside)
    proc = autocode("forget", "--workspace", str(ws), env=cli_env())
    assert proc.returncode == 2 and "symbolic link" in proc.stderr and "Remedy" in proc.stderr, proc.stderr
    proc = autocode("task", "start", "--workspace", str(ws), "--brief", "Add it. Patch: patches/add-tax.patch",
                    "--json", env=cli_env())
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert _snapshot(outside) == before


def test_doctor_reports_a_clone_that_tracks_a_linked_autocode(tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "origin", {"a.py": "a\n"})
    os.symlink("/tmp", origin / ".autocode")
    git(origin, "add", ".autocode")
    git(origin, "commit", "-q", "-m", "ships a link")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert (clone / ".autocode").is_symlink()
    proc = autocode("doctor", "--workspace", str(clone), "--json", env=cli_env())
    assert proc.returncode == 0, proc.stderr
    folder = json.loads(proc.stdout)["autocode_folder"]
    assert folder["state"] == "link" and folder["tracked"] is True and folder["ok"] is False
    assert "git rm --cached .autocode" in folder["message"]
    text = autocode("doctor", "--workspace", str(clone), env=cli_env()).stdout
    assert "PROBLEM" in text and "tracks" in text
    proc = autocode("prep", "--workspace", str(clone), env=cli_env())
    assert proc.returncode == 2 and "symbolic link" in proc.stderr
