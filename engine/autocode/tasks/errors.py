"""Errors of the task engine; each kind is stable (the language server's data.kind)."""

from __future__ import annotations

from autocode.errors import AutoCodeError, NoRepository, UsageError


class TaskNotFound(AutoCodeError):
    kind = "taskNotFound"
    exit_code = 4


class NotAwaitingInput(AutoCodeError):
    kind = "notAwaitingInput"
    exit_code = 5


class AlreadyDecided(AutoCodeError):
    """A decision that was already taken (a duplicate or late answer or approval)."""

    kind = "alreadyDecided"
    exit_code = 5


class ConfirmationRequired(AutoCodeError):
    """A step that needs the person's explicit, typed confirmation, which was not given."""

    kind = "confirmationRequired"
    exit_code = 5


class PlanRevisionMismatch(AutoCodeError):
    kind = "planRevisionMismatch"
    exit_code = 5


__all__ = [
    "AlreadyDecided",
    "ConfirmationRequired", "NoRepository", "NotAwaitingInput", "PlanRevisionMismatch", "TaskNotFound", "UsageError"]
