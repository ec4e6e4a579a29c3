"""`$/progress` for long work, for clients that declared `window.workDoneProgress`; the others
get each step as a `window/logMessage` line (every client has a log).

A `WorkProgress` may be reported to from any thread (engine callbacks run in
worker threads); every message is still sent from the event loop. When the
client cancels the progress, `on_cancel` runs (the tasks feature cancels the task).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer

log = logging.getLogger("autocode_lsp")


class WorkProgress:
    """One `$/progress` token. Asking the client for it (`window/workDoneProgress/create`) never
    gates the work: `begin` returns at once, the work starts, and the token's begin, the latest
    report and the end follow once the client agreed (nothing at all if it refused or went away)."""

    def __init__(self, server: AutoCodeServer, token: str | None, title: str = "") -> None:
        self.server = server
        self.token = token
        self.title = title
        self._ended = False
        self._ready = token is not None
        self._last = ""
        self._pending_report: tuple[str, int | None] | None = None
        self._pending_end: str | None = None
        if token is None and title and not server.supports_progress:
            server.log_to_client(title, types.MessageType.Info)

    @classmethod
    def start(
        cls,
        server: AutoCodeServer,
        title: str,
        message: str = "",
        *,
        on_cancel: Callable[[], Any] | None = None,
    ) -> WorkProgress:
        """Start reporting; a client without progress support gets a do-nothing reporter."""
        if not server.supports_progress:
            return cls(server, None, title)
        progress = cls(server, f"autocode-{uuid.uuid4()}")
        progress._ready = False
        server.spawn(progress._create(title, message, on_cancel), f"progress {progress.token}")
        return progress

    async def _create(self, title: str, message: str, on_cancel: Callable[[], Any] | None) -> None:
        token = self.token
        assert token is not None
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), timeout=10)
        except BaseException as exc:  # refused, timed out or the connection went away: no progress
            log.info("no progress token from the client: %r", exc)
            self.token = None
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        if self._ended:
            return
        future = self.server.work_done_progress.tokens.get(token)
        if future is not None and on_cancel is not None:

            def cancelled(f: Any) -> None:
                if f.cancelled():
                    log.info("client cancelled progress %s", token)
                    on_cancel()

            future.add_done_callback(cancelled)
        self.server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=title, message=message or None, cancellable=on_cancel is not None
            ),
        )
        self._ready = True
        if self._pending_report is not None:
            self._send_report(*self._pending_report)
        if self._pending_end is not None:
            self._send_end(self._pending_end)

    def report(self, message: str, percentage: int | None = None) -> None:
        if message == self._last:
            return
        self._last = message
        if self.token is None:
            if self.title and not self.server.supports_progress:
                self.server.log_to_client(f"{self.title}: {message}", types.MessageType.Info)
            return
        self.server.in_loop(self._send_report, message, percentage)

    def _send_report(self, message: str, percentage: int | None) -> None:
        if self.token is None or self._ended:
            return
        if not self._ready:
            self._pending_report = (message, percentage)
            return
        self.server.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )

    def end(self, message: str) -> None:
        if self.token is None:
            if self.title and not self.server.supports_progress and not self._ended:
                self._ended = True
                self.server.log_to_client(f"{self.title}: {message}", types.MessageType.Info)
            return
        self.server.in_loop(self._send_end, message)

    def _send_end(self, message: str) -> None:
        if self.token is None or self._ended:
            return
        if not self._ready:
            self._pending_end = message
            return
        self._ended = True
        self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.server.work_done_progress.tokens.pop(self.token, None)
