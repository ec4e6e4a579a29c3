"""Where a workspace's `.autocode` folder lives, also seen from its prep copies and worktrees.

Task work happens in prep copies (`<workspace>/.autocode/prep/<id>/source`)
and in linked git worktrees; the learned record always belongs to the
original workspace, so every record operation first maps its path back.
"""

from __future__ import annotations

import os
from pathlib import Path

AUTOCODE_DIR = ".autocode"
RECORD_NAME = "project.json"
RECORD_RELPATH = f"{AUTOCODE_DIR}/{RECORD_NAME}"
LOCK_NAME = "project.json.lock"


def _prep_copy_owner(path: Path) -> Path | None:
    """The workspace owning a prep copy that contains `path`, if any."""
    for candidate in (path, *path.parents):
        parts = candidate.parts
        if len(parts) >= 5 and parts[-1] == "source" and parts[-3] == "prep" and parts[-4] == AUTOCODE_DIR:
            return candidate.parents[3]
    return None


def _inside_linked_worktree(path: Path) -> bool:
    """Whether the nearest `.git` above `path` is a file (linked worktree or submodule).

    A plain repository or no repository at all needs no git call: the common case stays cheap.
    """
    for candidate in (path, *path.parents):
        marker = candidate / ".git"
        if marker.is_dir():
            return False
        if marker.exists():
            return True
    return False


def _linked_worktree_owner(path: Path) -> Path | None:
    """For a path inside a linked git worktree, the same place in the main worktree."""
    from autocode import gitsafe

    if not _inside_linked_worktree(path):
        return None

    try:
        top = gitsafe.toplevel(path)
        if top is None:
            return None
        main = gitsafe.main_worktree(path)
    except gitsafe.GitError:
        return None
    if main is None or main == top:
        return None
    try:
        return main / path.resolve().relative_to(top.resolve())
    except ValueError:
        return main


def workspace_root(path: Path | str) -> Path:
    """The original workspace for `path`, which may be a prep copy or a linked worktree of it."""
    current = Path(os.path.abspath(path))
    for _ in range(8):  # a prep copy of a worktree of ...: a few hops at most
        owner = _prep_copy_owner(current)
        if owner is None:
            owner = _linked_worktree_owner(current) if current.is_dir() else None
        if owner is None or owner == current:
            return current
        current = owner
    return current


def record_path(root: Path) -> Path:
    return root / AUTOCODE_DIR / RECORD_NAME


def display_path(path: Path, workspace: Path) -> str:
    """`path` relative to `workspace` when inside it, else as it is."""
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)
