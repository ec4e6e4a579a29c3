"""What a completed task may learn: only a person's answer to an asked convention question."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autocode.tasks import Source, TaskOptions, TaskRun
from support import git
from support.tasks import NAMING_ANSWER, build_sample, cli_env, read_record

CLI = Source("cli", "tester")
NAMING = "Which naming convention should future repository tests follow?"


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    return build_sample("unittest", tmp_path / "textkit")


def _finish(run: TaskRun) -> dict:
    snap = run.snapshot().wire()
    if snap["needs"]["kind"] == "approve_plan":
        snap = run.approve_plan(snap["needs"]["planRevision"], CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion", snap
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED", snap
    return snap


@pytest.mark.parametrize("kind", ["proposed_default", "delegated", "machine"])
def test_answers_that_are_not_a_persons_own_are_never_learned(repo: tuple[Path, str], kind: str) -> None:
    root, patch = repo
    run = TaskRun.start(root, f"via {patch}")
    source = Source("machine", "auto") if kind == "machine" else CLI
    run.answer("test-naming", "Name tests after the behaviour they check.", source, kind=kind)
    snap = _finish(run)
    assert snap["learning"]["conventions"] == []
    record = read_record(root)
    assert record is not None and record["conventions"] == []
    if kind == "machine":
        # A machine answer did not need a person: that pause is not recorded as human.
        assert "WAITING_FOR_USER" not in record["human_pause_states"]


def test_a_machine_decision_on_an_unasked_question_is_never_learned(repo: tuple[Path, str]) -> None:
    root, patch = repo
    run = TaskRun.start(root, f"via {patch}", TaskOptions(scenario="machine-decision"))
    ledger = run.details()["ledger"]
    assert ledger["questions"][0]["asked"] is False
    assert ledger["answers"][0]["kind"] == "machine"
    _finish(run)
    record = read_record(root)
    assert record is not None and record["conventions"] == []


def test_excluded_categories_are_never_learned_whatever_their_tags(repo: tuple[Path, str]) -> None:
    root, patch = repo
    run = TaskRun.start(root, f"via {patch}", TaskOptions(scenario="excluded-categories"))
    questions = run.snapshot().wire()["needs"]["questions"]
    assert {q["category"] for q in questions} == {
        "permission", "spending", "quota", "external_side_effect", "task_outcome", "other"
    }
    for q in questions:
        run.answer(q["id"], NAMING_ANSWER if q["id"] == "test-naming" else "Yes, always.", CLI)
    _finish(run)
    record = read_record(root)
    assert record is not None
    assert record["conventions"] == [{"question": NAMING, "answer": NAMING_ANSWER}]


def test_a_human_answer_holding_a_credential_is_dropped_whole(repo: tuple[Path, str]) -> None:
    root, patch = repo
    token = "ghp_" + "a1B2c3D4e5" * 4  # assembled here: no literal credential in the repository
    run = TaskRun.start(root, f"via {patch}")
    run.answer("test-naming", f"Use names like test_login_with {token}", CLI)
    snap = _finish(run)
    assert snap["learning"]["droppedForCredentials"] == ["test-naming"]
    record_text = (root / ".autocode" / "project.json").read_text()
    assert token not in record_text and "test_login_with" not in record_text
    assert read_record(root)["conventions"] == []  # type: ignore[index]


def test_a_new_human_answer_replaces_the_same_question_and_keeps_others(repo: tuple[Path, str]) -> None:
    root, patch = repo
    run = TaskRun.start(root, f"via {patch}", TaskOptions(scenario="docstring-convention"))
    run.answer("docstrings", "Google style, one line summary first.", CLI)
    _finish(run)
    git(root, "checkout", "-q", "--", ".")  # the person drops the change; the record stays
    run = TaskRun.start(root, f"via {patch}")
    run.answer("test-naming", NAMING_ANSWER, CLI)
    _finish(run)
    conventions = read_record(root)["conventions"]  # type: ignore[index]
    assert {c["question"] for c in conventions} == {NAMING, "Which docstring style should new functions use?"}


def test_two_tasks_completing_at_once_keep_both_conventions(repo: tuple[Path, str]) -> None:
    root, patch = repo
    first = TaskRun.start(root, f"via {patch}")
    first.answer("test-naming", NAMING_ANSWER, CLI)
    first.approve_plan(1, CLI)
    second = TaskRun.start(root, f"via {patch}", TaskOptions(scenario="docstring-convention"))
    second.answer("docstrings", "Google style.", CLI)
    second.approve_plan(1, CLI)
    # Two separate processes approve completion at the same moment.
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "autocode", "task", "approve-completion", "--workspace", str(root), run.id, "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
        )
        for run in (first, second)
    ]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert [r["state"] for r in results] == ["COMPLETED", "COMPLETED"], results
    conventions = read_record(root)["conventions"]  # type: ignore[index]
    assert sorted(c["question"] for c in conventions) == sorted(
        [NAMING, "Which docstring style should new functions use?"]
    )
    # The second apply found the same change already there; the person's tree is not doubled.
    assert (root / "textkit" / "words.py").read_text().count("def longest_word") == 1


def test_learning_problems_never_fail_completion(repo: tuple[Path, str]) -> None:
    root, patch = repo
    run = TaskRun.start(root, f"via {patch}")
    run.answer("test-naming", NAMING_ANSWER, CLI)
    run.approve_plan(1, CLI)
    # Make the record unwritable: a folder where the file should be.
    (root / ".autocode" / "project.json").mkdir(parents=True)
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED" and snap["result"]["verified"] is True
    assert snap["learning"]["status"] == "failed"
