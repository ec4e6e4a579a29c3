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
    def __init__(self, server: AutoCodeServer, token: str | None, title: str = "") -> None:
        self.server = server
        self.token = token
        self.title = title
        self._ended = False
        self._last = ""
        if token is None and title and not server.supports_progress:
            server.log_to_client(title, types.MessageType.Info)

    @classmethod
    async def begin(
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
        token = f"autocode-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(server.work_done_progress.create_async(token), timeout=10)
        except Exception as exc:  # a client that refuses progress just gets none
            log.info("client refused a progress token: %s", exc)
            return cls(server, None)
        future = server.work_done_progress.tokens.get(token)
        if future is not None and on_cancel is not None:

            def cancelled(f: Any) -> None:
                if f.cancelled():
                    log.info("client cancelled progress %s", token)
                    on_cancel()

            future.add_done_callback(cancelled)
        server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=title, message=message or None, cancellable=on_cancel is not None
            ),
        )
        return cls(server, token)

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
        if self.token is not None and not self._ended:
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
        self._ended = True
        self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.server.work_done_progress.tokens.pop(self.token, None)
