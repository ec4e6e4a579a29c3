"""The agent loop of the OpenAI-compatible provider: tools in the prep copy, budgets, transcript.

`session.implement` runs the implementer's loop and returns the change it
made; `session.read_then_answer` lets another role read the copy before its
JSON answer. Modules: `http` (the abortable request), `tools` (what the model
may call), `editblocks` (the text fallback), `loop` (the loop itself).
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
