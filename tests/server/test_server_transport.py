"""Transports: a dropped TCP/WebSocket client reconnects to the same process; logs stay off stdout."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_support import close, connect, initialize, launch, stop

from autocode_lsp import protocol
from support import make_repo


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("transport") / "project", {"a.txt": "a\n"})


@pytest.mark.parametrize("transport", ["tcp", "ws"])
async def test_client_drops_and_reconnects_without_restart(
    transport: str, repo: Path, tmp_path: Path
) -> None:
    log_file = tmp_path / "lsp.log"
    process, port = await launch(transport, log_file)
    assert process is not None
    try:
        first = await connect(transport, log_file=log_file, process=process, port=port)
        await initialize(first, preset="neovim", folders=[repo])
        assert (await first.command(protocol.PROTOCOL_INFO))["workspaces"] == [str(repo)]
        # Drop the connection the hard way: no shutdown, no exit.
        writer = first.client.protocol.writer
        if transport == "tcp":
            writer.transport.abort()  # type: ignore[union-attr]
        else:
            await writer.close()  # type: ignore[union-attr]
        await first.client.stop()
        await asyncio.sleep(0.2)
        assert process.returncode is None, "the listener must survive a dropped client"

        second = await connect(transport, log_file=log_file, process=process, port=port)
        await initialize(second, preset="vscode", folders=[repo])
        info = await second.command(protocol.PROTOCOL_INFO)
        assert info["workspaces"] == [str(repo)]
        # A clean `exit` ends this connection only.
        await close(second, stop_process=False)
        await asyncio.sleep(0.2)
        assert process.returncode is None

        third = await connect(transport, log_file=log_file, process=process, port=port)
        await initialize(third, preset="neovim", folders=None)
        assert (await third.command(protocol.PROTOCOL_INFO))["workspaces"] == []
        await close(third, stop_process=False)
    finally:
        await stop(process)
    text = log_file.read_text(encoding="utf-8")
    assert text.count("client connected") >= 3


async def test_stdio_writes_only_protocol_to_stdout_and_logs_to_the_file(tmp_path: Path, repo: Path) -> None:
    log_file = tmp_path / "lsp.log"
    session = await connect("stdio", log_file=log_file)
    await initialize(session, preset="neovim", folders=[repo])
    err = await session.command_error(protocol.TASK_GET, {"taskId": 1})
    assert err.code == -32602
    await close(session)
    text = log_file.read_text(encoding="utf-8")
    assert "serving on stdio" in text
    assert "autocode.task.get failed" in text


def test_bad_transport_address_is_a_usage_error() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "autocode_lsp", "--tcp", "127.0.0.1:notaport"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 2
    assert "HOST:PORT" in out.stderr
    assert out.stdout == ""


def test_help_does_not_import_the_heavy_parts() -> None:
    code = (
        "import sys; from autocode_lsp.__main__ import build_parser; build_parser().format_help();"
        "heavy = [m for m in ('pydantic', 'git', 'lsprotocol', 'psycopg', 'pygls') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_garbage_messages_do_not_end_the_session(tmp_path: Path) -> None:
    import json

    def request(msg_id: int, method: str, params: object) -> bytes:
        return _frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode())

    stream = b"".join([
        request(1, "initialize", {"capabilities": {}, "processId": None}),
        _frame(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'),
        _frame(b"{not json at all"),
        _frame(b'{"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": {"command": 5}}'),
        request(3, "workspace/executeCommand", {"command": "autocode.protocol.info", "arguments": "x"}),
        request(4, "workspace/executeCommand", {"command": "autocode.protocol.info"}),
        request(5, "shutdown", None),
        _frame(b'{"jsonrpc": "2.0", "method": "exit"}'),
    ])
    out = subprocess.run(
        [sys.executable, "-m", "autocode_lsp", "--log-file", str(tmp_path / "l.log")],
        input=stream, capture_output=True, timeout=60,
    )
    replies = {}
    data = out.stdout
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        assert header.startswith(b"Content-Length: "), data[:80]
        length = int(header.split(b"\r\n")[0].split(b":")[1])
        message = json.loads(rest[:length])
        data = rest[length:]
        if "id" in message:
            replies[message["id"]] = message
    assert replies[4]["result"]["protocolVersion"] == protocol.PROTOCOL_VERSION
    assert "error" in replies[3]
    assert out.returncode == 0
