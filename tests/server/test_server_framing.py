"""A broken LSP frame closes its connection at once (over stdio: the process exits non-zero),
with one log line, and the server keeps serving everyone else."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from autocode_lsp import protocol
from support.remote import (
    closed_within,
    command_frame,
    frame,
    initialize_frame,
    listen,
    private_env,
    reply_to,
)

pytestmark = pytest.mark.timeout(120)

BAD_FRAMES = {
    "missing Content-Length": b"Content-Type: application/vscode-jsonrpc\r\n\r\n{}",
    "non-numeric Content-Length": b"Content-Length: ten\r\n\r\n{}",
    "negative Content-Length": b"Content-Length: -5\r\n\r\n{}",
    "Content-Length shorter than the body": b'Content-Length: 10\r\n\r\n{"jsonrpc": "2.0", "method": "exit"}',
    "a body that is not JSON": b"Content-Length: 9\r\n\r\nnot json!",
    "a body that is JSON but not an object": b"Content-Length: 6\r\n\r\n[1, 2]",
    "a header line without a colon": b"hello there\r\n\r\n",
    "a huge Content-Length": b"Content-Length: 99999999999\r\n\r\n{}",
}
LYING_LONGER = b'Content-Length: 500\r\n\r\n{"jsonrpc": "2.0"}'
"""A length longer than what follows; the peer then stops sending (half-close)."""


async def test_each_bad_frame_closes_its_tcp_connection(tmp_path: Path) -> None:
    log_file = tmp_path / "lsp.log"
    listener = await listen("tcp", "127.0.0.1:0", log_file, env=private_env(tmp_path))
    try:
        # A well-behaved client stays connected through all of it.
        keeper_reader, keeper = await listener.open()
        keeper.write(initialize_frame(1, listener.token, None))
        assert "result" in await reply_to(keeper_reader, 1)
        cases = {**BAD_FRAMES, "Content-Length longer than the body": LYING_LONGER}
        for number, (what, data) in enumerate(cases.items(), start=2):
            reader, writer = await listener.open()
            writer.write(initialize_frame(1, listener.token, None))
            assert "result" in await reply_to(reader, 1), what
            writer.write(data)
            if data is LYING_LONGER:
                writer.write_eof()
            assert await closed_within(reader, 60.0), f"{what}: the connection stayed open"
            writer.close()
            # The listener and the other client are unharmed.
            keeper.write(command_frame(number, protocol.PROTOCOL_INFO))
            info = await reply_to(keeper_reader, number)
            assert info["result"]["protocolVersion"] == protocol.PROTOCOL_VERSION, what
        keeper.close()
    finally:
        await listener.stop()
    lines = [line for line in log_file.read_text(encoding="utf-8").splitlines() if "broken LSP framing" in line]
    assert len(lines) == len(cases), lines  # one line per broken connection


async def test_a_lying_longer_length_closes_a_connection_that_stays_open(tmp_path: Path) -> None:
    """The peer sends less than its Content-Length and then waits, connection open: the frame's
    time runs out and the connection closes with one log line (the listener serves on)."""
    log_file = tmp_path / "lsp.log"
    env = {**private_env(tmp_path), "AUTOCODE_LSP_FRAME_TIMEOUT_S": "1"}
    listener = await listen("tcp", "127.0.0.1:0", log_file, env=env)
    try:
        reader, writer = await listener.open()
        writer.write(initialize_frame(1, listener.token, None))
        assert "result" in await reply_to(reader, 1)
        writer.write(LYING_LONGER)  # and no half-close: the connection stays open
        assert await closed_within(reader, 5.0), "a frame that never completes kept its connection"
        writer.close()
        # A client that is merely quiet between frames is not affected. How long is long enough
        # is shown by the server itself: a second connection starts a lying frame after the quiet
        # one went quiet, and its closing proves the frame time ran out meanwhile.
        reader, writer = await listener.open()
        writer.write(initialize_frame(1, listener.token, None))
        assert "result" in await reply_to(reader, 1)
        liar_reader, liar = await listener.open()
        liar.write(initialize_frame(1, listener.token, None))
        assert "result" in await reply_to(liar_reader, 1)
        liar.write(LYING_LONGER)
        assert await closed_within(liar_reader, 5.0), "the second lying frame kept its connection"
        liar.close()
        writer.write(command_frame(2, protocol.PROTOCOL_INFO))
        assert "result" in await reply_to(reader, 2)
        writer.close()
    finally:
        await listener.stop()
    lines = [line for line in log_file.read_text(encoding="utf-8").splitlines() if "broken LSP framing" in line]
    assert len(lines) == 2 and all("did not arrive within 1 s" in line for line in lines), lines


@pytest.mark.parametrize("what", [*BAD_FRAMES, "Content-Length longer than the body"])
def test_a_bad_frame_on_stdio_ends_the_process_non_zero(what: str, tmp_path: Path) -> None:
    log_file = tmp_path / "lsp.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "autocode_lsp", "--log-file", str(log_file)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**private_env(tmp_path), "AUTOCODE_LSP_FRAME_TIMEOUT_S": "1"},
    )
    assert process.stdin is not None
    try:
        process.stdin.write(initialize_frame(1, None) + frame({"method": "initialized", "params": {}}))
        process.stdin.write(BAD_FRAMES.get(what, LYING_LONGER))
        process.stdin.flush()
        # stdin stays open: the server must not wait for more, it must end.
        code = process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
    assert code == 1, what
    lines = [line for line in log_file.read_text(encoding="utf-8").splitlines() if "broken LSP framing" in line]
    assert len(lines) == 1, lines


async def test_a_bad_frame_over_the_unix_socket_closes_only_that_connection(tmp_path: Path) -> None:
    listener = await listen("socket", str(tmp_path / "s" / "lsp.sock"), tmp_path / "l.log",
                            env=private_env(tmp_path))
    try:
        reader, writer = await listener.open()
        writer.write(BAD_FRAMES["negative Content-Length"])
        assert await closed_within(reader, 60.0)
        writer.close()
        reader, writer = await listener.open()
        writer.write(initialize_frame(1, listener.token, None))
        assert "result" in await reply_to(reader, 1)
        writer.close()
        await asyncio.sleep(0)
    finally:
        await listener.stop()
