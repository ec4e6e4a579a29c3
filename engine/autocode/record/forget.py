"""Forgetting: removing only the learned record, nothing else the person keeps."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autocode.errors import SetupError, fault_error
from autocode.record.location import (
    AUTOCODE_DIR,
    LOCK_NAME,
    check_workspace,
    checked_folder,
    record_path,
    workspace_root,
)

FORGET_LOCK_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ForgetResult:
    removed: bool
    path: Path

    def to_dict(self) -> dict[str, Any]:
        return {"removed": self.removed, "path": str(self.path)}


def forget_record(workspace: Path | str) -> ForgetResult:
    """Remove `.autocode/project.json` of the workspace (also when given one of its prep copies or
    worktrees). Idempotent: a missing record gives `removed=False`. Config, runs, evidence and
    approvals stay."""
    root = workspace_root(check_workspace(workspace))
    path = record_path(root)
    checked_folder(root)  # a linked `.autocode` is refused: its target is not the workspace's
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return ForgetResult(False, path)
    if stat.S_ISDIR(mode):
        raise SetupError(f"{path} is a directory, not AutoCode's record; remove or rename it yourself")
    # lazy: not needed by the server's first memory save, which imports this module
    from filelock import FileLock, Timeout

    try:
        # Wait for a merge in progress so it cannot re-create the file right after we remove it.
        with FileLock(root / AUTOCODE_DIR / LOCK_NAME, timeout=FORGET_LOCK_TIMEOUT_S):
            try:
                os.unlink(path)  # a symlink is removed itself, never its target
            except FileNotFoundError:
                return ForgetResult(False, path)
    except Timeout as exc:
        raise SetupError(
            f"another AutoCode process is writing {path}; wait for it to finish and run forget again"
        ) from exc
    except OSError as exc:  # read-only, protected or not ours: the error names the remedy
        fault = fault_error(exc)
        raise (fault or SetupError(f"cannot remove {path}: {exc}")) from exc
    return ForgetResult(True, path)
