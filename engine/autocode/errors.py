"""User-facing errors shared by every engine module.

An `AutoCodeError` carries a stable `kind` (the language server sends it as
`data.kind`) and the exit code the CLI uses. Its message says what to do.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autocode.remedy import Advice


class AutoCodeError(Exception):
    """An error a person can act on. `kind` is stable; the message may change."""

    kind: str = "error"
    exit_code: int = 1

    advice: Advice | None = None
    """The remedy in the message as typed data, for a face that words it otherwise (`autocode.remedy`)."""

    def __init__(
        self,
        message: str | Advice,
        *,
        kind: str | None = None,
        exit_code: int | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(message, str):
            # lazy: a leaf, but most errors have no advice
            from autocode.remedy import TERMINAL

            self.advice = message
            message = message.worded(TERMINAL)
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind
        if exit_code is not None:
            self.exit_code = exit_code
        self.data: dict[str, Any] = dict(data or {})

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, **self.data}


class UsageError(AutoCodeError):
    """Wrong arguments or an unusable input path (CLI exit 2, LSP -32602)."""

    kind = "invalidArguments"
    exit_code = 2


class SetupError(AutoCodeError):
    """The workspace or its declared inputs are not usable as they are (exit 2)."""

    kind = "setupError"
    exit_code = 2


class RefusedError(AutoCodeError):
    """An operation refused by policy, e.g. operator-only commands when unattended (exit 3)."""

    kind = "refused"
    exit_code = 3


class NoRepository(AutoCodeError):
    """The command needs a git repository in context and has none (a task's workspace,
    or a project-scoped memory in a session without a repository)."""

    kind = "noRepository"
    exit_code = 2


class FaultError(AutoCodeError):
    """The file system refused AutoCode's work (full, read-only, no permission...): exit 2, never a traceback."""

    kind = "fileSystemFault"
    exit_code = 2


# errno -> (kind, what to do); the names come from `errno` so this module stays import-light.
_FAULTS: dict[str, tuple[str, str]] = {
    "ENOSPC": ("noSpace", "free some space on that device (`autocode prep prune` removes old prep copies) "
               "and run the command again"),
    "EDQUOT": ("noSpace", "free some space within your disk quota (`autocode prep prune` removes old prep "
               "copies) and run the command again"),
    "EROFS": ("readOnly", "AutoCode writes its copies, runs and record under .autocode in the workspace: "
              "remount the workspace read-write, or work in a writable clone"),
    "EACCES": ("permissionDenied", "give your user write access to it (or run AutoCode as its owner) and run "
               "the command again"),
    "EPERM": ("permissionDenied", "the file system refused the change (an immutable or protected file?): "
              "lift the protection, or work in a clone you own"),
}


_OTHER_DISK_FAULTS = frozenset({"EIO", "EFBIG", "ENAMETOOLONG", "EMLINK", "EUCLEAN", "ESTALE"})


def fault_error(exc: BaseException) -> AutoCodeError | None:
    """The person-facing error for a file-system fault or a too-deep input, else None.

    What AutoCode had half-written is already gone when this is raised (copies are
    built in a staging folder and files are replaced by rename), so the message
    can say so.
    """
    if isinstance(exc, AutoCodeError):
        return exc
    if isinstance(exc, RecursionError):
        return FaultError(
            "an input is nested too deeply for AutoCode to read; flatten it and run the command again",
            kind="tooDeep",
        )
    if not isinstance(exc, OSError) or isinstance(exc, (BrokenPipeError, ConnectionError, TimeoutError)):
        return None

    name = errno.errorcode.get(exc.errno or 0, "")
    if name not in _FAULTS and name not in _OTHER_DISK_FAULTS:
        return None  # not a disk fault (a network error, say): its own handler or a bug report
    kind, remedy = _FAULTS.get(name, ("fileSystemFault", "check the disk and the file system and run the command again"))
    where = exc.filename if exc.filename is not None else "the workspace or AutoCode's store"
    reason = exc.strerror or str(exc)
    return FaultError(
        f"{where}: {reason}. Nothing half-written was left behind. Remedy: {remedy}.",
        kind=kind,
        data={"path": str(where), "errno": name or None},
    )
