"""Raw clients for the security tests: byte-exact LSP frames over TCP, unix sockets and HTTP.

pytest-lsp's client always behaves; these helpers send exactly what an attacker or a
broken client would, and tell whether the server closed the connection.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def initialize_frame(msg_id: int, token: str | None, folder: Path | None = None) -> bytes:
    params: dict[str, Any] = {"processId": None, "capabilities": {}, "clientInfo": {"name": "raw"}}
    if token is not None:
        params["initializationOptions"] = {"autocode": {"token": token}}
    if folder is not None:
        params["workspaceFolders"] = [{"uri": folder.as_uri(), "name": folder.name}]
        params["rootUri"] = folder.as_uri()
    return frame({"id": msg_id, "method": "initialize", "params": params})


def command_frame(msg_id: int, command: str, *arguments: Any) -> bytes:
    return frame({"id": msg_id, "method": "workspace/executeCommand",
                  "params": {"command": command, "arguments": list(arguments)}})


async def read_message(reader: asyncio.StreamReader, timeout: float = 10) -> dict[str, Any] | None:
    """The next message, or None when the server closed the connection."""

    async def read() -> dict[str, Any] | None:
        length = None
        while True:
            line = await reader.readline()
            if not line:
                return None
            if line == b"\r\n":
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None
        message: dict[str, Any] = json.loads(await reader.readexactly(length))
        return message

    return await asyncio.wait_for(read(), timeout)


async def reply_to(reader: asyncio.StreamReader, msg_id: int, timeout: float = 30) -> dict[str, Any]:
    """The response to request `msg_id` (notifications on the way are skipped)."""
    while True:
        message = await read_message(reader, timeout)
        assert message is not None, f"the connection closed before the reply to {msg_id}"
        if message.get("id") == msg_id and "method" not in message:
            return message


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True when the server ends the connection within `seconds` (whatever it sends first)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    try:
        while True:
            left = deadline - loop.time()
            if left <= 0:
                return False
            data = await asyncio.wait_for(reader.read(65536), left)
            if not data:
                return True
    except TimeoutError:
        return False
    except ConnectionError:
        return True


async def logged(log_file: Path, text: str, seconds: float, *, times: int = 1) -> bool:
    """True once `text` is in the log file `times` times (polled for at most `seconds`): the later
    message that proves the server acted, where acting leaves nothing else to see."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        if log_file.read_text(encoding="utf-8").count(text) >= times:
            return True
        await asyncio.sleep(0.1)
    return False


@dataclass
class Listener:
    process: asyncio.subprocess.Process
    address: str
    token_file: Path | None
    stderr_lines: list[str]
    token: str | None = None

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.address.startswith("/"):
            return await asyncio.open_unix_connection(self.address)
        return await asyncio.open_connection("127.0.0.1", self.port)

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        return self.process.returncode or 0


async def listen(
    kind: str,
    address: str,
    log_file: Path,
    *flags: str,
    env: dict[str, str] | None = None,
    umask: int | None = None,
) -> Listener:
    """Start `autocode-lsp --<kind> <address> <flags>` and wait for its listening line."""
    command: Sequence[str] = [sys.executable, "-m", "autocode_lsp", "--log-file", str(log_file),
                              f"--{kind}", address, *flags]
    if umask is not None:
        command = ["sh", "-c", f'umask {umask:03o} && exec "$@"', "sh", *command]
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=env,
    )
    assert process.stderr is not None
    lines: list[str] = []
    while True:
        raw = await asyncio.wait_for(process.stderr.readline(), 30)
        if not raw:
            await process.wait()
            raise RuntimeError(
                f"the server exited with {process.returncode} before listening: {''.join(lines)}"
            )
        line = raw.decode()
        lines.append(line)
        match = re.search(rf"listening on {kind} (\S+) \((?:token file: (.+)|no token)\)", line)
        if match:
            token_file = Path(match.group(2)) if match.group(2) else None
            token = token_file.read_text(encoding="utf-8").strip() if token_file else None
            return Listener(process, match.group(1), token_file, lines, token)


def private_env(tmp_path: Path) -> dict[str, str]:
    """A private runtime and state folder per test, so token files land where the test looks."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return {
        **os.environ,
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }


class StdioClient:
    """A blocking client of a stdio server process: one request at a time, replies by id."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def read(self) -> dict[str, Any] | None:
        out = self.process.stdout
        assert out is not None
        length = None
        while True:
            line = out.readline()
            if not line:
                return None
            if line == b"\r\n":
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None
        message: dict[str, Any] = json.loads(out.read(length))
        return message

    def request(self, data: bytes, msg_id: int) -> dict[str, Any]:
        self.send(data)
        while True:
            message = self.read()
            assert message is not None, f"stdout closed before the reply to {msg_id}"
            if message.get("id") == msg_id and "method" not in message:
                return message
