"""Reading LSP base-protocol frames strictly.

pygls' reader skips what it cannot parse and waits for more, so a frame with a
missing or negative `Content-Length` wedges the connection. Here every frame must
be `Content-Length: N` (and optionally `Content-Type`) headers, a blank line and N
bytes of one JSON object; anything else is a `FramingError` and the caller closes
the connection (over stdio: the process exits non-zero so the editor restarts it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

MAX_HEADER_LINES = 16
MAX_BODY_BYTES = 16 * 1024 * 1024
"""No editor sends AutoCode a 16 MiB message; a bigger length is a broken or hostile peer."""
MAX_WS_MESSAGE_BYTES = MAX_BODY_BYTES
"""The same bound for a WebSocket message (websockets refuses bigger frames, close code 1009)."""
MAX_HEADER_BYTES = 4096
"""A frame's headers are one or two short lines; more is not an LSP client."""

_LENGTH = re.compile(rb"[0-9]{1,12}")


def frame_timeout_s() -> float:
    """How long the rest of a frame may take once its first header line came. A peer whose
    Content-Length is longer than what it sends, and then waits, cannot be told from a slow one
    any other way; no editor takes seconds between the parts of one message."""
    try:
        return max(0.1, float(os.environ.get("AUTOCODE_LSP_FRAME_TIMEOUT_S", "30")))
    except ValueError:
        return 30.0


class FramingError(Exception):
    """The byte stream is not LSP base protocol; the connection cannot continue."""


class Reader(Protocol):
    def readline(self) -> Awaitable[bytes]: ...

    def readexactly(self, n: int) -> Awaitable[bytes]: ...


async def read_frame(reader: Reader, max_body: int = MAX_BODY_BYTES) -> bytes | None:
    """The body of the next frame, or None at a clean end of stream (between frames).

    `max_body` is smaller before the peer authenticated (see `gate`)."""
    length: int | None = None
    header_bytes = 0
    deadline, limit = 0.0, 0.0
    for count in range(MAX_HEADER_LINES + 1):
        try:
            if count == 0:
                line = await reader.readline()  # between frames a client may be quiet for ever
                limit = frame_timeout_s()
                deadline = time.monotonic() + limit
            else:
                line = await asyncio.wait_for(reader.readline(), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            raise FramingError(f"a frame's headers did not arrive within {limit:g} s") from None
        except (ValueError, OSError) as exc:  # asyncio's line limit, a reset connection
            raise FramingError(f"cannot read a header line: {exc}") from None
        if not line:
            if count == 0:
                return None
            raise FramingError("the stream ended inside a frame's headers")
        if count == MAX_HEADER_LINES:
            raise FramingError(f"more than {MAX_HEADER_LINES} header lines")
        header_bytes += len(line)
        if header_bytes > MAX_HEADER_BYTES:
            raise FramingError(f"more than {MAX_HEADER_BYTES} bytes of headers")
        if line in (b"\r\n", b"\n"):
            break
        name, sep, value = line.partition(b":")
        if not sep or not line.endswith(b"\n"):
            raise FramingError(f"not a header line: {line[:60]!r}")
        key = name.strip().lower()
        if key == b"content-length":
            text = value.strip()
            if not _LENGTH.fullmatch(text):
                raise FramingError(f"Content-Length is not a non-negative number: {text[:30]!r}")
            length = int(text)
        # Other well-formed headers (the spec names only Content-Type) are ignored.
    if length is None:
        raise FramingError("a frame without Content-Length")
    if length == 0:
        raise FramingError("Content-Length is 0")
    if length > max_body:
        raise FramingError(f"Content-Length {length} is over the {max_body}-byte limit")
    try:
        body = await asyncio.wait_for(reader.readexactly(length), max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        raise FramingError(
            f"a {length}-byte body did not arrive within {limit:g} s (a Content-Length "
            "longer than the message?)"
        ) from None
    except Exception as exc:  # IncompleteReadError, a reset connection
        raise FramingError(f"the stream ended inside a {length}-byte body ({exc})") from None
    if len(body) != length:
        raise FramingError(f"the stream ended inside a {length}-byte body")
    return body


def decode(body: bytes | str, structure: Callable[[dict[str, Any]], Any]) -> Any:
    """One JSON-RPC object from a body; anything that is not a JSON object is a framing error."""
    try:
        message = json.loads(body, object_hook=structure)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise FramingError(f"the body is not JSON ({exc})") from None
    except RecursionError:
        raise FramingError("the body nests deeper than a JSON-RPC message does") from None
    if isinstance(message, (list, str, int, float, bool)) or message is None:
        raise FramingError(f"the body is JSON but not an object ({type(message).__name__})")
    return message


async def serve_frames(
    reader: Reader,
    stop: threading.Event,
    handle: Callable[[bytes], None],
    first: bytes | None = None,
) -> None:
    """Pass each frame's body to `handle` (`first`, already read, before the rest) until the
    stream ends or `stop` is set.

    Raises FramingError on the first broken frame.
    """
    if first is not None:
        handle(first)
    while not stop.is_set():
        body = await read_frame(reader)
        if body is None:
            return
        handle(body)


def log_framing_error(logger: logging.Logger, where: str, exc: FramingError) -> None:
    logger.warning("closing %s: broken LSP framing: %s", where, exc)
