"""The workspace a command works on: resolved and checked in one place, with one error kind.

Every face and part (the CLI's `--workspace`, the server's `workspace` argument,
tasks, prep, the record, project-scoped memories) hands its folder to this
module. A folder that cannot be a workspace is `WorkspaceInvalid`
(`workspaceInvalid`, exit 2) whatever the reason, and the message says which
reason and what to pass instead:

- it does not exist, or is not a folder;
- it is inside a repository's `.git` folder (git's own files, not a work tree);
- it is not inside a git work tree (no repository, or a bare one);
- only where a part needs the top folder (`top_only`, prep): it is a sub-folder;
- only for a repository's identity (`memory.repokey`): it has no commit and no origin.

`folder` checks only the first two (the doctor and settings work on any
folder); `resolve` checks all and returns the work tree's top folder with
symbolic links resolved. A session without any folder is another matter
(`noRepository`: nothing was given), as is a folder outside an editor
session's folders (`workspaceOutsideSession`, the server's confinement).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autocode import gitsafe
from autocode.errors import SetupError
from autocode.remedy import Advice, Remedy, RemedyKind


class WorkspaceInvalid(SetupError):
    """The folder given as the workspace cannot be one (see the module's list of reasons)."""

    kind = "workspaceInvalid"
    exit_code = 2


@dataclass(frozen=True)
class Workspace:
    """A checked workspace: the top folder of its git work tree (links resolved) and its HEAD."""

    root: Path
    head: str | None


def _inside_git_dir(path: Path) -> bool:
    return ".git" in path.parts


def folder(path: Path | str) -> Path:
    """`path` as an absolute path (links kept) if it is an existing folder outside any `.git`."""
    given = Path(path).expanduser().absolute()
    if not given.exists():
        raise WorkspaceInvalid(
            Advice(f"workspace {path} does not exist; ", Remedy(RemedyKind.GIVE_WORKSPACE)),
            data={"path": str(given)},
        )
    if not given.is_dir():
        raise WorkspaceInvalid(
            Advice(f"workspace {path} is not a directory; ", Remedy(RemedyKind.GIVE_WORKSPACE)),
            data={"path": str(given)},
        )
    if _inside_git_dir(given) or _inside_git_dir(given.resolve()):
        raise WorkspaceInvalid(
            f"workspace {path} is inside a repository's .git folder (git's own files); "
            "pass the folder of the checkout instead",
            data={"path": str(given)},
        )
    return given


def resolve(path: Path | str, *, top_only: bool = False) -> Workspace:
    """The work tree `path` is in, checked; `top_only` refuses a sub-folder of one."""
    given = folder(path)
    gitsafe.require_supported_git()
    real = given.resolve()
    top, head = gitsafe.toplevel_and_head(real)
    if top is None:
        raise WorkspaceInvalid(
            f"{given} is not inside a git repository (or only in a bare one, without a work tree); "
            "run `git init` there (and commit) or pass a repository folder",
            data={"path": str(given)},
        )
    root = top.resolve()
    if top_only and root != real:
        raise WorkspaceInvalid(
            f"{real} is inside the work tree {root}, not its top folder; pass {root} as the workspace",
            data={"path": str(given)},
        )
    return Workspace(root, head)


def root(path: Path | str) -> Path:
    """The top folder of the work tree `path` is in (links resolved), checked as `resolve` does."""
    return resolve(path).root
