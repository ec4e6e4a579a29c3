"""What AutoCode keeps for its owner alone is 0700 folders and 0600 files whatever the umask:
a run's state and evidence (the merge base captured before the change), the runs folder made
by a code action, and the folders above a new memory database."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode.memory.sqlite_store import SqliteStore
from autocode.tasks import Source, TaskOptions, TaskRun
from autocode_lsp.documents import runs_folder
from support.tasks import build_sample

CLI = Source("cli", "tester")


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The loosest umask there is, for this test only (the umask is the process's)."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _loose(root: Path) -> list[str]:
    """Everything under `root` (itself included) that is not 0700 (folder) or 0600 (file)."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode != (0o700 if path.is_dir() else 0o600):
            found.append(f"{path.relative_to(root)} {oct(mode)}")
    return found


def test_a_run_and_its_evidence_are_private_after_the_change_is_made(tmp_path: Path, open_umask: None) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"Add longest_word via {patch}", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, CLI)
    assert snap.state == "WAITING_FOR_COMPLETION_APPROVAL", snap.state
    base = run.run_dir / "evidence" / "base"
    assert list((base / "files").iterdir()), "no merge base was captured: the check below proves nothing"
    assert _loose(repo / ".autocode" / "runs") == []


def test_the_runs_folder_a_code_action_makes_is_private(tmp_path: Path, open_umask: None) -> None:
    repo, _ = build_sample("unittest", tmp_path / "textkit")
    folder = runs_folder(repo)
    assert folder == repo / ".autocode" / "runs"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_every_folder_made_above_a_new_memory_database_is_private(tmp_path: Path, open_umask: None) -> None:
    path = tmp_path / "home" / "share" / "autocode" / "memory.sqlite3"
    store = SqliteStore(path)
    try:
        assert _loose(tmp_path / "home") == [], "a folder or the database is open to others"
    finally:
        store.close()
