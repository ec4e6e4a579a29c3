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
from autocode.tasks.run import TaskRun, list_tasks
from autocode.tasks.state import ENDS, PAUSES, PHASE_OF, WORKING, Source, TaskOptions, TaskState

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
    "TaskState",
    "list_tasks",
]
