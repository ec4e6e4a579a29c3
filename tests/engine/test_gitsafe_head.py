"""gitsafe.head_from_files: HEAD read from the git folder's files with no git process, equal to
`git rev-parse --verify HEAD` on real repositories, and refusing what a hostile one could plant."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode import gitsafe
from support import git, make_repo


def _rev_parse(repo: Path) -> str | None:
    out = git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).strip()
    return out or None


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "r", {"a.txt": "one\n"})
    (root / "a.txt").write_text("two\n")
    git(root, "commit", "-qam", "second")
    return root


@pytest.fixture
def git_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """Every git process started while the test runs (the program's argument lists)."""
    started: list[list[str]] = []
    real = subprocess.Popen

    class Counting(real):  # type: ignore[misc,valid-type]
        def __init__(self, args: object, *a: object, **kw: object) -> None:
            argv = [str(x) for x in args] if isinstance(args, list | tuple) else [str(args)]
            if os.path.basename(argv[0]) == "git":
                started.append(argv)
            super().__init__(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", Counting)
    yield started


def test_a_branch_detached_head_packed_refs_and_no_commit_read_as_git_reads_them(
    repo: Path, tmp_path: Path, git_processes: list[list[str]]
) -> None:
    seen = []
    seen.append((gitsafe.head_from_files(repo), _rev_parse(repo)))  # a loose branch ref
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    seen.append((gitsafe.head_from_files(repo), _rev_parse(repo)))  # packed
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    seen.append((gitsafe.head_from_files(repo), _rev_parse(repo)))  # detached
    empty = make_repo(tmp_path / "empty", commit=False)
    seen.append((gitsafe.head_from_files(empty), _rev_parse(empty)))  # no commit yet: None
    counted = len(git_processes)
    for files, by_git in seen:
        assert files == by_git
    assert seen[-1] == (None, None) and seen[0][0] != seen[2][0]
    gitsafe.head_from_files(repo)
    assert len(git_processes) == counted  # the reader itself starts none


def test_a_linked_worktree_reads_its_own_head(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    (linked / "a.txt").write_text("three\n")
    git(linked, "commit", "-qam", "on the side")
    assert gitsafe.head_from_files(linked) == _rev_parse(linked) != _rev_parse(repo)
    assert gitsafe.head_from_files(repo) == _rev_parse(repo)


@pytest.mark.parametrize("plant", ["fifo", "symlink", "escape", "huge", "garbage", "linked-ref"])
def test_what_a_hostile_repository_plants_is_refused_not_followed(repo: Path, tmp_path: Path, plant: str) -> None:
    head = repo / ".git" / "HEAD"
    outside = tmp_path / "outside"
    outside.write_text(_rev_parse(repo) + "\n")  # type: ignore[operator]
    head.unlink()
    if plant == "fifo":
        os.mkfifo(head)  # opening it for reading would wait for a writer forever
    elif plant == "symlink":
        head.symlink_to(outside)
    elif plant == "escape":
        head.write_text("ref: refs/../../../outside\n")
    elif plant == "huge":
        head.write_bytes(b"0" * 100_000)
    elif plant == "garbage":
        head.write_text("not a ref\n")
    else:
        head.write_text("ref: refs/heads/evil\n")
        (repo / ".git" / "refs" / "heads" / "evil").symlink_to(outside)
    with pytest.raises(gitsafe.HeadUnknown):
        gitsafe.head_from_files(repo)


def test_the_reftable_placeholder_is_unknown_not_a_missing_branch(repo: Path) -> None:
    # A reftable repository keeps this placeholder in HEAD; its refs are not files.
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/.invalid\n")
    with pytest.raises(gitsafe.HeadUnknown):
        gitsafe.head_from_files(repo)
