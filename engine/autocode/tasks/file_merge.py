"""Applying a verified task to the person's workspace: a three-way merge per file, by git.

For every file the task touched there are three versions: `base` (the file as
the task's prep copy captured it, uncommitted edits included), `mine` (the
workspace file now) and `theirs` (the task's result). The text of each file is
merged by `git merge-file` (through `gitsafe`, on temporary copies outside the
repository, so no filter, hook or merge driver a repository configures runs);
overlapping edits, a file deleted on one side while changed on the other, and
binary files changed on both sides are conflicts, and nothing is written while
any file is in conflict: the person chooses first.

Kept whole: the per-file decision, the person's choice and the safe writes are
one path read top to bottom; the task's APPLYING phase that calls it lives in
`apply_phase.py`.
"""

from __future__ import annotations

import difflib
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from autocode import diffnames, gitsafe
from autocode.atomic import write_atomically

LABELS = ("mine (your workspace)", "base (where the task started)", "theirs (AutoCode's result)")

CHOICES = ("mine", "theirs", "markers")


# --------------------------------------------------------------------------- the merge


def _lines(data: bytes) -> list[bytes]:
    """Lines as git counts them: split after each LF only (a lone CR stays inside its line)."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def is_binary(data: bytes | None) -> bool:
    """git's own test for a file it will not merge line by line: a NUL among the first 8000 bytes."""
    return data is not None and b"\0" in data[:8000]


@dataclass(frozen=True)
class Merge:
    """One file merged: its text (with conflict markers where both sides changed the same
    lines), how many conflicts git found, and where each lies in mine and theirs."""

    text: bytes
    conflicts: int
    hunks: list[dict[str, int]]


_MARKER_RUN = re.compile(rb"^(<+|\|+|=+|>+)", re.MULTILINE)


def _marker_size(*texts: bytes) -> int:
    """Markers longer than any run of a marker character starting a line of the texts (at least
    git's 7), so every marker line in git's answer is told apart from the text."""
    longest = max((len(m.group(1)) for text in texts for m in _MARKER_RUN.finditer(text)), default=0)
    return max(7, longest + 1)


def merge_text(base: bytes, mine: bytes, theirs: bytes) -> Merge:
    """git's three-way merge of one text file (`git merge-file --diff3`)."""
    size = _marker_size(base, mine, theirs)
    merged = gitsafe.merge_file(mine, base, theirs, labels=LABELS, marker_size=size)
    found = _conflict_hunks(merged.text, size, _lines(mine), _lines(theirs)) if merged.conflicts else []
    return Merge(merged.text, merged.conflicts, found)


def _conflict_hunks(text: bytes, size: int, mine: list[bytes], theirs: list[bytes]) -> list[dict[str, int]]:
    """Where each conflict of git's answer lies in mine and in theirs (1-based lines)."""
    views: tuple[list[bytes], list[bytes]] = ([], [])  # the merge with every conflict taken from mine / theirs
    spans: list[tuple[int, int, int, int]] = []
    section, at = "common", (0, 0)
    for line in _lines(text):
        marker = line[:size]
        if marker == b"<" * size:
            section, at = "mine", (len(views[0]), len(views[1]))
        elif marker == b"|" * size:
            section = "base"
        elif marker == b"=" * size:
            section = "theirs"
        elif marker == b">" * size:
            section = "common"
            spans.append((at[0], len(views[0]) - at[0], at[1], len(views[1]) - at[1]))
        else:
            if section in ("common", "mine"):
                views[0].append(line)
            if section in ("common", "theirs"):
                views[1].append(line)
    found: list[dict[str, int]] = []
    ends = [0, 0]
    for m_at, m_len, t_at, t_len in spans:
        m_start = _locate(views[0], mine, m_at, m_len, ends[0])
        t_start = _locate(views[1], theirs, t_at, t_len, ends[1])
        ends = [m_start + m_len, t_start + t_len]
        found.append({"mine_start": m_start + 1, "mine_lines": m_len, "theirs_start": t_start + 1, "theirs_lines": t_len})
    return found


def _key(line: bytes) -> bytes:
    """A line without its ending: git ends a conflict's last line where the file did not."""
    return line.rstrip(b"\r\n")


def _locate(view: list[bytes], side: list[bytes], at: int, length: int, not_before: int) -> int:
    """Where the conflict at line `at` of `view` (the merge with every conflict taken from one
    side) starts in that side. The two differ only by the other side's clean edits, so matching
    their lines gives the place; in text that repeats itself the nearest copy of the conflict's own
    lines is taken, so a hunk always names exactly the lines git put between its markers."""
    keys, side_keys = [_key(line) for line in view], [_key(line) for line in side]
    guess = max(_aligned(keys, side_keys, at), not_before)
    wanted = keys[at : at + length]
    starts = [i for i in range(not_before, len(side) - length + 1) if side_keys[i : i + length] == wanted]
    return min(starts, key=lambda i: abs(i - guess)) if starts and length else min(guess, len(side))


def _aligned(view: list[bytes], side: list[bytes], at: int) -> int:
    """Line `at` of `view` carried into `side` along their longest matching stretches."""
    done_view = done_side = 0
    for v_at, s_at, length in difflib.SequenceMatcher(None, view, side, autojunk=False).get_matching_blocks():
        if v_at <= at < v_at + length:
            return s_at + at - v_at
        if at < v_at:
            return min(done_side + at - done_view, s_at)
        done_view, done_side = v_at + length, s_at + length
    return min(done_side + at - done_view, len(side))


def _whole_file_markers(base: bytes | None, mine: bytes | None, theirs: bytes | None) -> bytes:
    """Conflict markers around the whole file, for a deletion on one side (git has no lines to
    merge there); in the file's own line ending."""
    eol = b"\r\n" if b"\r\n" in (mine or theirs or b"") else b"\n"
    size = _marker_size(base or b"", mine or b"", theirs or b"")

    def ended(data: bytes | None) -> bytes:
        return data + eol if data and not data.endswith(b"\n") else data or b""

    return b"".join([
        b"<" * size + b" " + LABELS[0].encode() + eol, ended(mine),
        b"|" * size + b" " + LABELS[1].encode() + eol, ended(base),
        b"=" * size + eol, ended(theirs),
        b">" * size + b" " + LABELS[2].encode() + eol,
    ])


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
    if is_binary(base) or is_binary(mine) or is_binary(theirs):
        return done("conflict", None, "overlap")  # no lines to merge: the person picks a side
    merged = merge_text(base or b"", mine, theirs)
    if merged.conflicts:
        return done("conflict", None, "overlap", merged.hunks)
    return done("write", merged.text)


def resolve_file(plan: FilePlan, choice: str) -> FilePlan:
    """The person's choice for a conflicted file: keep `mine`, take `theirs`, or write `markers`."""
    if choice not in CHOICES:
        raise ValueError(f"choice {choice!r} for {plan.path} is not one of {', '.join(CHOICES)}")
    if choice == "mine":
        return FilePlan(plan.path, "none", plan.before, plan.before, plan.reason, plan.hunks, plan.base, plan.theirs)
    if choice == "theirs":
        action = "none" if plan.before == plan.theirs else ("delete" if plan.theirs is None else "write")
        return FilePlan(plan.path, action, plan.before, plan.theirs, plan.reason, plan.hunks, plan.base, plan.theirs)
    if any(is_binary(data) for data in (plan.base, plan.before, plan.theirs)):
        raise ValueError(f"{plan.path} is a binary file, which conflict markers would break; "
                         "choose mine or theirs for it")
    merged = None
    if plan.before is not None and plan.theirs is not None:
        merged = merge_text(plan.base or b"", plan.before, plan.theirs)
    # A deletion on one side (or nothing git calls a conflict): the whole file is the conflict.
    text = merged.text if merged is not None and merged.conflicts else _whole_file_markers(
        plan.base, plan.before, plan.theirs)
    return FilePlan(plan.path, "write", plan.before, text, plan.reason, plan.hunks, plan.base, plan.theirs)


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

    def save(self, plans: list[FilePlan]) -> list[str]:
        """After `apply`: put these buffers (which held no unsaved edits) on disk; returns the paths
        saved. Optional: an editor without it leaves them unsaved (the task then waits for a save)."""
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
        _write_atomic(target, data, mode)


def _write_atomic(target: Path, data: bytes, mode: int | None = None) -> None:
    """A workspace file replaced as an editor saves one: not synced, its mode kept unless given."""
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, data, durable=False, mode=mode)


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
