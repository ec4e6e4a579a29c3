"""Where a workspace's `.autocode` folder lives, also seen from its prep copies and worktrees.

Task work happens in prep copies (`<workspace>/.autocode/prep/<id>/source`)
and in linked git worktrees; the learned record always belongs to the
original workspace, so every record operation first maps its path back.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from autocode import gitsafe
from autocode.errors import SetupError
from autocode.workspace import folder

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


class AutocodeFolderUnsafe(SetupError):
    """`.autocode` (or a folder AutoCode keeps in it) is a link or not a plain folder."""

    kind = "autocodeFolderUnsafe"


def _unsafe(path: Path, what: str) -> AutocodeFolderUnsafe:
    return AutocodeFolderUnsafe(
        f"{path} is {what}; AutoCode writes only into a plain folder inside the workspace and never "
        f"follows a link there. Remedy: move {path} aside (`git rm --cached` it too if the repository "
        f"tracks it) and run the command again; AutoCode makes a new folder.",
        data={"path": str(path)},
    )


def _describe(mode: int) -> str | None:
    if stat.S_ISDIR(mode):
        return None
    return "a symbolic link" if stat.S_ISLNK(mode) else "not a folder"


def checked_folder(root: Path, *names: str, create: bool = False) -> Path:
    """`root/.autocode[/names...]`, each part checked to be a plain folder (never a link).

    A missing part is made when `create` (one level at a time, so nothing is made
    through a link); otherwise a missing part ends the check. Raises
    `AutocodeFolderUnsafe` (exit 2) with the remedy for a link or a file.
    """
    path = root
    for name in (AUTOCODE_DIR, *names):
        path = path / name
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            if not create:
                return root.joinpath(AUTOCODE_DIR, *names)
            try:
                # `.autocode` holds shared files; what AutoCode keeps inside it (runs, prep)
                # is its owner's alone, whatever the umask.
                os.mkdir(path, 0o777 if name == AUTOCODE_DIR else 0o700)
                continue
            except FileExistsError:
                mode = os.lstat(path).st_mode
        except NotADirectoryError:
            raise _unsafe(path.parent, "not a folder") from None
        what = _describe(mode)
        if what:
            raise _unsafe(path, what)
    return path


def autocode_folder_state(root: Path) -> dict[str, object]:
    """For doctor: what `.autocode` is (`folder`, `missing`, `link`, `other`) and whether git tracks a link there."""
    path = root / AUTOCODE_DIR
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return {"path": str(path), "state": "missing", "tracked": False, "ok": True}
    state = "folder" if stat.S_ISDIR(mode) else "link" if stat.S_ISLNK(mode) else "other"
    tracked = False
    if state != "folder":
        try:
            tracked = bool(gitsafe.run(["ls-files", "-z", "--", AUTOCODE_DIR], root, check=False).stdout)
        except gitsafe.GitError:
            tracked = False
    data: dict[str, object] = {"path": str(path), "state": state, "tracked": tracked, "ok": state == "folder"}
    if state != "folder":
        what = "a symbolic link" if state == "link" else "not a folder"
        data["message"] = _unsafe(path, what).message
        if tracked:
            data["message"] = (
                f"the repository tracks {path} as {what} (a clone brings it); AutoCode refuses to write "
                f"through it. Remedy: `git rm --cached {AUTOCODE_DIR}`, move it aside, commit, and run again."
            )
    return data


def record_path(root: Path) -> Path:
    return root / AUTOCODE_DIR / RECORD_NAME


def display_path(path: Path, workspace: Path) -> str:
    """`path` relative to `workspace` when inside it, else as it is."""
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)


def check_workspace(workspace: Path | str) -> Path:
    """`workspace` as an absolute path; `WorkspaceInvalid` (exit 2) when it is missing or not a directory."""
    return folder(workspace)
