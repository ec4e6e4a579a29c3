"""What a tool call answers: a result with its JSON, or a tool error that says what to do.

Every reply carries the engine's wire shape as `structuredContent` and the same JSON as
text (clients that read only text see everything). Errors are tool errors (`isError`),
never protocol errors, so the model reads them; their text passes through the engine's
scrub first, as the language server's log does, since an engine message may echo what
the caller sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from typing import Any

from mcp.types import CallToolResult, TextContent

from autocode.errors import AutoCodeError, fault_error


def _scrubbed(text: str) -> str:
    # lazy: the scrub module is only needed once a reply is written
    from autocode.scrub import redact

    return redact(text, env={k: v for k, v in os.environ.items() if k != "PWD"}, paths=False)


def ok(data: dict[str, Any], summary: str | None = None) -> CallToolResult:
    """A successful reply: `summary` (one line for the model) before the JSON of `data`."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if summary:
        text = f"{summary}\n\n{text}"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def failed(kind: str, message: str, *, beside: dict[str, Any] | None = None, **data: Any) -> CallToolResult:
    """A tool error: `kind` is stable (the language server's `data.kind`), `message` says what to do;
    `beside` are top-level fields sent with it (a refused save's `saved: false`)."""
    message = _scrubbed(message)
    body = {**(beside or {}), "error": {"kind": kind, "message": message, **data}}
    return CallToolResult(
        content=[TextContent(type="text", text=f"{message}\n\n{json.dumps(body, indent=2, ensure_ascii=False)}")],
        structured_content=body,
        is_error=True,
    )


def from_exception(exc: BaseException) -> CallToolResult | None:
    """The tool error for an engine error (or an OS fault the engine names); None for anything else."""
    if not isinstance(exc, AutoCodeError):
        converted = fault_error(exc) if isinstance(exc, (OSError, RecursionError)) else None
        if converted is None:
            return None
        exc = converted
    data = {k: v for k, v in exc.data.items() if k not in ("kind", "message")}
    return failed(exc.kind, mcp_wording(exc.message), **data)


def mcp_wording(message: str) -> str:
    """Engine messages name CLI flags; through MCP the workspace is fixed, so say that instead."""
    for cli, here in (
        ("pass --workspace (or open a workspace folder)", "start autocode-mcp in a repository"),
        ("with --workspace", "by starting autocode-mcp in a repository"),
        ("pass --agent NAME", "start autocode-mcp with --agent NAME"),
    ):
        message = message.replace(cli, here)
    return re.sub(r"`autocode task list[^`]*` shows (its tasks|them)", r"list_tasks shows \1", message)


async def engine(fn: Callable[..., CallToolResult], /, *args: Any) -> CallToolResult:
    """Run blocking engine work in a thread; an engine error becomes a tool error that says what to do."""
    try:
        return await asyncio.to_thread(fn, *args)
    except Exception as exc:
        reply = from_exception(exc)
        if reply is None:
            raise
        return reply
