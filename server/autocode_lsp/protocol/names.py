"""The protocol's names: its version, every command and custom method, the JSON-RPC error codes
and which feature area each command belongs to. Plain constants, so both the package
(`autocode_lsp.protocol`, which re-exports them) and `protocol.spec` can use them without
importing each other. The command and method names are generated from their specs
(`command_names`, written by `scripts/gen_protocol_types.py`): a command is declared once.
"""

from __future__ import annotations

from autocode_lsp.protocol.command_names import *  # noqa: F403

PROTOCOL_VERSION = "1.0"
"""Bumped in its major part when a client written for an older version would break."""

EXPERIMENTAL_KEY = "autocode"
"""`capabilities.experimental.autocode`: the client's opt-in and the server's advertisement."""

# JSON-RPC error codes the server uses.
INVALID_PARAMS = -32602
REQUEST_FAILED = -32803

FEATURES: tuple[str, ...] = (
    "doctor", "forget", "trust", "prep", "tasks", "memory", "progress", "actions", "verify", "session",
)
"""What `features` in `autocode.protocol.info` and `experimental.autocode` may list."""

