"""Memory store backends, chosen by the scheme of the store's URL.

The store's URL is `database_url` when it is set, else `sqlite://` followed by
the absolute path of the SQLite file (`memory_path`, or the user data folder).
A `database_url` without a scheme is a PostgreSQL connection string, as it
always was.

A backend brings everything the rest of the engine needs to know about its kind
of store: how to open it, how to show where it is without secrets (doctor,
errors, logs), what identifies the store behind the URL (so the pool reopens a
SQLite file that was replaced), and what doctor says before opening it.

To add a store: one module with a class implementing `store.Store`, and one
`register(Backend(...))` naming its scheme (a test adds `memory+mem://` that
way, see tests/throwaway/mem_store.py and tests/engine/memory/test_store_registry.py). Built-in backends import
their module only when a store of theirs is opened, so psycopg loads only for
PostgreSQL.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode.memory.model import StoreUnavailable

if TYPE_CHECKING:
    from autocode.memory.store import Store

from autocode.memory.config import SQLITE_PREFIX


def _no_identity(url: str) -> Hashable | None:
    return None


def _nothing_before_opening(url: str) -> dict[str, Any] | None:
    return None


@dataclass(frozen=True)
class Backend:
    """One kind of memory store, registered under the URL schemes it serves."""

    name: str
    """What doctor reports as `store` (`sqlite`, `postgresql`)."""
    schemes: tuple[str, ...]
    open: Callable[[str, bool], Store]
    """Open the store at the URL; the flag says whether to upgrade its schema (doctor only looks)."""
    location: Callable[[str], str]
    """Where the store is, with any password removed (doctor, errors and logs show this)."""
    identity: Callable[[str], Hashable | None] = _no_identity
    """What the URL names now (a file's device and inode); a change makes the pool reopen it."""
    before_opening: Callable[[str], dict[str, Any] | None] = _nothing_before_opening
    """Doctor's fields when the store need not be opened to report on it (a file not made yet)."""


_BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    """Add (or replace) a backend under each of its schemes; returns it."""
    for scheme in backend.schemes:
        _BACKENDS[scheme.lower()] = backend
    return backend


def unregister(backend: Backend) -> None:
    for scheme in backend.schemes:
        if _BACKENDS.get(scheme.lower()) is backend:
            del _BACKENDS[scheme.lower()]


def schemes() -> list[str]:
    return sorted(_BACKENDS)


def scheme_of(url: str) -> str:
    """The URL's scheme; a bare connection string (`host=... dbname=...`) is PostgreSQL's."""
    head, sep, _ = url.partition("://")
    return head.lower() if sep else "postgresql"


def backend_for(url: str) -> Backend:
    scheme = scheme_of(url)
    try:
        return _BACKENDS[scheme]
    except KeyError:
        raise StoreUnavailable(
            f"no memory store serves {scheme}:// URLs (known: {', '.join(schemes())}); "
            "check database_url in the settings"
        ) from None


# SQLite: a file in the user data folder by default.


def sqlite_path(url: str) -> Path:
    """The file of a `sqlite://` URL: everything after the prefix, taken as it is (no %-decoding)."""
    return Path(url[len(SQLITE_PREFIX):] if url.lower().startswith(SQLITE_PREFIX) else url)


def _open_sqlite(url: str, upgrade: bool) -> Store:
    # a backend's module loads when a store of its kind is opened (the registry rule)
    from autocode.memory.sqlite_store import SqliteStore

    return SqliteStore(sqlite_path(url), upgrade=upgrade)


def _file_identity(url: str) -> Hashable | None:
    try:
        st = os.stat(sqlite_path(url))
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _sqlite_not_made_yet(url: str) -> dict[str, Any] | None:
    if sqlite_path(url).exists():
        return None
    return {"ok": True, "status": "not created yet (made on the first save)", "memories": 0}


SQLITE = register(Backend(
    name="sqlite",
    schemes=("sqlite",),
    open=_open_sqlite,
    location=lambda url: str(sqlite_path(url)),
    identity=_file_identity,
    before_opening=_sqlite_not_made_yet,
))


# PostgreSQL (with pgvector when installed): a team's shared store.


def _open_postgres(url: str, upgrade: bool) -> Store:
    # a backend's module loads when a store of its kind is opened (the registry rule)
    from autocode.memory.pg_store import PostgresStore

    return PostgresStore(url, upgrade=upgrade)


def _redact_postgres(url: str) -> str:
    # psycopg only for a PostgreSQL store (the registry rule)
    from autocode.memory.pg_store import redact_url

    return redact_url(url)


POSTGRESQL = register(Backend(
    name="postgresql",
    schemes=("postgresql", "postgres"),
    open=_open_postgres,
    location=_redact_postgres,
))
