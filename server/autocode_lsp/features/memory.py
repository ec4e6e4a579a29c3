"""Memory commands: save, search, list, delete, recall and promotion, through `autocode.memory`.

A session with a workspace folder has that repository in context (project and
global memories); one without sees global memories only. A refused save
becomes the `memoryRefused` error so every client notices it. Save, search and
promotion planning return the engine's typed results (`SaveResult`,
`SearchResult`, `PromotionPlan`) as they are; the protocol reuses those models.
List, delete, recall and applying a promotion answer with the engine's wire shapes too
(`MemoryList`, `MemoryDeleteResult`, `RecallView`, `PromotionApplied`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from autocode.memory import MemoryContext
from autocode.memory.model import MemoryDeleteResult, MemoryList, PromotionApplied, RecallView
from autocode.memory.pool import lease_for
from autocode_lsp import protocol, workspaces
from autocode_lsp.commands import command
from autocode_lsp.errors import domain_error, engine_call

if TYPE_CHECKING:
    from autocode.memory import (
        Memory,
        MemoryService,
        PromotionPlan,
        PromotionResult,
        RecallReceipt,
        SaveResult,
        SearchResult,
    )
    from autocode_lsp.server import AutoCodeServer

R = TypeVar("R")


def _with_service(
    workspace: Path | None, agent: str | None, use: Callable[[MemoryService, MemoryContext], R]
) -> R:
    """Use the engine's pooled service for the store the workspace's settings name (defaults without one).

    The service stays open between commands (`autocode.memory.pool`), so its ranking
    index and embedding model survive from one search to the next.
    """
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


@command(protocol.MEMORY_SAVE)
async def save(server: AutoCodeServer, args: protocol.MemorySaveArgs) -> SaveResult:
    def use(service: MemoryService, ctx: MemoryContext) -> SaveResult:
        return service.save(ctx, args.content, category=args.category, scope=args.scope, shared=args.shared)

    result = await _run(server, protocol.MEMORY_SAVE, args.workspace, args.agent, use)
    refused = result.refused
    if refused:
        raise domain_error(
            "memoryRefused", result.message, reason=refused.kind, belongs=refused.belongs,
            suggestion=refused.suggestion,
        )
    return result


@command(protocol.MEMORY_SEARCH)
async def search(server: AutoCodeServer, args: protocol.MemorySearchArgs) -> SearchResult:
    def use(service: MemoryService, ctx: MemoryContext) -> SearchResult:
        return service.search(ctx, args.query, scope=args.scope, owner=args.owner, limit=args.limit)

    return await _run(server, protocol.MEMORY_SEARCH, args.workspace, args.agent, use)


@command(protocol.MEMORY_LIST)
async def list_(server: AutoCodeServer, args: protocol.MemoryListArgs) -> MemoryList:
    def use(service: MemoryService, ctx: MemoryContext) -> list[Memory]:
        return list(service.list(ctx, scope=args.scope, owner=args.owner))

    found = await _run(server, protocol.MEMORY_LIST, args.workspace, args.agent, use)
    return MemoryList.of(found)


@command(protocol.MEMORY_DELETE)
async def delete(server: AutoCodeServer, args: protocol.MemoryDeleteArgs) -> MemoryDeleteResult:
    def use(service: MemoryService, ctx: MemoryContext) -> Memory:
        return service.delete(ctx, args.id)

    removed = await _run(server, protocol.MEMORY_DELETE, args.workspace, args.agent, use)
    return MemoryDeleteResult.of(removed)


@command(protocol.MEMORY_RECALL)
async def recall(server: AutoCodeServer, args: protocol.MemoryRecallArgs) -> RecallView:
    def use(service: MemoryService, ctx: MemoryContext) -> RecallReceipt:
        return service.recall(ctx, args.brief)

    receipt = await _run(server, protocol.MEMORY_RECALL, args.workspace, args.agent, use)
    return receipt.view()


@command(protocol.MEMORY_PLAN_PROMOTION)
async def plan_promotion(server: AutoCodeServer, args: protocol.MemoryPlanPromotionArgs) -> PromotionPlan:
    def use(service: MemoryService, ctx: MemoryContext) -> PromotionPlan:
        return service.plan_promotion(ctx)

    return await _run(server, protocol.MEMORY_PLAN_PROMOTION, args.workspace, None, use)


@command(protocol.MEMORY_APPLY_PROMOTION)
async def apply_promotion(
    server: AutoCodeServer, args: protocol.MemoryApplyPromotionArgs
) -> PromotionApplied:
    def use(service: MemoryService, ctx: MemoryContext) -> PromotionResult:
        return service.apply_promotion(ctx, args.ids)

    applied = await _run(server, protocol.MEMORY_APPLY_PROMOTION, args.workspace, None, use)
    return applied.view()
