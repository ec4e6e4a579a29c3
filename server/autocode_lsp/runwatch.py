"""Which task runs changed on disk in a session's folders: what another process (another editor's
own server, the CLI) did to a task reaches the session through this.

Every change of a task is committed by renaming a new `state.json` into its run folder
(`<folder>/.autocode/runs/<task id>/`). `RunWatch` tells which runs had that happen:

- on Linux, with inotify (`inotify.py`) on the event loop (`loop.add_reader`): one watch on
  each `.autocode/runs` folder (a new run folder) and one on each run folder (`state.json`
  renamed into place). While `.autocode/runs` does not exist yet (no task so far) the folder
  above it that does is watched until it appears. Nothing is looked at while nothing changes;
  a burst of events (a commit, the views written after it) comes out as one batch;
- elsewhere, or when inotify is refused (the per-user watch or instance limit reached), by
  the old look once a second at every run's `state.json` stamp. The server log says so once.

The rest of the server sees only `RunWatch`: `follow(folders)`, `await changed()`, `close()`.
`AUTOCODE_LSP_TASK_WATCH=scan` chooses the look (for comparisons, and as a way out).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from autocode_lsp import inotify

log = logging.getLogger("autocode_lsp")

Run = tuple[Path, str]
"""A task run: (the session folder it is in, its task id)."""

SCAN_INTERVAL_S = 1.0
"""How often the fallback looks at every run's state.json."""
COALESCE_S = 0.02
"""How long a batch waits after its first event for the rest of the burst."""
STATE = "state.json"

_RUNS_MASK = inotify.CREATE | inotify.MOVED_TO | inotify.MOVE_SELF | inotify.ONLYDIR | inotify.EXCL_UNLINK
_RUN_MASK = inotify.MOVED_TO | inotify.CLOSE_WRITE | inotify.ONLYDIR | inotify.EXCL_UNLINK
_ABOVE_MASK = inotify.CREATE | inotify.MOVED_TO | inotify.ONLYDIR | inotify.EXCL_UNLINK
_LIMITS = (errno.ENOSPC, errno.ENOMEM, errno.EMFILE, errno.ENFILE, errno.ENOSYS)
"""inotify_add_watch errors that mean no more watches (not: this folder is gone)."""

_told: list[str] = []
"""What the log was told about the mechanism (once per process)."""


class Unavailable(Exception):
    """inotify cannot watch what is needed: the fallback takes over."""


def _runs_dir(folder: Path) -> Path:
    return folder / ".autocode" / "runs"


def _task_ids(folder: Path) -> list[str]:
    try:
        with os.scandir(_runs_dir(folder)) as entries:
            return [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


# ---------------------------------------------------------------------- inotify


class _Notified:
    """The runs of some folders, watched with inotify; events become `pending` runs."""

    def __init__(self, wake: asyncio.Event) -> None:
        self._ino = inotify.Inotify()
        self._wake = wake
        self._where: dict[int, tuple[Path, str, str]] = {}
        """Watch descriptor -> (session folder, level: above | runs | run, task id for a run)."""
        self._folders: set[Path] = set()
        self.pending: set[Run] = set()
        self.broken: OSError | None = None
        self._loop = asyncio.get_running_loop()
        try:
            self._loop.add_reader(self._ino.fileno(), self._readable)
        except (NotImplementedError, RuntimeError) as exc:
            self._ino.close()
            raise Unavailable(f"this event loop cannot wait on a descriptor ({exc})") from exc

    def follow(self, folders: Iterable[Path]) -> None:
        for folder in folders:
            if folder not in self._folders:
                self._folders.add(folder)
                self._arm(folder, report=False)

    def take(self) -> set[Run]:
        found, self.pending = self.pending, set()
        return found

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.remove_reader(self._ino.fileno())
        self._ino.close()

    def _add(self, path: Path, mask: int, place: tuple[Path, str, str]) -> bool:
        """Watch `path`; False when it is not there (any more); `Unavailable` at a limit."""
        try:
            wd = self._ino.add(path, mask)
        except OSError as exc:
            if exc.errno in _LIMITS:
                raise Unavailable(f"inotify refused a watch on {path}: {exc.strerror}") from exc
            return False
        self._where[wd] = place
        return True

    def _arm(self, folder: Path, *, report: bool) -> None:
        """Watch the folder's runs (and each run); while `.autocode/runs` is missing, the nearest
        existing folder above it, until it appears. `report`: every run found counts as changed
        (it may have changed before its watch was in place)."""
        runs = _runs_dir(folder)
        if self._add(runs, _RUNS_MASK, (folder, "runs", "")):
            self._drop_above(folder)
            for task_id in _task_ids(folder):
                self._watch_run(folder, task_id, report=report)
            return
        for above in (runs.parent, folder):
            if self._add(above, _ABOVE_MASK, (folder, "above", "")):
                if runs.is_dir():  # created between the two looks
                    self._arm(folder, report=True)
                return
        log.debug("task runs of %s not watched: the folder is not there", folder)

    def _drop_above(self, folder: Path) -> None:
        for wd, (where, level, _) in list(self._where.items()):
            if where == folder and level == "above":
                del self._where[wd]
                self._ino.remove(wd)

    def _watch_run(self, folder: Path, task_id: str, *, report: bool) -> None:
        if self._add(_runs_dir(folder) / task_id, _RUN_MASK, (folder, "run", task_id)) and report:
            self.pending.add((folder, task_id))

    def _readable(self) -> None:
        try:
            for event in self._ino.read():
                self._on(event)
        except Unavailable as exc:
            self.broken = OSError(errno.ENOSPC, str(exc))
        except OSError as exc:
            self.broken = exc
        if self.pending or self.broken:
            self._wake.set()

    def _on(self, event: inotify.Event) -> None:
        if event.mask & inotify.Q_OVERFLOW:  # events were lost: look at everything once
            for folder in self._folders:
                self._arm(folder, report=True)
            return
        place = self._where.get(event.wd)
        if place is None:
            return
        folder, level, task_id = place
        if event.mask & inotify.IGNORED or event.mask & inotify.MOVE_SELF:
            # The folder went away (a run deleted, `.autocode` removed): watch again from above.
            self._where.pop(event.wd, None)
            if level != "run" and folder in self._folders:
                self._arm(folder, report=True)
        elif level == "run":
            if event.name == STATE:
                self.pending.add((folder, task_id))
        elif level == "runs":
            if event.mask & inotify.ISDIR:
                self._watch_run(folder, event.name, report=True)
        elif event.name in (".autocode", "runs"):
            self._arm(folder, report=True)


# ---------------------------------------------------------------------- the look once a second


Stamp = tuple[int, int, int]


def run_stamps(folder: Path) -> dict[str, Stamp]:
    """(mtime in ns, size, inode) of each run's state.json in the folder ({} when it has no runs):
    the engine replaces the file whole on every commit, so a commit changes at least the inode."""
    stamps: dict[str, Stamp] = {}
    for task_id in _task_ids(folder):
        try:
            st = os.stat(_runs_dir(folder) / task_id / STATE)
        except OSError:
            continue
        stamps[task_id] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return stamps


class _Scanned:
    """The runs of some folders, looked at once a second (where inotify is not to be had)."""

    def __init__(self, *, report_first: bool) -> None:
        self._seen: dict[Path, dict[str, Stamp]] = {}
        self._report_first = report_first

    def follow(self, folders: Iterable[Path]) -> None:
        for folder in folders:
            if folder not in self._seen:
                self._seen[folder] = {} if self._report_first else run_stamps(folder)

    async def changed(self) -> set[Run]:
        while True:
            found: set[Run] = set()
            for folder, before in self._seen.items():
                stamps = self._seen[folder] = run_stamps(folder)
                found.update((folder, task_id) for task_id, stamp in stamps.items() if before.get(task_id) != stamp)
            if found:
                return found
            await asyncio.sleep(SCAN_INTERVAL_S)

    def close(self) -> None:
        self._seen.clear()


# ---------------------------------------------------------------------- the one interface


class RunWatch:
    """The task runs of a session's folders whose state changed; create it on the event loop."""

    def __init__(self, folders: Iterable[Path] = ()) -> None:
        self._wake = asyncio.Event()
        self._folders: list[Path] = []
        self._notified: _Notified | None = None
        self._scanned: _Scanned | None = None
        if os.environ.get("AUTOCODE_LSP_TASK_WATCH", "").strip().lower() == "scan":
            self._fall_back("AUTOCODE_LSP_TASK_WATCH=scan asks for it", report_first=False)
        else:
            try:
                self._notified = _Notified(self._wake)
                _say_once("inotify", "task changes made by other processes are noticed with inotify")
            except (OSError, Unavailable) as exc:
                self._fall_back(str(exc), report_first=False)
        self.follow(folders)

    @property
    def how(self) -> str:
        """"inotify" or "scan"."""
        return "inotify" if self._notified is not None else "scan"

    def follow(self, folders: Iterable[Path]) -> None:
        """Also watch these folders' runs (those already watched are left as they are)."""
        new = [f for f in folders if f not in self._folders]
        self._folders += new
        try:
            if self._notified is not None:
                self._notified.follow(new)
        except Unavailable as exc:
            self._fall_back(str(exc), report_first=True)
        if self._scanned is not None:
            self._scanned.follow(new)

    async def changed(self) -> set[Run]:
        """Wait for the next runs whose state.json changed (at least one)."""
        while True:
            if self._scanned is not None:
                return await self._scanned.changed()
            notified = self._notified
            assert notified is not None
            await self._wake.wait()
            await asyncio.sleep(COALESCE_S)  # the rest of the burst
            self._wake.clear()
            if notified.broken is not None:
                self._fall_back(str(notified.broken), report_first=True)
                continue
            found = notified.take()
            if found:
                return found

    def close(self) -> None:
        if self._notified is not None:
            self._notified.close()
        if self._scanned is not None:
            self._scanned.close()

    def _fall_back(self, why: str, *, report_first: bool) -> None:
        """Look once a second from now on; `report_first`: every run counts as changed at the
        first look (changes may have been missed while switching)."""
        if self._notified is not None:
            self._notified.close()
            self._notified = None
        self._scanned = _Scanned(report_first=report_first)
        self._scanned.follow(self._folders)
        _say_once("scan", f"task changes made by other processes are looked for once a second "
                          f"(every run's state.json), not noticed as they happen: {why}")


def _say_once(what: str, message: str) -> None:
    if what not in _told:
        _told.append(what)
        log.log(logging.WARNING if what == "scan" else logging.INFO, message)
