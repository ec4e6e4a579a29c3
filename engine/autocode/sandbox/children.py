"""Programs a task started never outlive it: each one dies with the process that started it,
and a group left behind by a process that was killed is ended on the next start.

Two guards, because neither covers everything alone. The started program gets the kernel's
parent-death signal (SIGKILL when the thread that started it ends, which only happens when
its process dies: the thread waits for the program to its end). Its own children do not get
that signal, so each started process group is also written down (`children/<pid>.json` in
the person's state folder: the group, its start time, and the starting process and its start
time); `reap_orphans` ends every recorded group whose starting process is gone. A start time
from `/proc/<pid>/stat` tells a live process from a later one that reused its number.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1


def folder() -> Path:
    """Where the started groups are written down: `$XDG_STATE_HOME/autocode/children` on Linux."""
    # lazy: platformdirs is not needed to run a program
    import platformdirs

    return Path(platformdirs.user_state_dir("autocode", appauthor=False)) / "children"


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: read after its last ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _prctl() -> Callable[..., int] | None:
    if not Path("/proc/self").is_dir():
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    function: Callable[..., int] = libc.prctl
    return function


_PRCTL = _prctl()


def die_with_parent() -> None:
    """`preexec_fn` of a started program: SIGKILL it when the thread that started it ends.
    Resolved before the fork, so the child only makes one system call."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def record(pid: int) -> Path | None:
    """Write down the group `pid` leads (it was started in a new session); None when it cannot be."""
    started = start_time(pid)
    me = os.getpid()
    if started is None:
        return None
    where = folder()
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = where / f"{pid}.json"
        path.write_text(json.dumps({"pgid": pid, "started": started, "parent": me,
                                    "parent_started": start_time(me)}), encoding="utf-8")
    except OSError:
        return None
    return path


def forget(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def _group_members(pgid: int, since: int) -> list[int]:
    """The live processes of group `pgid` started no earlier than its leader was."""
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        try:
            group, started = int(fields[2]), int(fields[19])
        except (IndexError, ValueError):
            continue
        if group == pgid and started >= since:
            found.append(int(entry.name))
    return found


def reap_orphans() -> list[int]:
    """End every recorded group whose starting process is gone (killed before it could); returns
    the groups ended. A record whose group is gone too is removed."""
    ended: list[int] = []
    try:
        entries = list(folder().glob("*.json"))
    except OSError:
        return ended
    for path in entries:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pgid, started = int(data["pgid"]), int(data["started"])
            parent, parent_started = int(data["parent"]), data.get("parent_started")
        except (OSError, ValueError, KeyError, TypeError):
            forget(path)
            continue
        if parent_started is not None and start_time(parent) == parent_started:
            continue  # its starter still runs (and ends it itself)
        if _group_members(pgid, started):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
                ended.append(pgid)
        forget(path)
    return ended
