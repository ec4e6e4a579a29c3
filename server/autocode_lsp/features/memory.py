"""Memory commands: save, search, list, delete, recall and promotion, through `autocode.memory`.

A session with a workspace folder has that repository in context (project and
global memories); one without sees global memories only. A refused save
becomes the `memoryRefused` error so every client notices it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from autocode_lsp import protocol, workspaces
from autocode_lsp.commands import command
from autocode_lsp.errors import domain_error, engine_call

if TYPE_CHECKING:
    from autocode.memory import MemoryContext, MemoryService
    from autocode_lsp.server import AutoCodeServer

R = TypeVar("R")


def _with_service(
    workspace: Path | None, agent: str | None, use: Callable[[MemoryService, MemoryContext], R]
) -> R:
    """Use the engine's pooled service for the store the workspace's settings name (defaults without one).

    The service stays open between commands (`autocode.memory.pool`), so its ranking
    index and embedding model survive from one search to the next.
    """
    from autocode.memory import MemoryContext
    from autocode.memory.pool import lease_for

    ctx = MemoryContext(agent=agent, repository=workspace)
    with lease_for(workspace) as service:
        return use(service, ctx)


async def _run(
    server: AutoCodeServer,
    command: str,
    workspace: str | None,
    agent: str | None,
    use: Callable[[MemoryService, MemoryContext], R],
) -> R:
    folder = workspaces.optional(server, workspace, command=command)
    return await engine_call(_with_service, folder, agent, use)


def _memory(data: dict[str, Any], score: float | None = None) -> protocol.Memory:
    return protocol.Memory(
        id=str(data["id"]), content=str(data["content"]), category=data.get("category"),
        scope=str(data.get("scope", "")), repository=data.get("repository"),
        owner=data.get("owner"), shared=bool(data.get("shared")),
        created_at=str(data.get("created_at", "")), updated_at=str(data.get("updated_at", "")),
        run_id=data.get("run_id"), score=data.get("score", score),
    )


@command(protocol.MEMORY_SAVE)
async def save(server: AutoCodeServer, args: protocol.MemorySaveArgs) -> protocol.MemorySaveResult:
    def use(service: MemoryService, ctx: MemoryContext) -> dict[str, Any]:
        result: dict[str, Any] = service.save(
            ctx, args.content, category=args.category, scope=args.scope, shared=args.shared
        ).to_dict()
        return result

    data = await _run(server, protocol.MEMORY_SAVE, args.workspace, args.agent, use)
    refused = data.get("refused")
    if refused:
        message = f"not saved: {refused['reason']} {refused['belongs']}".strip()
        if refused.get("suggestion"):
            message += f" A durable version: {refused['suggestion']}"
        raise domain_error(
            "memoryRefused", message, reason=refused["kind"], belongs=refused["belongs"],
            suggestion=refused.get("suggestion"),
        )
    if data["saved"]:
        message = f"saved {data['id']} ({data.get('scope')})"
        if data.get("similar_to"):
            message += f"; close to memory {data['similar_to']}, kept both since they differ in a detail"
    elif data.get("duplicate_of"):
        message = f"not saved again: memory {data['duplicate_of']} already says this"
    else:
        message = f"saved as the skill {data.get('skill')!r} instead: it is reusable know-how"
    return protocol.MemorySaveResult(
        saved=bool(data["saved"]), id=data.get("id"), duplicate_of=data.get("duplicate_of"),
        skill=data.get("skill"), scope=data.get("scope"), repository=data.get("repository"),
        evicted=list(data.get("evicted") or []), message=message, similar_to=data.get("similar_to"),
    )


@command(protocol.MEMORY_SEARCH)
async def search(
    server: AutoCodeServer, args: protocol.MemorySearchArgs
) -> protocol.MemorySearchResult:
    def use(service: MemoryService, ctx: MemoryContext) -> dict[str, Any]:
        result: dict[str, Any] = service.search(
            ctx, args.query, scope=args.scope, owner=args.owner, limit=args.limit
        ).to_dict()
        return result

    data = await _run(server, protocol.MEMORY_SEARCH, args.workspace, args.agent, use)
    return protocol.MemorySearchResult(
        query=str(data["query"]), method=str(data["method"]),
        memories=[_memory(h) for h in data["hits"]],
    )


@command(protocol.MEMORY_LIST)
async def list_(server: AutoCodeServer, args: protocol.MemoryListArgs) -> protocol.MemoryList:
    def use(service: MemoryService, ctx: MemoryContext) -> list[dict[str, Any]]:
        return [m.to_dict() for m in service.list(ctx, scope=args.scope, owner=args.owner)]

    found = await _run(server, protocol.MEMORY_LIST, args.workspace, args.agent, use)
    return protocol.MemoryList(memories=[_memory(m) for m in found])


@command(protocol.MEMORY_DELETE)
async def delete(server: AutoCodeServer, args: protocol.MemoryDeleteArgs) -> protocol.MemoryDeleteResult:
    def use(service: MemoryService, ctx: MemoryContext) -> dict[str, Any]:
        removed: dict[str, Any] = service.delete(ctx, args.id).to_dict()
        return removed

    removed = await _run(server, protocol.MEMORY_DELETE, args.workspace, args.agent, use)
    return protocol.MemoryDeleteResult(deleted=_memory(removed))


@command(protocol.MEMORY_RECALL)
async def recall(server: AutoCodeServer, args: protocol.MemoryRecallArgs) -> protocol.RecallReceipt:
    def use(service: MemoryService, ctx: MemoryContext) -> tuple[dict[str, Any], str]:
        receipt = service.recall(ctx, args.brief)
        return receipt.to_dict(), receipt.render()

    data, text = await _run(server, protocol.MEMORY_RECALL, args.workspace, args.agent, use)
    return protocol.RecallReceipt(
        method=str(data["method"]), reason=str(data.get("reason", "")),
        repository=data.get("repository"),
        project=[_memory(h) for h in data["project"]],
        global_=[_memory(h) for h in data["global"]],
        text=text,
    )


@command(protocol.MEMORY_PLAN_PROMOTION)
async def plan_promotion(
    server: AutoCodeServer, args: protocol.MemoryPlanPromotionArgs
) -> protocol.PromotionPlan:
    def use(service: MemoryService, ctx: MemoryContext) -> dict[str, Any]:
        plan: dict[str, Any] = service.plan_promotion(ctx).to_dict()
        return plan

    data = await _run(server, protocol.MEMORY_PLAN_PROMOTION, args.workspace, None, use)
    return protocol.PromotionPlan(
        scanned=int(data["scanned"]),
        candidates=[
            protocol.PromotionCandidate(
                memory_id=str(c["memory_id"]), name=str(c["name"]),
                description=str(c["description"]), category=c.get("category"),
                content=str(c["content"]), agents=[str(a) for a in c.get("agents", [])],
                scope=str(c.get("scope", "")), repository=c.get("repository"),
            )
            for c in data["candidates"]
        ],
    )


@command(protocol.MEMORY_APPLY_PROMOTION)
async def apply_promotion(
    server: AutoCodeServer, args: protocol.MemoryApplyPromotionArgs
) -> protocol.PromotionApplied:
    def use(service: MemoryService, ctx: MemoryContext) -> dict[str, Any]:
        result: dict[str, Any] = service.apply_promotion(ctx, args.ids).to_dict()
        return result

    data = await _run(server, protocol.MEMORY_APPLY_PROMOTION, args.workspace, None, use)
    return protocol.PromotionApplied(
        skills=list(data["skills"]), removed=[str(i) for i in data["removed"]]
    )
