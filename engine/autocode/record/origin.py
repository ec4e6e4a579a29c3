"""Which task taught the record its test command: a local note beside the ignored run
folders (`.autocode/cache/`), never in the shared record, so doctor can name the task."""

from __future__ import annotations

import contextlib
import datetime
import json
from pathlib import Path

from autocode.atomic import write_atomically

ORIGIN_RELPATH = Path(".autocode") / "cache" / "learned-test-command.json"


def note_origin(workspace: Path, command: str, task_id: str) -> None:
    """Remember that `task_id` learned `command` (a lost note only makes doctor say "unknown")."""
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    data = json.dumps({"test_command": command, "task_id": task_id, "time": now}).encode()
    with contextlib.suppress(OSError):
        (workspace / ORIGIN_RELPATH).parent.mkdir(parents=True, exist_ok=True)
        write_atomically(workspace / ORIGIN_RELPATH, data, durable=False)


def learned_origin(workspace: Path, command: str | None) -> dict[str, str] | None:
    """The task that learned `command` into the record, when this machine ran it."""
    if not command:
        return None
    try:
        data = json.loads((workspace / ORIGIN_RELPATH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("test_command") != command:
        return None
    return {"task_id": str(data.get("task_id") or ""), "time": str(data.get("time") or "")}
