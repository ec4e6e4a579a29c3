"""A CLI process killed (SIGKILL) at each point of a task, then load() and resume in this process."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from autocode.tasks import WORKING, Source, TaskRun
from support.tasks import (
    NAMING_ANSWER,
    answers_file,
    autocode,
    build_sample,
    cli_env,
    read_record,
    run_dirs,
)

CLI = Source("cli", "tester")

# (kill point, state the saved task must be in afterwards)
POINTS = [
    ("started", "REQUIREMENTS"),
    ("in:REQUIREMENTS", "REQUIREMENTS"),
    ("write:state.json@2", "REQUIREMENTS"),
    ("in:PLANNING", "PLANNING"),
    ("plan_approved", "IMPLEMENTING"),
    ("patched", "IMPLEMENTING"),
    ("in:VERIFYING", "VERIFYING"),
    ("completion_approved", "APPLYING"),
    ("applied", "APPLYING"),
    ("learned", "COMPLETED"),
    ("write:ledger.json@6", None),
]


def _drive(run: TaskRun) -> dict:
    snap = run.resume().wire()
    for _ in range(6):
        kind = snap["needs"]["kind"]
        if kind == "answer_questions":
            snap = run.answer("test-naming", NAMING_ANSWER, CLI).wire()
        elif kind == "approve_plan":
            snap = run.approve_plan(snap["needs"]["planRevision"], CLI).wire()
        elif kind == "approve_completion":
            snap = run.approve_completion(CLI).wire()
        else:
            break
    return snap


@pytest.mark.parametrize(("point", "expected"), POINTS)
def test_killed_at_a_point_then_resumed(tmp_path: Path, point: str, expected: str | None) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    answers = answers_file(tmp_path / "answers.json")
    proc = autocode(
        "task", "start", "--workspace", str(repo), "--brief", f"Add longest_word via {patch}",
        "--answers", str(answers), env=cli_env(AUTOCODE_TEST_KILL_AT=point),
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)
    [run_dir] = run_dirs(repo)
    # No file is ever half-written: every JSON file parses, no temporary file is left as the real one.
    for path in run_dir.rglob("*.json"):
        json.loads(path.read_text())
    run = TaskRun.load(repo, run_dir.name)
    if expected is not None:
        snap = run.snapshot().wire()
        if expected in WORKING:
            # Nothing works on it any more: the snapshot says so, and which step stopped.
            assert (snap["state"], snap["interruptedIn"]) == ("INTERRUPTED", expected)
        else:
            assert (snap["state"], snap["interruptedIn"]) == (expected, None)
    if point == "in:PLANNING":
        # The CLI's own way back in.
        resumed = autocode("task", "resume", "--workspace", str(repo), run_dir.name, "--json")
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["needs"]["kind"] == "approve_plan"
    final = _drive(run)
    assert final["state"] == "COMPLETED", final
    assert final["learning"]["status"] == "done"
    assert (repo / "textkit" / "words.py").read_text().count("def longest_word") == 1
    assert read_record(repo)["conventions"][0]["answer"] == NAMING_ANSWER  # type: ignore[index]
    events = [json.loads(line)["event"] for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[0] == "started" and events[-1] == "learned"
