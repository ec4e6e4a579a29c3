"""Applying a verified task to the person's workspace: a three-way merge per file, in Python.

For every file the task touched there are three versions: `base` (the file as
the task's prep copy captured it, uncommitted edits included), `mine` (the
workspace file now) and `theirs` (the task's result). Edits that do not
overlap are merged; overlapping edits, and a file deleted on one side while
changed on the other, are conflicts. Nothing here runs git, so no program a
repository configures (filters, hooks, merge drivers) can run, and nothing is
written while any file is in conflict: the person chooses first.

Kept whole: the line merge, its conflict hunks, the marker rendering and the
safe writes are one algorithm read top to bottom; the task's APPLYING phase
that calls it lives in `applying.py`.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from autocode import diffnames

MARK_MINE = b"<<<<<<< mine (your workspace)\n"
MARK_BASE = b"||||||| base (where the task started)\n"
MARK_SPLIT = b"=======\n"
MARK_THEIRS = b">>>>>>> theirs (AutoCode's result)\n"

CHOICES = ("mine", "theirs", "markers")


# --------------------------------------------------------------------------- the merge


@dataclass(frozen=True)
class Region:
    """One stretch of the merge: `same` (taken as is) or `conflict` (both sides changed it)."""

    kind: str
    lines: list[bytes]
    base: list[bytes] = field(default_factory=list)
    mine: list[bytes] = field(default_factory=list)
    theirs: list[bytes] = field(default_factory=list)
    mine_start: int = 0
    theirs_start: int = 0


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _sync_regions(base: list[bytes], mine: list[bytes], theirs: list[bytes]) -> list[tuple[int, int, int, int, int, int]]:
    """Stretches of base matched unchanged on both sides: (base lo, hi, mine lo, hi, theirs lo, hi)."""
    ours_blocks = difflib.SequenceMatcher(None, base, mine, autojunk=False).get_matching_blocks()
    theirs_blocks = difflib.SequenceMatcher(None, base, theirs, autojunk=False).get_matching_blocks()
    out: list[tuple[int, int, int, int, int, int]] = []
    i = j = 0
    while i < len(ours_blocks) and j < len(theirs_blocks):
        a_base, a_other, a_len = ours_blocks[i]
        b_base, b_other, b_len = theirs_blocks[j]
        lo = max(a_base, b_base)
        hi = min(a_base + a_len, b_base + b_len)
        if lo < hi:
            m_lo = a_other + (lo - a_base)
            t_lo = b_other + (lo - b_base)
            out.append((lo, hi, m_lo, m_lo + hi - lo, t_lo, t_lo + hi - lo))
        # Move on from whichever block ends first in base.
        if a_base + a_len < b_base + b_len:
            i += 1
        else:
            j += 1
    out.append((len(base), len(base), len(mine), len(mine), len(theirs), len(theirs)))
    return out


def merge3(base: list[bytes], mine: list[bytes], theirs: list[bytes]) -> list[Region]:
    """The diff3 merge of line lists: regions in order, each `same` or `conflict`."""
    regions: list[Region] = []
    b_at = m_at = t_at = 0
    for b_lo, b_hi, m_lo, m_hi, t_lo, t_hi in _sync_regions(base, mine, theirs):
        old, ours, other = base[b_at:b_lo], mine[m_at:m_lo], theirs[t_at:t_lo]
        if ours or other or old:
            if ours == other:
                regions.append(Region("same", ours))
            elif ours == old:
                regions.append(Region("same", other))
            elif other == old:
                regions.append(Region("same", ours))
            else:
                regions.append(
                    Region("conflict", [], base=old, mine=ours, theirs=other, mine_start=m_at, theirs_start=t_at)
                )
        if b_hi > b_lo:
            regions.append(Region("same", base[b_lo:b_hi]))
        b_at, m_at, t_at = b_hi, m_hi, t_hi
    return regions


def _ended(lines: list[bytes]) -> list[bytes]:
    """Lines to put before a marker: the last one gets a newline if it lacks one."""
    if lines and not lines[-1].endswith(b"\n"):
        return [*lines[:-1], lines[-1] + b"\n"]
    return lines


def render(regions: Iterable[Region], *, markers: bool) -> bytes:
    out: list[bytes] = []
    for region in regions:
        if region.kind == "same":
            out += region.lines
        elif markers:
            out += [MARK_MINE, *_ended(region.mine), MARK_BASE, *_ended(region.base), MARK_SPLIT,
                    *_ended(region.theirs), MARK_THEIRS]
        else:
            raise ValueError("a conflicted merge can only be rendered with markers")
    return b"".join(out)


def hunks(regions: Iterable[Region]) -> list[dict[str, int]]:
    return [
        {
            "mine_start": r.mine_start + 1,
            "mine_lines": len(r.mine),
            "theirs_start": r.theirs_start + 1,
            "theirs_lines": len(r.theirs),
        }
        for r in regions
        if r.kind == "conflict"
    ]


# --------------------------------------------------------------------------- one file


@dataclass
class FilePlan:
    """What applying does to one file. `after` None means the file is removed."""

    path: str
    action: str  # "write", "delete", "none" (already as wanted) or "conflict"
    before: bytes | None  # mine: what the workspace (or the editor's buffer) holds now
    after: bytes | None
    reason: str | None = None  # for conflicts: overlap, deletedInWorkspace, deletedByTask, renamed
    hunks: list[dict[str, int]] = field(default_factory=list)
    base: bytes | None = None
    theirs: bytes | None = None

    def conflict_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "hunks": self.hunks}


def plan_file(path: str, base: bytes | None, mine: bytes | None, theirs: bytes | None) -> FilePlan:
    """Decide one file from its three versions (None: the file does not exist there)."""

    def done(action: str, after: bytes | None, reason: str | None = None, found: list[dict[str, int]] | None = None) -> FilePlan:
        return FilePlan(path, action, mine, after, reason, found or [], base, theirs)

    if mine == theirs:
        return done("none", mine)
    if mine == base:
        return done("delete" if theirs is None else "write", theirs)
    if theirs == base:
        return done("none", mine)  # the task left it as it was; the person's change stays
    # Both sides changed it, differently.
    if theirs is None:
        return done("conflict", None, "deletedByTask")
    if mine is None:
        return done("conflict", theirs, "deletedInWorkspace")
    regions = merge3(_lines(base or b""), _lines(mine), _lines(theirs))
    found = hunks(regions)
    if found:
        return done("conflict", None, "overlap", found)
    return done("write", render(regions, markers=False))


def resolve_file(plan: FilePlan, choice: str) -> FilePlan:
    """The person's choice for a conflicted file: keep `mine`, take `theirs`, or write `markers`."""
    if choice not in CHOICES:
        raise ValueError(f"choice {choice!r} for {plan.path} is not one of {', '.join(CHOICES)}")
    if choice == "mine":
        return FilePlan(plan.path, "none", plan.before, plan.before, plan.reason, plan.hunks, plan.base, plan.theirs)
    if choice == "theirs":
        action = "none" if plan.before == plan.theirs else ("delete" if plan.theirs is None else "write")
        return FilePlan(plan.path, action, plan.before, plan.theirs, plan.reason, plan.hunks, plan.base, plan.theirs)
    regions = merge3(_lines(plan.base or b""), _lines(plan.before or b""), _lines(plan.theirs or b""))
    if not hunks(regions):
        # A deletion on one side: the whole file is the conflict.
        regions = [Region("conflict", [], base=_lines(plan.base or b""), mine=_lines(plan.before or b""),
                          theirs=_lines(plan.theirs or b""))]
    return FilePlan(plan.path, "write", plan.before, render(regions, markers=True), plan.reason, plan.hunks,
                    plan.base, plan.theirs)


# --------------------------------------------------------------------------- the whole change


Reader = Callable[[str], "bytes | None"]


class Editor(Protocol):
    """An editor that applies the change itself (LSP `workspace/applyEdit`): open buffers,
    unsaved edits and undo included. Called from the engine's thread; may block."""

    def read(self, rel: str) -> bytes | None:
        """The buffer's text when the file is open in the editor, else None (the disk is read)."""
        ...

    can_apply: bool
    """False for an editor that only reports its buffers (it cannot apply edits itself)."""

    def open_paths(self, paths: list[str]) -> list[str]:
        """Of these paths, those open in the editor: their change goes through it."""
        ...

    def unsaved(self, paths: list[str]) -> list[str]:
        """Of these paths, those open in the editor with unsaved edits (checked before a write
        from disk, which would otherwise be overwritten by the buffer later)."""
        ...

    def apply(self, label: str, plans: list[FilePlan]) -> tuple[bool | None, str]:
        """Apply the planned files: (True, "") only when the editor said it applied them;
        (False, reason) when it refused; (None, reason) when it cannot take this change (the
        engine writes the files instead)."""
        ...


def safe_path(workspace: Path, rel: str) -> Path:
    """The workspace path of `rel`; refuses anything that would leave the workspace."""
    parts = Path(rel).parts
    if not rel or Path(rel).is_absolute() or ".." in parts or (parts and parts[0] in (".git", ".autocode")):
        raise ValueError(f"{rel!r} is not a path inside the workspace that a task may change")
    target = workspace / rel
    parent = target.parent
    while parent != workspace and parent != parent.parent:
        if parent.is_symlink():
            raise ValueError(f"{rel!r} goes through the symbolic link {parent.relative_to(workspace)}")
        parent = parent.parent
    return target


def read_disk(workspace: Path) -> Reader:
    def read(rel: str) -> bytes | None:
        target = safe_path(workspace, rel)
        if target.is_symlink():
            raise ValueError(f"{rel} is a symbolic link in the workspace; AutoCode does not write through it")
        try:
            return target.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    return read


def plan_change(
    files: Iterable[str], base: Reader, mine: Reader, theirs: Reader
) -> list[FilePlan]:
    return [plan_file(rel, base(rel), mine(rel), theirs(rel)) for rel in files]


def write_plans(workspace: Path, plans: Iterable[FilePlan]) -> list[str]:
    """Write each planned file atomically (its mode kept); returns the paths written or removed."""
    written: list[str] = []
    for plan in plans:
        if plan.action == "write" and plan.after is not None:
            _write_atomic(safe_path(workspace, plan.path), plan.after)
            written.append(plan.path)
        elif plan.action == "delete":
            target = safe_path(workspace, plan.path)
            if target.exists() or target.is_symlink():
                target.unlink()
            written.append(plan.path)
    return written


def save_files(workspace: Path, paths: Iterable[str]) -> dict[str, tuple[bytes, int] | None]:
    """What each path holds on disk now (its bytes and mode, None when absent), for `restore_files`."""
    saved: dict[str, tuple[bytes, int] | None] = {}
    for rel in paths:
        target = safe_path(workspace, rel)
        try:
            saved[rel] = (target.read_bytes(), stat.S_IMODE(target.stat().st_mode))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            saved[rel] = None
    return saved


def restore_files(workspace: Path, saved: dict[str, tuple[bytes, int] | None]) -> None:
    """Put each saved path back as `save_files` found it (an absent file is removed again)."""
    for rel, was in saved.items():
        target = safe_path(workspace, rel)
        if was is None:
            if target.is_file() or target.is_symlink():
                target.unlink()
            # and the folders made for it, while they are empty
            parent = target.parent
            while parent != workspace and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
            continue
        data, mode = was
        try:
            if target.is_file() and target.read_bytes() == data:
                continue
        except OSError:
            pass
        _write_atomic(target, data)
        os.chmod(target, mode)


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".autocode")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------- the base


def unapply(theirs: bytes | None, file_diff: str) -> bytes | None:
    """The file before a unified diff, from the file after it (the diff applied exactly, maybe at an
    offset). Used when the task's base was not captured; None when the diff created the file."""
    hunks_ = _parse_hunks(file_diff)
    if hunks_ is None:
        return None
    created, deleted, parsed = hunks_
    if created:
        return None
    if deleted:
        return b"".join(b"".join(old) for old, _ in parsed)
    lines = _lines(theirs or b"")
    out: list[bytes] = []
    at = 0
    for old, new in parsed:
        start = _find(lines, new, at)
        if start < 0:
            raise ValueError("the change does not match the task's result")
        out += lines[at:start] + old
        at = start + len(new)
    out += lines[at:]
    return b"".join(out)


def _find(lines: list[bytes], block: list[bytes], at: int) -> int:
    if not block:
        return at
    for i in range(at, len(lines) - len(block) + 1):
        if lines[i : i + len(block)] == block:
            return i
    return -1


_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _parse_hunks(file_diff: str) -> tuple[bool, bool, list[tuple[list[bytes], list[bytes]]]] | None:
    """(created, deleted, [(old lines, new lines)]) of one file's unified diff; hunk bodies are
    read by the line counts of their headers, so a removed "-- x" line is not a header."""
    created = deleted = False
    parsed: list[tuple[list[bytes], list[bytes]]] = []
    rows = file_diff.splitlines(keepends=True)
    i = 0
    while i < len(rows):
        raw = rows[i]
        i += 1
        if raw.startswith("--- "):
            created = _name(raw[4:]) is None
            continue
        if raw.startswith("+++ "):
            deleted = _name(raw[4:]) is None
            continue
        match = _HUNK.match(raw)
        if not match:
            continue
        old_left = int(match.group(1)) if match.group(1) is not None else 1
        new_left = int(match.group(2)) if match.group(2) is not None else 1
        old: list[bytes] = []
        new: list[bytes] = []
        while i < len(rows) and (old_left > 0 or new_left > 0 or rows[i].startswith("\\")):
            line = rows[i]
            i += 1
            text = line[1:].encode("utf-8", "surrogateescape")
            if line.startswith("\\"):
                # "\ No newline at end of file": the line before had none.
                prev = rows[i - 2][:1]
                for side in ((old,) if prev == "-" else (new,) if prev == "+" else (old, new)):
                    if side and side[-1].endswith(b"\n"):
                        side[-1] = side[-1][:-1]
            elif line.startswith("-"):
                old.append(text)
                old_left -= 1
            elif line.startswith("+"):
                new.append(text)
                new_left -= 1
            else:  # context (a blank line may have lost its leading space)
                text = text if line.startswith(" ") else line.encode("utf-8", "surrogateescape")
                old.append(text)
                new.append(text)
                old_left -= 1
                new_left -= 1
        parsed.append((old, new))
    if not parsed and not created and not deleted:
        return None
    return created, deleted, parsed


def split_diff(diff: str) -> dict[str, str]:
    """Each file's part of a multi-file unified diff, by its path (the old path for a deletion)."""
    parts: dict[str, str] = {}
    current: list[str] = []
    name: str | None = None

    def flush() -> None:
        if name is not None and current:
            parts[name] = parts.get(name, "") + "".join(current)

    rows = diff.splitlines(keepends=True)
    i = 0
    while i < len(rows):
        raw = rows[i]
        if raw.startswith("--- ") and i + 1 < len(rows) and rows[i + 1].startswith("+++ "):
            flush()
            old = _name(raw[4:])
            new = _name(rows[i + 1][4:])
            name = new if new is not None else old
            current = [raw, rows[i + 1]]
            i += 2
            match_rows = True
            while match_rows and i < len(rows):
                match = _HUNK.match(rows[i])
                if not match:
                    break
                old_left = int(match.group(1)) if match.group(1) is not None else 1
                new_left = int(match.group(2)) if match.group(2) is not None else 1
                current.append(rows[i])
                i += 1
                while i < len(rows) and (old_left > 0 or new_left > 0 or rows[i].startswith("\\")):
                    line = rows[i]
                    current.append(line)
                    i += 1
                    if line.startswith("\\"):
                        continue
                    if not line.startswith("+"):
                        old_left -= 1
                    if not line.startswith("-"):
                        new_left -= 1
            continue
        i += 1
    flush()
    return parts


def _name(field_text: str) -> str | None:
    return diffnames.header_name(field_text)
