"""memory commands (placeholder until the engine part lands)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autocode_lsp import protocol, workspaces
from autocode_lsp.errors import not_available

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer


async def save(server: AutoCodeServer, args: protocol.MemorySaveArgs) -> Any:
    workspaces.optional(server, args.workspace, command="autocode.memory.save")
    raise not_available("autocode.memory")


async def search(server: AutoCodeServer, args: protocol.MemorySearchArgs) -> Any:
    workspaces.optional(server, args.workspace, command="autocode.memory.search")
    raise not_available("autocode.memory")


async def delete(server: AutoCodeServer, args: protocol.MemoryDeleteArgs) -> Any:
    workspaces.optional(server, args.workspace, command="autocode.memory.delete")
    raise not_available("autocode.memory")


async def list(server: AutoCodeServer, args: protocol.MemoryListArgs) -> Any:
    workspaces.optional(server, args.workspace, command="autocode.memory.list")
    raise not_available("autocode.memory")


async def recall(server: AutoCodeServer, args: protocol.MemoryRecallArgs) -> Any:
    workspaces.optional(server, args.workspace, command="autocode.memory.recall")
    raise not_available("autocode.memory")


async def plan_promotion(server: AutoCodeServer, args: protocol.MemoryPlanPromotionArgs) -> Any:
    workspaces.optional(server, args.workspace, command="autocode.memory.planPromotion")
    raise not_available("autocode.memory")


async def apply_promotion(server: AutoCodeServer, args: protocol.MemoryApplyPromotionArgs) -> Any:
    workspaces.optional(server, args.workspace, command="autocode.memory.applyPromotion")
    raise not_available("autocode.memory")


HANDLERS: dict[str, Any] = {
    "autocode.memory.save": save,
    "autocode.memory.search": search,
    "autocode.memory.delete": delete,
    "autocode.memory.list": list,
    "autocode.memory.recall": recall,
    "autocode.memory.planPromotion": plan_promotion,
    "autocode.memory.applyPromotion": apply_promotion,
}
