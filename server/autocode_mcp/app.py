"""The MCP server object: the fixed workspace, the checks every tool call passes, and the tools.

Before a tool runs, its arguments are checked as the language server checks a command's:
no argument the tool does not take, every string and list within the protocol's bounds
(`autocode_lsp.protocol.limits`), and the types the tool's schema names. A call to a tool
that would approve or apply something (there is none) is answered with where the person
approves instead of "unknown tool", so an agent that tries learns where the decision lives.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import ValidationError

from autocode import __version__
from autocode_lsp.protocol import limits
from autocode_mcp import replies

INSTRUCTIONS = """\
AutoCode for the repository this server was started in.
Memory: save_memory keeps one durable fact (true beyond the current task) for this repository
or for every repository; it refuses task trivia, credentials and machine paths (saying where they
belong), answers saved:false with the id of a memory that already says it, and keeps reusable
know-how as a skill. search_memory finds memories; the `recall` prompt and the
autocode://memory/recall resource give what a task would be reminded of.
Tasks: start_task runs a coding task until it needs a person; task_status and task_evidence read
it; answer_question answers a question as delegated (the task decides; never as the person).
Nothing here approves: plans and completions are approved by the person, in the editor or with
`autocode task approve` / `autocode task approve-completion`.
"""

WIRE_NAMES = {"task_id": "taskId", "question_id": "questionId", "test_command": "testCommand"}
"""This server's argument names that the language server's bounds know under another name."""

APPROVING = re.compile(r"approv|reject|confirm|accept|apply|resolve|merge|request_?changes", re.IGNORECASE)
"""Tool names an agent might try in order to decide for the person."""

_AGENT_NAME = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Face:
    """What every tool works with: the workspace fixed at start and the agent name, if one was given."""

    root: Path
    agent: str | None = None

    def agent_for(self, ctx: Context[Any, Any] | None) -> str:
        """The agent whose memories these are: `--agent`, else the client's own name, else `mcp`."""
        if self.agent:
            return self.agent
        return agent_name(client_name(ctx))

    def channel_for(self, ctx: Context[Any, Any] | None) -> str:
        """The answer ledger's source channel: `mcp:<client name>`."""
        name = re.sub(r"[^\w .@+-]", "-", client_name(ctx)).strip()[:80] or "client"
        return f"mcp:{name}"

    def actor_for(self, ctx: Context[Any, Any] | None) -> str | None:
        """Who answers through this client, for the answer ledger: the client's name, if it gave one."""
        return client_name(ctx) or None


def client_name(ctx: Context[Any, Any] | None) -> str:
    try:
        params = ctx.session.client_params if ctx is not None else None
    except (AttributeError, RuntimeError):
        params = None
    info = getattr(params, "client_info", None)
    return str(getattr(info, "name", "") or "")


def agent_name(name: str) -> str:
    """`name` in the letters an agent name may hold (memory.service's rule), else `mcp`."""
    cleaned = _AGENT_NAME.sub("-", name).strip("-._")[:64]
    return cleaned or "mcp"


class AutoCodeMCP(MCPServer[Any]):
    """MCPServer with AutoCode's argument checks in front of every tool."""

    def __init__(self, face: Face) -> None:
        super().__init__("autocode", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
        self.face = face
        self.client = ""
        """The connected client's name (from its `initialize`), seen with its first request."""

    def agent_now(self) -> str | None:
        """The agent a request without its own context (the recall resource) acts as."""
        return self.face.agent or (agent_name(self.client) if self.client else None)

    def _seen(self, context: Context[Any, Any] | None) -> None:
        if not self.client:
            self.client = client_name(context)

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        self._seen(context)
        return await super().read_resource(uri, context)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        self._seen(context)
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            if APPROVING.search(name):
                # lazy: the task module loads with the first task tool
                from autocode_mcp.task_tools import approval_refusal

                return await asyncio.to_thread(approval_refusal, self.face, arguments.get("task_id"), tried=name[:64])
            known = ", ".join(t.name for t in self._tool_manager.list_tools())
            return replies.failed("unknownTool", f"there is no tool {name[:64]!r}; the tools are: {known}")
        checked = check_arguments(name, arguments, tool.parameters)
        if checked is not None:
            return checked
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                return replies.failed("invalidArguments", validation_text(name, cause))
            raise


def check_arguments(name: str, arguments: dict[str, Any], schema: dict[str, Any]) -> CallToolResult | None:
    """A tool error for arguments the tool does not take or that are over their bounds, else None."""
    taken = set((schema.get("properties") or {}).keys())
    unknown = sorted(str(k)[:64] for k in arguments if k not in taken)
    if unknown:
        return replies.failed(
            "invalidArguments",
            f"{name}: unknown argument(s) {', '.join(unknown)}; it takes {', '.join(sorted(taken)) or 'none'}",
        )
    try:
        limits.check(name, {WIRE_NAMES.get(k, k): v for k, v in arguments.items()})
    except limits.TooLarge as exc:
        return replies.failed("invalidArguments", str(exc))
    return None


def validation_text(name: str, exc: ValidationError) -> str:
    """Which arguments are wrong and why, without the values the caller sent."""
    parts = []
    for err in exc.errors()[:10]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"`{where}`: {err.get('msg', 'invalid')}")
    return f"{name}: " + "; ".join(parts) + " (see the tool's input schema)"


def build(face: Face) -> AutoCodeMCP:
    """The server with every tool, the recall resource and the recall prompt registered."""
    # lazy: each tool module imports the MCP SDK's decorators only when the server is built
    from autocode_mcp import memory_tools, task_tools

    server = AutoCodeMCP(face)
    memory_tools.register(server, face)
    task_tools.register(server, face)
    return server
