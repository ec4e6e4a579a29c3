"""User-facing errors shared by every engine module.

An `AutoCodeError` carries a stable `kind` (the language server sends it as
`data.kind`) and the exit code the CLI uses. Its message says what to do.
"""

from __future__ import annotations

from typing import Any


class AutoCodeError(Exception):
    """An error a person can act on. `kind` is stable; the message may change."""

    kind: str = "error"
    exit_code: int = 1

    def __init__(
        self,
        message: str,
        *,
        kind: str | None = None,
        exit_code: int | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
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
