"""The tasks a call of this process is working on now, each with its cancel message (issue 35)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path


class _Live:
    """The tasks a call of this process is working on now, each with its cancel message.

    A cancel from this process sets the task's event and the working call sees it at its next
    look (the agent loop and the test runner look between turns and while waiting on output):
    no file is read and no lock is probed for it. A cancel from another process leaves the
    durable record (`cancel.request`, and `cancel_requested` in events.jsonl) that the working
    process reads at the same looks."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._tasks: dict[Path, tuple[threading.Event, int]] = {}

    @contextlib.contextmanager
    def working(self, run_dir: Path) -> Iterator[threading.Event]:
        with self._guard:
            event, depth = self._tasks.get(run_dir, (threading.Event(), 0))
            self._tasks[run_dir] = (event, depth + 1)
        try:
            yield event
        finally:
            with self._guard:
                event, depth = self._tasks[run_dir]
                if depth > 1:
                    self._tasks[run_dir] = (event, depth - 1)
                else:
                    del self._tasks[run_dir]

    def event(self, run_dir: Path) -> threading.Event | None:
        with self._guard:
            found = self._tasks.get(run_dir)
        return found[0] if found is not None else None


LIVE = _Live()
