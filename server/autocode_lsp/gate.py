"""What a listener's connection may cost before it showed the token (issue 31).

Until a client of `--tcp` or `--socket` has sent an `initialize` carrying the token, its
connection holds one coroutine and a few KiB: no session, no pygls, no thread. The first
frame must arrive within `auth_timeout_s` of the connect and be at most
`first_message_bytes`; it must be an `initialize` request with the token. Anything else gets
one JSON-RPC error (when it had a usable id) and the connection is closed, with one log line
and no traceback. At most `max_waiting` connections of one listener wait at once; a newer one
pushes the oldest out, so a flood of idle connections cannot keep the owner out: the owner's
connection is the newest when it arrives and authenticates with its first message.

WebSocket has the same three bounds on its handshake (the token travels in a header there).
The refusal texts of the stdio server's lifecycle gate (`server`) come from here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import sys
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autocode_lsp import framing
from autocode_lsp.security import Access

log = logging.getLogger("autocode_lsp")

AUTH_TIMEOUT_S = 5.0
"""From the connect to a complete first message (`initialize`); an editor needs milliseconds."""
FIRST_MESSAGE_BYTES = 32 * 1024
"""The first message's body before the token is checked; the editors' `initialize` we know
(VS Code, Neovim, Emacs) are 2 to 5 KiB."""
LINE_BYTES = 8 * 1024
"""The longest line a listener's stream reader buffers (header lines; bodies are read by size)."""
BACKLOG = 1024
"""Connections the kernel keeps for the listener before it accepts them: a full queue makes
the next connect (the owner's) wait a second for its retry; a long one is cheap (the kernel's)."""
MAX_WAITING = 64
"""Connections of one listener that may wait for their `initialize` at once."""
SHOWN_CHARS = 60
"""How much of a stranger's method name or handshake value a reply or a log line repeats."""

REQUEST_FAILED = -32803
SERVER_NOT_INITIALIZED = -32002


@dataclass(frozen=True)
class Limits:
    auth_timeout_s: float = AUTH_TIMEOUT_S
    first_message_bytes: int = FIRST_MESSAGE_BYTES
    max_waiting: int = MAX_WAITING

    def for_this_process(self) -> Limits:
        """The waiting cap never above a quarter of the open-file limit, so strangers alone cannot
        exhaust the file descriptors (the owner's sessions, the stores and git need theirs)."""
        try:
            # Unix only, and not needed by the server's `initialize`, which imports this module
            import resource
        except ImportError:
            return self
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self
        cap = max(1, min(self.max_waiting, int(soft) // 4))
        return Limits(self.auth_timeout_s, self.first_message_bytes, cap)


def raise_open_file_limit() -> None:
    """Use the hard limit of open files: a listener holds one per connection."""
    try:
        import resource  # Unix only
    except ImportError:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Waiting:
    """The connections of one listener that have not authenticated yet, oldest first."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._order: OrderedDict[object, tuple[Callable[[], None], Callable[[], bool]]] = OrderedDict()
        self._dropped = 0
        self._telling = False

    def admit(self, key: object, drop: Callable[[], None], spoke: Callable[[], bool]) -> None:
        """Count a new connection in; over the cap one waiting connection is dropped: the oldest
        that has not sent a byte (an editor sends its initialize at once), else the oldest."""
        self._order[key] = (drop, spoke)
        while len(self._order) > self.cap:
            victim = next((k for k, (_, said) in self._order.items() if not said()), None)
            if victim is None:
                victim = next(iter(self._order))
            dropping, _ = self._order.pop(victim)
            dropping()
            self._dropped += 1
        if self._dropped and not self._telling:  # one line a second, not one a drop
            self._telling = True
            asyncio.get_running_loop().call_later(1.0, self._tell)

    def _tell(self) -> None:
        self._telling = False
        log.warning(
            "dropped %d waiting connection(s) that had not sent their initialize (%d may wait at once)",
            self._dropped, self.cap,
        )
        self._dropped = 0

    def settle(self, key: object) -> None:
        """The connection authenticated or ended: it no longer counts."""
        self._order.pop(key, None)

    def __len__(self) -> int:
        return len(self._order)


def spoke(reader: asyncio.StreamReader | None, sock: Any) -> bool:
    """Whether a connection sent anything yet: bytes the stream holds or the kernel queued."""
    if getattr(reader, "_buffer", b""):  # asyncio's buffer (no public way to ask)
        return True
    try:
        import fcntl  # Unix only
        import termios

        queued = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    except (ImportError, OSError, ValueError, AttributeError):
        return False
    return int.from_bytes(queued, sys.byteorder) > 0


async def read_first(reader: asyncio.StreamReader, limits: Limits) -> bytes | None:
    """The first frame's body, within the deadline and the size bound; None when the peer left.

    Raises framing.FramingError for a broken or oversized frame, TimeoutError past the deadline.
    """
    async with asyncio.timeout(limits.auth_timeout_s):  # no extra task per connection
        return await framing.read_frame(reader, max_body=limits.first_message_bytes)


@dataclass(frozen=True)
class Refusal:
    why: str
    """The log line."""
    reply: bytes | None
    """A framed JSON-RPC error to send before closing (None: the message had no usable id)."""


def screen(body: bytes, access: Access) -> Refusal | None:
    """None when `body` is an `initialize` request with the token; else why and what to answer.

    Read as plain JSON: nothing a stranger sends reaches pygls or its converters.
    Raises framing.FramingError when the body is not a JSON object.
    """
    message = framing.decode(body, lambda obj: obj)
    method = message.get("method")
    msg_id = usable_id(message.get("id"))
    params = message.get("params")
    if method == "initialize" and msg_id is not None:
        token = token_of(params)
        if isinstance(params, dict) and access.token_ok(token):
            return None
        what = "no token" if token is None else "a wrong token"
        return Refusal(
            f"refused a client that sent {what} in initialize",
            error_frame(msg_id, REQUEST_FAILED, "unauthorized", unauthorized_text(what)),
        )
    if msg_id is not None and isinstance(method, str):
        shown = shorten(method)
        return Refusal(
            f"refused {shown} before initialize",
            error_frame(msg_id, SERVER_NOT_INITIALIZED, "serverNotInitialized",
                        not_initialized_text(shown, network=True)),
        )
    if isinstance(method, str):
        what = f"the notification {shorten(method)}" if msg_id is None and "id" not in message else (
            f"{shorten(method)} with an unusable id"
        )
    else:
        what = "a response" if "id" in message else "an object that is no JSON-RPC message"
    return Refusal(f"refused a message before initialize: {what}", None)


def usable_id(value: Any) -> int | str | None:
    """A JSON-RPC id worth answering: an integer, or a string of at most SHOWN_CHARS."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, str) and len(value) <= SHOWN_CHARS):
        return value
    return None


def token_of(params: Any) -> Any:
    """`initializationOptions.autocode.token` of `initialize` params (a dict or pygls' object)."""
    options = params.get("initializationOptions") if isinstance(params, dict) else getattr(
        params, "initialization_options", None
    )
    if isinstance(options, dict):
        autocode = options.get("autocode")
        if isinstance(autocode, dict):
            return autocode.get("token")
    return None


def shorten(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}… ({len(text)} characters)"


def unauthorized_text(what: str) -> str:
    return (
        f"this server needs its token: initialize came with {what}. Pass the token from "
        "the token file printed where the server was started, in "
        "initializationOptions.autocode.token. The connection is now closed."
    )


def not_initialized_text(method: str, *, network: bool) -> str:
    return f"{method} before initialize: send initialize first" + (
        " (the connection is now closed)" if network else ""
    )


def error_frame(msg_id: int | str, code: int, kind: str, text: str) -> bytes:
    body = json.dumps({
        "jsonrpc": "2.0", "id": msg_id,
        "error": {"code": code, "message": text, "data": {"kind": kind, "message": text}},
    }).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


_OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def listener_loop_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A listener's event-loop errors as one line each, none of them a traceback about a peer.

    Out of file descriptors, asyncio stops accepting for a second and says so each time; the
    line is rate-limited in the log file (`logfile`) and names the limit, so a flood leaves a
    few lines, not a line per attempt.
    """
    error = context.get("exception")
    if isinstance(error, asyncio.CancelledError):
        log.debug("cancelled as its connection closed: %s", context.get("message"))
        return
    if isinstance(error, OSError) and error.errno in _OUT_OF_RESOURCES:
        import resource  # only listeners get here, on Unix

        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        log.error(
            "cannot accept connections for now: %s (open-file limit %s); retrying every second",
            error.strerror, soft,
        )
        return
    if isinstance(error, OSError):  # a peer that reset mid-write, and the like
        log.info("a connection failed: %s", error)
        return
    # One format string, so the log's rate limit holds whatever the message says.
    log.error("event loop: %s%s", context.get("message", "an error"),
              f": {type(error).__name__}: {error}" if error is not None else "")


class ListenerLoop(asyncio.SelectorEventLoop):
    """asyncio's event loop with one accept retry per listening socket, not one per attempt.

    Out of file descriptors, asyncio's accept loop goes on trying the rest of its backlog
    and schedules a retry for every failed attempt (CPython 3.11-3.13): a thousand retries a
    second, each of which tries the backlog again. That is the flood of "too many open files"
    lines. Here a retry already pending for a socket is not scheduled again.
    """

    def __init__(self) -> None:
        super().__init__()
        self._retrying: set[int] = set()

    def call_later(  # type: ignore[override]
        self, delay: float, callback: Any, *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        if getattr(callback, "__name__", "") == "_start_serving" and len(args) > 1:
            key = id(args[1])  # the listening socket
            if key in self._retrying:
                return super().call_later(delay, _nothing)
            self._retrying.add(key)

            def retry(*given: Any) -> None:
                self._retrying.discard(key)
                callback(*given)

            return super().call_later(delay, retry, *args, context=context)
        return super().call_later(delay, callback, *args, context=context)


def _nothing() -> None:
    return None


def run_listener(main: Any) -> None:
    """Run a listener's coroutine on a ListenerLoop (with its error handler)."""
    with asyncio.Runner(loop_factory=ListenerLoop) as runner:
        runner.get_loop().set_exception_handler(listener_loop_errors)
        runner.run(main)
