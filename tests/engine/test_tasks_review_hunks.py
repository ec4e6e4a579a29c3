"""The review before Apply (real git repositories, the fixture provider): the preview shows git's
three-way merge against the person's text as it is now (their unsaved edits included) with the
overlaps marked, writes nothing, and names the hunks by ids that applying accepts; applying only
the kept hunks writes exactly those, records the choice, and never calls a part of a verified
change verified."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autocode.errors import AutoCodeError
from autocode.tasks import Source, TaskOptions, TaskRun
from support.tasks import build_sample

CLI = Source("cli", "tester")
WORDS = "textkit/words.py"
TESTS = "tests/test_words.py"
NOTE = "# my own note, far from the task's hunk\n"
MINE = "\n\ndef longest_word(text):\n    return 'mine'\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return build_sample("unittest", tmp_path / "textkit")[0]


def _verified(repo: Path) -> TaskRun:
    run = TaskRun.start(repo, "via patches/add-longest-word.patch", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion" and snap["needs"]["proof"]["status"] == "verified", snap
    return run


def _tree(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and p.relative_to(repo).parts[0] not in (".git", ".autocode")}


def _files(preview: dict) -> dict[str, dict]:
    return {f["path"]: f for f in preview["files"]}


def test_the_preview_is_the_merge_against_the_unsaved_buffer_and_writes_nothing(repo: Path) -> None:
    run = _verified(repo)
    before = _tree(repo)
    # The person's buffer: an unsaved note on top, not on disk.
    buffer = (NOTE + (repo / WORDS).read_text()).encode()
    preview = run.preview({WORDS: buffer}.get).wire()
    assert _tree(repo) == before  # nothing written, in the workspace or its files
    words = _files(preview)[WORDS]
    assert words["action"] == "write" and words["mine"] == buffer.decode()
    assert words["merged"].startswith(NOTE) and "def longest_word" in words["merged"]
    # The person's note is the same on both sides: it is no hunk, and no hunk is an overlap.
    [hunk] = words["hunks"]
    assert hunk["overlaps"] is False and hunk["conflict"] is False
    assert hunk["mineStart"] == 4 and hunk["mineLines"] == 0 and hunk["mergedLines"] == 4
    assert preview["overlaps"] == 0 and preview["conflicts"] == 0
    assert [h["mineStart"] for h in _files(preview)[TESTS]["hunks"]] == [3, 9]
    # The ids are stable: the same preview from the disk (no note) names the same hunks.
    again = run.preview().wire()
    assert [h["id"] for h in _files(again)[WORDS]["hunks"]] == [hunk["id"]]
    assert _files(again)[TESTS]["hunks"] == _files(preview)[TESTS]["hunks"]
    # What the preview showed is what applying writes (the note now saved by the person).
    (repo / WORDS).write_bytes(buffer)
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED"
    assert (repo / WORDS).read_text() == words["merged"]


def test_an_overlap_is_marked_in_the_preview_before_apply(repo: Path) -> None:
    run = _verified(repo)
    (repo / WORDS).write_text((repo / WORDS).read_text() + MINE)
    before = _tree(repo)
    preview = run.preview().wire()
    assert _tree(repo) == before
    words = _files(preview)[WORDS]
    assert words["action"] == "conflict" and words["reason"] == "overlap"
    assert "return 'mine'" in words["merged"] and "<<<<<<<" in words["merged"]
    [hunk] = words["hunks"]
    assert hunk["overlaps"] is True and hunk["conflict"] is True
    assert preview["overlaps"] == 1 and preview["conflicts"] == 1
    assert all(not h["overlaps"] for h in _files(preview)[TESTS]["hunks"])
    # The snapshot did not move: previewing is no decision.
    assert run.snapshot().wire()["state"] == "WAITING_FOR_COMPLETION_APPROVAL"


def test_only_the_kept_hunks_are_applied_and_the_choice_is_recorded(repo: Path) -> None:
    run = _verified(repo)
    preview = run.preview().wire()
    original_tests = (repo / TESTS).read_text()
    import_hunk, test_hunk = _files(preview)[TESTS]["hunks"]
    [words_hunk] = _files(preview)[WORDS]["hunks"]
    snap = run.approve_completion(CLI, keep=[words_hunk["id"], test_hunk["id"]]).wire()
    assert snap["state"] == "COMPLETED", snap
    result = snap["result"]
    # A part of a verified change is not what was proved: never reported as verified.
    assert result["partial"] is True and result["verified"] is False
    assert result["proof"]["status"] == "verified"  # the proof of the whole change stays readable
    applied = result["apply"]
    assert applied["hunksKept"] == [test_hunk["id"], words_hunk["id"]] or \
        sorted(applied["hunksKept"]) == sorted([test_hunk["id"], words_hunk["id"]])
    assert applied["hunksUndone"] == [import_hunk["id"]]
    assert "2 of 3 hunks" in applied["message"]
    text = (repo / TESTS).read_text()
    assert "from textkit.words import count_words\n" in text  # the undone hunk: the person's line
    assert "def test_longest_word_picks_the_longest" in text  # the kept one
    assert text != original_tests
    assert "def longest_word" in (repo / WORDS).read_text()
    approvals = json.loads((run.run_dir / "approvals.json").read_text())["approvals"]
    completion = [a for a in approvals if a["kind"] == "completion"][-1]
    assert completion["hunks"]["undone"] == [import_hunk["id"]]
    assert sorted(completion["hunks"]["kept"]) == sorted([words_hunk["id"], test_hunk["id"]])


def test_a_file_whose_hunks_are_all_undone_is_left_as_the_person_has_it(repo: Path) -> None:
    run = _verified(repo)
    tests_before = (repo / TESTS).read_bytes()
    [words_hunk] = _files(run.preview().wire())[WORDS]["hunks"]
    snap = run.approve_completion(CLI, keep=[words_hunk["id"]]).wire()
    assert snap["state"] == "COMPLETED" and snap["result"]["partial"] is True
    assert (repo / TESTS).read_bytes() == tests_before
    assert snap["result"]["apply"]["written"] == [WORDS]


def test_an_unknown_hunk_id_is_refused_and_nothing_is_written(repo: Path) -> None:
    run = _verified(repo)
    before = _tree(repo)
    with pytest.raises(AutoCodeError, match="Preview the change again") as caught:
        run.approve_completion(CLI, keep=["h-000000000000"])
    assert caught.value.kind == "hunksChanged"
    assert _tree(repo) == before
    snap = run.snapshot().wire()
    assert snap["state"] == "WAITING_FOR_COMPLETION_APPROVAL"
    approvals = json.loads((run.run_dir / "approvals.json").read_text())["approvals"]
    assert not [a for a in approvals if a["kind"] == "completion"]  # nothing recorded either


def test_keeping_every_hunk_is_the_whole_verified_change(repo: Path) -> None:
    run = _verified(repo)
    ids = [h["id"] for f in run.preview().wire()["files"] for h in f["hunks"]]
    snap = run.approve_completion(CLI, keep=ids).wire()
    assert snap["result"]["verified"] is True and snap["result"]["partial"] is False
    assert snap["result"]["apply"]["hunksUndone"] == []
