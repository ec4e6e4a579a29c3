"""The forwarder started inside an engine's sandbox, in front of the engine: it listens on the
sandbox's own 127.0.0.1:<port>, relays every connection to the proxy's unix socket
(`egress.py`), then becomes the engine (`exec`), so the engine keeps its process and its
output. The listener is made before the engine starts, so its first request finds it.

This file runs as `python -I -c <its source> SOCKET PORT -- PROGRAM ARGS...` (its text, not
its path, because the package may live in a folder the sandbox hides): standard library only,
no imports from autocode.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

# The start of the message when the engine's program cannot be started (the sandbox reads it).
NOT_STARTED = "autocode-relay: execvp "


def _copy(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _relay(conn: socket.socket, target: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(target)
    except OSError:
        conn.close()
        upstream.close()
        return
    back = threading.Thread(target=_copy, args=(upstream, conn), daemon=True)
    back.start()
    _copy(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


def _serve(listener: socket.socket, target: str) -> None:
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_relay, args=(conn, target), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: relay SOCKET PORT -- PROGRAM ARGS...", file=sys.stderr)
        return 2
    target, port, program = argv[0], int(argv[1]), argv[3:]
    listener = socket.create_server(("127.0.0.1", port), backlog=64)
    if os.fork() == 0:
        # The forwarder: its output goes nowhere, so it never holds the engine's output open.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            _serve(listener, target)
        finally:
            os._exit(0)
    listener.close()
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"{NOT_STARTED}{program[0]}: {exc.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
