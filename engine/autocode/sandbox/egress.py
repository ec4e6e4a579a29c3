"""The allow-list proxy an engine reaches the network through: run by AutoCode outside the
sandbox, on a unix socket in a private folder that is shown inside it.

The engine's sandbox keeps its own network namespace (only its own loopback), so the one way
out is this socket, reached through the forwarder started inside (`relay.py`). The proxy
reads the first request of each connection and lets through exactly one destination, the
engine's endpoint (host and port): `CONNECT host:port` (https), an absolute-URI request to
`http://host:port/...`, and, when the endpoint is plain http, an origin-form request (the
CLI's base URL pointed at the forwarder itself). Everything else gets `403` and is passed to
`on_refused`, which the run records. Once a connection is let through it is piped as bytes
to the endpoint, so whatever else it carries can only reach the endpoint.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import socket
import socketserver
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# The port the forwarder listens on inside the sandbox (its loopback is its own: always free).
FORWARD_PORT = 47101
HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 30.0
CHUNK = 65536
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost"})


@dataclass(frozen=True)
class Endpoint:
    """The one destination an engine may reach."""

    scheme: str  # http | https
    host: str
    port: int

    @classmethod
    def from_url(cls, url: str) -> Endpoint:
        """The endpoint of a base URL; raises ValueError (with what to write) for anything else."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the endpoint {url!r} is not an http:// or https:// URL with a host")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname.lower(), port)

    def names(self, host: str, port: int) -> bool:
        """Whether `host:port` is this endpoint (loopback names count as one another)."""
        host = host.lower().strip("[]")
        if port != self.port:
            return False
        if host == self.host:
            return True
        return host in LOOPBACK_NAMES and self.host in LOOPBACK_NAMES

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def forwarded_url(url: str) -> str:
    """A plain-http base URL written as the forwarder inside the sandbox, which relays it to the
    endpoint (some clients never use a proxy for a loopback address); https URLs stay as they are."""
    parts = urlsplit(url)
    if parts.scheme != "http":
        return url
    return parts._replace(netloc=f"127.0.0.1:{FORWARD_PORT}").geturl()


def proxy_env() -> dict[str, str]:
    """The variables that send a program's traffic to the forwarder (both spellings, none skipped)."""
    address = f"http://127.0.0.1:{FORWARD_PORT}"
    env = {name: address for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")}
    env.update({name.lower(): address for name in env})
    env.update({"NO_PROXY": "", "no_proxy": ""})
    return env


@dataclass(frozen=True)
class Request:
    """The first request of a connection: its line, and where it asks to go."""

    method: str
    target: str
    version: str
    host: str | None
    port: int | None
    form: str  # connect | absolute | origin | bad


def parse_head(head: bytes) -> Request:
    """The request line of `head` (bytes up to the blank line) and the destination it names."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    words = line.split(" ")
    if len(words) != 3:
        return Request(line[:80], "", "", None, None, "bad")
    method, target, version = words
    if method.upper() == "CONNECT":
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            return Request(method, target, version, None, None, "bad")
        return Request(method, target, version, host.strip("[]"), int(port), "connect")
    if target.startswith("/"):
        return Request(method, target, version, None, None, "origin")
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        return Request(method, target, version, None, None, "bad")
    try:
        number = parts.port or 80
    except ValueError:
        return Request(method, target, version, None, None, "bad")
    return Request(method, target, version, parts.hostname, number, "absolute")


def _origin_form(head: bytes, request: Request) -> bytes:
    """`head` with an absolute-URI request line rewritten to the path the endpoint expects."""
    parts = urlsplit(request.target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    rest = head.split(b"\r\n", 1)[1] if b"\r\n" in head else b""
    return f"{request.method} {path} {request.version}\r\n".encode("latin-1") + rest


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides have ended (a half-close is passed on)."""
    selector = selectors.DefaultSelector()
    peers = {a: b, b: a}
    for sock in peers:
        selector.register(sock, selectors.EVENT_READ)
    open_sides = 2
    try:
        while open_sides:
            for key, _ in selector.select():
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = source.recv(CHUNK)
                except OSError:
                    data = b""
                if data:
                    try:
                        peers[source].sendall(data)
                        continue
                    except OSError:
                        return
                selector.unregister(source)
                open_sides -= 1
                with contextlib.suppress(OSError):
                    peers[source].shutdown(socket.SHUT_WR)
    finally:
        selector.close()


class _Handler(socketserver.BaseRequestHandler):
    """One connection from the sandbox: its first request decides where it may go."""

    server: _Server

    def handle(self) -> None:
        conn: socket.socket = self.request
        conn.settimeout(HEAD_SECONDS)
        head, rest = self._read_head(conn)
        if head is None:
            return
        request = parse_head(head)
        destination = self.server.destination(request)
        if destination is None:
            self._refuse(conn, request)
            return
        try:
            upstream = socket.create_connection((destination.host, destination.port), timeout=HEAD_SECONDS)
        except OSError as exc:
            self._reply(conn, 502, f"the endpoint {destination} did not answer: {exc}")
            return
        conn.settimeout(None)
        upstream.settimeout(None)
        with upstream:
            self.server.track(upstream)
            if request.form == "connect":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                upstream.sendall(rest)
            else:
                upstream.sendall((_origin_form(head, request) if request.form == "absolute" else head) + rest)
            pipe(conn, upstream)

    def _read_head(self, conn: socket.socket) -> tuple[bytes | None, bytes]:
        data = b""
        while b"\r\n\r\n" not in data:
            try:
                more = conn.recv(CHUNK)
            except OSError:
                return None, b""
            if not more:
                return None, b""
            data += more
            if len(data) > HEAD_LIMIT:
                self._reply(conn, 431, "the request head is larger than AutoCode's proxy reads")
                return None, b""
        end = data.index(b"\r\n\r\n") + 4
        return data[:end], data[end:]

    def _refuse(self, conn: socket.socket, request: Request) -> None:
        if request.host is not None:
            asked = f"{request.host}:{request.port}"
        elif request.form == "origin":
            asked = f"{request.target[:200]} (no host named)"
        else:
            asked = request.target[:200] or request.method
        endpoint = self.server.endpoint
        self._reply(conn, 403, f"AutoCode's sandbox lets this engine reach only its endpoint {endpoint}; "
                               f"{request.method} {asked} was refused")
        with contextlib.suppress(Exception):  # recording never breaks the proxy
            self.server.on_refused({"method": request.method[:20], "destination": asked,
                                    "allowed": str(endpoint)})

    def _reply(self, conn: socket.socket, status: int, text: str) -> None:
        reason = {403: "Forbidden", 431: "Request Header Fields Too Large", 502: "Bad Gateway"}.get(status, "Error")
        body = (text + "\n").encode("utf-8")
        head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("latin-1")
        with contextlib.suppress(OSError):
            conn.sendall(head + body)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, endpoint: Endpoint, on_refused: Callable[[dict[str, Any]], None]) -> None:
        self.endpoint = endpoint
        self.on_refused = on_refused
        self.lock = threading.Lock()
        self.open: set[socket.socket] = set()
        super().__init__(path, _Handler)

    def destination(self, request: Request) -> Endpoint | None:
        """Where the request may go: the endpoint, or None (refused)."""
        end = self.endpoint
        if request.form == "origin":
            return end if end.scheme == "http" else None
        if request.host is None or request.port is None:
            return None
        if request.form == "connect":
            return end if end.names(request.host, request.port) else None
        # An absolute URI naming the forwarder is the base URL AutoCode wrote for a plain-http endpoint.
        own = request.host.lower() in LOOPBACK_NAMES and request.port == FORWARD_PORT
        return end if end.scheme == "http" and (own or end.names(request.host, request.port)) else None

    def track(self, sock: socket.socket) -> None:
        with self.lock:
            self.open.add(sock)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.track(request)
        super().process_request(request, client_address)

    def close_all(self) -> None:
        with self.lock:
            socks, self.open = list(self.open), set()
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class EgressProxy:
    """The proxy for one engine run: `start()` it, hand `socket_path`'s folder to the sandbox,
    `close()` it when the run ends (open connections are cut)."""

    def __init__(self, endpoint: Endpoint, on_refused: Callable[[dict[str, Any]], None]) -> None:
        self.endpoint = endpoint
        self.folder = Path(tempfile.mkdtemp(prefix="autocode-egress-"))  # 0700, short (a socket path is short)
        self.socket_path = self.folder / "proxy.sock"
        self._server = _Server(str(self.socket_path), endpoint, on_refused)
        os.chmod(self.socket_path, 0o600)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        daemon=True, name="autocode-egress")

    def start(self) -> EgressProxy:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.close_all()
        self._server.server_close()
        self._thread.join(5)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> EgressProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
