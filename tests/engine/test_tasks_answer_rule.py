"""The one answer rule through the CLI (a real process on a real sample repository): how an
answer was given is recorded, and only a typed or chosen answer is learned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autocode.tasks import AlreadyDecided, Source, TaskRun
from support.tasks import NAMING_ANSWER, autocode, autocode_json, build_sample, read_record

CLI = Source("cli", "tester")
DEFAULT = "Name tests after the behaviour they check."


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    return build_sample("unittest", tmp_path / "textkit")


def _start(repo: Path, patch: str) -> dict[str, Any]:
    rc, snap = autocode_json("task", "start", "--workspace", str(repo), "--brief", f"via {patch}")
    assert rc == 0 and snap["needs"]["kind"] == "answer_questions", snap
    assert snap["needs"]["questions"][0]["default"] == DEFAULT
    return snap


def _finish(repo: Path, task_id: str) -> dict[str, Any]:
    run = TaskRun.load(repo, task_id)
    snap = run.snapshot().wire()
    snap = run.approve_plan(snap["needs"]["planRevision"], CLI).wire()
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED", snap
    return snap


def _ledger(snap: dict[str, Any]) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((Path(snap["runDir"]) / "ledger.json").read_text())["answers"]
    return data


@pytest.mark.parametrize(
    ("argv", "how", "text", "learned"),
    [
        (["--accept-default"], "acceptedDefault", DEFAULT, False),
        ([DEFAULT], "acceptedDefault", DEFAULT, False),  # the text equals the default: not the person's own
        (["--delegate"], "delegated", DEFAULT, False),
        ([NAMING_ANSWER], "typed", NAMING_ANSWER, True),
        ([NAMING_ANSWER, "--chosen"], "chosen", NAMING_ANSWER, True),
    ],
    ids=["accept-default", "text-equal-to-default", "delegate", "typed", "chosen"],
)
def test_cli_answers_say_how_and_only_the_persons_own_are_learned(
    repo: tuple[Path, str], argv: list[str], how: str, text: str, learned: bool
) -> None:
    root, patch = repo
    snap = _start(root, patch)
    rc, snap = autocode_json("task", "answer", "--workspace", str(root), snap["id"], "test-naming", *argv)
    assert rc == 0 and snap["needs"]["kind"] == "approve_plan", snap
    [answer] = _ledger(snap)
    assert (answer["how"], answer["text"]) == (how, text)
    assert snap["answers"][0]["how"] == how
    shown = autocode("task", "show", "--workspace", str(root), snap["id"])
    assert f"({how}, {'may be learned' if learned else 'never learned'}; cli)" in shown.stdout, shown.stdout

    done = _finish(root, snap["id"])
    record = read_record(root)
    assert record is not None
    if learned:
        assert [c["answer"] for c in record["conventions"]] == [NAMING_ANSWER]
        assert done["learning"]["conventions"] == ["test-naming"]
    else:
        assert record["conventions"] == []
        assert done["learning"]["conventions"] == []


def test_bad_answers_are_refused_and_record_nothing(repo: tuple[Path, str]) -> None:
    root, patch = repo
    snap = _start(root, patch)
    ws = str(root)
    both = autocode("task", "answer", "--workspace", ws, snap["id"], "test-naming", "x", "--accept-default")
    assert both.returncode == 2 and "not both" in both.stderr
    nothing = autocode("task", "answer", "--workspace", ws, snap["id"], "test-naming")
    assert nothing.returncode == 2 and "--delegate" in nothing.stderr
    run = TaskRun.load(root, snap["id"])
    with pytest.raises(Exception, match="differs from the proposed default"):
        run.answer("test-naming", "something else", CLI, how="acceptedDefault")
    with pytest.raises(Exception, match="not one of"):
        run.answer("test-naming", "x", CLI, how="guessed")
    assert _ledger(run.snapshot().wire()) == []
    # A second answer to the same question is a late decision, said as such.
    run.answer("test-naming", NAMING_ANSWER, CLI)
    with pytest.raises(AlreadyDecided, match="already answered at"):
        run.answer("test-naming", "again", CLI)
    late = autocode("task", "answer", "--workspace", ws, snap["id"], "test-naming", "again")
    assert late.returncode == 5 and "already answered at" in late.stderr
    assert [a["text"] for a in _ledger(run.snapshot().wire())] == [NAMING_ANSWER]
