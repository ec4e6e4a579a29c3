"""`autocode.prep.run`: a checked prep copy of the workspace, with $/progress."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autocode_lsp import protocol, workspaces
from autocode_lsp.errors import not_available

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer


async def prep_run(server: AutoCodeServer, args: protocol.PrepRunArgs) -> protocol.PrepResult:
    workspaces.resolve(server, args.workspace, command=protocol.PREP_RUN)
    raise not_available("autocode.prep")


HANDLERS: dict[str, Any] = {protocol.PREP_RUN: prep_run}
