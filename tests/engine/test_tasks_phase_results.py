"""The phase results of a task snapshot (tests, review, result, error, learning, agent) are
typed models: the wire carries them camelCase only, every key the engine writes into
`state.json` is declared on its model, and the generated schema lists the same fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autocode.tasks import Source, TaskOptions, TaskRun
from autocode.tasks.models import Learning, Review, TaskError, TaskResult, TestRun
from support.tasks import NAMING_ANSWER, build_sample
from support.wire import keys_not_camel, undeclared

CLI = Source("cli", "tester")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def completed(tmp_path: Path) -> TaskRun:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"Add longest_word. Patch: {patch}")
    run.answer("test-naming", NAMING_ANSWER, CLI)
    waiting = run.approve_plan(1, CLI).wire()
    assert waiting["needs"]["kind"] == "approve_completion", waiting["error"]
    assert waiting["needs"]["tests"]["exitCode"] == 0 and "exit_code" not in waiting["needs"]["tests"]
    assert keys_not_camel(waiting) == []
    assert run.approve_completion(CLI).wire()["state"] == "COMPLETED"
    return run


def test_a_completed_task_carries_its_phase_results_camel_case_only(completed: TaskRun) -> None:
    snap = completed.snapshot()
    assert isinstance(snap.result, TaskResult) and isinstance(snap.learning, Learning)
    assert isinstance(snap.result.tests, TestRun) and snap.result.tests.exit_code == 0
    wire = snap.wire()
    result = wire["result"]
    assert result["status"] == "completed" and result["verified"] is True
    assert result["tests"]["exitCode"] == 0 and result["tests"]["outputTail"]
    assert result["apply"]["writtenByEditor"] == [] and result["apply"]["headMoved"] is None
    assert wire["learning"]["status"] == "done" and wire["learning"]["conventions"] == ["test-naming"]
    assert wire["learning"]["testCommand"] and wire["learning"]["droppedForCredentials"] == []
    assert keys_not_camel(wire) == []
    # `task show --json` prints the same shapes.
    details = completed.details()
    assert details["snapshot"] == wire and details["tests"] == result["tests"]
    assert details["apply"]["writtenByEditor"] == []


def test_every_key_the_engine_writes_is_declared_on_its_model(completed: TaskRun, tmp_path: Path) -> None:
    state = json.loads((completed.run_dir / "state.json").read_text(encoding="utf-8"))
    found = undeclared(TestRun, state["tests"], "tests") + undeclared(Review, state["review"], "review")
    found += undeclared(TaskResult, state["result"], "result") + undeclared(Learning, state["learning"], "learning")
    assert found == []
    # A failed task: its error, and the result that carries it.
    repo, patch = build_sample("unittest", tmp_path / "failing")
    run = TaskRun.start(repo, f"via {patch}", TaskOptions(scenario="no-questions", test_command="python3 -c 'raise SystemExit(3)'"))
    assert run.approve_plan(1, CLI).state == "FAILED"
    state = json.loads((run.run_dir / "state.json").read_text(encoding="utf-8"))
    assert undeclared(TaskError, state["error"], "error") + undeclared(TaskResult, state["result"], "result") == []
    wire = run.snapshot().wire()
    assert wire["error"] == {"kind": "testsFailed", "message": state["error"]["message"], "phase": "verifying",
                             "remedy": None}  # a message with no remedy a face words its own way
    assert wire["result"]["tests"]["exitCode"] == 3 and keys_not_camel(wire) == []


def test_the_checker_finds_a_key_a_model_does_not_declare() -> None:
    data = {"status": "completed", "tests": {"command": "x", "cwd": "c", "exit_code": 0, "status": "finished",
                                             "seconds": 1, "output_tail": "", "new_key": 1}}
    assert undeclared(TaskResult, data, "result") == ["result.tests.new_key"]
    assert keys_not_camel({"result": {"tests": {"exit_code": 0}}}) == [".result.tests.exit_code"]


def test_the_schema_lists_each_phase_result_field_by_its_wire_name() -> None:
    schema = json.loads((ROOT / "docs" / "protocol.schema.json").read_text(encoding="utf-8"))
    defs = schema["$defs"]
    for model in (TestRun, Review, TaskResult, TaskError, Learning):
        wire = [f.alias for f in model.model_fields.values()]
        assert list(defs[model.__name__]["properties"]) == wire, model.__name__
        assert defs[model.__name__]["required"] == wire  # a result carries every field
    assert "exitCode" in defs["TestRun"]["properties"] and "writtenByEditor" in defs["ApplyResult"]["properties"]
    snapshot = defs["TaskSnapshot"]["properties"]
    assert {"$ref": "#/$defs/TaskResult"} in snapshot["result"]["anyOf"]
    assert {"$ref": "#/$defs/AgentStatus"} in snapshot["agent"]["anyOf"]
    assert defs["AgentStatus"]["properties"]["roles"]["additionalProperties"] == {"$ref": "#/$defs/AgentRole"}
