"""One long-lived MemoryService per distinct memory store configuration, shared by the process.

Opening a service per command threw away what makes repeated searches cheap: the
SQLite store's per-bucket vectors (kept current from its change log), the
PostgreSQL store's connection pool and the loaded embedding model. Here a
service is opened on the first memory command that needs its configuration and
kept until the server process stops (or the LSP `shutdown` of a stdio session).

The cache key is the resolved value of every memory setting (store URL or file,
embedding provider, model, endpoint, key variable name, max count), not the
workspace: two workspaces with the same settings share one service, and a
workspace whose settings change gets a service for the new ones.

Sharing across engine threads is safe: SQLite writes on one connection and
reads on another, each behind its own lock, PostgreSQL hands each call a pooled
connection, and the vector cache has its own lock. A service is leased while a
command uses it, so closing (at shutdown, or when too many configurations
pile up) never pulls a connection from under a running command: a busy
service closes when its last lease ends.

A SQLite file replaced or deleted behind the server's back (the connection would
keep reading the old, unlinked file) is noticed by its inode and reopened.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autocode.memory import MemoryService

log = logging.getLogger("autocode_lsp.memory")

MAX_OPEN = 8
"""Distinct configurations kept open at once; the least recently used idle one closes first."""

Key = tuple[tuple[str, Any], ...]


@dataclass
class _Entry:
    service: MemoryService
    file_id: tuple[int, int] | None
    """(device, inode) of the SQLite file when it was opened; None for PostgreSQL."""
    users: int = 0
    retired: bool = False
    """Closed as soon as its last lease ends (replaced, evicted or shut down)."""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def store_key(settings: Any) -> Key:
    """The memory settings' resolved values, as a hashable key (defaults filled as the engine does)."""
    from autocode.memory import SETTING_NAMES

    values: list[tuple[str, Any]] = []
    for name in SETTING_NAMES:
        value = None
        if settings is not None:
            try:
                value = settings.value(name)
            except (KeyError, AttributeError, LookupError):
                value = None
        if name == "memory_path" and value:
            value = str(Path(str(value)).expanduser().absolute())
        try:
            hash(value)
        except TypeError:
            value = repr(value)
        values.append((name, value))
    return tuple(values)


class MemoryServices:
    """The process's open memory services, keyed by store configuration."""

    def __init__(self, max_open: int = MAX_OPEN) -> None:
        self.max_open = max_open
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._opening: dict[Key, threading.Lock] = {}
        self.opened = 0
        """Services constructed since the process started (what the tests and info report)."""

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"open": len(self._entries), "opened": self.opened}

    @contextlib.contextmanager
    def lease(self, settings: Any) -> Iterator[MemoryService]:
        """The service of `settings`' configuration, opened on first use, held while the block runs."""
        key = store_key(settings)
        entry = self._acquire(key)
        try:
            yield entry.service
        finally:
            self._release(entry)

    def _acquire(self, key: Key) -> _Entry:
        with self._lock:
            entry = self._take(key)
            if entry is not None:
                return entry
            opening = self._opening.setdefault(key, threading.Lock())
        # One thread opens a configuration; the others wait for it, not for other configurations.
        with opening:
            with self._lock:
                entry = self._take(key)
                if entry is not None:
                    return entry
            try:
                entry = self._open(key)
            except BaseException:
                with self._lock:
                    self._opening.pop(key, None)
                raise
            with self._lock:
                self._opening.pop(key, None)
                self._entries[key] = entry
                entry.users += 1
                self.opened += 1
                to_close = self._evict()
            for old in to_close:
                self._close(old)
            return entry

    def _take(self, key: Key) -> _Entry | None:
        """The open entry of `key`, leased; None when there is none or its file was replaced. Holds `_lock`."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.file_id is not None:
            path = getattr(entry.service.store, "path", None)
            if path is not None and _file_id(Path(path)) != entry.file_id:
                log.info("memory database %s was replaced or removed; reopening it", path)
                del self._entries[key]
                entry.retired = True
                if entry.users == 0:
                    self._close(entry)
                return None
        entry.users += 1
        self._entries.move_to_end(key)
        return entry

    def _evict(self) -> list[_Entry]:
        """Retire the least recently used idle entries beyond `max_open`. Holds `_lock`."""
        idle = [k for k, e in self._entries.items() if e.users == 0]
        out = []
        while len(self._entries) > self.max_open and idle:
            entry = self._entries.pop(idle.pop(0))
            entry.retired = True
            out.append(entry)
        return out

    def _open(self, key: Key) -> _Entry:
        from autocode.memory import open_memory

        overrides = {name: value for name, value in key if value is not None}
        service = open_memory(None, **overrides)
        path = getattr(service.store, "path", None)
        file_id = _file_id(Path(path)) if path is not None else None
        log.info(
            "memory: opened the %s store (%s search) for this server process",
            service.store.kind, service.search_mode,
        )
        return _Entry(service, file_id)

    def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.users -= 1
            close = entry.retired and entry.users == 0
        if close:
            self._close(entry)

    @staticmethod
    def _close(entry: _Entry) -> None:
        with entry.lock:
            try:
                entry.service.close()
            except Exception:  # a store that failed to close has nothing more to lose
                log.warning("closing a memory store failed", exc_info=True)

    def close_all(self) -> None:
        """Close every idle service now and every busy one when its command finishes."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
            idle = []
            for entry in entries:
                entry.retired = True
                if entry.users == 0:
                    idle.append(entry)
        for entry in idle:
            self._close(entry)
        if entries:
            log.info("memory: closed %d store(s)", len(entries))


_services: MemoryServices | None = None
_services_lock = threading.Lock()


def services() -> MemoryServices:
    """The process-wide registry, made on first use."""
    global _services
    with _services_lock:
        if _services is None:
            _services = MemoryServices()
        return _services


def stats() -> dict[str, int]:
    """{open, opened} without creating anything (zeros before the first memory command)."""
    return _services.stats() if _services is not None else {"open": 0, "opened": 0}


def close_all() -> None:
    if _services is not None:
        _services.close_all()
