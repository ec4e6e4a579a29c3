"""A client that can only start a program over stdio reaches a listening server through socat,
as docs/editors.md ("Clients that only start a program") says: the bytes pass through, the
token still travels in `initializationOptions`, and without it nothing runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp.client import make_test_lsp_client
from test_server_tasks_flow import build_repo

from autocode_lsp import protocol
from support.lsp import SOCKETS, TOKENS, Session, close, launch, stop


def socat() -> str:
    found = shutil.which("socat")
    if found is None:
        pytest.fail("socat is not installed: run `bash scripts/emacs-setup.sh` (it installs socat)")
    return found


@pytest.mark.parametrize("transport", ["socket", "tcp"])
async def test_a_stdio_client_through_socat_runs_commands_with_the_token(tmp_path: Path, transport: str) -> None:
    repo = build_repo(tmp_path / "project")
    address = "127.0.0.1:0"
    process, port = await launch(transport, tmp_path / "lsp.log", address=address, overrides=False)
    assert process is not None
    target = f"UNIX-CONNECT:{SOCKETS[process.pid]}" if transport == "socket" else f"TCP:127.0.0.1:{port}"
    client = make_test_lsp_client()
    try:
        await client.start_io(socat(), "STDIO", target)
        session = Session(client=client, process=None, transport="stdio")
        result = await client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
            initialization_options={"autocode": {"token": TOKENS[process.pid]}},
        ))
        assert result.server_info is not None and result.server_info.name == "autocode-lsp"
        info = await session.command(protocol.PROTOCOL_INFO)
        assert info["workspaces"] == [str(repo)]
        listed = await session.command(protocol.TASK_LIST, {})
        assert listed["tasks"] == []
        await close(session)
    finally:
        await stop(process)


async def test_socat_without_the_token_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    process, _ = await launch("socket", tmp_path / "lsp.log", overrides=False)
    assert process is not None
    client = make_test_lsp_client()
    try:
        await client.start_io(socat(), "STDIO", f"UNIX-CONNECT:{SOCKETS[process.pid]}")
        with pytest.raises(Exception, match="token"):
            await client.initialize_session(types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
            ))
    finally:
        await client.stop()
        await stop(process)
    assert not (repo / ".autocode" / "runs").exists()
