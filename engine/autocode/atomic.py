"""The one atomic file write of AutoCode: a reader sees the old content or the new, never a torn file.

Every file the engine or the server replaces goes through `write_atomically`: the data goes
to a new temporary file beside the target (a random name, created exclusively, never through
a link), is optionally synced, and is renamed over the target. A writer that fails or is
killed before the rename leaves the old file as it was. Temporary names end in `TMP_SUFFIX`,
which the agent's file tools and search skip.

Also here: `kill_point`, the test hook that kills the process at a named point (every write
has one, `write:<file name>`, just before its rename).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from pathlib import Path

TMP_SUFFIX = ".autocode-tmp"
KILL_ENV = "AUTOCODE_TEST_KILL_AT"
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

_hits: dict[str, int] = {}


def kill_point(name: str) -> None:
    """Test hook: SIGKILL this process at a named point.

    AUTOCODE_TEST_KILL_AT=NAME kills at the first time NAME is reached,
    NAME@N at the N-th time. Unset (always, outside tests) it does nothing.
    """
    wanted = os.environ.get(KILL_ENV)
    if not wanted:
        return
    point, _, count = wanted.partition("@")
    if point != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)


def _kept_mode(path: Path) -> int | None:
    """The permission bits of the regular file at `path`, None when there is none."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


def _open_temporary(path: Path) -> tuple[int, Path]:
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}{TMP_SUFFIX}")
        try:
            return os.open(tmp, _NEW_FILE, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}; remove the {TMP_SUFFIX} files there")


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some filesystems refuse fsync on folders
            os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, durable: bool = True, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically; the folder must exist.

    `mode` gives the new file's permission bits; None keeps those of the file being replaced
    (a new file gets 0666 less the umask). A link at `path` is replaced, never followed.
    `durable` also syncs the data and the folder, so the change survives an operating-system
    crash; a killed process never loses what it wrote either way.
    """
    keep = _kept_mode(path) if mode is None else mode
    fd, tmp = _open_temporary(path)
    try:
        try:
            if keep is not None:
                os.fchmod(fd, keep)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        kill_point(f"write:{path.name}")
        os.replace(tmp, path)
    except BaseException:
        # A full disk, a quota, a size limit: the half-written copy goes, the old file stays.
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        _fsync_folder(path.parent)
