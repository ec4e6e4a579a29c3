"""One inventoried path: its own module so the inventory and the copier, which both use it,
need not import each other."""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    """One inventoried path. `kind` is "file", "symlink" or "emptyFolder" (uninitialized submodule).

    A tuple rather than a dataclass: a large work tree makes tens of thousands of them.
    """

    path: str
    kind: str
    origin: str  # "tracked" or "untracked"
    component: str  # "" for the workspace itself, else the nested repository's path
    dev: int = 0
    ino: int = 0
    size: int = 0
    target: str | None = None
    mtime_ns: int = 0
    ctime_ns: int = 0
    mode: int = 0  # permission bits as listed (st_mode & 0o7777)
