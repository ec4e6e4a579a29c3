"""The connections to model endpoints: one kept open per endpoint, and the watcher that aborts them.

`POOL` keeps idle HTTP connections per endpoint (scheme, host, port, proxy)
so the next request reuses one instead of opening a TCP (and TLS)
connection each time. `watcher()` is one daemon thread for the process that
shuts the socket of a request in flight when its task asks to cancel.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable

POLL = 0.05

Key = tuple[str, str, int | None, str | None]


class Pool:
    """Idle connections kept per endpoint (scheme, host, port, proxy) for the next request."""

    KEEP = 2

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[Key, list[http.client.HTTPConnection]] = {}
        self.opened = 0  # connections made by this process (for the tests and the bench)

    def get(
        self, parts: urllib.parse.SplitResult, timeout: float, proxies: dict[str, str], fresh: bool
    ) -> tuple[Key, http.client.HTTPConnection, bool]:
        host = parts.hostname or ""
        proxy = proxies.get(parts.scheme)
        if proxy and urllib.request.proxy_bypass(host):
            proxy = None
        key = (parts.scheme, host, parts.port, proxy)
        if not fresh:
            with self._lock:
                idle = self._idle.get(key)
                if idle:
                    return key, idle.pop(), True
        with self._lock:
            self.opened += 1
        return key, connection(parts, timeout, proxy), False

    def done(self, key: Key, conn: http.client.HTTPConnection, keep: bool) -> None:
        if keep and conn.sock is not None:
            with self._lock:
                idle = self._idle.setdefault(key, [])
                if len(idle) < self.KEEP:
                    idle.append(conn)
                    return
        conn.close()


POOL = Pool()


def connections_opened() -> int:
    """How many HTTP connections this process has opened to endpoints (one per endpoint when all goes well)."""
    return POOL.opened


def connection(parts: urllib.parse.SplitResult, timeout: float, proxy: str | None) -> http.client.HTTPConnection:
    host = parts.hostname or ""
    port = parts.port
    if parts.scheme == "https":
        if proxy:
            p = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(p.hostname or "", p.port, timeout=timeout)
            conn.set_tunnel(host, port)
            return conn
        return http.client.HTTPSConnection(host, port, timeout=timeout)
    return http.client.HTTPConnection(host, port, timeout=timeout)


class Watcher:
    """One daemon thread for the process that shuts the socket of a request in flight when its
    task asks to cancel. Started once: a thread per request would cost more than the rest of a turn.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._active: dict[int, tuple[http.client.HTTPConnection, Callable[[], bool], threading.Event]] = {}
        threading.Thread(target=self._run, daemon=True, name="autocode-http-cancel").start()

    def watch(self, conn: http.client.HTTPConnection, cancelled: Callable[[], bool], aborted: threading.Event) -> None:
        with self._lock:
            self._active[id(conn)] = (conn, cancelled, aborted)
            self._lock.notify()

    def unwatch(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._active.pop(id(conn), None)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._active:
                    self._lock.wait()
                watched = list(self._active.values())
            for conn, cancelled, aborted in watched:
                try:
                    stop = cancelled()
                except Exception:  # a broken cancel check never kills the watcher
                    stop = False
                if stop:
                    with self._lock:
                        if self._active.pop(id(conn), None) is None:
                            continue
                        aborted.set()
                        sock = conn.sock
                        if sock is not None:
                            with contextlib.suppress(OSError):
                                sock.shutdown(socket.SHUT_RDWR)
            time.sleep(POLL)


_WATCHER: Watcher | None = None
_WATCHER_LOCK = threading.Lock()


def watcher() -> Watcher:
    global _WATCHER
    with _WATCHER_LOCK:
        if _WATCHER is None:
            _WATCHER = Watcher()
        return _WATCHER
