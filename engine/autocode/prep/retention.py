"""What stays in `.autocode/prep`: owner locks, reclaiming killed preps, finished copies, prune.

A prep holds an exclusive `flock` on its `<id>` folder from the moment it
makes it until it returns; the kernel drops that lock when the process ends,
however it ends. So a `<id>` folder still in staging (or never started)
whose lock can be taken belongs to a dead prep and is removed by the next
one. A task's copy is removed when the task completes or is cancelled,
after its inventory is written beside the task's other evidence; the
`keep_prep_copies` setting keeps the newest N finished copies instead.
`autocode prep prune` removes whatever else is left.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocode.prep import fsutil
from autocode.record.location import checked_folder, workspace_root

STAGING = ".staging"
SOURCE = "source"
FINISHED = ".finished"  # in `<id>`: the task using the copy has ended (its content: the time)
# A `<id>` folder with neither staging nor source is only reclaimed once this old:
# its maker may be between `mkdir` and taking the lock.
EMPTY_GRACE_S = 60.0
# A finished-looking copy nobody references is left alone this long: a task
# start writes its launch file a moment after its copy is renamed into place.
UNREFERENCED_GRACE_S = 60.0


def lock_owner(id_fd: int) -> None:
    """Take the owner lock of a new `<id>` folder (held until `id_fd` is closed or the process ends)."""
    fcntl.flock(id_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


@contextlib.contextmanager
def _owner_gone(prep_fd: int, name: str) -> Iterator[int | None]:
    """The `<id>` folder's fd while its lock is ours (its owner is gone), else None."""
    try:
        fd = os.open(name, fsutil.O_DIR, dir_fd=prep_fd)
    except OSError:
        yield None
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield None
            return
        yield fd
    finally:
        os.close(fd)


def _has(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _folders(prep_fd: int) -> list[str]:
    names = []
    with os.scandir(prep_fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                names.append(entry.name)
    return sorted(names)


def reclaim_abandoned(prep_fd: int, *, now: float | None = None) -> list[str]:
    """Remove the `<id>` folders of preps that died before their copy was finished; their names."""
    now = time.time() if now is None else now
    removed: list[str] = []
    for name in _folders(prep_fd):
        with _owner_gone(prep_fd, name) as fd:
            if fd is None or _has(fd, SOURCE):
                continue
            if not _has(fd, STAGING) and now - os.fstat(fd).st_mtime < EMPTY_GRACE_S:
                continue
            shutil.rmtree(name, dir_fd=prep_fd, ignore_errors=True)
            if not _has(prep_fd, name):
                removed.append(name)
    return removed


# --- sizes (doctor) ----------------------------------------------------------


def _tree_size(dir_fd: int) -> tuple[int, int]:
    """(files, bytes) under an open folder, links not followed."""
    files = size = 0
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                try:
                    child = os.open(entry.name, fsutil.O_DIR, dir_fd=dir_fd)
                except OSError:
                    continue
                try:
                    f, s = _tree_size(child)
                finally:
                    os.close(child)
                files += f
                size += s
            else:
                files += 1
                size += st.st_size
    return files, size


def _open_prep(root: Path) -> int | None:
    """`.autocode/prep` of `root` opened without following a link, or None when there is none."""
    folder = checked_folder(root, "prep")
    try:
        return os.open(folder, fsutil.O_DIR)
    except FileNotFoundError:
        return None


def usage(root: Path) -> dict[str, Any]:
    """Count and size of the prep copies and staging folders of the workspace `root`."""
    data: dict[str, Any] = {
        "path": str(root.joinpath(".autocode", "prep")),
        "copies": {"count": 0, "files": 0, "bytes": 0},
        "staging": {"count": 0, "files": 0, "bytes": 0, "abandoned": 0},
        "finished": 0,
    }
    prep_fd = _open_prep(root)
    if prep_fd is None:
        return data
    try:
        for name in _folders(prep_fd):
            try:
                id_fd = os.open(name, fsutil.O_DIR, dir_fd=prep_fd)
            except OSError:
                continue
            try:
                for part, key in ((SOURCE, "copies"), (STAGING, "staging")):
                    try:
                        fd = os.open(part, fsutil.O_DIR, dir_fd=id_fd)
                    except OSError:
                        continue
                    try:
                        files, size = _tree_size(fd)
                    finally:
                        os.close(fd)
                    data[key]["count"] += 1
                    data[key]["files"] += files
                    data[key]["bytes"] += size
                if _has(id_fd, FINISHED):
                    data["finished"] += 1
            finally:
                os.close(id_fd)
            with _owner_gone(prep_fd, name) as free:
                if free is not None and _has(free, STAGING) and not _has(free, SOURCE):
                    data["staging"]["abandoned"] += 1
    finally:
        os.close(prep_fd)
    return data


# --- finished tasks and prune -------------------------------------------------


def copy_id(root: Path, copy: Path | str | None) -> str | None:
    """The `<id>` of `copy` when it is exactly `<root>/.autocode/prep/<id>/source`, else None."""
    if not copy:
        return None
    path = Path(copy)
    if path.name != SOURCE or path.parent.parent != root.joinpath(".autocode", "prep"):
        return None
    name = path.parent.name
    return name if name and not name.startswith(".") and "/" not in name else None


def write_inventory(copy: Path, dest: Path) -> dict[str, Any]:
    """List the copy's files (path, size) into `dest` as evidence; (count, bytes) returned."""
    # lazy: not needed by `autocode doctor`, which imports this module
    from autocode.tasks import store

    paths: list[list[Any]] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(copy):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                size = os.lstat(full).st_size
            except OSError:
                continue
            total += size
            paths.append([os.path.relpath(full, copy), size])
    summary = {"files": len(paths), "bytes": total}
    store.write_json_atomic(dest, {"copy": str(copy), **summary, "paths": paths}, durable=False)
    return summary


@dataclass
class PruneResult:
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    in_use: list[str] = field(default_factory=list)
    recent: list[str] = field(default_factory=list)
    freed_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "removed": self.removed,
            "kept": self.kept,
            "inUse": self.in_use,
            "recent": self.recent,
            "freedBytes": self.freed_bytes,
        }


def mark_finished(root: Path, prep_id: str) -> None:
    """Note in `<id>` that its task has ended (the time orders the copies `keep_prep_copies` keeps)."""
    prep_fd = _open_prep(root)
    if prep_fd is None:
        return
    try:
        id_fd = os.open(prep_id, fsutil.O_DIR, dir_fd=prep_fd)
    except OSError:
        os.close(prep_fd)
        return
    try:
        fd = os.open(FINISHED, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                     dir_fd=id_fd)
        try:
            os.write(fd, f"{time.time():.3f}\n".encode())
        finally:
            os.close(fd)
    finally:
        os.close(id_fd)
        os.close(prep_fd)


def _referenced(root: Path) -> tuple[set[str], set[str]]:
    """`<id>`s referenced by tasks still going, and by tasks that ended."""
    going: set[str] = set()
    ended: set[str] = set()
    runs = root / ".autocode" / "runs"
    try:
        entries = list(os.scandir(runs))
    except OSError:
        return going, ended
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            launch = json.loads(Path(entry.path, "launch.json").read_text(encoding="utf-8"))
            state = json.loads(Path(entry.path, "state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        prep_id = copy_id(root, (launch.get("prep") or {}).get("copy")) if isinstance(launch, dict) else None
        if prep_id is None:
            continue
        finished = isinstance(state, dict) and state.get("state") in ("COMPLETED", "CANCELLED", "FAILED")
        (ended if finished else going).add(prep_id)
    return going, ended - going


def prune(root: Path, keep: int = 0, *, now: float | None = None, only_finished: bool = False) -> PruneResult:
    """Remove prep folders nobody needs: dead staging, finished copies past the newest `keep`, and
    (unless `only_finished`) copies no task still going uses, once older than a grace period.

    A folder whose owner lock is held (a prep still running) is never touched.
    """
    now = time.time() if now is None else now
    result = PruneResult()
    prep_fd = _open_prep(root)
    if prep_fd is None:
        return result
    going, ended = _referenced(root)
    try:
        result.removed += reclaim_abandoned(prep_fd, now=now)
        finished: list[tuple[float, str]] = []
        loose: list[str] = []
        for name in _folders(prep_fd):
            if name in going:
                result.in_use.append(name)
                continue
            with _owner_gone(prep_fd, name) as fd:
                if fd is None:
                    result.in_use.append(name)
                    continue
                if _has(fd, FINISHED):
                    finished.append((os.stat(FINISHED, dir_fd=fd, follow_symlinks=False).st_mtime, name))
                elif name in ended and not only_finished:
                    finished.append((os.fstat(fd).st_mtime, name))
                elif only_finished:
                    continue
                elif now - os.fstat(fd).st_mtime >= UNREFERENCED_GRACE_S:
                    loose.append(name)
                else:
                    result.recent.append(name)
        finished.sort(reverse=True)
        result.kept += [name for _, name in finished[:keep]]
        for name in [name for _, name in finished[keep:]] + loose:
            with _owner_gone(prep_fd, name) as fd:
                if fd is None:
                    result.in_use.append(name)
                    continue
                result.freed_bytes += _tree_size(fd)[1]
                shutil.rmtree(name, dir_fd=prep_fd, ignore_errors=True)
            if not _has(prep_fd, name):
                result.removed.append(name)
    finally:
        os.close(prep_fd)
    result.removed.sort()
    result.kept.sort()
    result.in_use.sort()
    result.recent.sort()
    return result


def release_task_copy(root: Path, copy: Path | str | None, evidence: Path, keep: int) -> dict[str, Any]:
    """A task ended: write its copy's inventory into `evidence`, mark the copy finished, and remove
    finished copies past the newest `keep` (this one included when `keep` is 0)."""
    prep_id = copy_id(root, copy)
    if prep_id is None:
        return {"status": "no-copy"}
    source = root.joinpath(".autocode", "prep", prep_id, SOURCE)
    summary: dict[str, Any] = {}
    if source.is_dir() and not source.is_symlink():
        summary = write_inventory(source, evidence / "prep-inventory.json")
    mark_finished(root, prep_id)
    outcome = prune(root, keep, only_finished=True)
    return {
        "status": "removed" if prep_id in outcome.removed else "kept",
        "prep_id": prep_id,
        **summary,
        "removed": outcome.removed,
    }


def prune_workspace(workspace: Path | str, keep: int | None = None) -> dict[str, Any]:
    """Prune the prep folders of `workspace` (`autocode prep prune`): the newest `keep` finished
    copies stay, `keep_prep_copies` of the workspace's settings when None. The report names the
    workspace's root and the number kept, beside what `prune` did."""
    # lazy: settings are resolved only for a prune, not by every task that releases its copy
    from autocode.settings import resolve_settings

    snapshot = resolve_settings(workspace)
    kept = int(snapshot.value("keep_prep_copies") or 0) if keep is None else keep
    if kept < 0:
        raise ValueError(f"keep {kept}: give 0 or more finished copies to keep")
    root = workspace_root(Path(snapshot.workspace))
    return {"workspace": str(root), "keep": kept, **prune(root, kept).to_dict()}
