"""The run directory on disk: atomic JSON files, the append-only event log, the lock.

`state.json` is the commit point of every change: it is replaced atomically
(write to a temporary file in the same folder, fsync, rename, fsync the
folder). The other files (ledger.json, plan.md, ...) are views written after
it and rewritten from it when a crash left them behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from autocode.atomic import kill_point as kill_point
from autocode.atomic import write_atomically


class StoredModel(BaseModel):
    """A part of `state.json` no client sees (so no wire model exists for it): snake_case, and keys
    it does not know (a newer version's) are kept and written back, as at the top level."""

    model_config = ConfigDict(extra="allow", defer_build=True)


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace `path` with `data` (`autocode.atomic`), a file only its owner reads, making its folder.

    `durable` also syncs the data and the folder so the change survives an
    operating-system crash; views that can be rebuilt from `state.json` skip it
    (a killed process never loses what it wrote either way).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data, durable=durable, mode=0o600)


def write_json_atomic(path: Path, data: Any, *, durable: bool = True) -> None:
    text = json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    write_bytes_atomic(path, text.encode("utf-8", "surrogateescape"), durable=durable)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def append_event(path: Path, event: str, data: dict[str, Any] | None = None) -> None:
    """Append one JSON line with O_APPEND in a single write."""
    record = {"time": now_iso(), "event": event, **(data or {})}
    line = (json.dumps(record, sort_keys=False, default=str) + "\n").encode("utf-8")
    # One write() of the whole line: a killed process leaves whole lines only.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every complete event; a line cut short by a crash is skipped."""
    events: list[dict[str, Any]] = []
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return events
    for line in raw.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            events.append(item)
    return events


@contextlib.contextmanager
def locked(run_dir: Path, *, blocking: bool = True, name: str = ".lock") -> Iterator[bool]:
    """Hold a lock file (flock) in `run_dir` for a state change; yields False if not blocking and busy."""
    fd = os.open(run_dir / name, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class HeldLock:
    """A lock held by `holding`, which its holder can let go of for a while (`released`) and get
    back: a call that waits on something outside (the editor) does so without the lock."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_EX)


@contextlib.contextmanager
def holding(run_dir: Path, *, name: str = ".lock") -> Iterator[HeldLock]:
    """Hold a lock file (flock) in `run_dir`, waiting for it; yields a handle that can let it go
    for a while (`HeldLock.released`)."""
    fd = os.open(run_dir / name, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield HeldLock(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def busy(run_dir: Path, name: str) -> bool:
    """Whether another open of the lock file `name` holds it now (a probe: never waits)."""
    try:
        with locked(run_dir, blocking=False, name=name) as got:
            return not got
    except FileNotFoundError:
        return False


def now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"
