"""Applying a verified task to a workspace the person kept working in (real git repositories):
a per-file three-way merge, conflicts as a need with the person's choice, HEAD moved, and an
apply that fails never says COMPLETED. Also: cancel mid-run."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from autocode.tasks import AlreadyDecided, Source, TaskOptions, TaskRun
from autocode.tasks.file_merge import merge_text, unapply
from support import git
from support.tasks import BRACES_BASE, BRACES_MINE, BRACES_THEIRS, autocode, build_sample

CLI = Source("cli", "tester")
WORDS = "textkit/words.py"
TESTS = "tests/test_words.py"
NOTE = "# my own note, far from the task's hunk\n"
MINE = "\n\ndef longest_word(text):\n    return 'mine'\n"


def _verified(repo: Path, patch: str) -> TaskRun:
    run = TaskRun.start(repo, f"via {patch}", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion", snap
    return run


def _tree(repo: Path) -> dict[str, bytes]:
    """Every file of the workspace outside .git and .autocode, with its bytes."""
    out: dict[str, bytes] = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel.split("/")[0] in (".git", ".autocode") or not path.is_file():
            continue
        out[rel] = path.read_bytes()
    return out


def _theirs(run: TaskRun, rel: str) -> bytes:
    return (Path(run.snapshot().wire()["copy"]) / rel).read_bytes()


@pytest.fixture
def sample(tmp_path: Path) -> tuple[Path, str]:
    return build_sample("unittest", tmp_path / "textkit")


def test_a_non_overlapping_uncommitted_edit_in_a_touched_file_keeps_both(sample: tuple[Path, str]) -> None:
    repo, patch = sample
    run = _verified(repo, patch)
    words = repo / WORDS
    words.write_text(NOTE + words.read_text())
    readme = repo / "README.md"
    readme.write_text(readme.read_text() + "My unsaved note.\n")
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED", snap
    outcome = snap["result"]["apply"]
    assert outcome["applied"] is True and outcome["via"] == "disk" and outcome["conflicts"] == []
    assert sorted(outcome["written"]) == [TESTS, WORDS]
    text = words.read_text()
    assert text.startswith(NOTE) and "def longest_word" in text
    assert "My unsaved note." in readme.read_text()
    # Nothing was staged or committed: the index is as the person left it.
    assert git(repo, "diff", "--cached", "--name-only").strip() == ""


def test_overlapping_edits_wait_for_a_choice_and_write_nothing(sample: tuple[Path, str]) -> None:
    repo, patch = sample
    run = _verified(repo, patch)
    (repo / WORDS).write_text((repo / WORDS).read_text() + MINE)
    before = _tree(repo)
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "WAITING_FOR_CONFLICT_RESOLUTION" and not snap["done"]
    assert snap["needs"]["kind"] == "resolve_conflicts" and snap["result"] is None
    [conflict] = snap["needs"]["conflicts"]
    assert conflict["path"] == WORDS and conflict["reason"] == "overlap"
    assert conflict["hunks"] == [{"mineStart": 3, "mineLines": 4, "theirsStart": 3, "theirsLines": 4}]
    assert _tree(repo) == before  # byte-identical, the clean file (tests) included
    with pytest.raises(AlreadyDecided, match="now WAITING_FOR_CONFLICT_RESOLUTION"):
        run.approve_completion(CLI)  # already approved: it now waits for a choice
    with pytest.raises(Exception, match="not in conflict"):
        run.resolve_conflicts({"README.md": "mine"}, CLI)
    with pytest.raises(Exception, match="use one of"):
        run.resolve_conflicts({WORDS: "both"}, CLI)
    assert _tree(repo) == before


@pytest.mark.parametrize("choice", ["mine", "theirs", "markers"])
def test_each_choice_for_a_conflicted_file(sample: tuple[Path, str], choice: str) -> None:
    repo, patch = sample
    run = _verified(repo, patch)
    words = repo / WORDS
    mine = words.read_text() + MINE
    words.write_text(mine)
    run.approve_completion(CLI)
    # The task's versions, read before completing releases the prep copy.
    theirs = {rel: _theirs(run, rel) for rel in (TESTS, WORDS)}
    # Through the CLI, as a person would.
    proc = autocode("task", "resolve", "--workspace", str(repo), run.id, f"{WORDS}={choice}", "--json")
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    assert snap["state"] == "COMPLETED"
    outcome = snap["result"]["apply"]
    assert outcome["applied"] is True and outcome["choices"] == {WORDS: choice}
    assert (repo / TESTS).read_bytes() == theirs[TESTS]  # the clean file is applied as well
    text = words.read_text()
    if choice == "mine":
        assert text == mine and outcome["written"] == [TESTS]
    elif choice == "theirs":
        assert words.read_bytes() == theirs[WORDS] and sorted(outcome["written"]) == [TESTS, WORDS]
    else:
        assert "<<<<<<< mine" in text and ">>>>>>> theirs" in text
        assert "return 'mine'" in text and "max(text.split(), key=len" in text
        assert text.startswith("def count_words(text):\n")  # the common part stays outside the markers
    late = autocode("task", "resolve", "--workspace", str(repo), run.id, f"{WORDS}=mine")
    assert late.returncode == 5 and "already approved at" in late.stderr, late.stderr


def test_a_file_deleted_in_the_workspace_is_a_conflict(sample: tuple[Path, str]) -> None:
    repo, patch = sample
    run = _verified(repo, patch)
    (repo / WORDS).unlink()
    snap = run.approve_completion(CLI).wire()
    assert snap["needs"]["kind"] == "resolve_conflicts"
    assert [(c["path"], c["reason"]) for c in snap["needs"]["conflicts"]] == [(WORDS, "deletedInWorkspace")]
    assert not (repo / WORDS).exists() and (repo / TESTS).read_bytes() != _theirs(run, TESTS)
    snap = run.resolve_conflicts({WORDS: "mine"}, CLI).wire()
    assert snap["state"] == "COMPLETED" and not (repo / WORDS).exists()
    assert snap["result"]["apply"]["written"] == [TESTS]


def test_head_moved_is_said_before_applying_and_the_change_still_merges(sample: tuple[Path, str]) -> None:
    repo, patch = sample
    run = _verified(repo, patch)
    start = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "elsewhere")
    (repo / WORDS).write_text(NOTE + (repo / WORDS).read_text())
    git(repo, "commit", "-qam", "a note on another branch")
    now = git(repo, "rev-parse", "HEAD").strip()
    snap = run.snapshot().wire()
    assert snap["needs"]["headMoved"] == {"from": start, "to": now}
    shown = autocode("task", "status", "--workspace", str(repo), run.id)
    assert "HEAD moved since the task started" in shown.stdout
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED"
    assert snap["result"]["apply"]["headMoved"] == {"from": start, "to": now}
    text = (repo / WORDS).read_text()
    assert text.startswith(NOTE) and "def longest_word" in text


def test_a_snapshot_starts_no_git_process_and_still_says_head_moved(
    sample: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    repo, patch = sample
    run = _verified(repo, patch)
    start = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "commit", "-q", "--allow-empty", "-m", "the person commits meanwhile")
    now = git(repo, "rev-parse", "HEAD").strip()
    other = TaskRun.load(repo, run.id)  # as another caller; opening it finds the work tree through git
    started: list[object] = []
    real = subprocess.Popen

    class Counting(real):  # type: ignore[misc,valid-type]
        def __init__(self, args: object, *a: object, **kw: object) -> None:
            started.append(args)
            super().__init__(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", Counting)
    snaps = [run.snapshot().wire(), other.snapshot().wire()]
    assert started == []
    assert [s["needs"]["headMoved"] for s in snaps] == [{"from": start, "to": now}] * 2
    # Acting on it asks git itself, and records what it found with the outcome.
    snap = run.approve_completion(CLI).wire()
    assert any("rev-parse" in list(map(str, args)) for args in started)  # type: ignore[call-overload]
    assert snap["state"] == "COMPLETED" and snap["result"]["apply"]["headMoved"] == {"from": start, "to": now}


def test_an_apply_that_fails_is_not_completed_and_can_be_retried(sample: tuple[Path, str]) -> None:
    repo, patch = sample
    run = _verified(repo, patch)
    words = repo / WORDS
    elsewhere = repo / "elsewhere.py"
    elsewhere.write_text(words.read_text())
    words.unlink()
    os.symlink("../elsewhere.py", words)  # AutoCode never writes through a link
    before = _tree(repo)
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "WAITING_FOR_COMPLETION_APPROVAL" and snap["result"] is None
    assert snap["needs"]["apply"]["status"] == "not_applied"
    assert "symbolic link" in snap["needs"]["apply"]["message"]
    assert _tree(repo) == before
    status = autocode("task", "status", "--workspace", str(repo), run.id)
    assert status.returncode == 1 and "symbolic link" in status.stdout
    words.unlink()
    words.write_text(elsewhere.read_text())
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED" and "def longest_word" in words.read_text()
    with pytest.raises(AlreadyDecided, match="already approved at"):
        run.approve_completion(CLI)
    with pytest.raises(AlreadyDecided, match=r"the plan .* was already approved at"):
        run.reject_plan("too late", CLI, revision=1)


def test_no_program_the_repository_configures_runs_while_applying(sample: tuple[Path, str], tmp_path: Path) -> None:
    repo, patch = sample
    run = _verified(repo, patch)
    touched = tmp_path / "filter-ran"
    (repo / ".gitattributes").write_text("*.py filter=spy merge=spy\n")
    git(repo, "config", "filter.spy.clean", f"sh -c 'touch {touched}; cat'")
    git(repo, "config", "filter.spy.smudge", f"sh -c 'touch {touched}; cat'")
    git(repo, "config", "merge.spy.driver", f"sh -c 'touch {touched}; false'")  # the file is merged
    (repo / WORDS).write_text(NOTE + (repo / WORDS).read_text())
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED" and not touched.exists()


def test_a_brace_both_sides_removed_is_removed_once_through_the_task(sample: tuple[Path, str]) -> None:
    """The task removes one `}` of three (and adds a line) while the person removes the same one:
    the task completes with two braces, git's merge, not one."""
    repo, _ = sample
    code = repo / "code.c"
    code.write_bytes(BRACES_BASE)
    git(repo, "add", "code.c")
    git(repo, "commit", "-qm", "some code")
    code.write_bytes(BRACES_THEIRS)
    (repo / "braces.patch").write_text(git(repo, "diff", "HEAD"))
    code.write_bytes(BRACES_BASE)
    git(repo, "add", "braces.patch")
    git(repo, "commit", "-qm", "a patch that removes a brace")
    run = TaskRun.start(repo, "via braces.patch", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion", snap
    code.write_bytes(BRACES_MINE)  # the person removes the same brace meanwhile
    assert snap["needs"]["proof"]["status"] == "unproven"  # braces change no test: confirmed as the person would
    snap = run.approve_completion(CLI, confirm="unproven").wire()
    assert snap["state"] == "COMPLETED", snap
    assert snap["result"]["apply"]["written"] == ["code.c"]
    assert code.read_bytes() == b"int main() {\n\n}\n}\n\n\n  done();\n  run();\n"


def test_merge_text_and_unapply_on_their_own() -> None:
    base = b"a\nb\nc\nd\n"
    merged = merge_text(base, b"A\nb\nc\nd\n", b"a\nb\nc\nD\ne\n")
    assert (merged.text, merged.conflicts, merged.hunks) == (b"A\nb\nc\nD\ne\n", 0, [])
    clash = merge_text(base, b"x\nb\nc\nd\n", b"y\nb\nc\nd\n")
    assert clash.conflicts == 1
    assert clash.hunks == [{"mine_start": 1, "mine_lines": 1, "theirs_start": 1, "theirs_lines": 1}]
    assert clash.text.startswith(b"<<<<<<< mine (your workspace)\nx\n||||||| base")
    # unapply: the file before a diff, from the file after it, at an offset and without a final newline.
    diff = (
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n"
        "+TWO\n\\ No newline at end of file\n"
    )
    assert unapply(b"zero\none\nTWO", diff) == b"zero\none\ntwo"
    assert unapply(b"new\n", "--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+new\n") is None
    assert unapply(None, "--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n--- old\n") == b"-- old\n"


def test_cancel_from_another_thread_stops_a_running_test_command(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"via {patch}", TaskOptions(
        scenario="no-questions", test_command="python3 -c 'import time; time.sleep(60)'"))
    done: dict[str, dict] = {}
    worker = threading.Thread(target=lambda: done.setdefault("snap", run.approve_plan(1, CLI).wire()))
    worker.start()
    other = TaskRun.load(repo, run.id)  # as a second caller (the language server) would
    deadline = time.monotonic() + 120  # only a bound on a hang; the test command runs 60 s
    while other.snapshot().wire()["state"] != "VERIFYING":
        assert time.monotonic() < deadline, "the task never reached its test command"
        time.sleep(0.05)
    other.cancel()
    worker.join(120)
    assert not worker.is_alive()
    # Stopped, not finished: a test command that ran its 60 s would have ended the task VERIFIED or FAILED.
    assert done["snap"]["state"] == "CANCELLED"
    assert TaskRun.load(repo, run.id).snapshot().wire()["state"] == "CANCELLED"


def test_a_file_the_task_renamed_and_the_person_changed_is_a_conflict(sample: tuple[Path, str]) -> None:
    repo, _ = sample
    git(repo, "mv", WORDS, "textkit/text_words.py")
    (repo / "textkit" / "__init__.py").write_text("")
    (repo / TESTS).write_text((repo / TESTS).read_text().replace("textkit.words", "textkit.text_words"))
    rename = git(repo, "diff", "-M", "HEAD")
    git(repo, "reset", "-q", "--hard")
    (repo / "rename.patch").write_text(rename)
    git(repo, "add", "rename.patch")
    git(repo, "commit", "-qm", "a rename patch")
    assert "rename from textkit/words.py" in rename
    run = TaskRun.start(repo, "via rename.patch", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion", snap
    # A rename changes no behaviour: nothing proves it, so the person confirms it as unproven.
    assert snap["needs"]["confirmation"] == "unproven" and snap["needs"]["proof"]["status"] == "unproven"
    (repo / WORDS).write_text((repo / WORDS).read_text() + "# mine\n")
    snap = run.approve_completion(CLI, confirm="unproven").wire()
    assert [(c["path"], c["reason"]) for c in snap["needs"]["conflicts"]] == [(WORDS, "renamed")]
    snap = run.resolve_conflicts({WORDS: "theirs"}, CLI).wire()
    assert snap["state"] == "COMPLETED"
    assert not (repo / WORDS).exists() and (repo / "textkit" / "text_words.py").is_file()


def test_without_a_captured_base_it_is_worked_back_from_the_diff(sample: tuple[Path, str]) -> None:
    """An implementer that changed the copy itself leaves no saved base: the merge still works."""
    import shutil

    repo, patch = sample
    run = _verified(repo, patch)
    shutil.rmtree(Path(run.snapshot().wire()["runDir"]) / "evidence" / "base")
    words = repo / WORDS
    words.write_text(NOTE + words.read_text())
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED", snap
    text = words.read_text()
    assert text.startswith(NOTE) and "def longest_word" in text
