"""AutoCode's LSP protocol: the one place that names every command, custom method,
argument and result shape, error kind and feature.

`protocol.names` holds the names, the version and which feature area each
command belongs to (re-exported here): all the server needs to answer
`initialize`. The shapes (dataclasses), the specs, validation and the
Markdown renderer live in `protocol.spec` and load on first use through this
module's attributes, so `protocol.TaskSnapshot` or `protocol.COMMANDS` work
everywhere while start-up pays nothing for them. `docs/protocol.md` is
rendered from here, `docs/protocol.schema.json` and the editors' types by
`protocol.schema`; tests fail when one is stale.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autocode_lsp.protocol.names import *  # noqa: F403

if TYPE_CHECKING:
    from autocode_lsp.protocol.spec import *  # noqa: F403


def __getattr__(name: str) -> Any:
    # Shapes and specs load on first use (PEP 562).
    import importlib

    spec = importlib.import_module("autocode_lsp.protocol.spec")
    try:
        return getattr(spec, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
