"""The per-path work of an inventory and a copy, on the standard library alone.

Everything here runs once per file of a workspace. It imports nothing of
AutoCode but `fsutil`, so a second process can run it without loading the
engine: `copier.Copying` starts `python -I -S` with a few lines that map the
`autocode.prep` name to this folder (the package `__init__`s never run) and
gives that process half of git's tracked listing of a large workspace.

`look` lists: every name git listed is `lstat`ed relative to its folder's
descriptor. Given an `Into`, it also copies each regular file right after
listing it: the file is opened relative to the same folder descriptor with
`O_NOFOLLOW`, and `fstat` must show the device and inode just listed. Data
moves with `copy_file_range` (no user-space buffer, so memory does not grow
with file size); that `fstat`, taken after the bytes moved, also catches a
file that changed meanwhile (size, mtime, ctime as listed). Destination
entries are created with `O_EXCL`/`O_NOFOLLOW` inside a folder made for
this copy. Links and empty submodule folders are made afterwards by
`make_extras`, once the whole inventory has decided which links to keep.

Kept whole: the copy's second process imports this file alone (standard
library and `fsutil` only), so what it needs cannot move into other modules of
the package.
"""

from __future__ import annotations

import errno
import marshal
import os
import stat
import struct
import sys

from autocode.prep import fsutil

# The helper process starts faster without `typing` and `collections` (about
# 15 ms of its start): names only annotations use are imported for type checkers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
    from typing import Any

    Item = Sequence[Any]
    # folder parts -> names in it, to look at (and copy).
    Candidates = Mapping[fsutil.Dir, Sequence[str]]
    Hook = Callable[[str, str], None]

# An inventory entry as a tuple, in the field order of `entry.Entry` (a test
# keeps the two in step): path, kind, origin, component, dev, ino, size, target,
# mtime_ns, ctime_ns, mode.
PATH, KIND, DEV, INO, SIZE, MTIME, CTIME, MODE = 0, 1, 4, 5, 6, 8, 9, 10

PROGRESS_EVERY = 250
_CHUNK = 1 << 30


class CopyFailure(Exception):
    """A path that could not be copied as listed.

    `reason` is "changed" (replaced, changed or gone since it was listed) or
    "unreadable" (no permission); `what` says what happened, for the message.
    """

    def __init__(self, reason: str, path: str, what: str) -> None:
        super().__init__(reason, path, what)
        self.reason = reason
        self.path = path
        self.what = what


_OWN_FOLDER = ".autocode"  # inventory.AUTOCODE_DIR (not imported: this module stays light)
_GITLINK = "160000"  # gitsafe.GITLINK_MODE, likewise


def group_tracked(raw: bytes, prefix: str = "") -> tuple[dict[fsutil.Dir, list[str]], int, set[str], int]:
    """git's tracked listing as {folder parts: [names]}.

    `raw` holds NUL-terminated `<6-digit mode> <path>` records (`git ls-files -z
    -c --format`) in index order; a conflicted path has one record per stage,
    side by side, and counts once. `prefix` is the nested repository's path
    ("" for the workspace, whose own `.autocode` is left out). Returns the
    groups, how many paths they hold, the submodule (gitlink) paths and how
    many `.autocode` paths were left out.
    """
    paths: list[str] = []
    add = paths.append
    gitlinks: set[str] = set()
    own = 0
    last = None
    for record in os.fsdecode(raw).split("\0"):
        path = record[7:]
        if path == last or not record:
            continue
        last = path
        if prefix:
            path = prefix + path
        elif path == _OWN_FOLDER or path.startswith(_OWN_FOLDER + "/"):
            own += 1
            continue
        if record[:6] == _GITLINK:
            gitlinks.add(path)
        add(path)
    return names_by_folder(paths), len(paths), gitlinks, own


def split_records(raw: bytes) -> tuple[bytes, bytes]:
    """`raw` (as `group_tracked` reads it) cut about in half, never between stages of one path."""
    end = raw.find(b"\0", len(raw) // 2)
    while end != -1:
        following = raw.find(b"\0", end + 1)
        if following == -1:
            break
        start = raw.rfind(b"\0", 0, end) + 1
        if raw[start + 7 : end] != raw[end + 8 : following]:
            return raw[: end + 1], raw[end + 1 :]
        end = following
    return raw, b""


def names_by_folder(paths: Iterable[str]) -> dict[fsutil.Dir, list[str]]:
    """Paths grouped as {folder parts: [names]}."""
    by_dir: dict[str, list[str]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        names = by_dir.get(folder)
        if names is None:
            by_dir[folder] = [name]
        else:
            names.append(name)
    return {(tuple(k.split("/")) if k else ()): v for k, v in by_dir.items()}


class Into:
    """Where `look` copies the regular files it lists, and what it has copied so far.

    Several `look` calls (tracked and untracked names, nested repositories, a
    second process) copy into the same tree, so a destination folder may
    already exist; it is opened, never through a link. `report(done)` is
    called every `PROGRESS_EVERY` looked-at names.
    `hook(event, path)` is a test injection point: "dir" before a source folder
    is opened, "listed" after a file was listed and before it is opened,
    "file" after its bytes were copied and before the check.
    """

    def __init__(
        self,
        dst_fd: int,
        *,
        report: Callable[[int], None] | None = None,
        hook: Hook | None = None,
    ) -> None:
        self.dst_fd = dst_fd
        self.report = report
        self.hook = hook
        self.mask = umask()
        self.mover = _Mover()
        self.done = self.files = self.bytes = 0


def look(
    root_fd: int,
    candidates: Candidates,
    component: str,
    origin: str,
    nested_paths: Collection[str] = (),
    entry_type: type = tuple,
    into: Into | None = None,
) -> tuple[list[Any], list[tuple[str, str, bool]], dict[str, int]]:
    """`lstat` each candidate relative to its folder's descriptor (and copy it, given `into`).

    `origin` ("tracked" or "untracked") is recorded in each entry; a folder
    among `nested_paths` (a submodule, an untracked repository) is reported
    as nested instead of skipped. Returns (entries as `entry_type` tuples,
    nested folders as (path, origin, has .git), exclusion counts by reason).
    Raises `CopyFailure`.
    """
    entries: list[Any] = []
    nested: list[tuple[str, str, bool]] = []
    excluded: dict[str, int] = {}
    add = entries.append
    lstat = os.stat
    new_tuple = tuple.__new__
    copy_file = _copy_file
    hook = report = mover = None
    mask = done = files = copied = 0
    if into is not None:
        hook, report, mover, mask, done = into.hook, into.report, into.mover, into.mask, into.done
    before_open = None if hook is None else (lambda rel: hook("dir", rel))
    walk = fsutil.walk(
        root_fd,
        candidates,
        dest_fd=None if into is None else into.dst_fd,
        before_open=before_open,
        dest_exist_ok=True,
        check_left=into is not None,
    )
    # This loop runs once per file of the workspace: listing is one lstat; copying
    # adds open, create, copy_file_range, fstat and two closes. Counters stay in
    # local variables until the end.
    try:
        for parent, src_fd, dst_fd, reason in walk:
            names = candidates[parent]
            if src_fd is None:
                excluded[reason] = excluded.get(reason, 0) + len(names)
                done += len(names)
                continue
            base = "/".join(parent) + "/" if parent else ""
            for name in names:
                done += 1
                if report is not None and done % PROGRESS_EVERY == 0:
                    report(done)
                try:
                    st = lstat(name, dir_fd=src_fd, follow_symlinks=False)
                except OSError as exc:
                    why = fsutil.open_failure(exc)
                    excluded[why] = excluded.get(why, 0) + 1
                    continue
                kind = st.st_mode & 0o170000
                if kind == stat.S_IFREG:
                    path = base + name
                    # tuple.__new__ skips a named tuple's constructor: half the cost, run once per file.
                    add(new_tuple(entry_type, (path, "file", origin, component, st.st_dev, st.st_ino,
                                               st.st_size, None, st.st_mtime_ns, st.st_ctime_ns, st.st_mode & 0o7777)))
                    if mover is not None:
                        if hook is not None:
                            hook("listed", path)
                        copied += copy_file(src_fd, dst_fd, name, path, st, mask, mover, hook)  # type: ignore[arg-type]  # a folder to copy into exists whenever its source opened
                        files += 1
                elif kind == stat.S_IFLNK:
                    try:
                        target = os.fsdecode(os.readlink(name, dir_fd=src_fd))
                    except OSError as exc:  # replaced by a file or folder, or removed, since the lstat
                        raise CopyFailure("changed", base + name, f"was replaced while it was read ({exc.strerror})") from exc
                    add(new_tuple(entry_type, (base + name, "symlink", origin, component, st.st_dev, st.st_ino,
                                               0, target, 0, 0, 0)))
                elif kind == stat.S_IFDIR and base + name in nested_paths:
                    nested.append((base + name, origin, _has_git(src_fd, name)))
                else:
                    why = "typeChanged" if kind == stat.S_IFDIR else "specialFile"
                    excluded[why] = excluded.get(why, 0) + 1
    except fsutil.Swapped as swapped:
        raise CopyFailure("changed", swapped.path, "was replaced (by a link or another folder) while it was copied") from None
    finally:
        if into is not None:
            into.done = done
            into.files += files
            into.bytes += copied
    return entries, nested, excluded


def _has_git(parent_fd: int, name: str) -> bool:
    """Whether the folder `name` holds a `.git` (folder or gitfile) of its own."""
    try:
        fd = os.open(name, fsutil.O_DIR, dir_fd=parent_fd)
    except OSError:
        return False
    try:
        os.stat(".git", dir_fd=fd, follow_symlinks=False)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def umask() -> int:
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


class _Mover:
    """copy_file_range, falling back to sendfile and then read/write where a file system refuses."""

    def __init__(self) -> None:
        self.method = "copy_file_range"
        self.fast = hasattr(os, "copy_file_range")  # try it first for each file while it works

    def move(self, src: int, dst: int, count: int) -> int:
        if self.method == "copy_file_range":
            try:
                return _copy_file_range(src, dst, min(count, _CHUNK))
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


def make_extras(src_root_fd: int, dst_root_fd: int, entries: Iterable[Item], links: Mapping[str, str]) -> dict[str, int]:
    """Make the kept links (with the text `links` gives) and empty submodule folders among `entries`.

    The copy's folders exist by now; each is opened again, never through a link.
    """
    by_path = {entry[PATH]: entry for entry in entries}
    groups = names_by_folder(by_path)
    made = {"symlinks": 0, "emptyFolders": 0}
    for parent, src_fd, dst_fd, reason in fsutil.walk(src_root_fd, groups, dest_fd=dst_root_fd, dest_exist_ok=True):
        if src_fd is None or dst_fd is None:
            raise CopyFailure("changed", "/".join(parent), f"could no longer be opened as a folder ({reason})")
        base = "/".join(parent) + "/" if parent else ""
        for name in groups[parent]:
            if by_path[base + name][KIND] == "symlink":
                os.symlink(links[base + name], name, dir_fd=dst_fd)
                made["symlinks"] += 1
            else:
                os.mkdir(name, 0o777, dir_fd=dst_fd)
                made["emptyFolders"] += 1
    return made


def _copy_file(
    src_dir: int,
    dst_dir: int,
    name: str,
    path: str,
    listed: os.stat_result,
    mask: int,
    mover: _Mover,
    hook: Hook | None,
) -> int:
    """Copy the file `name` of `src_dir`, which `listed` describes, into `dst_dir`; its size."""
    try:
        src = _open(name, _O_FILE, dir_fd=src_dir)
    except PermissionError as exc:
        raise CopyFailure("unreadable", path, exc.strerror or "permission denied") from exc
    except OSError as exc:
        raise CopyFailure("changed", path, f"could no longer be opened ({exc.strerror})") from exc
    try:
        size = listed.st_size
        # Permission bits only: the executable bit survives, setuid/setgid/sticky do not.
        # (A later chmod of the source changes its ctime, which the check below catches.)
        mode = listed.st_mode & 0o777
        dst = _open(name, _O_NEW_FILE, mode, dir_fd=dst_dir)
        try:
            if mode & mask:
                os.fchmod(dst, mode)
            copied = 0
            if size >= _SPARSE_FROM and listed.st_blocks * 512 < size:
                copied = _copy_sparse(src, dst, size, mover)
            elif size:
                if mover.fast and size <= _CHUNK:
                    try:
                        copied = _copy_file_range(src, dst, size)
                    except OSError:
                        mover.fast = False
                while copied < size:
                    moved = mover.move(src, dst, size - copied)
                    if moved == 0:
                        break
                    copied += moved
            if hook is not None:
                hook("file", path)
            # One fstat, after the bytes moved, proves both that this is the file just
            # listed (device, inode) and that it did not change since (size, mtime,
            # ctime as listed). A mismatch discards the whole staging folder.
            after = _fstat(src)
            if after.st_ino != listed.st_ino or after.st_dev != listed.st_dev or not _S_ISREG(after.st_mode):
                raise CopyFailure("changed", path, "was replaced")
            if (
                copied != size
                or after.st_size != size
                or after.st_mtime_ns != listed.st_mtime_ns
                or after.st_ctime_ns != listed.st_ctime_ns
            ):
                raise CopyFailure("changed", path, "changed")
        finally:
            _close(dst)
        return size
    finally:
        _close(src)


_SPARSE_FROM = 1 << 20
"""Files at least this big whose blocks cover less than their size are copied hole by hole."""


def _copy_sparse(src: int, dst: int, size: int, mover: _Mover) -> int:
    """Copy only the data segments of a sparse file (SEEK_DATA/SEEK_HOLE) and leave the holes
    holes, so a 2 GB file of zeros costs no disk in the copy; `size` when done.

    Where the file system cannot tell data from holes the whole file is data, copied as usual.
    """
    position = 0
    while position < size:
        try:
            start = os.lseek(src, position, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole from here to the end
                break
            start = position  # SEEK_DATA unsupported: all of it is data
        if start >= size:
            break
        try:
            end = min(os.lseek(src, start, os.SEEK_HOLE), size)
        except OSError:
            end = size
        os.lseek(src, start, os.SEEK_SET)
        os.lseek(dst, start, os.SEEK_SET)
        left = end - start
        while left > 0:
            moved = mover.move(src, dst, left)
            if moved == 0:
                return start + (end - start - left)  # the file shrank: the caller's check says so
            left -= moved
        position = end
    os.ftruncate(dst, size)
    return size


_O_FILE = fsutil.O_FILE
_O_NEW_FILE = fsutil.O_NEW_FILE
# One global lookup each instead of two, once per file.
_open, _close, _fstat, _S_ISREG = os.open, os.close, os.fstat, stat.S_ISREG


def _no_copy_file_range(src: int, dst: int, count: int) -> int:
    raise OSError(38, "copy_file_range is not available here")  # ENOSYS: the mover falls back


_copy_file_range: Callable[[int, int, int], int] = getattr(os, "copy_file_range", _no_copy_file_range)


# Messages between the two processes are marshalled tuples with a 4-byte length
# in front. Marshal is fine here: both ends are the same interpreter, and each
# side trusts the other as much as itself.


def frame(message: tuple[Any, ...]) -> bytes:
    data = marshal.dumps(message)
    return struct.pack("<I", len(data)) + data


def unframe(buffer: bytearray) -> list[tuple[Any, ...]]:
    """Take every complete message off the front of `buffer`."""
    messages = []
    while len(buffer) >= 4:
        (size,) = struct.unpack_from("<I", buffer)
        if len(buffer) < 4 + size:
            break
        messages.append(marshal.loads(bytes(buffer[4 : 4 + size])))
        del buffer[: 4 + size]
    return messages


def worker_main(root_fd: int, job_fd: int) -> int:
    """The second process: wait for one job, then look at and copy its folders.

    `root_fd` is the workspace root. Stdin brings ("job", size) once the job
    (a marshalled (its part of git's tracked listing, as `group_tracked` reads
    it; the staging folder's path parts below the root; its (dev, ino))) is in
    the file `job_fd`; end of input means no job.
    Replies on stdout: ("ready",) at once (before the job: a process that
    never said it is ready never touched the copy), ("progress", done) now
    and then, then ("looked",
    entries, nested, excluded, files, bytes, names looked at), or on failure ("failed", reason,
    path, what) or ("oserror", errno, strerror, filename).
    """
    out = sys.stdout.buffer

    def send(message: tuple[Any, ...]) -> None:
        out.write(frame(message))
        out.flush()

    send(("ready",))
    buffer = bytearray()
    while not (messages := unframe(buffer)):
        data = os.read(0, 1 << 16)
        if not data:
            return 0
        buffer += data
    size = messages[0][1]
    raw, staging_parts, identity = marshal.loads(os.pread(job_fd, size, 0))
    try:
        candidates, _, gitlinks, own = group_tracked(raw)
        staging = _open_staging(root_fd, staging_parts, identity)
        try:
            into = Into(staging, report=lambda done: send(("progress", done)))
            entries, nested, excluded = look(root_fd, candidates, "", "tracked", gitlinks, tuple, into)
        finally:
            os.close(staging)
    except CopyFailure as exc:
        send(("failed", exc.reason, exc.path, exc.what))
        return 1
    except OSError as exc:
        send(("oserror", exc.errno, exc.strerror, exc.filename))
        return 1
    if own:
        excluded["autocodeFolder"] = own
    send(("looked", entries, nested, excluded, into.files, into.bytes, into.done))
    return 0


def _open_staging(root_fd: int, parts: Sequence[str], identity: tuple[int, int]) -> int:
    """Open the staging folder below the root step by step, never through a link; check it is the one meant."""
    fd = os.dup(root_fd)
    try:
        for name in parts:
            try:
                child = os.open(name, fsutil.O_DIR, dir_fd=fd)
            except OSError as exc:
                where = "/".join(parts)
                raise CopyFailure("changed", where, f"could no longer be opened as a folder ({exc.strerror})") from exc
            os.close(fd)
            fd = child
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != tuple(identity):
            raise CopyFailure("changed", "/".join(parts), "is not the staging folder this copy made")
    except BaseException:
        os.close(fd)
        raise
    return fd
