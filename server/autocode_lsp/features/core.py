"""`autocode.protocol.info`: what this server speaks and what this session gets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autocode_lsp import __version__, protocol, warmup
from autocode_lsp.commands import command
from autocode_lsp.commands import names as command_names
from autocode_lsp.server import available_features
from autocode_lsp.workspaces import session_folders

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer


@command(protocol.PROTOCOL_INFO)
async def protocol_info(server: AutoCodeServer, args: protocol.NoArgs) -> protocol.ProtocolInfo:
    return protocol.ProtocolInfo(
        protocol_version=protocol.PROTOCOL_VERSION,
        server_version=__version__,
        features=available_features(),
        commands=command_names(),
        client_opted_in=server.opted_in,
        workspaces=[str(p) for p in session_folders(server)],
        memory_stores=protocol.MemoryStoresInfo(**_store_stats()),
    )


def _store_stats() -> dict[str, int]:
    """The engine's store pool figures; zeros (and no import) before the first memory use."""
    module = warmup.loaded("autocode.memory.pool")
    stats: dict[str, int] = module.stats() if module is not None else {"open": 0, "opened": 0}
    return stats
