"""tasks commands (placeholder until the engine part lands)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autocode_lsp import protocol, workspaces
from autocode_lsp.errors import not_available

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer


async def start(server: AutoCodeServer, args: protocol.TaskStartArgs) -> Any:
    workspaces.resolve(server, args.workspace, command="autocode.task.start")
    raise not_available("autocode.tasks")


async def answer(server: AutoCodeServer, args: protocol.TaskAnswerArgs) -> Any:
    workspaces.resolve(server, args.workspace, command="autocode.task.answer")
    raise not_available("autocode.tasks")


async def approve_plan(server: AutoCodeServer, args: protocol.TaskApprovePlanArgs) -> Any:
    workspaces.resolve(server, args.workspace, command="autocode.task.approvePlan")
    raise not_available("autocode.tasks")


async def reject_plan(server: AutoCodeServer, args: protocol.TaskRejectPlanArgs) -> Any:
    workspaces.resolve(server, args.workspace, command="autocode.task.rejectPlan")
    raise not_available("autocode.tasks")


async def approve_completion(server: AutoCodeServer, args: protocol.TaskRefArgs) -> Any:
    workspaces.resolve(server, args.workspace, command="autocode.task.approveCompletion")
    raise not_available("autocode.tasks")


async def cancel(server: AutoCodeServer, args: protocol.TaskRefArgs) -> Any:
    workspaces.resolve(server, args.workspace, command="autocode.task.cancel")
    raise not_available("autocode.tasks")


async def get(server: AutoCodeServer, args: protocol.TaskRefArgs) -> Any:
    workspaces.resolve(server, args.workspace, command="autocode.task.get")
    raise not_available("autocode.tasks")


async def list(server: AutoCodeServer, args: protocol.WorkspaceArgs) -> Any:
    workspaces.resolve(server, args.workspace, command="autocode.task.list")
    raise not_available("autocode.tasks")


HANDLERS: dict[str, Any] = {
    "autocode.task.start": start,
    "autocode.task.answer": answer,
    "autocode.task.approvePlan": approve_plan,
    "autocode.task.rejectPlan": reject_plan,
    "autocode.task.approveCompletion": approve_completion,
    "autocode.task.cancel": cancel,
    "autocode.task.get": get,
    "autocode.task.list": list,
}
