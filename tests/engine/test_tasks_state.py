"""The typed task state (`autocode.tasks.TaskState`) reads and writes `state.json` as the
dictionary-based code did: files saved before it existed load, round-trip byte for byte
as JSON data, keep keys they do not know, and a damaged file is refused by kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autocode.errors import AutoCodeError
from autocode.tasks import TaskRun, TaskState
from autocode.tasks.models import Plan
from autocode.tasks.state import ApplyAttempt
from support import git

SAVED = Path(__file__).resolve().parents[2] / "fixtures" / "task-state"


def saved(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SAVED / name).read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", ["waiting-for-plan.json", "completed.json"])
def test_a_state_written_by_the_dictionary_code_round_trips_unchanged(name: str) -> None:
    data = saved(name)
    state = TaskState.model_validate(data)
    assert state.to_json() == data
    assert list(state.to_json()) == list(data)  # same keys, same order


def old_task(
    tmp_path: Path, extra: dict[str, Any] | None = None, name: str = "waiting-for-plan.json"
) -> tuple[Path, str]:
    """A repository holding one task folder as the earlier code left it (waiting for the plan)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first")
    state = {**saved(name), **(extra or {})}
    run_dir = repo / ".autocode" / "runs" / state["id"]
    (run_dir / "evidence").mkdir(parents=True)
    (run_dir / "state.json").write_text(json.dumps(state), encoding="utf-8")
    launch = {"version": 1, "task_id": state["id"], "workspace": str(repo), "brief": "Add longest_word",
              "head": None, "options": {}, "values": {}, "prep": {"copy": None}}
    (run_dir / "launch.json").write_text(json.dumps(launch), encoding="utf-8")
    return repo, str(state["id"])


def test_an_existing_task_folder_loads_and_reads_as_before(tmp_path: Path) -> None:
    repo, task_id = old_task(tmp_path)
    snap = TaskRun.load(repo, task_id).snapshot().wire()
    assert snap["state"] == "WAITING_FOR_PLAN_APPROVAL" and snap["revision"] == 4
    assert snap["needs"]["kind"] == "approve_plan" and snap["needs"]["planRevision"] == 1
    assert snap["needs"]["markdown"].startswith("# Plan (revision 1)")
    assert [a["how"] for a in snap["answers"]] == ["typed"]
    assert snap["humanPauseStates"] == ["WAITING_FOR_USER"]
    # The views the older code wrote lazily are written on load.
    assert json.loads((repo / ".autocode" / "runs" / task_id / "ledger.json").read_text())["revision"] == 4


def test_a_change_keeps_every_key_including_ones_this_version_does_not_know(tmp_path: Path) -> None:
    repo, task_id = old_task(tmp_path, {"from_a_newer_version": {"kept": True}})
    TaskRun.load(repo, task_id).cancel()
    data = json.loads((repo / ".autocode" / "runs" / task_id / "state.json").read_text())
    assert data["state"] == "CANCELLED" and data["revision"] == 5
    assert data["from_a_newer_version"] == {"kept": True}
    assert set(saved("waiting-for-plan.json")) <= set(data)
    assert "apply_choices" not in data  # written only once a conflict choice is made, as before


@pytest.mark.parametrize("change", [{"revision": "four"}, {"state": None}, {"ledger": []}])
def test_a_state_changed_by_hand_is_refused_as_damaged_and_left_alone(tmp_path: Path, change: dict[str, Any]) -> None:
    repo, task_id = old_task(tmp_path, change)
    path = repo / ".autocode" / "runs" / task_id / "state.json"
    before = path.read_bytes()
    with pytest.raises(AutoCodeError) as err:
        TaskRun.load(repo, task_id)
    assert err.value.kind == "taskDamaged"
    assert path.read_bytes() == before


def test_an_old_completed_task_reads_with_typed_camel_case_phase_results(tmp_path: Path) -> None:
    """Phase results as earlier versions wrote them: an apply from before `written_by_editor`,
    a learning step that broke (`error`), a key a newer version added to the test run."""
    old = saved("completed.json")
    apply = {k: v for k, v in old["result"]["apply"].items() if k != "written_by_editor"}
    tests = {**old["tests"], "from_a_newer_version": 1}
    repo, task_id = old_task(tmp_path, {
        "tests": tests,
        "result": {**old["result"], "tests": tests, "apply": apply},
        "learning": {"status": "failed", "error": "OSError: disk full"},
    }, name="completed.json")
    path = repo / ".autocode" / "runs" / task_id / "state.json"
    before = path.read_bytes()
    snap = TaskRun.load(repo, task_id).snapshot().wire()
    assert snap["state"] == "COMPLETED" and snap["done"] and snap["error"] is None
    result = snap["result"]
    assert result["tests"] == {"command": "python3 -m unittest -q", "cwd": "source", "exitCode": 0, "status": "finished",
                               "seconds": 0.112, "outputTail": tests["output_tail"],
                               # runs from before the sandbox ran unconfined, and say so
                               "sandbox": "none", "sandboxNotes": []}
    assert result["apply"]["writtenByEditor"] == [] and result["apply"]["written"] == old["result"]["apply"]["written"]
    assert result["verified"] is True and result["error"] is None
    assert snap["learning"]["status"] == "failed" and snap["learning"]["error"] == "OSError: disk full"
    assert snap["learning"]["conventions"] == [] and snap["learning"]["droppedForCredentials"] == []
    assert path.read_bytes() == before  # reading never rewrites the old file


@pytest.mark.parametrize("change", [
    {"tests": {"command": "x", "cwd": "source", "exit_code": "zero", "status": "finished", "seconds": 1}},
    {"learning": {"status": "learned"}},
    {"error": {"kind": "testsFailed"}},
])
def test_a_phase_result_changed_by_hand_is_a_damaged_task_and_left_alone(tmp_path: Path, change: dict[str, Any]) -> None:
    """The phase results are validated when the file is read, so a damaged one is refused at load
    (naming the key), not at some later snapshot."""
    repo, task_id = old_task(tmp_path, change, name="completed.json")
    path = repo / ".autocode" / "runs" / task_id / "state.json"
    before = path.read_bytes()
    with pytest.raises(AutoCodeError) as err:
        TaskRun.load(repo, task_id)
    assert err.value.kind == "taskDamaged" and f"of task {task_id} cannot be read" in err.value.message
    assert f"state.json: {next(iter(change))}." in err.value.message
    assert path.read_bytes() == before


def test_phase_results_are_models_and_keep_their_keys_and_spellings_on_disk() -> None:
    """A state from before its parts were models: a conflicted apply (its details, HEAD's move
    spelled `from`), a failure with a remedy (`taskId`), a test run without the sandbox keys,
    approvals of every kind (one with a key a newer version added, kept).
    Read, they are models the code uses by attribute; written, the keys are those it had."""
    old = saved("completed.json")
    tests = {k: v for k, v in old["tests"].items()}  # no sandbox, no sandbox_notes
    apply = {"status": "conflicts", "applied": False, "written": [], "conflicts": ["a.txt"],
             "details": [{"path": "a.txt", "reason": "overlap",
                          "hunks": [{"mine_start": 1, "mine_lines": 1, "theirs_start": 1, "theirs_lines": 2}]}],
             "via": None, "head_moved": {"from": "abc", "to": "def"}, "message": "both changed a.txt"}
    error = {"kind": "providerError", "message": "the endpoint refused; resume", "phase": "planning",
             "remedy": {"kind": "resumeTask", "keys": [], "taskId": old["id"], "before": "the endpoint refused; ",
                        "after": ""}}
    by = {"channel": "lsp:vscode", "actor": None, "time": "2026-11-30T16:52:33.519Z"}
    planned = {"command": "python3 -m unittest -q", "origin": "detected", "source": "built-in", "folder": "."}
    approvals = [
        *old["approvals"],
        {"kind": "plan_rejected", "plan_revision": 1, "feedback": "smaller steps", "source": by},
        {"kind": "completion", "source": by, "confirmed": "unproven", "hunks": {"kept": ["h1"], "undone": ["h2"]}},
        {"kind": "conflicts_resolved", "choices": {"a.txt": "mine"}, "source": by, "from_a_newer_version": [1]},
        {"kind": "retry_verification", "source": by, "tests": planned},
    ]
    ledger = {**old["ledger"], "answers": [{**old["ledger"]["answers"][0], "from_a_newer_version": "kept"}]}
    data = {**old, "ledger": ledger, "state": "FAILED", "tests": tests, "apply": apply, "error": error, "approvals": approvals,
            "result": {"status": "failed", "error": error, "tests": tests, "proof": None}}
    state = TaskState.model_validate(data)
    assert [a.kind for a in state.approvals][-3:] == ["completion", "conflicts_resolved", "retry_verification"]
    assert state.approvals[-3].hunks is not None and state.approvals[-3].hunks.undone == ["h2"]
    assert state.approvals[-1].tests is not None and state.approvals[-1].tests.origin == "detected"
    assert state.approvals[0].source.actor == "tester" and state.routes[0].role == "investigator"
    assert state.implementation is not None and state.files == state.implementation.files == old["result"]["files"]
    assert state.requirements is not None and state.requirements.questions[0].id == "test-naming"
    assert state.requirements.investigated == [] and "investigated" not in state.to_json()["requirements"]
    answer = state.ledger.answers[0]
    assert answer.source is not None and answer.source.channel == "cli" and answer.how == "typed"
    assert state.ledger.questions[0].asked and state.ledger.questions[0].issued_at == "2026-11-30T16:52:33.267Z"
    assert isinstance(state.apply, ApplyAttempt) and state.apply.details[0].hunks[0].theirs_lines == 2
    assert state.apply.head_moved is not None and state.apply.head_moved.from_ == "abc"
    assert state.error is not None and state.error.remedy is not None and state.error.remedy.task_id == old["id"]
    assert state.tests is not None and state.tests.sandbox == "none"  # the model's default, read not written
    assert isinstance(state.plan, Plan) and state.plan.steps == old["plan"]["steps"]
    assert state.learning.status == "done" and state.learning.conventions == ["test-naming"]
    assert state.to_json() == data
    assert json.loads(json.dumps(state.to_json())) == data
    # The wire form of the same apply: camelCase, its details sent apart.
    wire = state.apply.result().wire()
    assert "details" not in wire and wire["headMoved"] == {"from": "abc", "to": "def"}
