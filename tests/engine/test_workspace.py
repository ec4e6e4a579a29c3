"""One check of a workspace (`autocode.workspace`), one error kind, for every part and face.

Each bad folder is refused with `workspaceInvalid` (exit 2) by tasks, prep,
project memories and the record alike, and nothing is written anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autocode import workspace
from autocode.memory import MemoryContext, repository_key
from autocode.prep import make_prep_copy
from autocode.record import forget_record
from autocode.tasks import TaskRun
from autocode.workspace import WorkspaceInvalid
from support import make_repo


def _bad_folders(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    plain = tmp_path / "plain"
    plain.mkdir()
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    return {
        "missing": (tmp_path / "missing", "does not exist"),
        "file": (a_file, "not a directory"),
        "no repository": (plain, "not inside a git repository"),
        "inside .git": (repo / ".git" / "refs", ".git folder"),
        "bare": (bare, "not inside a git repository"),
    }


def _snapshot(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size if p.is_file() else -1) for p in root.rglob("*"))


def test_every_part_refuses_a_bad_workspace_with_one_kind(tmp_path: Path) -> None:
    bad = _bad_folders(tmp_path)
    before = _snapshot(tmp_path)
    calls = {
        "workspace.resolve": workspace.resolve,
        "task start": lambda p: TaskRun.start(p, "anything"),
        "task list": lambda p: TaskRun.load(p, "t-20990101-000000-abcdef"),
        "prep": make_prep_copy,
        "memory key": repository_key,
    }
    for reason, (path, words) in bad.items():
        for name, call in calls.items():
            with pytest.raises(WorkspaceInvalid) as info:
                call(path)
            assert info.value.kind == "workspaceInvalid" and info.value.exit_code == 2, (reason, name)
            assert words in info.value.message, (reason, name, info.value.message)
    for reason in ("missing", "file", "inside .git"):
        with pytest.raises(WorkspaceInvalid):
            forget_record(bad[reason][0])
    assert _snapshot(tmp_path) == before


def test_links_are_resolved_and_sub_folders_follow_the_part(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"sub/a.txt": "a\n"})
    link = tmp_path / "link"
    link.symlink_to(repo)
    checked = workspace.resolve(link / "sub")
    assert checked.root == repo.resolve() and checked.head
    assert workspace.folder(link) == link  # the folder check keeps the name it was given
    with pytest.raises(WorkspaceInvalid, match="not its top folder"):
        workspace.resolve(link / "sub", top_only=True)  # prep copies a whole work tree
    assert workspace.resolve(link, top_only=True).root == repo.resolve()
    empty = make_repo(tmp_path / "empty", commit=False)
    assert workspace.resolve(empty).head is None
    with pytest.raises(WorkspaceInvalid, match="no commit and no network origin"):
        repository_key(empty)


@pytest.mark.parametrize(
    "argv",
    [
        ["task", "start", "--brief", "x", "--workspace"],
        ["task", "list", "--workspace"],
        ["memory", "list", "--workspace"],
        ["prep", "--workspace"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_the_cli_reports_the_one_kind(tmp_path: Path, argv: list[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.run(
        [sys.executable, "-m", "autocode", *argv, str(plain), "--json"],
        capture_output=True, text=True, check=False, env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert json.loads(proc.stdout)["error"]["kind"] == "workspaceInvalid"
    assert list(plain.iterdir()) == []


def test_memory_context_with_a_plain_folder(tmp_path: Path) -> None:
    from autocode.memory import open_memory

    plain = tmp_path / "plain"
    plain.mkdir()
    with open_memory(memory_path=str(tmp_path / "m.db")) as memory, pytest.raises(WorkspaceInvalid):
        memory.save(MemoryContext("implementer", plain), "The build uses tox")
    assert list(plain.iterdir()) == []
