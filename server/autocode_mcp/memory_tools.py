"""The memory tools (`save_memory`, `search_memory`, `delete_memory`) and the recall pass.

The names and parameters are the ones agents already call; the rules are the engine's,
unchanged (`MemoryService` through the process's pool, as the CLI and the language server
lease it): a save tied to one task, a credential or a machine path is refused with the
reason and where it belongs; one another memory already says answers `saved: false`
with that memory's id; reusable know-how becomes a skill; the agent's own memories are
capped and the oldest go first. The repository in context is the server's workspace.
The recall pass (what a task on a brief is reminded of) is the `recall` prompt and the
`autocode://memory/recall` resource.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations

from autocode_mcp import replies

if TYPE_CHECKING:
    from autocode.memory import MemoryContext, MemoryService
    from autocode_mcp.app import AutoCodeMCP, Face

R = TypeVar("R")

RECALL_URI = "autocode://memory/recall"


def _with_memory(face: Face, agent: str | None, use: Callable[[MemoryService, MemoryContext], R]) -> R:
    # lazy: the memory engine loads with the first memory call
    from autocode.memory import MemoryContext
    from autocode.memory.pool import lease_for

    with lease_for(face.root) as service:
        return use(service, MemoryContext(agent=agent, repository=face.root))


def save_reply(result: Any) -> CallToolResult:
    """A refusal is a tool error naming the reason and where the content belongs; the rest are results."""
    data: dict[str, Any] = result.wire()
    refused = result.refused
    if refused is not None:
        return replies.failed(
            "memoryRefused", result.message, beside={"saved": False, "refused": data["refused"]},
            reason=refused.kind, belongs=refused.belongs, suggestion=refused.suggestion,
        )
    return replies.ok(data, result.message)


def register(server: AutoCodeMCP, face: Face) -> None:
    @server.tool(
        description=(
            "Save one durable fact worth remembering beyond the current task (a convention, a command, "
            "a pitfall). Refused, with the reason and where it belongs, when it is tied to one task or "
            "holds a credential or a machine path. saved:false with duplicateOf when a memory already "
            "says it; reusable know-how is kept as a skill. scope: project (this repository, the default) "
            "or global; shared: a team memory instead of this agent's own."
        ),
    )
    async def save_memory(
        content: str,
        ctx: Context,
        category: str | None = None,
        scope: Literal["project", "global"] | None = None,
        shared: bool = False,
    ) -> CallToolResult:
        agent = face.agent_for(ctx)

        def work() -> CallToolResult:
            result = _with_memory(
                face, agent,
                lambda s, c: s.save(c, content, category=category, scope=scope, shared=shared),
            )
            return save_reply(result)

        return await replies.engine(work)

    @server.tool(
        description=(
            "Find memories this agent can see (its own and the team's, for this repository and global), "
            "best first. scope: all, project or global; owner: all, self or team."
        ),
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def search_memory(
        query: str,
        ctx: Context,
        scope: Literal["all", "project", "global"] = "all",
        owner: Literal["all", "self", "team"] = "all",
    ) -> CallToolResult:
        agent = face.agent_for(ctx)

        def work() -> CallToolResult:
            found = _with_memory(face, agent, lambda s, c: s.search(c, query, scope=scope, owner=owner))
            data: dict[str, Any] = found.wire()
            return replies.ok(data, f"{len(data['memories'])} memor{'y' if len(data['memories']) == 1 else 'ies'} ({data['method']})")

        return await replies.engine(work)

    @server.tool(
        description="Delete one memory by its id (one this agent can see).",
        annotations=ToolAnnotations(destructive_hint=True),
    )
    async def delete_memory(id: str, ctx: Context) -> CallToolResult:
        # lazy: the memory engine loads with the first memory call
        from autocode.memory.model import MemoryDeleteResult

        agent = face.agent_for(ctx)

        def work() -> CallToolResult:
            removed = _with_memory(face, agent, lambda s, c: s.delete(c, id))
            return replies.ok(MemoryDeleteResult.of(removed).wire(), f"deleted {removed.id}")

        return await replies.engine(work)

    def recall_text(agent: str | None, brief: str) -> str:
        receipt = _with_memory(face, agent, lambda s, c: s.recall(c, brief))
        text: str = receipt.view().wire()["text"]
        return text

    @server.prompt(
        name="recall",
        description="What a task on BRIEF would be reminded of: up to 8 project and 8 global memories.",
    )
    async def recall(ctx: Context, brief: str = "") -> str:
        return await _recall_or_say(recall_text, face.agent_for(ctx), brief)

    @server.resource(
        RECALL_URI, name="recall", mime_type="text/markdown",
        description=(
            "The memories a task in this repository is reminded of before it has a brief (most recent "
            "first): the team's, and this agent's own."
        ),
    )
    async def recall_resource() -> str:
        return await _recall_or_say(recall_text, server.agent_now(), "")


async def _recall_or_say(recall_text: Callable[[str | None, str], str], agent: str | None, brief: str) -> str:
    """The recall text; an engine error is a protocol error with its message (a prompt or a
    resource has no tool error to carry it)."""
    # lazy: only when a recall is asked for
    import asyncio

    from mcp.shared.exceptions import MCPError

    from autocode.errors import AutoCodeError

    try:
        return await asyncio.to_thread(recall_text, agent, brief)
    except AutoCodeError as exc:
        raise MCPError(code=-32603, message=replies.worded(exc), data={"kind": exc.kind}) from exc
