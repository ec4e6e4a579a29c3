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
from collections.abc import Callable
from typing import Any, assert_never

from mcp.types import CallToolResult, TextContent

from autocode.errors import AutoCodeError, fault_error
from autocode.remedy import Remedy, RemedyKind, in_config


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
    return failed(exc.kind, worded(exc), **data)


class McpWords:
    """The remedies in an MCP agent's words: the workspace and agent are fixed when autocode-mcp
    starts, tasks and memories are listed by its tools, settings live in the repository's config."""

    def phrase(self, remedy: Remedy) -> str:
        match remedy.kind:
            case RemedyKind.SET_SETTINGS | RemedyKind.SET_TEST_COMMAND:
                return in_config(remedy)
            case RemedyKind.TURN_OFF_SANDBOX:
                return ""
            case RemedyKind.USE_REAL_MODEL:
                return "or configure a real model in .autocode/config.toml"
            case RemedyKind.RESUME_TASK:
                which = f" {remedy.task_id}" if remedy.task_id else ""
                return f"the person resumes the task{which} in their editor or with `autocode task resume{which}`"
            case RemedyKind.GIVE_WORKSPACE:
                return "start autocode-mcp in your repository (or with --workspace PATH)"
            case RemedyKind.LIST_TASKS:
                return "list_tasks shows"
            case RemedyKind.LIST_MEMORIES:
                return "search_memory lists"
            case RemedyKind.TRUST_REPOSITORY:
                return (f"the person runs `autocode trust --workspace {remedy.workspace}` in a terminal (it shows "
                        "them and records their yes)")
            case RemedyKind.NAME_ARGUMENT:
                if remedy.argument == "agent":
                    return "start autocode-mcp with --agent NAME"
                return f"the `{remedy.argument}` parameter"
            case _:
                assert_never(remedy.kind)


MCP_WORDS = McpWords()


def worded(exc: AutoCodeError) -> str:
    """An engine error's message in an MCP agent's words (its typed remedy phrased for MCP)."""
    return exc.advice.worded(MCP_WORDS) if exc.advice is not None else exc.message


async def engine(fn: Callable[..., CallToolResult], /, *args: Any) -> CallToolResult:
    """Run blocking engine work in a thread; an engine error becomes a tool error that says what to do."""
    try:
        return await asyncio.to_thread(fn, *args)
    except Exception as exc:
        reply = from_exception(exc)
        if reply is None:
            raise
        return reply
