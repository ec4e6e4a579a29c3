"""How answers from a client are attributed: `lsp:<clientInfo.name>`, in a form the ledger accepts."""

from __future__ import annotations

import re

import pytest

from autocode_lsp.features.tasks import source_channel
from autocode_lsp.server import create_server

LEDGER_CHANNEL = re.compile(r"lsp:[\w .@+-]{1,80}")
"""What the engine's answer ledger accepts (autocode.tasks.run.Source.coerce)."""


@pytest.mark.parametrize(("name", "expected"), [
    ("Neovim", "lsp:Neovim"),
    ("Visual Studio Code - Insiders", "lsp:Visual Studio Code - Insiders"),
    ("Zed/0.150 (dev)", "lsp:Zed-0.150 -dev-"),
    ("x" * 200, "lsp:" + "x" * 80),
    ("   ", "lsp:client"),
])
def test_the_channel_names_the_client_and_fits_the_ledger(name: str, expected: str) -> None:
    from autocode.tasks import Source

    server = create_server()
    server.client_name = name
    channel = source_channel(server)
    assert channel == expected
    assert LEDGER_CHANNEL.fullmatch(channel)
    assert Source.coerce(channel).channel == channel  # the engine takes it as given


def test_a_client_without_client_info_is_named_by_its_connection() -> None:
    from autocode_lsp.server import fallback_name

    assert fallback_name("tcp 127.0.0.1:4000") == "tcp 127.0.0.1:4000 client"
    assert fallback_name("stdio").endswith("over stdio") or fallback_name("stdio") == "a stdio client"
