"""Only the person who started a listening server can drive it (issue #12, docs/security.md).

Real server processes on real sockets, and raw clients that send exactly what a
stranger would: no token, a wrong token, commands before `initialize`, another
user's process, a web page's handshake, a workspace outside the session.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autocode_lsp import protocol
from support import make_repo
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

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "project", {"a.txt": "a\n"})


def marker_start(repo: Path, marker: Path, msg_id: int = 2) -> bytes:
    """What an intruder would send: start a task whose test command leaves a marker."""
    return command_frame(
        msg_id, protocol.TASK_START,
        {"brief": "anything", "workspace": str(repo), "testCommand": f"touch {marker}"},
    )


async def good_client_works(listener, repo: Path) -> None:  # type: ignore[no-untyped-def]
    reader, writer = await listener.open()
    try:
        writer.write(initialize_frame(1, listener.token, repo))
        init = await reply_to(reader, 1)
        assert "result" in init, init
        writer.write(frame({"method": "initialized", "params": {}}))
        writer.write(command_frame(2, protocol.PROTOCOL_INFO))
        info = await reply_to(reader, 2)
        assert info["result"]["workspaces"] == [str(repo)], info
    finally:
        writer.close()


@pytest.mark.parametrize("kind", ["tcp", "socket"])
async def test_no_token_wrong_token_and_commands_before_initialize_are_refused(
    kind: str, repo: Path, tmp_path: Path
) -> None:
    env = private_env(tmp_path)
    marker = tmp_path / "MARKER"
    address = "127.0.0.1:0" if kind == "tcp" else str(tmp_path / "sock" / "lsp.sock")
    log_file = tmp_path / "lsp.log"
    # At debug level pygls logs initialize's params (the token with them): the log must not.
    listener = await listen(kind, address, log_file, "--allow-client-overrides", "--log-level", "debug", env=env)
    try:
        assert listener.token_file is not None
        # The listening line names the token file, never the token.
        assert listener.token not in "".join(listener.stderr_lines)

        cases = {
            "no token": initialize_frame(1, None, repo),
            "wrong token": initialize_frame(1, "x" * 43, repo),
            "a token of the wrong type": initialize_frame(1, 12, repo),  # type: ignore[arg-type]
        }
        for what, init in cases.items():
            reader, writer = await listener.open()
            # The intruder does not wait for the answer: the task start is already in the pipe.
            writer.write(init + frame({"method": "initialized", "params": {}}) + marker_start(repo, marker))
            reply = await read_message(reader)
            assert reply is not None and reply["id"] == 1, what
            assert reply["error"]["code"] == protocol.REQUEST_FAILED, what
            assert reply["error"]["data"]["kind"] == "unauthorized", what
            assert "initializationOptions.autocode.token" in reply["error"]["message"]
            assert await closed_within(reader, 30.0), f"{what}: the connection stayed open"
            writer.close()

        for method in ("workspace/executeCommand", "shutdown"):
            reader, writer = await listener.open()
            if method == "shutdown":
                writer.write(frame({"id": 7, "method": "shutdown"}) + marker_start(repo, marker, 8))
            else:
                writer.write(marker_start(repo, marker, 7) + initialize_frame(8, listener.token, repo))
            reply = await read_message(reader)
            assert reply is not None and reply["id"] == 7, method
            assert reply["error"]["code"] == -32002, reply
            assert reply["error"]["data"]["kind"] == "serverNotInitialized"
            # Closed: not even the right token that followed in the same write is looked at.
            assert await closed_within(reader, 30.0), method
            writer.close()

        # The server refused every intruder (each refusal is logged before its reply is sent) and
        # closed the connection, so the rest of what they sent is never read: "nothing was
        # started" below is the end state, not an early look.
        refusals = len(cases) + 2
        assert await logged(log_file, "refused ", 60, times=refusals), log_file.read_text(encoding="utf-8")
        # No task was started for any of them: no run folder (a test command runs only in a task).
        assert not marker.exists(), "a refused client got a command to run"
        assert not (repo / ".autocode" / "runs").exists(), "a refused client started a task"
        # The listener still serves its owner, and the very start the intruders sent makes a
        # task for the owner: the run-folder check above is live.
        await good_client_works(listener, repo)
        reader, writer = await listener.open()
        try:
            writer.write(initialize_frame(1, listener.token, repo) + frame({"method": "initialized", "params": {}})
                         + marker_start(repo, marker))
            started = await reply_to(reader, 2)
            assert "result" in started, started
            assert (repo / ".autocode" / "runs" / started["result"]["id"]).is_dir()
        finally:
            writer.close()
    finally:
        await listener.stop()
    text = log_file.read_text(encoding="utf-8")
    assert "refused a client that sent no token" in text
    assert "refused a client that sent a wrong token" in text
    assert "refused workspace/executeCommand before initialize" in text
    assert listener.token not in text
    # pygls logs every request it dispatches at debug level: none of the refused ones got there.
    # The commands dispatched are the owner's at the end: autocode.protocol.info and the task start.
    assert text.count("Request 'workspace/executeCommand' received") == 2
    assert "Request 'shutdown' received" not in text


async def test_stdio_answers_requests_before_initialize_with_32002_and_goes_on(tmp_path: Path) -> None:
    stream = b"".join([
        frame({"id": 1, "method": "shutdown"}),
        command_frame(2, protocol.PROTOCOL_INFO),
        frame({"method": "initialized", "params": {}}),  # a notification: dropped
        initialize_frame(3, None),
        command_frame(4, protocol.PROTOCOL_INFO),
        frame({"id": 5, "method": "shutdown"}),
        frame({"method": "exit"}),
    ])
    out = subprocess.run(
        [sys.executable, "-m", "autocode_lsp", "--log-file", str(tmp_path / "l.log")],
        input=stream, capture_output=True, timeout=60, env=private_env(tmp_path),
    )
    replies = _replies(out.stdout)
    assert replies[1]["error"]["code"] == -32002
    assert replies[2]["error"]["code"] == -32002
    assert "result" in replies[3]
    assert replies[4]["result"]["protocolVersion"] == protocol.PROTOCOL_VERSION
    assert out.returncode == 0


def _replies(data: bytes) -> dict[int, dict[str, object]]:
    replies = {}
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b"\r\n")[0].split(b":")[1])
        message = json.loads(rest[:length])
        data = rest[length:]
        if "id" in message and "method" not in message:
            replies[message["id"]] = message
    return replies


# ---------------------------------------------------------------------- another local user

OTHER_USER_CLIENT = r"""
import json, socket, sys
kind, where, token = sys.argv[1], sys.argv[2], sys.argv[3]
def frame(m):
    b = json.dumps(m).encode()
    return b"Content-Length: %d\r\n\r\n" % len(b) + b
try:
    if kind == "probe":
        open(where)
    if kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.connect(where)
    else:
        s = socket.create_connection(("127.0.0.1", int(where)))
except OSError as e:
    print(json.dumps({"connected": False, "error": type(e).__name__})); sys.exit(0)
s.settimeout(5)
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": None, "capabilities": {}}}
if token != "-":
    init["params"]["initializationOptions"] = {"autocode": {"token": token}}
data = b""
try:
    s.sendall(frame(init))
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except socket.timeout:
    print(json.dumps({"connected": True, "closed": False, "reply": data.decode()})); sys.exit(0)
except (ConnectionResetError, BrokenPipeError):
    pass
print(json.dumps({"connected": True, "closed": True, "reply": data.decode()}))
"""


def _python_for_nobody() -> str:
    """A Python the other user may run (ours may sit in root's home)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", os.path.realpath(sys.executable)):
        if not os.path.exists(candidate):
            continue
        probe = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", candidate, "-c", "pass"],
            capture_output=True, timeout=30, cwd="/",
        )
        if probe.returncode == 0:
            return candidate
    pytest.skip("no Python interpreter the other user (uid 65534) may run")


def _as_nobody(*args: str) -> dict[str, object]:
    if os.geteuid() != 0:
        pytest.skip("needs root to run a client as another user (setpriv --reuid=65534)")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    python = _python_for_nobody()
    out = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c",
         OTHER_USER_CLIENT, *args],
        capture_output=True, text=True, timeout=30, cwd="/",
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


async def test_another_user_cannot_use_the_socket_or_the_port_without_the_token(
    repo: Path, tmp_path: Path
) -> None:
    env = private_env(tmp_path)
    # pytest's own folder is root's alone; the other user may walk up to the socket's folder.
    walkable = Path(tempfile.mkdtemp(prefix="autocode-remote-"))
    os.chmod(walkable, 0o755)
    sock_path = walkable / "sock" / "lsp.sock"
    sock = await listen("socket", str(sock_path), tmp_path / "s.log", env=env)
    tcp = await listen("tcp", "127.0.0.1:0", tmp_path / "t.log", env=env)
    try:
        assert _as_nobody("probe", str(walkable), "-")["error"] == "IsADirectoryError", "cannot walk"
        assert stat.S_IMODE(sock_path.stat().st_mode) == 0o600
        assert stat.S_IMODE(sock_path.parent.stat().st_mode) == 0o700
        assert sock.token is not None
        # The folder keeps them out, even with the token.
        refused = _as_nobody("socket", str(sock_path), sock.token)
        assert refused == {"connected": False, "error": "PermissionError"}, refused

        # Loosen the folder and the socket as a careless admin might: the peer check still holds.
        os.chmod(sock_path.parent, 0o755)
        os.chmod(sock_path, 0o666)
        peer = _as_nobody("socket", str(sock_path), sock.token)
        assert peer["connected"] is True and peer["closed"] is True and peer["reply"] == "", peer

        # TCP: anyone local can connect, but without the token nothing answers but the refusal.
        for token in ("-", "wrong-" * 8):
            over_tcp = _as_nobody("tcp", str(tcp.port), token)
            assert over_tcp["closed"] is True, over_tcp
            assert '"unauthorized"' in str(over_tcp["reply"]), over_tcp
            assert '"result"' not in str(over_tcp["reply"])
        # And the token file cannot be read by them.
        assert tcp.token_file is not None
        assert stat.S_IMODE(tcp.token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(tcp.token_file.parent.stat().st_mode) == 0o700
    finally:
        await sock.stop()
        await tcp.stop()
        shutil.rmtree(walkable, ignore_errors=True)
    assert "refused a unix-socket client of uid 65534" in (tmp_path / "s.log").read_text(encoding="utf-8")


async def test_socket_in_a_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make a folder that belongs to another user")
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o777)
    os.chown(folder, 65534, 65534)
    out = subprocess.run(
        [sys.executable, "-m", "autocode_lsp", "--log-file", str(tmp_path / "l.log"),
         "--socket", str(folder / "lsp.sock")],
        capture_output=True, text=True, timeout=60, env=private_env(tmp_path),
    )
    assert out.returncode == 2
    assert "belongs to another user" in out.stderr
    assert not (folder / "lsp.sock").exists()


# ---------------------------------------------------------------------- beyond loopback


def test_a_non_loopback_bind_is_refused_without_allow_remote(tmp_path: Path) -> None:
    for flags in ([], ["--allow-remote", "--no-token"]):
        out = subprocess.run(
            [sys.executable, "-m", "autocode_lsp", "--log-file", str(tmp_path / "l.log"),
             "--tcp", "0.0.0.0:0", *flags],
            capture_output=True, text=True, timeout=60, env=private_env(tmp_path),
        )
        assert out.returncode == 2, flags
        assert "--allow-remote" in out.stderr, out.stderr
        assert "listening" not in out.stderr


async def test_allow_remote_with_a_token_works_and_says_what_it_means(repo: Path, tmp_path: Path) -> None:
    listener = await listen("tcp", "0.0.0.0:0", tmp_path / "l.log", "--allow-remote",
                            env=private_env(tmp_path))
    try:
        warning = "".join(listener.stderr_lines)
        assert "anyone with the token can run commands as this user" in warning
        await good_client_works(listener, repo)
    finally:
        await listener.stop()


async def test_no_token_only_on_loopback_with_a_warning(repo: Path, tmp_path: Path) -> None:
    listener = await listen("tcp", "127.0.0.1:0", tmp_path / "l.log", "--no-token",
                            env=private_env(tmp_path))
    try:
        assert listener.token_file is None
        assert "warning: --no-token" in "".join(listener.stderr_lines)
        await good_client_works(listener, repo)
    finally:
        await listener.stop()


async def test_token_file_is_private_and_removed_at_exit_and_a_readable_one_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    env = private_env(tmp_path)
    listener = await listen("tcp", "127.0.0.1:0", tmp_path / "l.log", env=env)
    token_file = listener.token_file
    assert token_file is not None
    assert token_file.parent == Path(env["XDG_RUNTIME_DIR"]) / "autocode"
    assert len(listener.token or "") >= 22
    await listener.stop()
    assert not token_file.exists(), "a per-start token outlived its server"

    mine = tmp_path / "my.token"
    mine.write_text("s3cr3t-" * 6 + "\n", encoding="utf-8")
    os.chmod(mine, 0o644)
    out = subprocess.run(
        [sys.executable, "-m", "autocode_lsp", "--log-file", str(tmp_path / "l.log"),
         "--tcp", "127.0.0.1:0", "--token-file", str(mine)],
        capture_output=True, text=True, timeout=60, env=env,
    )
    assert out.returncode == 2 and "chmod 600" in out.stderr, out.stderr
    os.chmod(mine, 0o600)
    listener = await listen("tcp", "127.0.0.1:0", tmp_path / "l.log", "--token-file", str(mine), env=env)
    try:
        assert listener.token_file == mine
        await good_client_works(listener, repo)
    finally:
        await listener.stop()
    assert mine.exists(), "the person's own token file is theirs to keep"


# ---------------------------------------------------------------------- WebSocket


async def _handshake(port: int, headers: dict[str, str]) -> str:
    """The status line the server answers a WebSocket upgrade with."""
    import base64

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    nonce = base64.b64encode(os.urandom(16)).decode()  # the handshake's random key (RFC 6455)
    lines = [
        "GET / HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-" + "Key: " + nonce, "Sec-WebSocket-Version: 13",
        *(f"{k}: {v}" for k, v in headers.items()), "", "",
    ]
    writer.write("\r\n".join(lines).encode())
    status = (await asyncio.wait_for(reader.readline(), 10)).decode().strip()
    writer.close()
    return status


async def test_websocket_refuses_foreign_origin_host_and_missing_token_before_the_upgrade(
    repo: Path, tmp_path: Path
) -> None:
    listener = await listen("ws", "127.0.0.1:0", tmp_path / "l.log",
                            "--allow-origin", "vscode-file://vscode-app", env=private_env(tmp_path))
    try:
        port, token = listener.port, listener.token
        assert token is not None
        local = f"127.0.0.1:{port}"
        good = {"Host": local, "X-AutoCode-Token": token}
        assert (await _handshake(port, {**good, "Origin": "http://evil.example"})).startswith("HTTP/1.1 403")
        assert (await _handshake(port, {**good, "Host": "attacker.example"})).startswith("HTTP/1.1 403")
        assert (await _handshake(port, {**good, "Host": f"attacker.example:{port}"})).startswith("HTTP/1.1 403")
        assert (await _handshake(port, {"Host": local})).startswith("HTTP/1.1 401")
        assert (await _handshake(port, {**good, "X-AutoCode-Token": "wrong"})).startswith("HTTP/1.1 401")
        # What is allowed: no Origin (an editor), a listed Origin, localhost by name.
        assert (await _handshake(port, good)).startswith("HTTP/1.1 101")
        assert (await _handshake(port, {**good, "Origin": "vscode-file://vscode-app"})).startswith("HTTP/1.1 101")
        assert (await _handshake(port, {**good, "Host": f"localhost:{port}"})).startswith("HTTP/1.1 101")
    finally:
        await listener.stop()
    text = (tmp_path / "l.log").read_text(encoding="utf-8")
    assert "refused a websocket handshake from Origin 'http://evil.example'" in text
    assert token not in text


async def test_websocket_refuses_an_oversized_message(tmp_path: Path) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    from autocode_lsp.framing import MAX_WS_MESSAGE_BYTES

    listener = await listen("ws", "127.0.0.1:0", tmp_path / "l.log", env=private_env(tmp_path))
    try:
        assert listener.token is not None
        async with connect(f"ws://127.0.0.1:{listener.port}", max_size=None,
                           additional_headers={"X-AutoCode-Token": listener.token}) as ws:
            await ws.send(b" " * (MAX_WS_MESSAGE_BYTES + 1))
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    finally:
        await listener.stop()


async def test_websocket_refuses_a_request_before_initialize_and_a_message_that_is_not_json(
    repo: Path, tmp_path: Path
) -> None:
    """Over WebSocket as over TCP: a request before `initialize` answers -32002 and the
    connection closes, nothing dispatched; a message that is not JSON closes it with 1007 and
    one log line. The listener goes on serving its owner."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    log_file = tmp_path / "l.log"
    listener = await listen("ws", "127.0.0.1:0", log_file, "--log-level", "debug", env=private_env(tmp_path))
    url, headers = f"ws://127.0.0.1:{listener.port}", {"X-AutoCode-Token": str(listener.token)}

    def body(data: bytes) -> bytes:
        return data.split(b"\r\n\r\n", 1)[1]  # a WebSocket message is the JSON alone, no headers

    try:
        async with connect(url, additional_headers=headers) as ws:
            await ws.send(body(command_frame(7, protocol.PROTOCOL_INFO)))
            reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert reply["id"] == 7 and reply["error"]["code"] == -32002, reply
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 5)
        async with connect(url, additional_headers=headers) as ws:
            await ws.send(b"{not json")
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
        async with connect(url, additional_headers=headers) as ws:
            await ws.send(body(initialize_frame(1, None, repo)))
            assert "result" in json.loads(await asyncio.wait_for(ws.recv(), 10))
    finally:
        await listener.stop()
    text = log_file.read_text(encoding="utf-8")
    assert len([line for line in text.splitlines() if "broken LSP framing" in line]) == 1, text
    assert "Request 'workspace/executeCommand' received" not in text


# ---------------------------------------------------------------------- confinement


async def test_a_workspace_outside_the_session_is_refused_even_through_a_symlink(
    repo: Path, tmp_path: Path
) -> None:
    other = make_repo(tmp_path / "other", {"b.txt": "b\n"})
    (repo / "sub").mkdir()
    link = repo / "escape"
    link.symlink_to(other)
    listener = await listen("tcp", "127.0.0.1:0", tmp_path / "l.log", env=private_env(tmp_path))
    try:
        reader, writer = await listener.open()
        writer.write(initialize_frame(1, listener.token, repo))
        assert "result" in await reply_to(reader, 1)
        writer.write(frame({"method": "initialized", "params": {}}))
        msg_id = 1
        for outside in (str(other), other.as_uri(), str(link), str(repo / "sub" / ".." / "escape"),
                        str(tmp_path)):
            for command in (protocol.TASK_LIST, protocol.DOCTOR, protocol.TASK_START):
                msg_id += 1
                args = {"workspace": outside}
                if command == protocol.TASK_START:
                    args["brief"] = "anything"
                writer.write(command_frame(msg_id, command, args))
                reply = await reply_to(reader, msg_id)
                assert reply["error"]["code"] == protocol.INVALID_PARAMS, (outside, command, reply)
                assert reply["error"]["data"]["kind"] == "workspaceOutsideSession", reply
        # Inside is fine: the folder itself and a folder within it.
        for inside in (str(repo), str(repo / "sub"), repo.as_uri()):
            msg_id += 1
            writer.write(command_frame(msg_id, protocol.TASK_LIST, {"workspace": inside}))
            reply = await reply_to(reader, msg_id)
            assert "result" in reply, (inside, reply)
        writer.close()
    finally:
        await listener.stop()
    assert not (other / ".autocode").exists()


async def test_network_clients_cannot_name_commands_unless_allowed(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    listener = await listen("tcp", "127.0.0.1:0", tmp_path / "l.log", env=private_env(tmp_path))
    try:
        reader, writer = await listener.open()
        writer.write(initialize_frame(1, listener.token, repo))
        assert "result" in await reply_to(reader, 1)
        writer.write(marker_start(repo, marker, 2))
        reply = await reply_to(reader, 2)
        assert reply["error"]["code"] == protocol.INVALID_PARAMS, reply
        assert reply["error"]["data"]["kind"] == "clientOverrideRefused"
        assert reply["error"]["data"]["field"] == "testCommand"
        assert "--allow-client-overrides" in reply["error"]["message"]
        writer.close()
    finally:
        await listener.stop()
    assert not marker.exists()
    assert not (repo / ".autocode" / "runs").exists()


# ---------------------------------------------------------------------- file modes


@pytest.mark.parametrize("umask", [0o022, 0o000])
async def test_files_the_server_creates_are_private_whatever_the_umask(umask: int, tmp_path: Path) -> None:
    env = private_env(tmp_path)
    os.rmdir(env["XDG_RUNTIME_DIR"])
    os.mkdir(env["XDG_RUNTIME_DIR"], 0o700)
    log_file = tmp_path / "fresh" / "logs" / "lsp.log"
    sock_path = tmp_path / "sockets" / "lsp.sock"
    sock = await listen("socket", str(sock_path), log_file, env=env, umask=umask)
    tcp = await listen("tcp", "127.0.0.1:0", tmp_path / "fresh" / "logs" / "t.log", env=env, umask=umask)
    try:
        assert sock.token_file is not None and tcp.token_file is not None
        files = [log_file, sock_path, sock.token_file, tcp.token_file, tmp_path / "fresh" / "logs" / "t.log"]
        folders = [log_file.parent, tmp_path / "fresh", sock_path.parent, sock.token_file.parent]
        for path in files:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, (oct(umask), path)
        for path in folders:
            assert stat.S_IMODE(path.stat().st_mode) == 0o700, (oct(umask), path)
    finally:
        await sock.stop()
        await tcp.stop()
    assert not sock_path.exists(), "the socket outlived its server"


def test_the_unix_socket_refuses_a_folder_others_can_enter_and_leaves_it_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o755)
    out = subprocess.run(
        [sys.executable, "-m", "autocode_lsp", "--log-file", str(tmp_path / "l.log"),
         "--socket", str(folder / "lsp.sock")],
        capture_output=True, text=True, timeout=60, env=private_env(tmp_path),
    )
    assert out.returncode == 2
    assert "chmod 700" in out.stderr
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert not (folder / "lsp.sock").exists()


def test_the_unix_socket_refuses_a_path_in_use(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir(mode=0o700)
    busy = socket.socket(socket.AF_UNIX)
    busy.bind(str(folder / "lsp.sock"))
    busy.listen()
    try:
        out = subprocess.run(
            [sys.executable, "-m", "autocode_lsp", "--log-file", str(tmp_path / "l.log"),
             "--socket", str(folder / "lsp.sock")],
            capture_output=True, text=True, timeout=60, env=private_env(tmp_path),
        )
    finally:
        busy.close()
    assert out.returncode == 2
    assert "already listening" in out.stderr


async def test_log_messages_go_scrubbed_to_their_own_session_only(repo: Path, tmp_path: Path) -> None:
    """`window/logMessage` carries the server's log to the client: through the scrub module, as
    the log file, and on a listener serving several sessions only to the session whose message
    the record came from (another person's errors are not theirs to read)."""
    from support.scrub import load_corpus

    secret = next(str(c["secret"]) for c in load_corpus()["credentials"] if len(str(c.get("secret", ""))) >= 16)
    listener = await listen("tcp", "127.0.0.1:0", tmp_path / "lsp.log", "--log-level", "debug",
                            env=private_env(tmp_path))
    sessions = []
    try:
        for _ in range(2):
            reader, writer = await listener.open()
            writer.write(initialize_frame(1, listener.token, repo))
            assert "result" in await reply_to(reader, 1)
            writer.write(frame({"method": "initialized", "params": {}}))
            sessions.append((reader, writer))
        (a_reader, a_writer), (b_reader, b_writer) = sessions

        # A command that fails with the person's own input in its message: the server logs it.
        a_writer.write(command_frame(2, protocol.TASK_GET, {"taskId": secret, "workspace": str(repo)}))
        logged = []
        while True:
            message = await read_message(a_reader)
            assert message is not None
            if message.get("method") == "window/logMessage":
                logged.append(message["params"]["message"])
            elif message.get("id") == 2:
                assert "error" in message, message
                break
        failure = [m for m in logged if "task.get failed" in m]
        assert failure, f"the failure was not sent to its session: the checks below prove nothing ({logged})"
        assert all(secret not in m for m in logged) and "[redacted:" in failure[0]

        # B asks something after A's failure was logged: nothing of A's reached it before its answer.
        b_writer.write(command_frame(3, protocol.PROTOCOL_INFO))
        heard = []
        while True:
            message = await read_message(b_reader)
            assert message is not None
            if message.get("id") == 3:
                break
            if message.get("method") == "window/logMessage":
                heard.append(message["params"]["message"])
        assert not [m for m in heard if "task.get" in m], heard
    finally:
        for _, writer in sessions:
            writer.close()
        await listener.stop()


def test_the_token_folder_falls_back_to_the_state_folder_when_the_runtime_folder_is_not_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`$XDG_RUNTIME_DIR/autocode` only when that folder is ours; unset, missing or another
    user's, the token goes to `<state dir>/run`, made 0700."""
    from autocode_lsp import security

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    fallback = tmp_path / "state" / "autocode" / "run"
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    assert security.runtime_dir() == fallback
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "missing"))
    assert security.runtime_dir() == fallback
    ours = tmp_path / "runtime"
    ours.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(ours))
    assert security.runtime_dir() == ours / "autocode"
    if os.getuid() == 0:  # only root can give a folder away
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(theirs))
        assert security.runtime_dir() == fallback
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    token, path = security.issue_token(None, "tcp")
    assert path.parent == fallback and len(token) >= security.MIN_TOKEN_CHARS
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in (fallback, fallback.parent, fallback.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


@pytest.mark.skipif(os.getuid() != 0, reason="only root can make a socket belong to another user")
def test_an_existing_socket_of_another_user_is_refused(tmp_path: Path) -> None:
    from autocode_lsp import security

    folder = tmp_path / "sock"
    folder.mkdir(mode=0o700)
    path = folder / "lsp.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as held:
        held.bind(str(path))
    os.chown(path, 65534, 65534)
    with pytest.raises(security.SecurityError, match="belongs to another user"):
        security.prepare_socket_path(path)
    assert path.exists(), "another user's socket was removed"
