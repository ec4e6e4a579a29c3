"""A throwaway memory store backend for tests: `memory+mem://NAME`, memories that last as long as the process.

It is the whole of adding a store: this one module and one registry entry
(`register()` below). Each NAME is a SQLite file in a folder of its own that
this process made and removes when it exits, so nothing is left on disk and
two processes never share a store.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from autocode.memory.backends import Backend
from autocode.memory.backends import register as register_backend
from autocode.memory.sqlite_store import SqliteStore
from autocode.memory.store import Store

SCHEME = "memory+mem"
_folder: Path | None = None


def _name(url: str) -> str:
    name = url.partition("://")[2].strip("/")
    if not name.isidentifier():
        from autocode.memory import StoreUnavailable

        raise StoreUnavailable(f"{url}: name the store with letters and digits (memory+mem://team)")
    return name


def _file(url: str) -> Path:
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="autocode-mem-"))
        atexit.register(shutil.rmtree, _folder, True)
    return _folder / f"{_name(url)}.sqlite3"


def open_store(url: str, upgrade: bool) -> Store:
    return SqliteStore(_file(url), upgrade=upgrade)


def register() -> Backend:
    return register_backend(Backend(
        name="mem",
        schemes=(SCHEME,),
        open=open_store,
        location=lambda url: f"{SCHEME}://{_name(url)} (this process only)",
        before_opening=lambda url: {"ok": True, "status": "kept in this process until it exits"},
    ))
