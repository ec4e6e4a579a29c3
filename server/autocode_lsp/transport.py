"""Transports (stdio, TCP, WebSocket) and the log file.

Over stdio nothing but protocol may reach stdout, so the protocol gets a private
copy of file descriptor 1 and everything else that writes to stdout (a library's
banner, a stray print) lands on stderr. Over TCP and WebSocket the listener
outlives its connections: each connection is a fresh session, and a client that
dropped can connect again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from pathlib import Path

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
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_file, encoding="utf-8")
    except OSError as exc:
        sys.stderr.write(
            f"autocode-lsp: cannot write the log file {log_file} ({exc}); logging to stderr\n"
        )
        handler = logging.StreamHandler(sys.stderr)
        written = None
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(numeric)
    root.addHandler(handler)
    logging.getLogger("autocode_lsp").setLevel(numeric)
    logging.getLogger("autocode").setLevel(numeric)
    # pygls logs every message it sends at INFO: only keep that when debugging.
    logging.getLogger("pygls").setLevel(logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING)
    return written


def serve_stdio(*, log_file: Path | None) -> int:
    from autocode_lsp.server import create_server

    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    server = create_server()
    log.info("serving on stdio (log: %s)", log_file)
    server.start_io(stdin=sys.stdin.buffer, stdout=protocol_out)
    return 0


def _announce(kind: str, sockets: object) -> None:
    addresses = []
    for sock in sockets:  # type: ignore[attr-defined]
        host, port = sock.getsockname()[:2]
        addresses.append(f"{host}:{port}")
    # Tests and launchers started with port 0 read the chosen port from this line.
    sys.stderr.write(f"autocode-lsp: listening on {kind} {', '.join(addresses)}\n")
    sys.stderr.flush()
    log.info("listening on %s %s", kind, ", ".join(addresses))


def serve_tcp(host: str, port: int, *, log_file: Path | None) -> int:
    from pygls.io_ import run_async

    from autocode_lsp.server import ClientLogHandler, create_server

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        stop = threading.Event()

        def end_connection() -> None:
            stop.set()
            writer.close()

        server = create_server(end_connection=end_connection)
        server.protocol.set_writer(writer)
        peer = writer.get_extra_info("peername")
        log.info("tcp client connected from %s", peer)
        try:
            await run_async(
                stop_event=stop, reader=reader, protocol=server.protocol,
                logger=log, error_handler=server.report_server_error,
            )
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("tcp client %s dropped: %s", peer, exc)
        finally:
            server.close_session()
            ClientLogHandler.detach(server)
            writer.close()
            log.info("tcp client %s disconnected; still listening", peer)

    async def listen() -> None:
        listener = await asyncio.start_server(connection, host, port)
        _announce("tcp", listener.sockets)
        async with listener:
            await listener.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(listen())
    return 0


def serve_ws(host: str, port: int, *, log_file: Path | None) -> int:
    from pygls.io_ import run_websocket
    from websockets.asyncio.server import ServerConnection, serve

    from autocode_lsp.server import ClientLogHandler, create_server

    async def connection(websocket: ServerConnection) -> None:
        stop = threading.Event()

        closing: set[asyncio.Task[None]] = set()

        def end_connection() -> None:
            stop.set()
            closing.add(asyncio.ensure_future(websocket.close()))

        server = create_server(end_connection=end_connection)
        log.info("websocket client connected from %s", websocket.remote_address)
        try:
            await run_websocket(
                websocket=websocket, stop_event=stop, protocol=server.protocol,
                logger=log, error_handler=server.report_server_error,
            )
        finally:
            server.close_session()
            ClientLogHandler.detach(server)
            log.info("websocket client disconnected; still listening")

    async def listen() -> None:
        async with serve(connection, host, port) as listener:
            _announce("ws", listener.sockets)
            await listener.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(listen())
    return 0
