"""Transports (stdio, TCP, a unix socket, WebSocket) and the log file.

Over stdio nothing but protocol may reach stdout, so the protocol gets a private
copy of file descriptor 1 and everything else that writes to stdout (a library's
banner, a stray print) lands on stderr. Over TCP, a unix socket and WebSocket the
listener outlives its connections: each connection is a fresh session, and a
client that dropped can connect again.

Every listening transport is guarded (see `security` and docs/security.md): a
token in `initialize` (in the handshake for WebSocket), owner-only socket
folders, loopback binds unless told twice, and strict framing (`framing`): a
broken frame closes its connection, and over stdio ends the process non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, StdoutWriter, WebSocketWriter

from autocode_lsp import framing
from autocode_lsp.logscrub import ScrubbingFormatter
from autocode_lsp.security import (
    TOKEN_HEADER,
    Access,
    host_header_ok,
    peer_uid,
    prepare_socket_path,
    private_dir,
    token_matches,
)
from autocode_lsp.server import SESSION, AutoCodeServer, ClientLogHandler, create_server

log = logging.getLogger("autocode_lsp")


def default_log_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "autocode" / "lsp.log"


def setup_logging(path: str | None, level: str) -> Path | None:
    """Log to a file (never to stdout); returns the file, or None when it cannot be opened."""
    numeric = getattr(logging, level.upper(), logging.INFO)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    for old in list(root.handlers):
        root.removeHandler(old)
    log_file = Path(path) if path else default_log_file()
    written: Path | None = log_file
    handler: logging.Handler
    try:
        handler = _private_file_handler(log_file)
    except OSError as exc:
        sys.stderr.write(
            f"autocode-lsp: cannot write the log file {log_file} ({exc}); logging to stderr\n"
        )
        handler = logging.StreamHandler(sys.stderr)
        written = None
    handler.setFormatter(
        ScrubbingFormatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    handler.setLevel(numeric)
    root.addHandler(handler)
    logging.getLogger("autocode_lsp").setLevel(numeric)
    logging.getLogger("autocode").setLevel(numeric)
    # pygls logs every message it sends at INFO: only keep that when debugging.
    logging.getLogger("pygls").setLevel(logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING)
    return written


def _private_file_handler(log_file: Path) -> logging.Handler:
    """A log file only its owner can read (0600 in a 0700 folder, whatever the umask)."""
    if not log_file.parent.exists():
        private_dir(log_file.parent)
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        if os.fstat(fd).st_uid == os.getuid():
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return logging.FileHandler(log_file, encoding="utf-8")


# ---------------------------------------------------------------------- one connection


async def pump(reader: framing.Reader, server: AutoCodeServer, stop: threading.Event, where: str) -> bool:
    """Hand every frame of `reader` to the server; False when the framing broke (logged once)."""
    SESSION.set(server)  # this connection's coroutine, and all its messages start, are its session's
    protocol = server.protocol

    def handle(body: bytes) -> None:
        try:
            message = framing.decode(body, protocol.structure_message)
        except framing.FramingError:
            raise
        except Exception as exc:  # a JSON object pygls cannot read as a message
            server.report_server_error(exc, JsonRpcException)
            return
        try:
            protocol.handle_message(message)
        except (SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:
            log.exception("cannot handle a message")
            server.report_server_error(exc, JsonRpcException)

    try:
        await framing.serve_frames(reader, stop, handle)
    except framing.FramingError as exc:
        framing.log_framing_error(log, where, exc)
        return False
    return True


def serve_stdio(*, log_file: Path | None) -> int:
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    server = create_server()
    log.info("serving on stdio (log: %s)", log_file)
    stop = threading.Event()
    server._stop_event = stop
    reader = StdinAsyncReader(sys.stdin.buffer, server.thread_pool)
    server.protocol.set_writer(StdoutWriter(protocol_out))
    code = 0
    try:
        # A broken frame ends the process non-zero, so the editor restarts the server.
        code = 0 if asyncio.run(pump(reader, server, stop, "stdio")) else 1
    except BrokenPipeError:
        log.error("the client closed the connection; stopping")
    except SystemExit as exc:  # `exit`: 0 after `shutdown`, 1 without it (the spec)
        code = exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        pass
    finally:
        if code == 1:
            # A broken frame: a thread may still be blocked reading stdin (a body that never
            # came), and the server's shutdown would wait for it. The process ends at once
            # (os._exit in __main__), so only stop the rest.
            stop.set()
            server.thread_pool.shutdown(wait=False, cancel_futures=True)
        else:
            server.shutdown()  # type: ignore[no-untyped-call]
    return code


def _announce(kind: str, where: str, token_file: Path | None) -> None:
    # Tests and launchers started with port 0 read the chosen port from this line.
    # The token itself is never printed: only where it is.
    tail = f" (token file: {token_file})" if token_file is not None else " (no token)"
    sys.stderr.write(f"autocode-lsp: listening on {kind} {where}{tail}\n")
    sys.stderr.flush()
    log.info("listening on %s %s%s", kind, where, tail)


def _addresses(sockets: Any) -> str:
    found = []
    for sock in sockets:
        name = sock.getsockname()
        if isinstance(name, tuple):
            found.append(f"{name[0]}:{name[1]}")
        else:
            found.append(str(name))
    return ", ".join(found)


def _first_port(sockets: Any) -> int:
    for sock in sockets:
        name = sock.getsockname()
        if isinstance(name, tuple):
            return int(name[1])
    return 0


def warn(text: str) -> None:
    sys.stderr.write(f"autocode-lsp: warning: {text}\n")
    sys.stderr.flush()
    log.warning("%s", text)


def _stream_session(access: Access, kind: str):  # type: ignore[no-untyped-def]
    """The per-connection coroutine of the TCP and unix-socket listeners."""
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or "a local process"
        if kind == "socket":
            sock = writer.get_extra_info("socket")
            uid = peer_uid(sock) if sock is not None else None
            if uid != access.owner_uid:
                log.warning("refused a unix-socket client of uid %s (the owner is uid %s)", uid, access.owner_uid)
                writer.close()
                return
        stop = threading.Event()

        def end_connection() -> None:
            stop.set()
            writer.close()

        server = create_server(end_connection=end_connection, access=access)
        server.protocol.set_writer(writer)
        log.info("%s client connected from %s", kind, peer)
        try:
            await pump(reader, server, stop, f"{kind} client {peer}")
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("%s client %s dropped: %s", kind, peer, exc)
        finally:
            server.close_session()
            ClientLogHandler.detach(server)
            writer.close()
            log.info("%s client %s disconnected; still listening", kind, peer)

    return connection


def serve_tcp(host: str, port: int, *, access: Access, token_file: Path | None) -> int:
    async def listen() -> None:
        listener = await asyncio.start_server(_stream_session(access, "tcp"), host, port)
        _announce("tcp", _addresses(listener.sockets), token_file)
        async with listener:
            await listener.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(listen())
    return 0


def serve_socket(path: Path, *, access: Access, token_file: Path | None) -> int:
    """A unix-domain socket, 0600 in a 0700 folder of its owner; peers of another uid are refused."""
    prepare_socket_path(path)

    async def listen() -> None:
        old = os.umask(0o177)  # the socket file is born 0600: no window where others may connect
        try:
            listener = await asyncio.start_unix_server(_stream_session(access, "socket"), str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        _announce("socket", str(path), token_file)
        async with listener:
            await listener.serve_forever()

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(listen())
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return 0


class _SendsInOrder(WebSocketWriter):
    """pygls' WebSocket writer, keeping the sends it started: a connection closed right after a
    message (a refusal before `initialize`) waits for them, so the message is not lost."""

    def __init__(self, websocket: Any) -> None:
        super().__init__(websocket)
        self.pending: set[asyncio.Task[None]] = set()

    def write(self, data: bytes) -> asyncio.Task[None]:
        task = asyncio.ensure_future(super().write(data))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)
        return task

    async def flushed(self) -> None:
        while self.pending:
            await asyncio.gather(*list(self.pending), return_exceptions=True)


def serve_ws(host: str, port: int, *, access: Access, token_file: Path | None) -> int:
    # lazy: not needed by the server's `initialize`, which imports this module
    from websockets.asyncio.server import ServerConnection, serve
    from websockets.exceptions import ConnectionClosed
    from websockets.http11 import Request, Response


    # The token was checked in the handshake; the session itself asks for none.
    session_access = dataclasses.replace(access, token=None)

    def check_handshake(connection: ServerConnection, request: Request) -> Response | None:
        """Refuse before the upgrade: a foreign Origin (a web page), a foreign Host (DNS
        rebinding), a missing or wrong token header."""
        headers = request.headers
        origin = headers.get("Origin")
        if origin is not None and origin not in access.allowed_origins:
            log.warning("refused a websocket handshake from Origin %r", origin)
            return connection.respond(403, f"Origin {origin} is not allowed (see --allow-origin)\n")
        local = connection.local_address[0] if connection.local_address else ""
        if not host_header_ok(headers.get("Host"), access.bound_hosts | {str(local).lower()}):
            log.warning("refused a websocket handshake for Host %r", headers.get("Host"))
            return connection.respond(403, "Host is not this server's address\n")
        if access.token is not None and not token_matches(access.token, headers.get(TOKEN_HEADER)):
            what = "no token" if headers.get(TOKEN_HEADER) is None else "a wrong token"
            log.warning("refused a websocket handshake with %s", what)
            return connection.respond(
                401, f"this server needs its token in the {TOKEN_HEADER} header; got {what}\n"
            )
        return None

    async def connection(websocket: ServerConnection) -> None:
        stop = threading.Event()
        closing: set[asyncio.Task[None]] = set()

        writer = _SendsInOrder(websocket)

        async def close_after_sends() -> None:
            await writer.flushed()  # the refusal a closing connection was just sent goes first
            await websocket.close()

        def end_connection() -> None:
            stop.set()
            closing.add(asyncio.ensure_future(close_after_sends()))

        server = create_server(end_connection=end_connection, access=session_access)
        server.protocol.set_writer(writer, include_headers=False)
        log.info("websocket client connected from %s", websocket.remote_address)

        async def messages() -> bool:
            SESSION.set(server)  # see pump
            while not stop.is_set():
                try:
                    data = await websocket.recv(decode=False)
                except ConnectionClosed:
                    return True
                try:
                    message = framing.decode(data, server.protocol.structure_message)
                except framing.FramingError as exc:
                    framing.log_framing_error(log, "websocket client", exc)
                    return False
                except Exception as exc:
                    server.report_server_error(exc, JsonRpcException)
                    continue
                try:
                    server.protocol.handle_message(message)
                except Exception as exc:
                    log.exception("cannot handle a message")
                    server.report_server_error(exc, JsonRpcException)
            return True

        try:
            if not await messages():
                await websocket.close(1007, "broken message")
            await writer.flushed()
            if closing:
                await asyncio.gather(*closing, return_exceptions=True)
        finally:
            server.close_session()
            ClientLogHandler.detach(server)
            log.info("websocket client disconnected; still listening")

    async def listen() -> None:
        async with serve(
            connection, host, port, process_request=check_handshake,
            max_size=framing.MAX_WS_MESSAGE_BYTES,
        ) as listener:
            _announce("ws", _addresses(listener.sockets), token_file)
            await listener.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(listen())
    return 0
