"""Tasks: the TaskRun state machine, its run directory, the answer ledger and learning.

The CLI, the pilot coordinator and the language server use only what this
module exports.
"""

from __future__ import annotations

from autocode.tasks.errors import (
    AlreadyDecided,
    NoRepository,
    NotAwaitingInput,
    PlanRevisionMismatch,
    TaskNotFound,
)
from autocode.tasks.run import (
    ENDS,
    PAUSES,
    PHASE_OF,
    WORKING,
    Source,
    TaskOptions,
    TaskRun,
    list_tasks,
)

__all__ = [
    "ENDS",
    "PAUSES",
    "PHASE_OF",
    "WORKING",
    "AlreadyDecided",
    "NoRepository",
    "NotAwaitingInput",
    "PlanRevisionMismatch",
    "Source",
    "TaskNotFound",
    "TaskOptions",
    "TaskRun",
    "list_tasks",
]
