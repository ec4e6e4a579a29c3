"""Crash-safe file replacement: a reader sees the old content or the new, never a torn file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _fsync_directory(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some filesystems refuse fsync on directories
            os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write `data` to a temp file beside `path`, fsync it, rename it over `path`, fsync the folder.

    `durable=False` skips both fsyncs (the rename is still atomic) for notes that may be lost.
    """
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    if durable:
        _fsync_directory(path.parent)
