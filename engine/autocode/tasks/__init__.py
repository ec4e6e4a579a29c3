"""Tasks: the TaskRun state machine, its run directory, the answer ledger and learning.

The CLI, the pilot coordinator and the language server use only what this
module exports. The names load on first use (PEP 562): the typed results in
`autocode.tasks.models` can be imported (by the protocol module) without the
phase machine, the providers and the prep copy behind `TaskRun`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autocode.tasks.errors import AlreadyDecided as AlreadyDecided
    from autocode.tasks.errors import NoRepository as NoRepository
    from autocode.tasks.errors import NotAwaitingInput as NotAwaitingInput
    from autocode.tasks.errors import PlanRevisionMismatch as PlanRevisionMismatch
    from autocode.tasks.errors import TaskNotFound as TaskNotFound
    from autocode.tasks.models import TaskSnapshot as TaskSnapshot
    from autocode.tasks.run import TaskRun as TaskRun
    from autocode.tasks.run import list_tasks as list_tasks
    from autocode.tasks.state import ENDS as ENDS
    from autocode.tasks.state import PAUSES as PAUSES
    from autocode.tasks.state import PHASE_OF as PHASE_OF
    from autocode.tasks.state import WORKING as WORKING
    from autocode.tasks.state import Source as Source
    from autocode.tasks.state import TaskOptions as TaskOptions
    from autocode.tasks.state import TaskState as TaskState

_HOME = {
    "AlreadyDecided": "errors",
    "NoRepository": "errors",
    "NotAwaitingInput": "errors",
    "PlanRevisionMismatch": "errors",
    "TaskNotFound": "errors",
    "TaskSnapshot": "models",
    "TaskRun": "run",
    "list_tasks": "run",
    "ENDS": "state",
    "PAUSES": "state",
    "PHASE_OF": "state",
    "WORKING": "state",
    "Source": "state",
    "TaskOptions": "state",
    "TaskState": "state",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"autocode.tasks.{home}"), name)
