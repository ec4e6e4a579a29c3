"""The apply's per-file merge against git's own: on random code-like files (shared deletions,
insertions at the same place, CRLF, no final newline) AutoCode decides every file exactly as
`git merge-file` merges it, and a binary file changed on both sides is a conflict, never a
line merge.

The oracle is the plain `git merge-file` binary run here on temporary files, apart from
AutoCode's own call through gitsafe."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autocode.tasks.file_merge import LABELS, plan_file, resolve_file
from support.tasks import BRACES_BASE, BRACES_MINE, BRACES_THEIRS

CODE_LINES = ["{", "}", "  x();", "", "if (a) {", "return 0;", "  y = 1;", "// note"]


def git_merge(base: bytes, mine: bytes, theirs: bytes) -> tuple[int, bytes]:
    """(conflicts, text) of `git merge-file -p --diff3` with AutoCode's labels."""
    with tempfile.TemporaryDirectory() as folder:
        where = Path(folder)
        for name, data in (("mine", mine), ("base", base), ("theirs", theirs)):
            (where / name).write_bytes(data)
        proc = subprocess.run(
            ["git", "merge-file", "-p", "--diff3", "-L", LABELS[0], "-L", LABELS[1], "-L", LABELS[2],
             "mine", "base", "theirs"],
            cwd=where, capture_output=True, check=False,
        )
    assert 0 <= proc.returncode <= 127, proc.stderr
    return proc.returncode, proc.stdout


@st.composite
def three_versions(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    """A base file and two edited versions of it: some edits made on both sides alike (a shared
    deletion, the same insertion), some on one side, in one line ending, maybe without a final one."""
    line = st.sampled_from(CODE_LINES)
    base = draw(st.lists(line, min_size=0, max_size=10))
    shared = draw(st.lists(st.tuples(st.sampled_from(["delete", "insert"]), st.integers(0, 10), line), max_size=2))
    sides = []
    for _ in range(2):
        lines = list(base)
        own = draw(st.lists(st.tuples(st.sampled_from(["delete", "insert", "replace"]), st.integers(0, 10), line),
                            max_size=3))
        for op, at, text in [*shared, *own]:
            at = min(at, len(lines))
            if op == "insert":
                lines.insert(at, text)
            elif lines:
                at = min(at, len(lines) - 1)
                if op == "delete":
                    del lines[at]
                else:
                    lines[at] = text + " // changed"
        sides.append(lines)
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    final = [draw(st.booleans()) for _ in range(3)]

    def text(lines: list[str], ends: bool) -> bytes:
        body = eol.join(lines)
        return (body + eol if ends and lines else body).encode()

    return text(base, final[0]), text(sides[0], final[1]), text(sides[1], final[2])


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    return [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _same_lines(ours: list[bytes], gits: list[bytes]) -> bool:
    """Equal line lists, where git may have ended the last line (it adds one before a marker)."""
    if len(ours) != len(gits) or ours[:-1] != gits[:-1]:
        return False
    return not ours or ours[-1].rstrip(b"\r\n") == gits[-1].rstrip(b"\r\n")


def _git_sections(text: bytes) -> list[tuple[list[bytes], list[bytes]]]:
    """(mine lines, theirs lines) of each conflict in git's answer."""
    found: list[tuple[list[bytes], list[bytes]]] = []
    section = None
    mine: list[bytes] = []
    theirs: list[bytes] = []
    for line in text.split(b"\n"):
        line = line + b"\n"
        if line.startswith(b"<<<<<<< "):
            section, mine, theirs = "mine", [], []
        elif line.startswith(b"||||||| "):
            section = "base"
        elif line.rstrip(b"\r\n") == b"=======":
            section = "theirs"
        elif line.startswith(b">>>>>>> "):
            section = None
            found.append((mine, theirs))
        elif section == "mine":
            mine.append(line)
        elif section == "theirs":
            theirs.append(line)
    return found


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(three_versions())
def test_every_file_is_decided_as_git_merges_it(versions: tuple[bytes, bytes, bytes]) -> None:
    base, mine, theirs = versions
    plan = plan_file("code.c", base, mine, theirs)
    conflicts, merged = git_merge(base, mine, theirs)
    assert plan.before == mine  # the person's version is what the plan starts from
    if conflicts == 0:
        assert plan.action in ("write", "none"), plan
        assert plan.after == merged, (plan.after, merged)  # byte for byte: CRLF, final newline
        return
    assert plan.action == "conflict" and plan.reason == "overlap" and plan.after is None
    # Each hunk names exactly the lines git put between the markers, in mine and in theirs.
    sections = _git_sections(merged)
    assert len(plan.hunks) == len(sections) == conflicts
    mine_lines, theirs_lines = _lines(mine), _lines(theirs)
    for hunk, (git_mine, git_theirs) in zip(plan.hunks, sections, strict=True):
        at = hunk["mine_start"] - 1
        assert _same_lines(mine_lines[at : at + hunk["mine_lines"]], git_mine), (hunk, git_mine)
        at = hunk["theirs_start"] - 1
        assert _same_lines(theirs_lines[at : at + hunk["theirs_lines"]], git_theirs), (hunk, git_theirs)
    # Choosing markers writes git's own conflict text.
    assert resolve_file(plan, "markers").after == merged


def test_a_deletion_both_sides_made_is_made_once() -> None:
    """The case that lost a brace: the hand-written merge applied the shared deletion twice."""
    plan = plan_file("code.c", BRACES_BASE, BRACES_MINE, BRACES_THEIRS)
    assert plan.action == "write" and plan.after == git_merge(BRACES_BASE, BRACES_MINE, BRACES_THEIRS)[1]
    assert plan.after == b"int main() {\n\n}\n}\n\n\n  done();\n  run();\n"


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
def test_line_endings_and_a_missing_final_newline_are_kept(eol: bytes) -> None:
    base = eol.join([b"one", b"two", b"three", b"four"])
    mine = eol.join([b"ONE", b"two", b"three", b"four"])
    theirs = eol.join([b"one", b"two", b"three", b"FOUR"])
    assert plan_file("f.txt", base, mine, theirs).after == eol.join([b"ONE", b"two", b"three", b"FOUR"])


def test_a_binary_file_changed_on_both_sides_is_a_conflict_and_takes_no_markers() -> None:
    base, mine, theirs = b"\0PNG\nabc\n", b"\0PNG\nABC\n", b"\0PNG\nabc\nxyz\n"
    plan = plan_file("logo.png", base, mine, theirs)
    assert (plan.action, plan.reason, plan.after, plan.hunks) == ("conflict", "overlap", None, [])
    assert resolve_file(plan, "mine").after == mine
    assert resolve_file(plan, "theirs").after == theirs
    with pytest.raises(ValueError, match="binary file, which conflict markers would break; choose mine or theirs"):
        resolve_file(plan, "markers")
    # One side changed alone: taken whole, as before.
    assert plan_file("logo.png", base, base, theirs).after == theirs
