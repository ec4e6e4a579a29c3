"""One prep copy in the making: where files go, progress, and a second process for large workspaces.

The inventory copies each regular file the moment it lists it (see
`perfile.look`); a `Copying` tells it where to. For a large workspace on a
machine with spare CPU, `Copying` also runs a second process, started
as `python -I -S` without the engine, which lists and copies the second half
of git's tracked listing while this process does the first half (and the
untracked files and nested repositories). Every path
is checked the same way on either side; a failure on either side stops both
and fails the copy (the caller then removes the staging folder).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from autocode.errors import SetupError
from autocode.prep import perfile
from autocode.prep.entry import Entry
from autocode.prep.perfile import CopyFailure

Progress = Callable[[int, int], None]

# Test-only injection point: called as hook(event, path) with event "dir"
# (before a source folder is opened), "listed" (after a file was listed, before
# it is opened) or "file" (after a file's bytes were copied, before they are
# re-checked). Never set outside tests. With a hook set, everything is copied in
# this process, where the hook runs.
_test_hook: Callable[[str, str], None] | None = None

# Below this many tracked files, starting the second process (about 10 ms of
# one core) costs more than it saves.
SPLIT_MIN_ENTRIES = 3000
# An index entry is 62 bytes plus the path, padded: a low guess for "files".
_INDEX_BYTES_PER_FILE = 80


def changed(path: str, what: str) -> SetupError:
    return SetupError(
        f"{path!r} {what} while the prep copy was being made. Remedy: stop whatever is writing to "
        "the workspace (a build, a watcher, an editor saving) and run prep again.",
        kind="changedDuringCopy",
        data={"path": path},
    )


def setup_error(failure: CopyFailure) -> SetupError:
    if failure.reason == "unreadable":
        return SetupError(
            f"{failure.path!r} cannot be read ({failure.what}). Remedy: make it readable, or have git "
            "ignore it if it does not belong in a copy of the source.",
            kind="unreadableFile",
            data={"path": failure.path},
        )
    return changed(failure.path, failure.what)


def _spare_cpu() -> bool:
    """Whether a second process would get a core, or a good part of one, to itself.

    Two or more cores this process may use, and a 1-minute load average under
    their number. With one other busy program on two cores the two copying
    processes still get about 4/3 of a core between them, more than one
    process gets; once the others alone fill every core, two processes would
    only take turns, which is slower than one. (The average counts recent
    work of this process too, so the test errs towards one process.)
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return cores >= 2 and load < cores


def _anonymous_file() -> int:
    """A descriptor of a new file that has no name: in memory where the system allows."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("autocode-prep-job", os.MFD_CLOEXEC)

    with tempfile.TemporaryFile() as unnamed:
        return os.dup(unnamed.fileno())


class Copying:
    """A prep copy into the staging folder `dst_fd` (`dst_parts` below the workspace root).

    A context manager: leaving it ends the second process, if one runs, so
    nothing writes into the staging folder after that.
    """

    def __init__(self, dst_fd: int, dst_parts: Sequence[str], progress: Progress | None = None) -> None:
        self.dst_fd = dst_fd
        self.dst_parts = list(dst_parts)
        self.progress = progress
        self.total = 0
        self.into = perfile.Into(dst_fd, report=self._report if progress else None, hook=_test_hook)
        self.proc: subprocess.Popen[bytes] | None = None
        self.job_fd: int | None = None
        self.helper_done = self.helper_count = 0
        self.ready = False
        self.buffer = bytearray()
        self.result: tuple[Any, ...] | None = None
        self.extras: dict[str, int] = {"symlinks": 0, "emptyFolders": 0}

    def expect(self, count: int) -> None:
        """`count` more names will be looked at (the total progress reports)."""
        self.total += count

    def _report(self, done: int) -> None:
        assert self.progress is not None
        if self.helper_count and self.result is None:  # the second process is at work
            self._poll()
        self.progress(done + self.helper_done, self.total)

    def prestart(self, root_fd: int) -> None:
        """Start the second process now if the workspace looks large (its start then overlaps git's listing).

        The guess is the size of `.git/index` (an entry is 62 bytes plus its path);
        `split_wanted` decides for real once git has listed the files.
        """
        if _test_hook is not None or not _spare_cpu():
            return
        try:
            size = os.stat(".git/index", dir_fd=root_fd, follow_symlinks=False).st_size
        except OSError:
            return
        if size >= SPLIT_MIN_ENTRIES * _INDEX_BYTES_PER_FILE:
            self._spawn(root_fd)

    def split_wanted(self, root_fd: int, count: int) -> bool:
        """Whether `count` tracked files are worth a second process (started now if it is not yet)."""
        if count < SPLIT_MIN_ENTRIES or _test_hook is not None or self.helper_count or not _spare_cpu():
            return False
        if self.proc is None:
            self._spawn(root_fd)
        return self.proc is not None

    def _spawn(self, root_fd: int) -> None:
        # The job will go through an anonymous in-memory file (no path anywhere), so
        # handing it over never waits for the new process to read it; stdin only says
        # when it is there.
        self.job_fd = _anonymous_file()
        engine = Path(perfile.__file__).resolve().parents[2]
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, str(engine), str(root_fd), str(self.job_fd)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                pass_fds=(root_fd, self.job_fd),
                cwd="/",  # nothing of the workspace's folder is on its import path
            )
        except OSError:
            # No interpreter to start (an embedded Python, say): this process copies everything.
            os.close(self.job_fd)
            self.job_fd = None
            return
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)

    def start_helper(self, raw: bytes) -> bool:
        """Have the second process (see `split_wanted`) list and copy its part of git's tracked listing.

        `raw` is that part, as `perfile.group_tracked` reads it (the second
        process parses it itself). False when the process is already gone (it
        never saw the job, so it touched nothing): this process then takes it.
        """
        assert self.proc is not None and self.proc.stdin is not None and self.job_fd is not None
        identity = os.fstat(self.dst_fd)
        # For progress until it reports: one name per record.
        self.helper_count = raw.count(b"\0")
        self.expect(self.helper_count)
        job = marshal.dumps((raw, self.dst_parts, (identity.st_dev, identity.st_ino)))
        view = memoryview(job)
        while view:
            view = view[os.write(self.job_fd, view):]
        try:
            self.proc.stdin.write(perfile.frame(("job", len(job))))
            self.proc.stdin.close()
        except BrokenPipeError:
            self._give_up()
            return False
        return True

    def _give_up(self) -> None:
        """The second process ended before it was at work: its share is this process's again."""
        self.stop()
        self.total -= self.helper_count
        self.helper_count = 0

    def helper_result(self) -> tuple[list[Entry], list[tuple[str, str, bool]], dict[str, int]] | None:
        """Wait for the second process; what it listed: entries, nested folders, exclusions.

        None when it ended before it was ready to work (it could not even load its
        code, say): it touched nothing, and this process lists and copies its share.
        """
        assert self.proc is not None and self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), True)
        while self.result is None and (data := os.read(self.proc.stdout.fileno(), 1 << 16)):
            self._take(data)
        result = self.result
        if result is None and not self.ready:
            self._give_up()
            return None
        if result is None or result[0] != "looked":
            self._fail(result)
        _, entries, nested, excluded, files, copied, done = result
        self.helper_done = 0
        self.total += done - self.helper_count
        self.into.done += done
        self.into.files += files
        self.into.bytes += copied
        new_tuple = tuple.__new__
        return [new_tuple(Entry, e) for e in entries], nested, excluded

    def _poll(self) -> None:
        """Read what the second process sent, without waiting; raise its error once known."""
        assert self.proc is not None and self.proc.stdout is not None
        with contextlib.suppress(BlockingIOError):
            while data := os.read(self.proc.stdout.fileno(), 1 << 16):
                self._take(data)
        if self.result is not None and self.result[0] != "looked":
            self._fail(self.result)

    def _take(self, data: bytes) -> None:
        self.buffer += data
        for message in perfile.unframe(self.buffer):
            if message[0] == "progress":
                self.helper_done = message[1]
            elif message[0] == "ready":
                self.ready = True
            else:
                self.result = message

    def _fail(self, message: tuple[Any, ...] | None) -> NoReturn:
        if message is not None and message[0] == "failed":
            raise CopyFailure(message[1], message[2], message[3])
        self.stop()
        if message is not None and message[0] == "oserror":
            _, _, strerror, filename = message
            what = f"{strerror} ({filename})" if filename else str(strerror)
        else:
            assert self.proc is not None
            code = self.proc.returncode
            what = f"it stopped before it finished ({f'signal {-code}' if code < 0 else f'exit code {code}'})"
        raise SetupError(
            f"the second copying process failed: {what}; nothing of this copy was kept. Remedy: run "
            "prep again; if it keeps failing, check free disk space and that nothing else writes "
            "into .autocode/prep.",
            kind="copyFailed",
        )

    def make_extras(self, root_fd: int, entries: Sequence[Entry], links: dict[str, str]) -> None:
        """Make the kept links and empty submodule folders among `entries` (once the plan is known)."""
        self.extras = perfile.make_extras(root_fd, self.dst_fd, (e for e in entries if e.kind != "file"), links)

    def counts(self) -> dict[str, int]:
        if self.progress is not None:
            self.progress(self.total, self.total)
        return {"files": self.into.files, **self.extras, "bytes": self.into.bytes}

    def stop(self) -> None:
        """End the second process (it must not write while its staging folder is removed)."""
        if self.job_fd is not None:
            os.close(self.job_fd)
            self.job_fd = None
        if self.proc is None:
            return
        if self.result is not None and self.result[0] == "looked":
            # It has sent everything and is on its way out.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def __enter__(self) -> Copying:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# Maps the `autocode` and `autocode.prep` names to their folders without running
# the package `__init__`s, so the second process loads only `perfile` and `fsutil`.
_BOOTSTRAP = """\
import sys, types
for name, path in (("autocode", sys.argv[1] + "/autocode"), ("autocode.prep", sys.argv[1] + "/autocode/prep")):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from autocode.prep.perfile import worker_main
sys.exit(worker_main(int(sys.argv[2]), int(sys.argv[3])))
"""
