"""Linux inotify through libc (ctypes): a non-blocking descriptor that reports what happened in
the folders it watches. No dependency: `inotify_init1`, `inotify_add_watch` and
`inotify_rm_watch` are three libc calls, and the events are read from the descriptor with
`os.read`. `Inotify()` raises `OSError` where there is no inotify (another system, a libc
without it, the per-user instance limit reached); `add` raises `OSError` with `ENOSPC` when the
per-user watch limit is reached.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
from dataclasses import dataclass

CREATE = 0x00000100
"""A file or folder was created in the watched folder."""
CLOSE_WRITE = 0x00000008
"""A file opened for writing was closed."""
MOVED_TO = 0x00000080
"""A file or folder was renamed into the watched folder (how an atomic write lands)."""
MOVE_SELF = 0x00000800
"""The watched folder itself was renamed."""
ONLYDIR = 0x01000000
"""Watch the path only if it is a folder."""
EXCL_UNLINK = 0x04000000
"""No events for children after they were unlinked."""
IGNORED = 0x00008000
"""The watch is gone (removed, or its folder deleted)."""
ISDIR = 0x40000000
"""The event's subject is a folder."""
Q_OVERFLOW = 0x00004000
"""Events were lost: the kernel's queue overflowed."""

_NONBLOCK = os.O_NONBLOCK
_CLOEXEC = 0o2000000
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len


@dataclass(frozen=True)
class Event:
    wd: int
    """The watch it concerns (-1 for a queue overflow)."""
    mask: int
    name: str
    """The child's name in the watched folder ("" when it concerns the folder itself)."""


def _libc() -> ctypes.CDLL:
    if not sys.platform.startswith("linux"):
        raise OSError(errno.ENOSYS, f"inotify is Linux only (this is {sys.platform})")
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        raise OSError(errno.ENOSYS, "this libc has no inotify_init1")
    libc.inotify_init1.argtypes = [ctypes.c_int]
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    for name in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch"):
        getattr(libc, name).restype = ctypes.c_int
    return libc


class Inotify:
    """One inotify instance; `fileno()` is readable when events wait (for `loop.add_reader`)."""

    def __init__(self) -> None:
        self._libc = _libc()
        fd: int = self._libc.inotify_init1(_NONBLOCK | _CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"inotify_init1: {os.strerror(code)}")
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def add(self, path: str | os.PathLike[str], mask: int) -> int:
        """Watch `path` for the events in `mask`; the watch descriptor (the same one again for a
        path already watched: its mask is replaced)."""
        wd: int = self._libc.inotify_add_watch(self._fd, os.fsencode(path), mask)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"inotify_add_watch: {os.strerror(code)}", os.fspath(path))
        return wd

    def remove(self, wd: int) -> None:
        """Stop a watch (an `IGNORED` event follows); one already gone is no error."""
        self._libc.inotify_rm_watch(self._fd, wd)

    def read(self) -> list[Event]:
        """The events waiting now ([] when none: the descriptor never blocks)."""
        events: list[Event] = []
        while True:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return events
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
                offset += _HEADER.size
                raw = data[offset:offset + size].split(b"\0", 1)[0]
                offset += size
                events.append(Event(wd, mask, os.fsdecode(raw)))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
