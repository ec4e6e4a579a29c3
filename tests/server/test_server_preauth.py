"""Before a listener's client showed its token, its connection costs almost nothing (issue 31).

Real server processes on 127.0.0.1 and raw clients: a connection that says nothing, one that
announces a 16 MiB first message, malformed first messages, more waiting connections than the
listener keeps, a handshake with a header given twice, a process out of file descriptors.
Each is closed with one log line and no traceback, and the owner still gets in.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from autocode_lsp import gate, protocol
from support.remote import (
    closed_within,
    command_frame,
    frame,
    initialize_frame,
    listen,
    logged,
    private_env,
    read_message,
    reply_to,
)

pytestmark = pytest.mark.timeout(180)


async def owner_gets_in(listener) -> None:  # type: ignore[no-untyped-def]
    reader, writer = await listener.open()
    try:
        writer.write(initialize_frame(1, listener.token, None))
        assert "result" in await reply_to(reader, 1, timeout=10)
        writer.write(command_frame(2, protocol.PROTOCOL_INFO))
        assert "result" in await reply_to(reader, 2, timeout=10)
    finally:
        writer.close()


@pytest.mark.parametrize("kind", ["tcp", "socket", "ws"])
async def test_a_connection_that_says_nothing_is_closed_at_the_deadline(kind: str, tmp_path: Path) -> None:
    address = str(tmp_path / "s" / "lsp.sock") if kind == "socket" else "127.0.0.1:0"
    log_file = tmp_path / "lsp.log"
    listener = await listen(kind, address, log_file, "--auth-timeout", "1", env=private_env(tmp_path))
    try:
        reader, writer = await listener.open()
        assert await closed_within(reader, 6.0), "an idle connection was kept past the deadline"
        writer.close()
        # Half a message, then nothing: the same deadline.
        reader, writer = await listener.open()
        writer.write(b"Content-Length: 500\r\n\r\n{" if kind != "ws" else b"GET / HTTP/1.1\r\n")
        assert await closed_within(reader, 6.0), "a half first message kept its connection"
        writer.close()
        if kind == "ws":
            return
        await owner_gets_in(listener)
    finally:
        await listener.stop()
    text = log_file.read_text(encoding="utf-8")
    assert "Traceback" not in text
    assert "no initialize within 1 s" in text


async def test_an_oversized_first_message_is_refused_from_its_header(tmp_path: Path) -> None:
    """The body is never read: the Content-Length alone closes the connection. After the token,
    the ordinary bound applies and a large message is read."""
    log_file = tmp_path / "lsp.log"
    listener = await listen("tcp", "127.0.0.1:0", log_file, env=private_env(tmp_path))
    try:
        reader, writer = await listener.open()
        writer.write(b"Content-Length: %d\r\n\r\n" % (16 * 1024 * 1024) + b"{" + b" " * 65536)
        assert await closed_within(reader, 2.0)
        writer.close()
        # Just over the bound, with the right token inside: refused all the same.
        padded = initialize_frame(1, listener.token, None)
        body = json.loads(padded.split(b"\r\n\r\n", 1)[1])
        body["params"]["initializationOptions"]["padding"] = "x" * gate.FIRST_MESSAGE_BYTES
        reader, writer = await listener.open()
        writer.write(frame(body))
        assert await closed_within(reader, 2.0)
        writer.close()

        reader, writer = await listener.open()
        writer.write(initialize_frame(1, listener.token, None))
        assert "result" in await reply_to(reader, 1)
        big = {"id": 2, "method": "workspace/executeCommand",
               "params": {"command": protocol.PROTOCOL_INFO, "arguments": [], "padding": "y" * 200_000}}
        writer.write(frame(big))
        assert "result" in await reply_to(reader, 2)
        writer.close()
    finally:
        await listener.stop()
    text = log_file.read_text(encoding="utf-8")
    assert f"Content-Length 16777216 is over the {gate.FIRST_MESSAGE_BYTES}-byte limit" in text
    assert "Traceback" not in text


MALFORMED_FIRST = {
    "an empty object": b"{}",
    "no method, no id": b'{"jsonrpc": "2.0"}',
    "a notification": b'{"jsonrpc": "2.0", "method": "initialized"}',
    "a notification of no known method": b'{"jsonrpc": "2.0", "method": "foo", "params": [1]}',
    "a response": b'{"jsonrpc": "2.0", "id": 1, "result": 1}',
    "an error response": b'{"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}',
    "an id that is a list": b'{"jsonrpc": "2.0", "id": [1], "method": "initialize", "params": {}}',
    "params that are a number": b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": 5}',
    "capabilities that are a string": b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", '
                                      b'"params": {"capabilities": "x"}}',
    "a method name of 20,000 characters": json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "m" * 20_000}).encode(),
    "deep nesting": b"[" * 20_000 + b"]" * 20_000,
    "not UTF-8": b'{"jsonrpc": "2.0", "method": "\xff\xfe"}',
}


async def test_malformed_first_messages_close_their_connection_with_one_line_and_no_traceback(
    tmp_path: Path,
) -> None:
    log_file = tmp_path / "lsp.log"
    listener = await listen("tcp", "127.0.0.1:0", log_file, env=private_env(tmp_path))
    try:
        for what, body in MALFORMED_FIRST.items():
            reader, writer = await listener.open()
            writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            reply = await read_message(reader, timeout=5)
            if reply is not None:  # only a request with a usable id is answered
                assert reply["error"]["code"] in (-32002, protocol.REQUEST_FAILED), (what, reply)
                assert len(json.dumps(reply)) < 1000, f"{what}: the refusal echoes the input"
            assert await closed_within(reader, 2.0), f"{what}: the connection stayed open"
            writer.close()
        # The owner's session survives its own malformed messages with one line each too.
        reader, writer = await listener.open()
        writer.write(initialize_frame(1, listener.token, None))
        assert "result" in await reply_to(reader, 1)
        writer.write(frame({"method": "initialized"}))  # no params: pygls cannot read it
        writer.write(frame({"id": 2, "method": "workspace/executeCommand", "params": 7}))
        writer.write(command_frame(3, protocol.PROTOCOL_INFO))
        assert "result" in await reply_to(reader, 3)
        writer.close()
    finally:
        await listener.stop()
    text = log_file.read_text(encoding="utf-8")
    assert "Traceback" not in text, text
    assert "m" * 100 not in text, "a log line repeats an oversized method name"
    refusals = [line for line in text.splitlines() if "refused" in line or "broken LSP framing" in line]
    assert len(refusals) == len(MALFORMED_FIRST), refusals
    assert all(len(line) < 400 for line in text.splitlines()), "a log line longer than one line"


async def test_the_oldest_waiting_connection_is_dropped_first(tmp_path: Path) -> None:
    """Over the unix socket, where the cap counts every connection (over TCP the owner's own
    are never counted: see test_server_flood for strangers)."""
    log_file = tmp_path / "lsp.log"
    listener = await listen("socket", str(tmp_path / "s" / "lsp.sock"), log_file, "--max-unauthenticated",
                            "3", "--auth-timeout", "60", env=private_env(tmp_path))
    try:
        waiting = []
        for _ in range(3):
            # In this order, as the listener sees them: the kernel queues connections in the
            # order they were made, and the listener accepts and counts them in that order.
            waiting.append(await listener.open())
        fourth = await listener.open()
        assert await closed_within(waiting[0][0], 5.0), "the oldest waiting connection was kept"
        # The others are still there: each can still authenticate.
        for number, (reader, writer) in enumerate([*waiting[1:], fourth], start=1):
            writer.write(initialize_frame(number, listener.token, None))
            assert "result" in await reply_to(reader, number), number
            writer.close()
        waiting[0][1].close()
        # The drops of each second are told in one line, a second after the first of them.
        assert await logged(log_file, "dropped 1 waiting connection(s) that had not sent their "
                            "initialize (3 may wait at once)", 10)
    finally:
        await listener.stop()


async def _raw_handshake(port: int, lines: list[str]) -> tuple[str, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(("\r\n".join(["GET / HTTP/1.1", *lines, "", ""])).encode())
    status = (await asyncio.wait_for(reader.readline(), 10)).decode().strip()
    rest = await asyncio.wait_for(reader.read(4096), 10)
    writer.close()
    return status, rest


async def test_a_websocket_handshake_with_a_header_given_twice_is_a_bad_request(tmp_path: Path) -> None:
    log_file = tmp_path / "lsp.log"
    listener = await listen("ws", "127.0.0.1:0", log_file, env=private_env(tmp_path))
    try:
        port, token = listener.port, str(listener.token)
        upgrade = [f"Host: 127.0.0.1:{port}", "Upgrade: websocket", "Connection: Upgrade",
                   "Sec-WebSocket-Key: " + "dGhlIHNhbXBsZSBub25jZQ" + "==", "Sec-WebSocket-Version: 13"]
        cases = {
            "the token twice": [f"X-AutoCode-Token: {token}", f"X-AutoCode-Token: {token}"],
            "a right and a wrong token": [f"X-AutoCode-Token: {token}", "X-AutoCode-Token: nope"],
            "Origin twice": [f"X-AutoCode-Token: {token}", "Origin: a", "Origin: b"],
            "Host twice": [f"X-AutoCode-Token: {token}", "Host: 127.0.0.1"],
        }
        for what, extra in cases.items():
            status, rest = await _raw_handshake(port, [*upgrade, *extra])
            assert status.startswith("HTTP/1.1 400"), (what, status)
            assert token.encode() not in rest
        status, _ = await _raw_handshake(port, [*upgrade, f"X-AutoCode-Token: {token}"])
        assert status.startswith("HTTP/1.1 101")
        status, _ = await _raw_handshake(port, [*upgrade, *[f"X-Pad-{n}: {'p' * 100}" for n in range(40)]])
        assert not status.startswith("HTTP/1.1 101"), "40 extra headers were read before the token"
    finally:
        await listener.stop()
    text = log_file.read_text(encoding="utf-8")
    assert "Traceback" not in text and " 500" not in text
    assert "2 X-AutoCode-Token headers; send one" in text
    assert token not in text


LOG_WRITER = r"""
import logging, sys, time
from autocode_lsp.logfile import setup_logging
setup_logging(sys.argv[1], "info", max_bytes=int(sys.argv[2]))
log = logging.getLogger("autocode_lsp")
for n in range(5000):
    log.info("a line of its own kind " + str(n) + " %s", "x" * 200)
logging.getLogger("pygls.protocol.json_rpc").error(
    "Unable to deserialize message\n%s", "Traceback (most recent call last):\n  File x\nKeyError: 'params'")
try:
    raise OSError(24, "Too many open files")
except OSError:
    logging.getLogger("asyncio").error("socket.accept() out of system resource", exc_info=True)
for n in range(20000):
    log.warning("the same kind of line, number %d", n)
    log.info("another kind of line %d", n)
time.sleep(1.1)  # the allowance grows back: the next line says how many were left out
log.warning("the same kind of line, number %d", 20000)
"""


def test_the_log_file_is_rate_limited_size_capped_and_one_line_per_library_error(tmp_path: Path) -> None:
    log_file = tmp_path / "state" / "lsp.log"
    cap = 50_000
    out = subprocess.run([sys.executable, "-c", LOG_WRITER, str(log_file), str(cap)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    old = log_file.with_name("lsp.log.1")
    assert log_file.stat().st_size <= cap and old.stat().st_size <= cap + 1000
    assert not log_file.with_name("lsp.log.2").exists(), "more than one old file kept"
    assert oct(log_file.stat().st_mode & 0o777) == oct(0o600) and oct(old.stat().st_mode & 0o777) == oct(0o600)
    text = old.read_text(encoding="utf-8") + log_file.read_text(encoding="utf-8")
    same = [line for line in text.splitlines() if "the same kind of line" in line]
    assert 21 <= len(same) <= 40, len(same)  # a burst of 20, then one a second
    # Each line that passes says how many of its kind were left out since the one before.
    left_out = sum(int(n) for n in re.findall(r"number \d+ \((\d+) more like it were not logged\)", text))
    assert "number 20000 (" in same[-1] and len(same) + left_out == 20001
    assert "Traceback" not in text
    assert "Unable to deserialize message: KeyError: 'params'" in text
    assert "out of system resource: OSError: [Errno 24] Too many open files" in text


async def test_out_of_file_descriptors_the_listener_logs_a_few_lines_and_recovers(tmp_path: Path) -> None:
    """With 64 open files at most, the owner's own sessions exhaust them: accepting fails, the
    log gets a handful of lines (not one per attempt, no traceback), and once sessions close
    the owner gets in again."""
    log_file = tmp_path / "lsp.log"

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "autocode_lsp", "--log-file", str(log_file), "--tcp", "127.0.0.1:0",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=private_env(tmp_path), preexec_fn=low_limit,
    )
    assert process.stderr is not None
    line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
    match = re.search(r"listening on tcp 127\.0\.0\.1:(\d+) \(token file: (.+)\)", line)
    assert match, line
    port, token = int(match.group(1)), Path(match.group(2)).read_text(encoding="utf-8").strip()

    sessions = []
    try:
        for _ in range(80):
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 3)
                writer.write(initialize_frame(1, token, None))
                reply = await read_message(reader, timeout=3)
            except (TimeoutError, ConnectionError):
                break
            if reply is None:
                writer.close()
                break
            sessions.append(writer)
        assert 20 < len(sessions) < 64, len(sessions)
        # The listener ran out of descriptors and said so; from now on it retries accepting once
        # a second. The next connection is served only after such a retry, so its answer below
        # proves the retries ran (and the log's count then says they did not flood it).
        assert await logged(log_file, "open files", 30), "the listener never ran out of descriptors"
        for writer in sessions:
            writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(initialize_frame(1, token, None))
        assert "result" in await reply_to(reader, 1, timeout=10)
        writer.close()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)
    text = log_file.read_text(encoding="utf-8")
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if "open files" in line.lower()]
    assert 1 <= len(lines) <= 30, lines
    assert os.path.getsize(log_file) < 100_000


async def test_the_token_files_of_killed_servers_are_removed_on_the_next_start(tmp_path: Path) -> None:
    env = private_env(tmp_path)
    killed = await listen("tcp", "127.0.0.1:0", tmp_path / "k.log", env=env)
    running = await listen("socket", str(tmp_path / "s" / "lsp.sock"), tmp_path / "r.log", env=env)
    try:
        assert killed.token_file is not None and running.token_file is not None
        killed.process.kill()  # SIGKILL: no clean-up of its own
        await killed.process.wait()
        assert killed.token_file.exists()
        folder = killed.token_file.parent
        keep = [folder / "notes.txt", folder / "lsp-tcp-x.token"]  # not a server's token file
        for path in keep:
            path.write_text("mine\n", encoding="utf-8")
        third = await listen("ws", "127.0.0.1:0", tmp_path / "w.log", env=env)
        try:
            assert not killed.token_file.exists(), "the killed server's token file is still there"
            assert running.token_file.exists(), "a running server's token file was removed"
            assert all(path.exists() for path in keep)
        finally:
            await third.stop()
    finally:
        await running.stop()
