"""Transports: a dropped TCP/WebSocket client reconnects to the same process; logs stay off stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autocode_lsp import protocol
from support import make_repo
from support.lsp import close, connect, initialize, launch, stop
from support.remote import logged

ENDED = "disconnected; still listening"
"""What the listener logs when it has handled the end of a connection."""

GLOBAL_FACT = "The CI runners of this organisation have no outbound network access."


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
        # The listener logs each connection's end once it has handled it: alive after that line.
        assert await logged(log_file, ENDED, 60, times=1), log_file.read_text(encoding="utf-8")
        assert process.returncode is None, "the listener must survive a dropped client"

        second = await connect(transport, log_file=log_file, process=process, port=port)
        await initialize(second, preset="vscode", folders=[repo])
        info = await second.command(protocol.PROTOCOL_INFO)
        assert info["workspaces"] == [str(repo)]
        # A clean `exit` ends this connection only.
        await close(second, stop_process=False)
        assert await logged(log_file, ENDED, 60, times=2), log_file.read_text(encoding="utf-8")
        assert process.returncode is None

        third = await connect(transport, log_file=log_file, process=process, port=port)
        await initialize(third, preset="neovim", folders=None)
        assert (await third.command(protocol.PROTOCOL_INFO))["workspaces"] == []
        await close(third, stop_process=False)
    finally:
        await stop(process)
    text = log_file.read_text(encoding="utf-8")
    assert text.count("client connected") >= 3


CHATTY_MODEL = """
# In front of the installed static_model: chatters on stdout like some model packages do
# (print, a raw write to file descriptor 1, a child process, a thread), then loads the real one.
import importlib.machinery, os, subprocess, sys, threading

print("static_model: loading weights ...")
os.write(1, b"static_model: native banner\\n")
subprocess.run(["echo", "static_model: child process banner"], check=True)
_t = threading.Thread(target=print, args=("static_model: hello from a thread",))
_t.start()
_t.join()
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.machinery.PathFinder.find_spec(
    "static_model", [p for p in sys.path if os.path.abspath(p or ".") != _here]
)
__file__ = _spec.origin
__path__ = list(_spec.submodule_search_locations)
exec(compile(open(_spec.origin, encoding="utf-8").read(), _spec.origin, "exec"))
_real_get_embeddings = get_embeddings


def get_embeddings(texts):
    print("static_model: encoding", len(texts), "texts")
    return _real_get_embeddings(texts)
"""


class RawClient:
    """Talks LSP to a stdio server byte by byte, so anything but framed JSON-RPC on stdout fails."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.notifications: list[dict[str, object]] = []
        self.next_id = 0

    def send(self, message: dict[str, object]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(_frame(json.dumps({"jsonrpc": "2.0", **message}).encode()))
        self.process.stdin.flush()

    def read(self) -> dict[str, object] | None:
        out = self.process.stdout
        assert out is not None
        length = None
        while True:
            line = out.readline()
            if not line:
                assert length is None, "stdout ended inside a message header"
                return None
            if line == b"\r\n":
                break
            name, sep, value = line.decode("utf-8", "replace").partition(":")
            assert sep and name.strip().lower() in ("content-length", "content-type"), (
                f"not protocol on stdout: {line!r}"
            )
            if name.strip().lower() == "content-length":
                length = int(value)
        assert length is not None, "a message without Content-Length"
        message: dict[str, object] = json.loads(out.read(length))
        assert message.get("jsonrpc") == "2.0", message
        return message

    def request(self, method: str, params: object) -> dict[str, object]:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            message = self.read()
            assert message is not None, f"the server closed stdout before answering {method}"
            if message.get("id") == self.next_id and "method" not in message:
                return message
            if "method" in message and "id" not in message:
                self.notifications.append(message)

    def command(self, name: str, *arguments: object) -> dict[str, object]:
        return self.request("workspace/executeCommand", {"command": name, "arguments": list(arguments)})


def test_stdio_stdout_carries_only_protocol_and_logs_go_to_the_client_and_the_file(
    tmp_path: Path,
) -> None:
    package = tmp_path / "chatty" / "static_model"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(CHATTY_MODEL, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(package.parent), os.environ.get("PYTHONPATH")])),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    log_file = tmp_path / "lsp.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "autocode_lsp", "--log-file", str(log_file)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    client = RawClient(process)
    try:
        init = client.request("initialize", {"processId": None, "capabilities": {},
                                             "clientInfo": {"name": "raw"}})
        assert "result" in init
        client.send({"method": "initialized", "params": {}})
        saved = client.command(protocol.MEMORY_SAVE, {"content": GLOBAL_FACT})
        assert saved["result"]["saved"] is True, saved  # type: ignore[index]
        found = client.command(protocol.MEMORY_SEARCH, {"query": "network access on CI runners"})
        assert found["result"]["method"] == "hybrid", found  # type: ignore[index]
        bad = client.command(protocol.TASK_GET, {"taskId": 1})
        assert bad["error"]["code"] == -32602  # type: ignore[index]
        client.request("shutdown", None)
        client.send({"method": "exit"})
        while client.read() is not None:  # everything up to the end is protocol too
            pass
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None
    stderr = process.stderr.read().decode("utf-8", "replace")
    # The chatter happened (so the model was loaded) and went to stderr instead.
    for noise in ("loading weights", "native banner", "child process banner", "from a thread",
                  "encoding 1 texts"):
        assert noise in stderr, noise
    logged = [str(m["params"]["message"]) for m in client.notifications  # type: ignore[index]
              if m["method"] == "window/logMessage"]
    assert any("autocode.task.get failed" in m for m in logged), logged
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
    """Well-framed JSON with a wrong shape is answered or logged; only broken framing ends a
    connection (tests/server/test_server_framing.py)."""
    def request(msg_id: int, method: str, params: object) -> bytes:
        return _frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode())

    stream = b"".join([
        request(1, "initialize", {"capabilities": {}, "processId": None}),
        _frame(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'),
        _frame(b'{"jsonrpc": "2.0", "id": 9, "method": "no/such/method", "params": {}}'),
        _frame(b'{"no": "jsonrpc field"}'),
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
    assert replies[9]["error"]["code"] == -32601
    assert out.returncode == 0
