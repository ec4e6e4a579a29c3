"""Errors of the task engine; each kind is stable (the language server's data.kind)."""

from __future__ import annotations

from autocode.errors import AutoCodeError, UsageError


class TaskNotFound(AutoCodeError):
    kind = "taskNotFound"
    exit_code = 4


class NotAwaitingInput(AutoCodeError):
    kind = "notAwaitingInput"
    exit_code = 5


class PlanRevisionMismatch(AutoCodeError):
    kind = "planRevisionMismatch"
    exit_code = 5


class NoRepository(AutoCodeError):
    kind = "noRepository"
    exit_code = 2


__all__ = ["NoRepository", "NotAwaitingInput", "PlanRevisionMismatch", "TaskNotFound", "UsageError"]
