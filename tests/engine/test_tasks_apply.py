"""Completion on a workspace that changed meanwhile: conflicts reported, the person's work kept; cancel mid-run."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from autocode.tasks import Source, TaskOptions, TaskRun
from support import git
from tasks_support import build_sample

CLI = Source("cli", "tester")
MINE = "def longest_word(text):\n    return 'mine'\n"


def _verified(repo: Path, patch: str) -> TaskRun:
    run = TaskRun.start(repo, f"via {patch}", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, CLI)
    assert snap["needs"]["kind"] == "approve_completion", snap
    return run


def test_unstaged_conflicting_work_is_left_untouched(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = _verified(repo, patch)
    words = repo / "textkit" / "words.py"
    words.write_text(words.read_text() + "\n\n" + MINE)
    before = words.read_bytes()
    snap = run.approve_completion(CLI)
    assert snap["state"] == "COMPLETED"
    outcome = snap["result"]["apply"]
    assert outcome["status"] in ("not_applied", "conflicts"), outcome
    assert words.read_bytes() == before or "return 'mine'" in words.read_text()
    assert "return 'mine'" in words.read_text()
    assert outcome["backup"] and git(repo, "cat-file", "-t", outcome["backup"]).strip() == "commit"


def test_staged_conflicting_work_gets_markers_and_a_backup(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = _verified(repo, patch)
    words = repo / "textkit" / "words.py"
    words.write_text(words.read_text() + "\n\n" + MINE)
    git(repo, "add", "textkit/words.py")
    snap = run.approve_completion(CLI)
    outcome = snap["result"]["apply"]
    assert outcome["status"] == "conflicts", outcome
    assert "textkit/words.py" in outcome["conflicts"]
    text = words.read_text()
    assert "<<<<<<<" in text and "return 'mine'" in text
    assert "git stash apply" in outcome["message"]
    # The verified result stands; learning still ran.
    assert snap["result"]["verified"] is True and snap["learning"]["status"] == "done"


def test_non_conflicting_uncommitted_work_is_kept(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = _verified(repo, patch)
    readme = repo / "README.md"
    readme.write_text(readme.read_text() + "My unsaved note.\n")
    snap = run.approve_completion(CLI)
    assert snap["result"]["apply"]["status"] == "applied"
    assert "My unsaved note." in readme.read_text()
    assert "def longest_word" in (repo / "textkit" / "words.py").read_text()


def test_cancel_from_another_thread_stops_a_running_test_command(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"via {patch}", TaskOptions(
        scenario="no-questions", test_command="python3 -c 'import time; time.sleep(60)'"))
    done: dict[str, dict] = {}
    worker = threading.Thread(target=lambda: done.setdefault("snap", run.approve_plan(1, CLI)))
    started = time.monotonic()
    worker.start()
    other = TaskRun.load(repo, run.id)  # as a second caller (the language server) would
    for _ in range(200):
        if other.snapshot()["state"] == "VERIFYING":
            break
        time.sleep(0.05)
    other.cancel()
    worker.join(30)
    assert done["snap"]["state"] == "CANCELLED"
    assert time.monotonic() - started < 30
    assert TaskRun.load(repo, run.id).snapshot()["state"] == "CANCELLED"
