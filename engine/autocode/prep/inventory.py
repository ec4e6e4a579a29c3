"""The workspace inventory: which paths a prep copy holds, read through git.

Tracked, modified and untracked-not-ignored files of the workspace and of every
initialized nested git component (submodules with a `.git`, untracked nested
repositories), each listed by its own git with its own ignore rules. Every
path is then looked at with `lstat` relative to its parent folder's
descriptor, so the copy can check it opens the very file that was listed.
"""

from __future__ import annotations

import operator
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autocode import gitsafe
from autocode.prep import fsutil, perfile
from autocode.prep.entry import Entry
from autocode.workspace import resolve as resolve_workspace

if TYPE_CHECKING:
    from autocode.prep.copier import Copying

AUTOCODE_DIR = ".autocode"
_AUTOCODE_PREFIX = AUTOCODE_DIR + "/"
_PATH = operator.itemgetter(0)

# Folders and files that hold caches or runner output rather than source; they
# never become citations even when a repository forgot to ignore them.
ARTIFACT_DIRS = frozenset(
    {
        ".autocode", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox",
        ".nox", ".hypothesis", "node_modules", ".venv", "venv", ".cache", "htmlcov", ".eggs",
        "dist", "build", ".ipynb_checkpoints", ".gradle", ".next", ".parcel-cache",
    }
)
ARTIFACT_SUFFIXES = (".pyc", ".pyo", ".log", ".egg-info")
ARTIFACT_NAMES = frozenset({".coverage", "coverage.xml", "junit.xml", ".DS_Store"})


@dataclass
class Inventory:
    root: Path
    head: str | None
    entries: list[Entry] = field(default_factory=list)
    excluded: Counter[str] = field(default_factory=Counter)
    components: list[str] = field(default_factory=list)

    def by_path(self) -> dict[str, Entry]:
        return {e.path: e for e in self.entries}

    def folders(self) -> set[str]:
        """Every folder that holds an inventoried entry ('' is the workspace)."""
        result = {""}
        for e in self.entries:
            parts = e.path.split("/")
            stop = len(parts) if e.kind == "emptyFolder" else len(parts) - 1
            for i in range(1, stop + 1):
                result.add("/".join(parts[:i]))
        return result

    def paths(self) -> list[str]:
        return [e.path for e in self.entries]


def workspace_root(workspace: Path | str) -> Path:
    """The resolved top folder of the work tree `workspace`, or a SetupError saying what to pass."""
    return root_and_head(workspace)[0]


def root_and_head(workspace: Path | str) -> tuple[Path, str | None]:
    """The work tree's top folder (a sub-folder is refused: a prep copy is of a whole tree) and HEAD."""
    checked = resolve_workspace(workspace, top_only=True)
    return checked.root, checked.head


def inventory(workspace: Path | str) -> Inventory:
    """List what a prep copy of `workspace` holds (read-only: nothing is written)."""
    root, head = root_and_head(workspace)
    root_fd = os.open(root, fsutil.O_DIR & ~os.O_NOFOLLOW)
    try:
        return list_workspace(root, head, root_fd)
    finally:
        os.close(root_fd)


def list_workspace(root: Path, head: str | None, root_fd: int, copying: Copying | None = None) -> Inventory:
    """The inventory of the work tree `root` (open as `root_fd`).

    With `copying`, each regular file is also copied the moment it is listed,
    and a large workspace's folders are shared with a second process.
    Raises `perfile.CopyFailure` when a file changes under the copy.
    """
    inv = Inventory(root=root, head=head)
    _collect(inv, root_fd, "", copying)
    inv.entries.sort(key=_PATH)  # paths are unique: order by path alone
    return inv


def _collect(inv: Inventory, root_fd: int, component: str, copying: Copying | None) -> None:
    prefix = component + "/" if component else ""
    cwd = inv.root / component if component else inv.root
    exclude = [f"/{AUTOCODE_DIR}/"] if not component else []
    nested: list[tuple[str, str, bool]] = []  # (path, origin, has .git)
    with gitsafe.PendingListing(cwd, exclude) as listing:
        # The tracked list comes first; its files are looked at (and copied) while
        # git still walks the tree for untracked and ignored paths.
        raw = listing.tracked_raw()
        theirs = b""  # the second process's part of the listing, if one takes a part
        if copying is not None and not component and copying.split_wanted(root_fd, raw.count(b"\0")):
            mine, theirs = perfile.split_records(raw)
            if theirs and copying.start_helper(theirs):
                raw = mine
            else:
                theirs = b""
        links_before = inv.excluded["belowSymlinkOrFile"]
        _look_tracked(inv, root_fd, component, raw, nested, copying)
        if inv.excluded["belowSymlinkOrFile"] > links_before:
            # A tracked folder is a link or a file now: git's walks, started before, may be
            # following it (see PendingListing.restart_walks).
            listing.restart_walks()
        untracked = [prefix + path for path in listing.untracked()]
        if copying is not None:
            copying.expect(len(untracked))
        # An untracked folder git lists with a trailing "/" holds a repository of its own.
        repos = {path[:-1] for path in untracked if path.endswith("/")}
        groups = perfile.names_by_folder(path[:-1] if path.endswith("/") else path for path in untracked)
        _look(inv, root_fd, component, groups, "untracked", repos, nested, copying)
        if copying is not None and copying.helper_count and not component:
            result = copying.helper_result()
            if result is None:  # the second process never started work: do its share here
                _look_tracked(inv, root_fd, component, theirs, nested, copying)
            else:
                _add(inv, nested, *result)
        # Our own folder shows up as ignored only because of the extra exclude above.
        inv.excluded["ignored"] += sum(1 for p in listing.ignored() if p != _AUTOCODE_PREFIX or component)
    for path, origin, has_git in nested:
        if has_git and _is_own_toplevel(inv.root / path):
            inv.components.append(path)
            _collect(inv, root_fd, path, copying)
        elif origin == "tracked":
            inv.entries.append(Entry(path, "emptyFolder", origin, component))
        else:
            inv.excluded["nestedUnreadable"] += 1


def _look(
    inv: Inventory,
    root_fd: int,
    component: str,
    candidates: perfile.Candidates,
    origin: str,
    nested_paths: set[str],
    nested: list[tuple[str, str, bool]],
    copying: Copying | None,
) -> None:
    """`lstat` (and copy) each candidate relative to its folder's descriptor; add entries or exclusion counts."""
    into = None if copying is None else copying.into
    _add(inv, nested, *perfile.look(root_fd, candidates, component, origin, nested_paths, Entry, into))


def _look_tracked(
    inv: Inventory,
    root_fd: int,
    component: str,
    raw: bytes,
    nested: list[tuple[str, str, bool]],
    copying: Copying | None,
) -> None:
    """`_look` at (part of) git's raw tracked listing of `component`."""
    candidates, count, gitlinks, own = perfile.group_tracked(raw, component + "/" if component else "")
    inv.excluded["autocodeFolder"] += own
    if copying is not None:
        copying.expect(count)
    _look(inv, root_fd, component, candidates, "tracked", gitlinks, nested, copying)


def _add(
    inv: Inventory,
    nested: list[tuple[str, str, bool]],
    entries: list[Entry],
    found: list[tuple[str, str, bool]],
    excluded: dict[str, int],
) -> None:
    inv.entries.extend(entries)
    nested.extend(found)
    inv.excluded.update(excluded)


def _is_own_toplevel(path: Path) -> bool:
    top = gitsafe.toplevel(path)
    return top is not None and top.resolve() == path.resolve()


def is_artifact(path: str) -> bool:
    parts = path.split("/")
    if any(p in ARTIFACT_DIRS for p in parts[:-1]):
        return True
    name = parts[-1]
    return name in ARTIFACT_NAMES or name in ARTIFACT_DIRS or name.endswith(ARTIFACT_SUFFIXES)
