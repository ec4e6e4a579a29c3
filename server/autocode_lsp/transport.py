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

Kept whole: the four transports share one listener life cycle (the gate before
authentication, the session per connection, the shutdown that closes them all), and
each is a few dozen lines of it; apart, each would repeat that cycle.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, StdoutWriter, WebSocketWriter

from autocode_lsp import framing, gate
from autocode_lsp.security import (
    TOKEN_HEADER,
    Access,
    host_header_ok,
    loopback_peer_uid,
    peer_uid,
    prepare_socket_path,
    token_matches,
)
from autocode_lsp.server import SESSION, AutoCodeServer, ClientLogHandler
from autocode_lsp.setup import create_server

log = logging.getLogger("autocode_lsp")


# ---------------------------------------------------------------------- one connection


async def pump(
    reader: framing.Reader, server: AutoCodeServer, stop: threading.Event, where: str,
    first: bytes | None = None,
) -> bool:
    """Hand every frame of `reader` (after `first`, read by the gate) to the server; False when
    the framing broke (logged once)."""
    SESSION.set(server)  # this connection's coroutine, and all its messages start, are its session's
    protocol = server.protocol

    def handle(body: bytes) -> None:
        try:
            message = framing.decode(body, protocol.structure_message)
        except framing.FramingError:
            raise
        except Exception as exc:  # a JSON object pygls cannot read as a message
            protocol.answer_unreadable(body, exc)
            return
        try:
            protocol.handle_message(message)
        except (SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:
            log.exception("cannot handle a message")
            server.report_server_error(exc, JsonRpcException)

    try:
        await framing.serve_frames(reader, stop, handle, first)
    except framing.FramingError as exc:
        framing.log_framing_error(log, where, exc)
        return False
    return True


def _run_until_exit(session: Coroutine[Any, Any, bool]) -> bool:
    """`asyncio.run`, except after `exit`: then the default executor's threads, where a command
    may still wait for a task's tests, are not joined (see serve_stdio)."""
    runner = asyncio.Runner()
    try:
        result = runner.run(session)
    except SystemExit:
        asyncio.set_event_loop(None)
        runner.get_loop().close()  # shuts the executor down without waiting
        raise
    except BaseException:
        runner.close()
        raise
    runner.close()
    return result


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
    leaving = False
    try:
        # A broken frame ends the process non-zero, so the editor restarts the server.
        code = 0 if _run_until_exit(pump(reader, server, stop, "stdio")) else 1
    except BrokenPipeError:
        log.error("the client closed the connection; stopping")
    except SystemExit as exc:  # `exit`: 0 after `shutdown`, 1 without it (the spec)
        code = exc.code if isinstance(exc.code, int) else 0
        leaving = True
    except KeyboardInterrupt:
        pass
    finally:
        if code == 1 or leaving:
            # Nothing more is waited for. After a broken frame a thread may still be blocked
            # reading stdin (a body that never came). After `exit` a command may still wait for
            # a task's tests (the editor closed mid-verification): the process lingered as long
            # as they ran, or until the editor killed it. It ends at once (os._exit in __main__,
            # after the atexit handlers); what the task started dies with it, and the next
            # server offers to resume the task, as after a kill.
            stop.set()
            server.thread_pool.shutdown(wait=False, cancel_futures=True)
        else:
            # The client vanished (its end of the pipe closed, no `exit`): what is under way
            # finishes first, so a verification the person started is not lost.
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


def _stream_session(access: Access, kind: str, limits: gate.Limits):  # type: ignore[no-untyped-def]
    """The per-connection coroutine of the TCP and unix-socket listeners."""
    waiting = gate.Waiting(limits.max_waiting)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or "a local process"
        if kind == "socket":
            sock = writer.get_extra_info("socket")
            uid = peer_uid(sock) if sock is not None else None
            if uid != access.owner_uid:
                log.warning("refused a unix-socket client of uid %s (the owner is uid %s)", uid, access.owner_uid)
                writer.close()
                return
        first = await _authenticated_first(reader, writer, access, limits, waiting, f"{kind} client {peer}")
        if first is None:
            return
        stop = threading.Event()

        def end_connection() -> None:
            stop.set()
            writer.close()

        server = create_server(end_connection=end_connection, access=access)
        server.connection = f"{kind} {peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else kind
        server.protocol.set_writer(writer)
        log.info("%s client connected from %s", kind, peer)
        try:
            await pump(reader, server, stop, f"{kind} client {peer}", first)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("%s client %s dropped: %s", kind, peer, exc)
        finally:
            server.close_session()
            ClientLogHandler.detach(server)
            writer.close()
            log.info("%s client %s disconnected; still listening", kind, peer)

    return connection


async def _authenticated_first(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, access: Access,
    limits: gate.Limits, waiting: gate.Waiting, where: str,
) -> bytes | None:
    """The first frame when it is an `initialize` with the token; else the connection is closed
    (after the refusal, when there is one to send) and None. Nothing else is held meanwhile."""
    key = object()
    sock = writer.get_extra_info("socket")
    if not _owners_own(writer.transport, access):
        waiting.admit(key, writer.transport.abort, lambda: gate.spoke(reader, sock))
    refusal: gate.Refusal | None = None
    try:
        first = await gate.read_first(reader, limits)
        if first is None:
            log.debug("closing %s: it left before sending initialize", where)
        else:
            refusal = gate.screen(first, access)
    except TimeoutError:
        log.info("closing %s: no initialize within %g s", where, limits.auth_timeout_s)
        first = None
    except framing.FramingError as exc:
        framing.log_framing_error(log, where, exc)
        first = None
    except (ConnectionError, OSError) as exc:
        log.debug("closing %s: %s", where, exc)
        first = None
    finally:
        waiting.settle(key)
    if refusal is not None:
        log.warning("%s", refusal.why)
        if refusal.reply is not None:
            with contextlib.suppress(Exception):
                writer.write(refusal.reply)
                await asyncio.wait_for(writer.drain(), 1.0)
        first = None
    if first is None:
        writer.close()
    return first


def serve_tcp(
    host: str, port: int, *, access: Access, token_file: Path | None, limits: gate.Limits | None = None
) -> int:
    chosen = (limits or gate.Limits()).for_this_process()

    async def listen() -> None:
        listener = await asyncio.start_server(
            _stream_session(access, "tcp", chosen), host, port, limit=gate.LINE_BYTES,
            backlog=gate.BACKLOG,
        )
        _announce("tcp", _addresses(listener.sockets), token_file)
        async with listener:
            await listener.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        gate.run_listener(listen())
    return 0


def serve_socket(
    path: Path, *, access: Access, token_file: Path | None, limits: gate.Limits | None = None
) -> int:
    """A unix-domain socket, 0600 in a 0700 folder of its owner; peers of another uid are refused."""
    prepare_socket_path(path)
    chosen = (limits or gate.Limits()).for_this_process()

    async def listen() -> None:
        old = os.umask(0o177)  # the socket file is born 0600: no window where others may connect
        try:
            listener = await asyncio.start_unix_server(
                _stream_session(access, "socket", chosen), str(path), limit=gate.LINE_BYTES,
                backlog=gate.BACKLOG,
            )
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        _announce("socket", str(path), token_file)
        async with listener:
            await listener.serve_forever()

    try:
        with contextlib.suppress(KeyboardInterrupt):
            gate.run_listener(listen())
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return 0


def _owners_own(transport: asyncio.BaseTransport, access: Access) -> bool:
    """A TCP connection from a process of the listener's own user (loopback, Linux): it never
    counts among the waiting strangers, so no flood can push the owner out. It still needs the
    token, within the same deadline and size."""
    if access.transport == "socket":
        return False  # every peer there is the owner already (SO_PEERCRED); the cap stays
    uid = loopback_peer_uid(transport.get_extra_info("sockname"), transport.get_extra_info("peername"))
    return uid is not None and uid == access.owner_uid


def _ws_spoke(connection: Any, sock: Any) -> bool:
    """A WebSocket connection sent something: the kernel queued bytes, or websockets holds some."""
    reader = getattr(getattr(connection, "protocol", None), "reader", None)
    if getattr(reader, "buffer", b""):
        return True
    return gate.spoke(None, sock)


class _BadHandshake(Exception):
    """A handshake that is not one: answered 400 with the reason."""


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


def serve_ws(
    host: str, port: int, *, access: Access, token_file: Path | None, limits: gate.Limits | None = None
) -> int:
    # lazy: not needed by the server's `initialize`, which imports this module
    from websockets import http11
    from websockets.asyncio.server import ServerConnection, serve
    from websockets.exceptions import ConnectionClosed
    from websockets.http11 import Request, Response

    chosen = (limits or gate.Limits()).for_this_process()
    # What websockets reads of a handshake before it is checked: a few short lines (an editor
    # sends no cookies). Module settings of websockets, read at each parse.
    http11.MAX_NUM_HEADERS = 32
    http11.MAX_LINE_LENGTH = gate.LINE_BYTES
    http11.MAX_BODY_SIZE = 0
    waiting = gate.Waiting(chosen.max_waiting)

    class Counted(ServerConnection):
        """A connection counts as waiting from its connect until its handshake passed."""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            if not _owners_own(transport, access):
                waiting.admit(self, transport.abort, lambda: _ws_spoke(self, sock))  # type: ignore[attr-defined]
            super().connection_made(transport)

        def connection_lost(self, exc: Exception | None) -> None:
            waiting.settle(self)
            super().connection_lost(exc)

    # The token was checked in the handshake; the session itself asks for none.
    session_access = dataclasses.replace(access, token=None)

    def one(headers: Any, name: str) -> str | None:
        values = headers.get_all(name)
        if len(values) > 1:
            raise _BadHandshake(f"{len(values)} {name} headers; send one")
        return values[0] if values else None

    def check_handshake(connection: ServerConnection, request: Request) -> Response | None:
        """Refuse before the upgrade: a foreign Origin (a web page), a foreign Host (DNS
        rebinding), a missing or wrong token header; a header given twice is a bad request."""
        try:
            return checked(connection, request)
        except _BadHandshake as exc:
            log.warning("refused a websocket handshake: %s", exc)
            return connection.respond(400, f"{exc}\n")

    def checked(connection: ServerConnection, request: Request) -> Response | None:
        headers = request.headers
        origin = one(headers, "Origin")
        if origin is not None and origin not in access.allowed_origins:
            log.warning("refused a websocket handshake from Origin %r", gate.shorten(origin))
            return connection.respond(403, f"Origin {gate.shorten(origin)} is not allowed (see --allow-origin)\n")
        local = connection.local_address[0] if connection.local_address else ""
        host_header = one(headers, "Host")
        if not host_header_ok(host_header, access.bound_hosts | {str(local).lower()}):
            log.warning("refused a websocket handshake for Host %r", gate.shorten(host_header or ""))
            return connection.respond(403, "Host is not this server's address\n")
        token = one(headers, TOKEN_HEADER)
        if access.token is not None and not token_matches(access.token, token):
            what = "no token" if token is None else "a wrong token"
            log.warning("refused a websocket handshake with %s", what)
            return connection.respond(
                401, f"this server needs its token in the {TOKEN_HEADER} header; got {what}\n"
            )
        return None

    async def connection(websocket: ServerConnection) -> None:
        waiting.settle(websocket)  # its handshake passed
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
        address = websocket.remote_address
        server.connection = f"websocket {address[0]}:{address[1]}" if isinstance(address, tuple) else "websocket"
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
                    server.protocol.answer_unreadable(data, exc)
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
            max_size=framing.MAX_WS_MESSAGE_BYTES, open_timeout=chosen.auth_timeout_s,
            create_connection=Counted,
        ) as listener:
            _announce("ws", _addresses(listener.sockets), token_file)
            await listener.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        gate.run_listener(listen())
    return 0
