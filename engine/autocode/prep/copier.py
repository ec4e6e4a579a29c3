"""The symlink-safe copier: inventory entries from one folder tree into a fresh one.

Each source folder is opened relative to its parent's descriptor with
`O_NOFOLLOW`; each file likewise, then `fstat` must show the device and inode
the inventory listed. Data moves with `copy_file_range` (no user-space
buffer, so memory does not grow with file size); a second `fstat` after the
copy catches a file that changed meanwhile. Destination entries are created
with `O_EXCL`/`O_NOFOLLOW` inside a folder made for this copy.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence

from autocode.errors import SetupError
from autocode.prep import fsutil
from autocode.prep.inventory import Entry

Progress = Callable[[int, int], None]

# Test-only injection point: called as hook(event, path) with event "dir"
# (before a source folder is opened) or "file" (after a file's bytes were
# copied, before they are re-checked). Never set outside tests.
_test_hook: Callable[[str, str], None] | None = None

_CHUNK = 1 << 30
_PROGRESS_EVERY = 250


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def changed(path: str, what: str) -> SetupError:
    return SetupError(
        f"{path!r} {what} while the prep copy was being made. Remedy: stop whatever is writing to "
        "the workspace (a build, a watcher, an editor saving) and run prep again.",
        kind="changedDuringCopy",
        data={"path": path},
    )


class _Mover:
    """copy_file_range, falling back to sendfile and then read/write where a file system refuses."""

    def __init__(self) -> None:
        self.method = "copy_file_range"
        self.fast = True  # copy_file_range worked so far: try it first for each file

    def move(self, src: int, dst: int, count: int) -> int:
        if self.method == "copy_file_range":
            try:
                return os.copy_file_range(src, dst, min(count, _CHUNK))
            except OSError:
                self.method = "sendfile"
                self.fast = False
        if self.method == "sendfile":
            try:
                return os.sendfile(dst, src, None, min(count, _CHUNK))
            except OSError:
                self.method = "readwrite"
        data = os.read(src, min(count, 1 << 20))
        view = memoryview(data)
        while view:
            view = view[os.write(dst, view):]
        return len(data)


def copy_entries(
    src_root_fd: int,
    dst_root_fd: int,
    entries: Sequence[Entry],
    links: dict[str, str],
    progress: Progress | None = None,
) -> dict[str, int]:
    """Copy `entries` (files, kept links, empty folders); return counts. Raises `changedDuringCopy`."""
    umask = _umask()
    mover = _Mover()
    hook = _test_hook
    by_dir: dict[str, list[tuple[str, Entry]]] = {}
    for e in entries:
        folder, _, name = e.path.rpartition("/")
        group = by_dir.get(folder)
        if group is None:
            by_dir[folder] = [(name, e)]
        else:
            group.append((name, e))
    groups = {(tuple(k.split("/")) if k else ()): v for k, v in by_dir.items()}
    total = len(entries)
    done = files = links_made = folders = copied_bytes = 0
    before_open: Callable[[str], None] | None = None
    if hook is not None:
        dir_hook = hook

        def before_open(rel: str) -> None:
            dir_hook("dir", rel)

    # This loop runs once per file of the workspace: the work per file is kept to
    # open, create, copy_file_range, fstat and two closes.
    for parent, src_fd, dst_fd, reason in fsutil.walk(
        src_root_fd, groups, dest_fd=dst_root_fd, before_open=before_open
    ):
        if src_fd is None or dst_fd is None:
            raise changed("/".join(parent), f"could no longer be opened as a folder ({reason})")
        for name, entry in groups[parent]:
            if entry.kind == "file":
                copied_bytes += _copy_file(src_fd, dst_fd, name, entry, umask, mover, hook)
                files += 1
            elif entry.kind == "symlink":
                os.symlink(links[entry.path], name, dir_fd=dst_fd)
                links_made += 1
            else:
                os.mkdir(name, 0o777, dir_fd=dst_fd)
                folders += 1
            done += 1
            if progress is not None and done % _PROGRESS_EVERY == 0:
                progress(done, total)
    if progress is not None:
        progress(done, total)
    return {"files": files, "symlinks": links_made, "emptyFolders": folders, "bytes": copied_bytes}


def _copy_file(
    src_dir: int,
    dst_dir: int,
    name: str,
    entry: Entry,
    umask: int,
    mover: _Mover,
    hook: Callable[[str, str], None] | None,
) -> int:
    try:
        src = os.open(name, _O_FILE, dir_fd=src_dir)
    except PermissionError as exc:
        raise SetupError(
            f"{entry.path!r} cannot be read ({exc.strerror}). Remedy: make it readable, or have git "
            "ignore it if it does not belong in a copy of the source.",
            kind="unreadableFile",
            data={"path": entry.path},
        ) from exc
    except OSError as exc:
        raise changed(entry.path, f"could no longer be opened ({exc.strerror})") from exc
    try:
        size = entry.size
        # Permission bits only: the executable bit survives, setuid/setgid/sticky do not.
        # (A later chmod of the source changes its ctime, which the check below catches.)
        mode = entry.mode & 0o777
        dst = os.open(name, _O_NEW_FILE, mode, dir_fd=dst_dir)
        try:
            if mode & umask:
                os.fchmod(dst, mode)
            if size:
                if mover.fast and size <= _CHUNK:
                    try:
                        copied = _copy_file_range(src, dst, size)
                    except OSError:
                        mover.fast = False
                        copied = 0
                else:
                    copied = 0
                while copied < size:
                    moved = mover.move(src, dst, size - copied)
                    if moved == 0:
                        break
                    copied += moved
            else:
                copied = 0
            if hook is not None:
                hook("file", entry.path)
            # One fstat, after the bytes moved, proves both that this is the file the
            # inventory listed (device, inode) and that it did not change since (size,
            # mtime, ctime as listed). A mismatch discards the whole staging folder.
            after = os.fstat(src)
            if after.st_ino != entry.ino or after.st_dev != entry.dev or not stat.S_ISREG(after.st_mode):
                raise changed(entry.path, "was replaced")
            if (
                copied != size
                or after.st_size != size
                or after.st_mtime_ns != entry.mtime_ns
                or after.st_ctime_ns != entry.ctime_ns
            ):
                raise changed(entry.path, "changed")
        finally:
            os.close(dst)
        return size
    finally:
        os.close(src)


_O_FILE = fsutil.O_FILE
_O_NEW_FILE = fsutil.O_NEW_FILE
_copy_file_range = os.copy_file_range
