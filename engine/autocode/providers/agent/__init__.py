"""The agent loop of the OpenAI-compatible provider: tools in the prep copy, budgets, transcript.

`session.implement` runs the implementer's loop and returns the change it
made; `session.read_then_answer` lets another role read the copy before its
JSON answer. Modules: `http` (the request: retries, adjustments, the
abortable exchange), `connections` (one kept connection per endpoint, the
cancel watcher), `stream` (server-sent events put back together),
`endpoint_errors` (what an error answer means), `families` (request
parameters per endpoint family), `messages` (Anthropic's Messages API as the
same client), `reply` (one completion read the same way whatever wrote it),
`context` (the history kept within the window), `tools` (what the model may
call), `editblocks` (the text fallback), `loop` (the loop itself),
`transcript` (the transcripts as Markdown), `probe` (doctor --check-provider).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

AGENT_DIR = "agent"


def status_path(run_dir: Path) -> Path:
    return run_dir / AGENT_DIR / "status.json"


def read_status(run_dir: Path) -> dict[str, Any] | None:
    """The agent loops' status as last written (each role, usage summed over them), or None."""
    try:
        data = json.loads(status_path(run_dir).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None
