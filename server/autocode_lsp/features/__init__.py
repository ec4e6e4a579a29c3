"""One module per feature area; each exports `HANDLERS: {command name: async handler}`."""

from __future__ import annotations

from typing import Any


def all_handlers() -> dict[str, Any]:
    from autocode_lsp.features import core, memory, prep, project, tasks

    handlers: dict[str, Any] = {}
    for module in (core, project, prep, tasks, memory):
        handlers.update(module.HANDLERS)
    return handlers
