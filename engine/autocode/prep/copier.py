"""Copying inventory entries into a fresh folder tree, in one process or two.

The checked per-path work lives in `perfile` (standard library only). For a
large workspace on a machine with two or more cores, `Helper` runs a second
process, started as `python -I -S` without the engine: it looks at (`lstat`)
the second half of the workspace's folders while this process looks at the
first, and later copies what it looked at while this process copies the rest.
Every path is checked the same way on either side; a failure on either side
stops both and fails the copy (the caller then removes the staging folder).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from autocode.errors import SetupError
from autocode.prep import perfile
from autocode.prep.inventory import Entry
from autocode.prep.perfile import CopyFailure

Progress = Callable[[int, int], None]

# Test-only injection point: called as hook(event, path) with event "dir"
# (before a source folder is opened) or "file" (after a file's bytes were
# copied, before they are re-checked). Never set outside tests. A copy with a
# hook set stays in this process, where the hook runs.
_test_hook: Callable[[str, str], None] | None = None

# Below this many tracked files, starting the second process (about 10 ms of
# one core) costs more than it saves.
SPLIT_MIN_ENTRIES = 3000


def changed(path: str, what: str) -> SetupError:
    return SetupError(
        f"{path!r} {what} while the prep copy was being made. Remedy: stop whatever is writing to "
        "the workspace (a build, a watcher, an editor saving) and run prep again.",
        kind="changedDuringCopy",
        data={"path": path},
    )


def _setup_error(failure: CopyFailure) -> SetupError:
    if failure.reason == "unreadable":
        return SetupError(
            f"{failure.path!r} cannot be read ({failure.what}). Remedy: make it readable, or have git "
            "ignore it if it does not belong in a copy of the source.",
            kind="unreadableFile",
            data={"path": failure.path},
        )
    return changed(failure.path, failure.what)


def copy_entries(
    src_root_fd: int,
    dst_root_fd: int,
    entries: Sequence[Entry],
    links: dict[str, str],
    progress: Progress | None = None,
    *,
    helper: Helper | None = None,
    dst_parts: Sequence[str] = (),
) -> dict[str, int]:
    """Copy `entries` (files, kept links, empty folders); return counts. Raises `changedDuringCopy`.

    With a `helper` that looked at part of the entries, it copies that part at
    the same time; `dst_parts` is then the destination's path below the source
    root (the helper opens it step by step, never through a link).
    """
    total = len(entries)
    try:
        if helper is not None and helper.paths:
            return _copy_in_two(src_root_fd, dst_root_fd, entries, links, progress, helper, dst_parts)
        report = None if progress is None else (lambda done: progress(done, total))
        groups = perfile.by_folder((e.path, e) for e in entries)
        return perfile.copy(src_root_fd, dst_root_fd, groups, links, report=report, hook=_test_hook)
    except CopyFailure as failure:
        raise _setup_error(failure) from None


def _copy_in_two(
    src_root_fd: int,
    dst_root_fd: int,
    entries: Sequence[Entry],
    links: dict[str, str],
    progress: Progress | None,
    helper: Helper,
    dst_parts: Sequence[str],
) -> dict[str, int]:
    theirs = helper.paths
    total = len(entries)
    identity = os.fstat(dst_root_fd)
    helper.copy(list(dst_parts), (identity.st_dev, identity.st_ino), {p: t for p, t in links.items() if p in theirs})
    if progress is not None:
        progress(0, total)
    report = None if progress is None else (lambda done: progress(done + helper.poll(), total))
    groups = perfile.by_folder((e.path, e) for e in entries if e.path not in theirs)
    mine = perfile.copy(src_root_fd, dst_root_fd, groups, links, report=report, shared_folders=True)
    counts = helper.finish()
    if progress is not None:
        progress(total, total)
    return {key: mine[key] + counts[key] for key in mine}


def _free_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Helper:
    """The second process of one large prep copy (a context manager: leaving it ends the process).

    `start` hands it folders to look at, `looked` collects what it found,
    `copy` has it copy those entries into the staging folder, `poll` and
    `finish` follow it. `paths` holds the entries it looked at (and copies).
    """

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.paths: set[str] = set()
        self.done = 0
        self.result: tuple[Any, ...] | None = None
        self.buffer = bytearray()

    @staticmethod
    def wanted(count: int) -> bool:
        return count >= SPLIT_MIN_ENTRIES and _test_hook is None and _free_cores() >= 2

    def start(self, root_fd: int, component: str, candidates: perfile.Candidates) -> None:
        plain = [(folder, list(items)) for folder, items in candidates.items()]
        job = marshal.dumps((root_fd, component, plain))
        # The job goes through an unlinked temporary file, so handing it over never
        # waits for the new process to start reading.
        with tempfile.TemporaryFile() as job_file:
            job_file.write(job)
            job_file.flush()
            job_file.seek(0)
            engine = Path(perfile.__file__).resolve().parents[2]
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, str(engine), str(job_file.fileno())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                pass_fds=(root_fd, job_file.fileno()),
            )

    def looked(self) -> tuple[list[Entry], list[tuple[str, str, bool]], Counter[str]]:
        """What the helper found: entries, nested folders, exclusions (waits for it)."""
        message = self._next()
        if message[0] != "looked":
            self._fail(message)
        new_tuple = tuple.__new__
        entries = [new_tuple(Entry, e) for e in message[1]]
        self.paths = {e.path for e in entries}
        return entries, [tuple(n) for n in message[2]], Counter(message[3])

    def copy(self, dst_parts: list[str], identity: tuple[int, int], links: dict[str, str]) -> None:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(perfile.frame(("copy", dst_parts, identity, links)))
        self.proc.stdin.flush()
        os.set_blocking(self.proc.stdout.fileno(), False)

    def poll(self) -> int:
        """Entries the helper has copied so far, read without waiting; raises its error once known."""
        assert self.proc is not None and self.proc.stdout is not None
        with contextlib.suppress(BlockingIOError):
            while data := os.read(self.proc.stdout.fileno(), 1 << 16):
                self._take(data)
        if self.result is not None and self.result[0] != "done":
            self._fail(self.result)
        return self.done

    def finish(self) -> dict[str, int]:
        """Wait for the helper's copy to end; its counts."""
        assert self.proc is not None and self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), True)
        while self.result is None and (data := os.read(self.proc.stdout.fileno(), 1 << 16)):
            self._take(data)
        if self.result is None or self.result[0] != "done":
            self._fail(self.result)
        return dict(self.result[1])

    def _take(self, data: bytes) -> None:
        self.buffer += data
        for message in perfile.unframe(self.buffer):
            if message[0] == "progress":
                self.done = message[1]
            else:
                self.result = message

    def _next(self) -> tuple[Any, ...]:
        assert self.proc is not None and self.proc.stdout is not None
        while not (messages := perfile.unframe(self.buffer)):
            data = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not data:
                self._fail(None)
            self.buffer += data
        return messages[0]

    def _fail(self, message: tuple[Any, ...] | None) -> NoReturn:
        if message is not None and message[0] == "failed":
            raise CopyFailure(message[1], message[2], message[3])
        if message is not None and message[0] == "oserror":
            raise OSError(message[1], message[2], message[3])
        assert self.proc is not None
        self.stop()
        code = self.proc.returncode
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        raise SetupError(
            f"the second copying process stopped before it finished ({how}); nothing of this copy "
            "was kept. Remedy: run prep again; if it keeps failing, check free disk space and memory.",
            kind="copyFailed",
        )

    def stop(self) -> None:
        """End the process (it must not write while its staging folder is removed)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def __enter__(self) -> Helper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# Maps the `autocode` and `autocode.prep` names to their folders without running
# the package `__init__`s, so the helper loads only `perfile` and `fsutil`.
_BOOTSTRAP = """\
import sys, types
for name, path in (("autocode", sys.argv[1] + "/autocode"), ("autocode.prep", sys.argv[1] + "/autocode/prep")):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from autocode.prep.perfile import worker_main
sys.exit(worker_main(int(sys.argv[2])))
"""
