"""Prep copies: `.autocode/prep/<id>/source`, built in a staging folder, then checked.

Order of work: the manifest alone (nothing written yet); then the inventory,
which copies each regular file into `.autocode/prep/<id>/.staging` the moment
it lists it (one pass over the work tree instead of a listing pass and a copy
pass; a large workspace is shared with a second process, see `copier`); the
workspace half of the manifest check; the link decisions, then the kept links
and empty submodule folders; the rename to `source`; the preflight of every
declared input in the copy. Anything that fails before the rename removes the
`<id>` folder, and the `.autocode` and `prep` folders too if this call made
them; a failed preflight in the copy leaves the copy for inspection.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime
import json
import operator
import os
import re
import secrets
import shutil
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocode.atomic import write_atomically
from autocode.errors import SetupError
from autocode.prep import copier, fsutil, retention
from autocode.prep.inventory import Inventory, inventory, is_artifact, list_workspace, root_and_head
from autocode.prep.links import plan_links, refusal_error, resolve
from autocode.prep.manifest import (
    DeclaredInput,
    check_declared,
    check_input,
    load_manifest,
    raise_problems,
)
from autocode.prep.perfile import CopyFailure

PREP_DIR = ("." + "autocode", "prep")
STAGING = ".staging"
SOURCE = "source"


@dataclass(frozen=True)
class Handoff:
    """Where the next step runs: `checks_dir` is the exact folder, no parent search needed."""

    checks_dir: Path
    workspace: Path
    head: str | None
    role: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "checksDir": str(self.checks_dir),
            "workspace": str(self.workspace),
            "head": self.head,
            "role": self.role,
        }


@dataclass(frozen=True)
class PrepResult:
    id: str
    copy: Path
    head: str | None
    inputs: list[DeclaredInput]
    counts: dict[str, Any]
    handoff: Handoff | None = None
    workspace: Path | None = None
    components: list[str] = field(default_factory=list)
    # The inventory the copy was made from, so citations need no second pass (not in to_dict).
    inventory: Inventory | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workspace": str(self.workspace) if self.workspace else None,
            "copy": str(self.copy),
            "head": self.head,
            "inputs": [{**i.to_dict(), "verified": ["workspace", "copy"]} for i in self.inputs],
            "counts": self.counts,
            "nestedComponents": self.components,
            "handoff": self.handoff.to_dict() if self.handoff else None,
        }


def new_prep_id() -> str:
    now = datetime.datetime.now(datetime.UTC)
    return f"{now:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"


def make_prep_copy(
    workspace: Path | str,
    manifest: Path | str | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    role: str = "task",
) -> PrepResult:
    """Make a checked copy of `workspace` (with the inputs `manifest` declares).

    `progress(done, total)` is called as entries are copied. Raises `SetupError`
    (exit 2) for a bad manifest, an ignored input, an alias to ignored content
    or a failed preflight; in the last case the copy stays for inspection.
    """
    # The manifest alone first: a malformed one fails before git is even asked.
    items = load_manifest(manifest) if manifest is not None else []
    root, head = root_and_head(workspace)
    root_fd = os.open(root, fsutil.O_DIR & ~os.O_NOFOLLOW)
    try:
        prep_fd, made = _open_prep_dir(root_fd, root)
        try:
            # What a killed prep left (its owner lock is free now) goes before this one starts.
            retention.reclaim_abandoned(prep_fd)
            prep_id, id_fd = _new_copy_dir(prep_fd)
            try:
                copy = root.joinpath(*PREP_DIR, prep_id, SOURCE)
                try:
                    inv, counts = _build(root_fd, prep_fd, id_fd, prep_id, root, head, items, manifest, progress)
                except BaseException:
                    _undo_prep_dir(root_fd, made)
                    raise
                problems = []
                source_fd = os.open(SOURCE, fsutil.O_DIR, dir_fd=id_fd)
                try:
                    for item in items:
                        problem = check_input(source_fd, item, "copy")
                        if problem:
                            problems.append(problem)
                finally:
                    os.close(source_fd)
                raise_problems(
                    problems,
                    f"declared inputs failed the check in the copy {copy} (left there for inspection)",
                    {"copy": str(copy)},
                )
            finally:
                os.close(id_fd)
        finally:
            os.close(prep_fd)
    finally:
        os.close(root_fd)
    handoff = Handoff(copy, inv.root, inv.head, role)
    return PrepResult(prep_id, copy, inv.head, items, counts, handoff, inv.root, list(inv.components), inv)


def make_investigator_copy(
    workspace: Path | str, progress: Callable[[int, int], None] | None = None
) -> PrepResult:
    """The bug-fix Investigator's copy: dirty source and initialized nested components included.

    `result.handoff.checks_dir` is the folder in which the Investigator runs its checks.
    """
    return make_prep_copy(workspace, None, progress, role="investigator")


def _open_prep_dir(root_fd: int, root: Path) -> tuple[int, list[str]]:
    """Open `.autocode/prep` (made if missing); also which of those two folders this call made."""
    fd = os.dup(root_fd)
    made: list[str] = []
    try:
        for depth, name in enumerate(PREP_DIR):
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
                made.append(name)
            try:
                child = os.open(name, fsutil.O_DIR, dir_fd=fd)
            except OSError as exc:
                where = root.joinpath(*PREP_DIR[: depth + 1])
                try:
                    is_link = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
                except OSError:
                    is_link = False
                what = "a symbolic link" if is_link else "not a folder"
                raise SetupError(
                    f"{where} is {what}; prep copies are only written into a real folder inside the "
                    f"workspace. Remedy: remove {where} (move it aside if you need it) and run prep again.",
                    kind="destinationUnsafe",
                ) from exc
            os.close(fd)
            fd = child
        _ensure_ignore_file(fd)
    except BaseException:
        os.close(fd)
        _undo_prep_dir(root_fd, made)
        raise
    return fd, made


def _undo_prep_dir(root_fd: int, made: list[str]) -> None:
    """Remove the `.autocode` and `prep` folders this prep made, if nothing else has been put there."""
    if not made:
        return
    with contextlib.suppress(OSError):
        autocode_fd = os.open(PREP_DIR[0], fsutil.O_DIR, dir_fd=root_fd)
        try:
            if PREP_DIR[1] in made:
                with contextlib.suppress(OSError):
                    prep_fd = os.open(PREP_DIR[1], fsutil.O_DIR, dir_fd=autocode_fd)
                    try:
                        os.unlink(".gitignore", dir_fd=prep_fd)
                    finally:
                        os.close(prep_fd)
                os.rmdir(PREP_DIR[1], dir_fd=autocode_fd)
        finally:
            os.close(autocode_fd)
        if PREP_DIR[0] in made:
            os.rmdir(PREP_DIR[0], dir_fd=root_fd)


def _ensure_ignore_file(prep_fd: int) -> None:
    """`.autocode/prep/.gitignore` = `*`, so git status never lists the copies."""
    try:
        fd = os.open(".gitignore", fsutil.O_NEW_FILE, 0o644, dir_fd=prep_fd)
    except FileExistsError:
        return
    try:
        os.write(fd, b"*\n")
    finally:
        os.close(fd)


def _new_copy_dir(prep_fd: int) -> tuple[str, int]:
    """mkdir a never-used `<id>`; an existing name (even a planted link) is skipped, never reused."""
    for _ in range(8):
        prep_id = new_prep_id()
        try:
            os.mkdir(prep_id, 0o777, dir_fd=prep_fd)
        except FileExistsError:
            continue
        fd = os.open(prep_id, fsutil.O_DIR, dir_fd=prep_fd)
        # Held until this prep returns or dies: the next prep tells a live owner from a dead one.
        retention.lock_owner(fd)
        return prep_id, fd
    raise SetupError("could not allocate a new prep copy folder; remove old copies in .autocode/prep", kind="destinationUnsafe")


def _build(
    root_fd: int,
    prep_fd: int,
    id_fd: int,
    prep_id: str,
    root: Path,
    head: str | None,
    items: list[DeclaredInput],
    manifest: Path | str | None,
    progress: Callable[[int, int], None] | None,
) -> tuple[Inventory, dict[str, Any]]:
    """List and copy into `<id>/.staging`, decide the links, check the inputs, rename to `source`.

    Anything that fails removes the whole `<id>` folder: nothing half-made stays.
    """
    try:
        os.mkdir(STAGING, 0o777, dir_fd=id_fd)
        staging_fd = os.open(STAGING, fsutil.O_DIR, dir_fd=id_fd)
        try:
            # Leaving this block ends the second copying process, if any, before
            # anything is removed.
            with copier.Copying(staging_fd, (*PREP_DIR, prep_id, STAGING), progress) as copying:
                copying.prestart(root_fd)
                try:
                    inv = list_workspace(root, head, root_fd, copying)
                    if items:
                        check_declared(inv, items, str(manifest))
                    plan = plan_links(inv)
                    if plan.refused:
                        raise refusal_error(plan)
                    extras = [
                        e for e in inv.entries
                        if e.kind == "emptyFolder" or (e.kind == "symlink" and e.path in plan.keep)
                    ]
                    copying.make_extras(root_fd, extras, plan.keep)
                except CopyFailure as failure:
                    raise copier.setup_error(failure) from None
                counts: dict[str, Any] = copying.counts()
        finally:
            os.close(staging_fd)
        try:
            os.stat(SOURCE, dir_fd=id_fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            raise SetupError(f"something created {prep_id}/{SOURCE} during the copy; run prep again", kind="destinationUnsafe")
        os.rename(STAGING, SOURCE, src_dir_fd=id_fd, dst_dir_fd=id_fd)
    except BaseException:
        shutil.rmtree(prep_id, dir_fd=prep_fd, ignore_errors=True)
        raise
    excluded = Counter(inv.excluded)
    excluded.update(plan.excluded.values())
    counts["nestedRepositories"] = len(inv.components)
    counts["excluded"] = {k: v for k, v in sorted(excluded.items()) if v}
    return inv, counts


def citations(
    workspace: Path | str, limit: int = 20, fallback: Sequence[str] = (), inv: Inventory | None = None
) -> list[str]:
    """Source paths a provider may cite: tracked first, then ordinary untracked, at most `limit`.

    Caches and runner output are dropped before the limit applies. A link
    counts only when both its own path and its resolved target are eligible
    inventoried files. An empty result gives `fallback` (the task's own).
    `inv` reuses an inventory already made (e.g. `PrepResult.inventory`).
    """
    return _citations(inventory(workspace) if inv is None else inv, limit, fallback)


def _citations(inv: Inventory, limit: int, fallback: Sequence[str]) -> list[str]:
    # Tracked first, then untracked, each in path order: the inventory's own order
    # (entries are sorted by path), so the scan stops once `limit` paths are found
    # instead of judging every entry (this runs on every task start).
    wanted = max(limit, 0)
    chosen: list[str] = []
    for origin in ("tracked", "untracked"):
        for e in inv.entries:
            if len(chosen) >= wanted:
                break
            if e.origin != origin or e.kind not in ("file", "symlink") or not _citable(e.path):
                continue
            if e.kind == "symlink" and not _links_to_citable_file(inv, e.path):
                continue
            chosen.append(e.path)
    return chosen or list(fallback)


def _links_to_citable_file(inv: Inventory, path: str) -> bool:
    """Whether the link `path` resolves to an inventoried file that may itself be cited."""
    res = resolve(str(inv.root), path)
    if res.status != "file" or not _citable(res.target):
        return False
    index = bisect.bisect_left(inv.entries, res.target, key=_ENTRY_PATH)
    return index < len(inv.entries) and inv.entries[index].path == res.target and inv.entries[index].kind == "file"


_ENTRY_PATH = operator.attrgetter("path")


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _citable(path: str) -> bool:
    return _CONTROL.search(path) is None and not is_artifact(path)


def write_report(result: PrepResult, report: Path | str) -> Path:
    """Write `result` as JSON to `report` (temp file + rename; a link at `report` is replaced, not followed)."""
    path = Path(report)
    if path.is_symlink() or (path.exists() and not stat.S_ISREG(path.lstat().st_mode)):
        raise SetupError(f"report path {path} is not a regular file; pass a new file path", kind="invalidArguments")
    data = (json.dumps(result.to_dict(), indent=2) + "\n").encode("utf-8")
    write_atomically(path, data, durable=False)
    return path
