"""Descriptor-based walking: every path is opened relative to its parent folder's descriptor.

No component is ever followed through a symbolic link (`O_NOFOLLOW`), so a
folder swapped for a link, or a link planted in an ancestor, cannot send a
read or a write outside the tree that was selected.
"""

from __future__ import annotations

import errno
import os

# Kept light for the copy helper process (see perfile): no `collections` at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO that slipped in must not wait for a writer.
O_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
O_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

Dir = tuple[str, ...]


def open_failure(exc: OSError) -> str:
    """Why a folder could not be opened, as an inventory reason."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "belowSymlinkOrFile"
    if exc.errno == errno.ENOENT:
        return "deletedFromWorkTree"
    return "unreadable"


def walk(
    root_fd: int,
    groups: Mapping[Dir, object],
    *,
    dest_fd: int | None = None,
    before_open: Callable[[str], None] | None = None,
    dest_exist_ok: bool = False,
    check_left: bool = False,
) -> Iterator[tuple[Dir, int | None, int | None, str]]:
    """Visit each folder of `groups` in depth-first order.

    Yields (folder, source fd or None, destination fd or None, failure reason).
    With `dest_fd`, each folder is also created below it and opened. The
    descriptors stay valid only until the next step of the iteration.
    `before_open`, when given, is called with the folder's path first (a test hook).
    `dest_exist_ok`: a destination folder someone else already made is opened
    (still with `O_NOFOLLOW`, so a planted link is refused) instead of refused.
    `check_left`: on leaving each folder, check that its name still names the
    folder that was read, and raise `Swapped` if not (a folder replaced by a
    link or another folder while it was read).
    """
    dirs: set[Dir] = set()
    for d in groups:
        for i in range(len(d) + 1):
            dirs.add(d[:i])
    stack: list[tuple[Dir, int | None, int | None, str]] = [((), root_fd, dest_fd, "")]
    try:
        for d in sorted(dirs):
            if not d:
                if d in groups:
                    yield d, root_fd, dest_fd, ""
                continue
            while len(stack[-1][0]) >= len(d) or stack[-1][0] != d[: len(stack[-1][0])]:
                _leave(stack, check_left)
            _, parent_src, parent_dst, reason = stack[-1]
            src: int | None = None
            dst: int | None = None
            if parent_src is not None:
                if before_open is not None:
                    before_open("/".join(d))
                try:
                    src = os.open(d[-1], O_DIR, dir_fd=parent_src)
                except OSError as exc:
                    reason = open_failure(exc)
            if src is not None and parent_dst is not None:
                try:
                    try:
                        os.mkdir(d[-1], 0o777, dir_fd=parent_dst)
                    except FileExistsError:
                        if not dest_exist_ok:
                            raise
                    dst = os.open(d[-1], O_DIR, dir_fd=parent_dst)
                except BaseException:
                    os.close(src)
                    raise
            stack.append((d, src, dst, reason))
            if d in groups:
                yield d, src, dst, reason
        while len(stack) > 1:
            _leave(stack, check_left)
    finally:
        while len(stack) > 1:
            _close(stack.pop())


class Swapped(Exception):
    """The folder `path` was replaced while it was read."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def _leave(stack: list[tuple[Dir, int | None, int | None, str]], check: bool) -> None:
    """Close the innermost open folder; with `check`, first make sure its name still leads to it."""
    item = stack[-1]
    d, src = item[0], item[1]
    parent = stack[-2][1]
    if check and src is not None and parent is not None:
        opened = os.fstat(src)
        try:
            now = os.stat(d[-1], dir_fd=parent, follow_symlinks=False)
        except OSError:
            now = None
        if now is None or (now.st_ino, now.st_dev) != (opened.st_ino, opened.st_dev):
            raise Swapped("/".join(d))
    _close(stack.pop())


def _close(item: tuple[Dir, int | None, int | None, str]) -> None:
    for fd in item[1:3]:
        if isinstance(fd, int):
            os.close(fd)
