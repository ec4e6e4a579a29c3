"""The hunks of a review: where the merged result differs from the person's text, each with a
stable id, whether it touches the person's own edits, and applying only the hunks they kept.

The merged result is `apply.plan_file`'s (git's three-way merge); this module only compares the
person's text with it, line by line, so the review shows exactly what applying would change in
the file as the person has it now (unsaved edits included). A hunk's id is made from its path,
its own lines on both sides and how many identical hunks come before it in the file, so an edit
elsewhere in the file leaves it unchanged and the id the person saw in the preview names the same
lines at apply time.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from typing import Literal

from autocode.tasks.file_merge import FilePlan, _lines, is_binary
from autocode.tasks.models import FilePreview, PreviewHunk


@dataclass(frozen=True)
class Hunk:
    """Lines `mine[mine_at:mine_at+mine_len]` become `merged[merged_at:merged_at+merged_len]` (0-based)."""

    id: str
    mine_at: int
    mine_len: int
    merged_at: int
    merged_len: int
    overlaps: bool
    conflict: bool


def _changed_ranges(base: list[bytes], mine: list[bytes]) -> list[tuple[int, int]]:
    """The person's own edits as [start, end) ranges of their lines (an insertion is empty)."""
    matcher = difflib.SequenceMatcher(None, base, mine, autojunk=False)
    return [(j1, j2) for tag, _i1, _i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _touches(start: int, end: int, ranges: list[tuple[int, int]]) -> bool:
    for a, b in ranges:
        if start == end or a == b:
            if start <= b and a <= end:
                return True
        elif start < b and a < end:
            return True
    return False


def _blocks(merged: list[bytes]) -> list[tuple[int, int]]:
    """The [start, end) lines of each conflict in git's text, markers included."""
    found: list[tuple[int, int]] = []
    start: int | None = None
    for at, line in enumerate(merged):
        if line.startswith(b"<" * 7) and start is None:
            start = at
        elif line.startswith(b">" * 7) and start is not None:
            found.append((start, at + 1))
            start = None
    return found


def _spans(mine: list[bytes], merged: list[bytes], conflicted: bool) -> list[tuple[int, int, int, int, bool]]:
    """(mine start, end, merged start, end, conflict) of each hunk; the pieces of one conflict
    (its markers and both sides) make one hunk."""
    blocks = _blocks(merged) if conflicted else []
    out: list[tuple[int, int, int, int, bool]] = []
    owner: list[int | None] = []
    matcher = difflib.SequenceMatcher(None, mine, merged, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        block = next((n for n, (a, b) in enumerate(blocks) if a <= j1 < b or (j1 == j2 and a < j1 < b)), None)
        if block is not None and owner and owner[-1] == block:
            a1, _a2, b1, _b2, _ = out[-1]
            out[-1] = (a1, i2, b1, j2, True)
            continue
        out.append((i1, i2, j1, j2, block is not None))
        owner.append(block)
    return out


def file_hunks(plan: FilePlan) -> tuple[list[bytes], list[bytes], list[Hunk]]:
    """(the person's lines, the merged lines, the hunks between them) of one planned file; a
    conflict compares against git's text with its conflict markers, a removed file against
    nothing. A binary file is one hunk over no lines."""
    merged_bytes = plan.after
    if plan.action == "conflict" and plan.reason == "overlap" and plan.before is not None \
            and plan.theirs is not None and not any(is_binary(d) for d in (plan.base, plan.before, plan.theirs)):
        # lazy: the merge runs only for a preview of a conflict
        from autocode.tasks.file_merge import merge_text

        merged_bytes = merge_text(plan.base or b"", plan.before, plan.theirs).text
    if any(is_binary(d) for d in (plan.before, merged_bytes)):
        whole = [] if plan.before == merged_bytes else [_hunk(plan.path, [], [], 0, 0, 0, 0, {}, True,
                                                              plan.action == "conflict")]
        return [], [], whole
    mine = _lines(plan.before or b"")
    merged = _lines(merged_bytes or b"") if merged_bytes is not None else []
    if plan.before == merged_bytes and plan.action != "conflict":
        return mine, merged, []
    own = _changed_ranges(_lines(plan.base or b""), mine) if plan.base is not None or plan.before is not None else []
    seen: dict[bytes, int] = {}
    hunks: list[Hunk] = []
    for i1, i2, j1, j2, conflict in _spans(mine, merged, plan.action == "conflict"):
        overlaps = conflict or _touches(i1, i2, own)
        hunks.append(_hunk(plan.path, mine[i1:i2], merged[j1:j2], i1, i2 - i1, j1, j2 - j1, seen, overlaps, conflict))
    if not hunks and plan.action in ("write", "delete", "conflict"):
        # The texts are equal line for line but not as files (a removed empty file, a created one).
        hunks.append(_hunk(plan.path, [], [], 0, 0, 0, 0, seen, _touches(0, 0, own), plan.action == "conflict"))
    return mine, merged, hunks


def _hunk(path: str, old: list[bytes], new: list[bytes], at: int, length: int, m_at: int, m_len: int,
          seen: dict[bytes, int], overlaps: bool, conflict: bool) -> Hunk:
    content = b"\0".join([path.encode("utf-8", "surrogateescape"), b"".join(old), b"\1", b"".join(new)])
    nth = seen.get(content, 0)
    seen[content] = nth + 1
    digest = hashlib.sha256(content + b"\0" + str(nth).encode()).hexdigest()[:12]
    return Hunk(f"h-{digest}", at, length, m_at, m_len, overlaps, conflict)


def keep_only(plan: FilePlan, kept: set[str]) -> FilePlan:
    """The file with only the kept hunks applied: every hunk kept leaves the plan as it is, none
    leaves the file as the person has it, a part writes the person's text with those hunks in."""
    mine, merged, hunks = file_hunks(plan)
    chosen = [h for h in hunks if h.id in kept]
    if len(chosen) == len(hunks):
        return plan
    same = FilePlan(plan.path, "none", plan.before, plan.before, plan.reason, plan.hunks, plan.base, plan.theirs)
    if not chosen:
        return same
    if plan.action != "write":
        # A conflict, a removal or a binary file is taken or left whole (its hunks cannot be split).
        return plan
    out: list[bytes] = []
    at = 0
    for h in hunks:
        out += mine[at:h.mine_at]
        out += merged[h.merged_at:h.merged_at + h.merged_len] if h in chosen else mine[h.mine_at:h.mine_at + h.mine_len]
        at = h.mine_at + h.mine_len
    out += mine[at:]
    after = b"".join(out)
    action = "none" if after == plan.before else "write"
    return FilePlan(plan.path, action, plan.before, after, plan.reason, plan.hunks, plan.base, plan.theirs)


ACTIONS: dict[str, Literal["write", "delete", "none", "conflict"]] = {
    "write": "write", "delete": "delete", "none": "none", "conflict": "conflict"}


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def preview_files(plans: list[FilePlan]) -> list[FilePreview]:
    """Each planned file as the review shows it (1-based lines, as the editors count them)."""
    out: list[FilePreview] = []
    for plan in plans:
        _mine, merged, hunks = file_hunks(plan)
        binary = any(is_binary(d) for d in (plan.base, plan.before, plan.theirs))
        merged_text: bytes | None = plan.after
        if plan.action == "conflict" and not binary and merged:
            merged_text = b"".join(merged)
        out.append(FilePreview(
            path=plan.path,
            action=ACTIONS.get(plan.action, "write"),
            reason=plan.reason,
            binary=binary,
            mine=None if binary else _text(plan.before),
            merged=None if binary else _text(merged_text),
            hunks=[PreviewHunk(id=h.id, mine_start=h.mine_at + 1, mine_lines=h.mine_len,
                               merged_start=h.merged_at + 1, merged_lines=h.merged_len,
                               overlaps=h.overlaps, conflict=h.conflict) for h in hunks],
        ))
    return out
