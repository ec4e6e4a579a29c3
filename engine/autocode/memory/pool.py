"""The process's memory stores: one long-lived MemoryService per store configuration.

Opening a service per command (or per recall and save of a task) threw away
what makes repeated searches cheap: the SQLite store's per-bucket vectors (kept
current from its change log), the PostgreSQL store's connection pool and the
loaded embedding model. Here a service is opened on the first use of its
configuration and kept until the process ends (`close_all`: the server's LSP
`shutdown`, or the interpreter's exit). The CLI, the server and tasks all lease
from it.

The key (`StoreConfig`) is the value of every memory setting (store URL or file,
embedding provider, model, endpoint, key variable name, max count), not the
workspace: two workspaces with the same settings share one service, and a
workspace whose settings change gets a service for the new ones. A workspace's
key is read with `config_for(workspace)`, which resolves only those settings
(no test detection).

Sharing across threads is safe: SQLite writes on one connection and reads on
another, each behind its own lock, PostgreSQL hands each call a pooled
connection, and the vector cache has its own lock. A service is leased while a
caller uses it, so closing (at shutdown, or when too many configurations pile
up) never pulls a connection from under a running command: a busy service
closes when its last lease ends.

A store file replaced or deleted behind the process's back (the connection would
keep reading the old, unlinked file) is noticed by the store backend's identity
check and reopened.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocode.errors import UsageError
from autocode.memory.backends import backend_for
from autocode.memory.config import StoreConfig, config_for
from autocode.memory.embeddings import select_embedder
from autocode.memory.model import DEFAULT_ROLES
from autocode.memory.service import MemoryService

log = logging.getLogger("autocode.memory")

MAX_OPEN = 8
"""Distinct configurations kept open at once; the least recently used idle one closes first."""


def _max_count(value: Any) -> int:
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"memory_max_count must be a whole number (got {value!r})") from None
    if count < 1:
        raise UsageError(f"memory_max_count must be at least 1 (got {count})")
    return count


def open_config(config: StoreConfig, *, upgrade: bool = True, roles: Any = None) -> MemoryService:
    """A new MemoryService for a store configuration: the URL's backend and the embedder chosen."""
    max_count = _max_count(config.max_count)
    store = backend_for(config.url).open(config.url, upgrade)
    choice = select_embedder(
        config.embedding_provider, config.embedding_model, config.embedding_base_url, config.embedding_api_key_env
    )
    return MemoryService(store, choice, max_count=max_count, roles=roles or DEFAULT_ROLES)


@dataclass
class _Entry:
    service: MemoryService
    identity: Hashable | None
    """What the URL named when it was opened (a SQLite file's device and inode); None: nothing to watch."""
    users: int = 0
    retired: bool = False
    """Closed as soon as its last lease ends (replaced, evicted or shut down)."""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _identity(config: StoreConfig) -> Hashable | None:
    return backend_for(config.url).identity(config.url)


class StorePool:
    """The process's open memory services, keyed by store configuration."""

    def __init__(self, max_open: int = MAX_OPEN) -> None:
        self.max_open = max_open
        self._lock = threading.Lock()
        self._entries: OrderedDict[StoreConfig, _Entry] = OrderedDict()
        self._opening: dict[StoreConfig, threading.Lock] = {}
        self.opened = 0
        """Services constructed since the process started (what the tests and the server's info report)."""

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"open": len(self._entries), "opened": self.opened}

    @contextlib.contextmanager
    def lease(self, config: StoreConfig) -> Iterator[MemoryService]:
        """The service of `config`, opened on first use, held while the block runs."""
        entry = self._acquire(config)
        try:
            yield entry.service
        finally:
            self._release(entry)

    @contextlib.contextmanager
    def lease_if_open(self, config: StoreConfig) -> Iterator[MemoryService | None]:
        """The service of `config` if the pool holds it open already, else None (nothing is opened).

        For a look at a store (doctor): a second connection to a SQLite file this process
        already holds would cancel the first one's POSIX locks when it closes.
        """
        with self._lock:
            entry = self._take(config)
        if entry is None:
            yield None
            return
        try:
            yield entry.service
        finally:
            self._release(entry)

    def _acquire(self, key: StoreConfig) -> _Entry:
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

    def _take(self, key: StoreConfig) -> _Entry | None:
        """The open entry of `key`, leased; None when there is none or its file was replaced. Holds `_lock`."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.identity is not None and _identity(key) != entry.identity:
            log.info("memory store %s was replaced or removed; reopening it", entry.service.store.kind)
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

    def _open(self, key: StoreConfig) -> _Entry:
        service = open_config(key)
        log.info("memory: opened the %s store (%s search) for this process", service.store.kind, service.search_mode)
        return _Entry(service, _identity(key))

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


_pool: StorePool | None = None
_pool_lock = threading.Lock()


def pool() -> StorePool:
    """The process-wide pool, made on first use (and closed when the interpreter exits)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = StorePool()
            atexit.register(close_all)
        return _pool


@contextlib.contextmanager
def lease(config: StoreConfig) -> Iterator[MemoryService]:
    """The pooled service of a store configuration, held while the block runs."""
    with pool().lease(config) as service:
        yield service


@contextlib.contextmanager
def lease_for(workspace: Path | str | None) -> Iterator[MemoryService]:
    """The pooled service of the store `workspace`'s settings name (the defaults without one)."""
    with pool().lease(config_for(workspace)) as service:
        yield service


def stats() -> dict[str, int]:
    """{open, opened} without creating anything (zeros before the first memory command)."""
    return _pool.stats() if _pool is not None else {"open": 0, "opened": 0}


def close_all() -> None:
    if _pool is not None:
        _pool.close_all()
