"""Engine errors in the words of the client: the remedy in an error (a CLI flag or command in
the engine's own message) is typed data (`autocode.remedy.Advice`), and each client kind gets
it phrased by its face (`autocode_lsp.remedies`): VS Code the setting or palette command, any
other LSP client the config key or LSP command. The errors a command raises carry it beside the
JSON-RPC error (`errors.advice_of`); a task snapshot's error carries it as `error.remedy`.

No message is rewritten with patterns: an engine message that names a CLI flag or an `autocode`
command carries that remedy as data, and the plan document speaks to every face alike. The
"`autocode forget`" and "`autocode doctor`" advice lives in the doctor report and the record
merge's notes, which no task error carries.
"""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcException

from autocode.remedy import Advice
from autocode_lsp.errors import advice_of
from autocode_lsp.remedies import face_for


def advise_error(exc: JsonRpcException, client_name: str) -> None:
    """`exc` (from `errors.from_engine`) with its message in this client's words."""
    advice = advice_of(exc)
    if advice is None:
        return
    exc.message = advice.worded(face_for(client_name))
    if isinstance(exc.data, dict) and isinstance(exc.data.get("message"), str):
        exc.data["message"] = exc.message


def advise_wire(value: Any, client_name: str) -> Any:
    """A command result or notification on the wire with each task's error message in this
    client's words (a snapshot, a list of them, or a didChange's `task`); other values are
    returned as they are."""
    if not isinstance(value, dict):
        return value
    error = value.get("error")
    if isinstance(error, dict) and isinstance(error.get("remedy"), dict):
        error["message"] = Advice.from_dict(error["remedy"]).worded(face_for(client_name))
    for key in ("result", "task"):
        inner = value.get(key)
        if isinstance(inner, dict):
            advise_wire(inner, client_name)
    tasks = value.get("tasks")
    if isinstance(tasks, list):
        for item in tasks:
            advise_wire(item, client_name)
    return value
