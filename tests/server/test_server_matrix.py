"""The same checks over stdio, TCP and WebSocket, with Neovim's and VS Code's capabilities."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from autocode_lsp import protocol
from support import make_repo
from support.lsp import TRANSPORTS, Session, close, connect, initialize, launch

COMBINATIONS = list(itertools.product(TRANSPORTS, ("neovim", "vscode")))
ENTRY = {"neovim": "module", "vscode": "script"}
"""Neovim sessions start `python -m autocode_lsp`, VS Code ones the installed `autocode-lsp`
script (with an explicit `--stdio`, and `--tcp PORT`/`--ws PORT` without a host, which must
bind 127.0.0.1: `launch` checks the address the server announces)."""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("matrix") / "project", {"README.md": "hello\n"})


@pytest_asyncio.fixture(scope="module", params=COMBINATIONS, ids=lambda c: "-".join(c))
async def session(
    request: pytest.FixtureRequest, repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Session]:
    transport, preset = request.param
    log_file = tmp_path_factory.mktemp("logs") / "lsp.log"
    entry = ENTRY[preset]
    process, port = await launch(
        transport, log_file, entry=entry, address="0" if entry == "script" else "127.0.0.1:0"
    )
    s = await connect(transport, log_file=log_file, process=process, port=port, entry=entry)
    s.preset = preset  # type: ignore[attr-defined]
    result = await initialize(s, preset=preset, folders=[repo])
    s.init_result = result  # type: ignore[attr-defined]
    yield s
    await close(s)


async def test_initialize_advertises_the_protocol(session: Session) -> None:
    experimental: Any = session.init_result.capabilities.experimental  # type: ignore[attr-defined]
    advert = experimental["autocode"]
    assert advert["protocolVersion"] == protocol.PROTOCOL_VERSION
    assert "doctor" in advert["features"] or "forget" in advert["features"] or advert["features"]
    commands = session.init_result.capabilities.execute_command_provider.commands  # type: ignore[attr-defined]
    assert set(commands) == {c.name for c in protocol.COMMANDS}


async def test_protocol_info_matches_initialize(session: Session, repo: Path) -> None:
    info = await session.command(protocol.PROTOCOL_INFO)
    advert = session.init_result.capabilities.experimental["autocode"]  # type: ignore[attr-defined]
    assert info["protocolVersion"] == advert["protocolVersion"]
    assert info["features"] == advert["features"]
    assert info["clientOptedIn"] is False
    assert info["workspaces"] == [str(repo)]
    assert info["commands"] == [c.name for c in protocol.COMMANDS]


MALFORMED: list[Any] = [
    "not an object",
    42,
    ["a", "list"],
    {"unknownField": 1},
]


def _wrong_types(spec: protocol.CommandSpec) -> dict[str, Any]:
    """An argument object whose every field has the wrong JSON type."""
    return {protocol.camel(f.name.rstrip("_")): {"nested": True} for f in dataclasses.fields(spec.args)}


@pytest.mark.parametrize("spec", protocol.COMMANDS, ids=lambda s: s.name)
async def test_malformed_arguments_are_invalid_params(session: Session, spec: protocol.CommandSpec) -> None:
    cases: list[list[Any]] = [[bad] for bad in MALFORMED] + [[{}, {}]]
    if dataclasses.fields(spec.args):
        cases.append([_wrong_types(spec)])
    for args in cases:
        err = await session.command_error(spec.name, *args)
        assert err.code == -32602, (spec.name, args, err)
        assert spec.name in err.message
        assert err.data["kind"] == "invalidArguments"
    # still alive and answering
    info = await session.command(protocol.PROTOCOL_INFO)
    assert info["protocolVersion"] == protocol.PROTOCOL_VERSION


async def test_unknown_command_is_invalid_params(session: Session) -> None:
    err = await session.command_error("autocode.nope")
    assert err.code == -32602
    assert (await session.command(protocol.PROTOCOL_INFO))["protocolVersion"]


async def test_forget_without_confirm_changes_nothing(session: Session, repo: Path) -> None:
    record = repo / ".autocode" / "project.json"
    record.parent.mkdir(exist_ok=True)
    record.write_text('{"version": 1}\n', encoding="utf-8")
    for args in ({}, {"confirm": False}):
        err = await session.command_error(protocol.PROJECT_FORGET, args)
        assert err.code == -32803
        assert err.data["kind"] == "confirmationRequired"
        assert "confirm: true" in err.message
    assert record.read_text(encoding="utf-8") == '{"version": 1}\n'


async def test_fifty_concurrent_commands(session: Session, repo: Path) -> None:
    # A mix of the protocol floor, engine work in threads (task.list reads the runs on disk),
    # bad arguments and a domain error; every answer must belong to its own request.
    calls = []
    for i in range(50):
        if i % 4 == 0:
            calls.append(session.command(protocol.PROTOCOL_INFO))
        elif i % 4 == 1:
            calls.append(session.command_error(protocol.TASK_GET, {"taskId": i}))
        elif i % 4 == 2:
            calls.append(session.command_error(protocol.PROJECT_FORGET, {"workspace": str(repo)}))
        else:
            calls.append(session.command(protocol.TASK_LIST, {"workspace": str(repo)}))
    results = await asyncio.wait_for(asyncio.gather(*calls), timeout=60)
    for i, result in enumerate(results):
        if i % 4 == 0:
            assert result["protocolVersion"] == protocol.PROTOCOL_VERSION
        elif i % 4 == 1:
            assert result.code == -32602 and "taskId" in result.message
        elif i % 4 == 2:
            assert result.data["kind"] == "confirmationRequired"
        else:
            assert result == {"tasks": []}
    assert (await session.command(protocol.PROTOCOL_INFO))["protocolVersion"]
