"""Memory wired into tasks: recall in the launch snapshot and the providers' context; a role's save_memory."""

from __future__ import annotations

import json
from pathlib import Path

from autocode.memory import MemoryContext, open_memory
from autocode.settings import resolve_settings
from autocode.tasks import Source, TaskOptions, TaskRun
from support import git
from tasks_support import NAMING_ANSWER, build_sample, read_record

CLI = Source("cli", "tester")
LESSON = "This repository's tests import the package from the repository root, so run them from there."


def test_a_scenario_saves_a_memory_and_the_next_task_recalls_it(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    other, _ = build_sample("pytest", tmp_path / "shop")
    first = TaskRun.start(repo, f"Add longest_word via {patch}", TaskOptions(scenario="save-memory"))
    first.answer("test-naming", NAMING_ANSWER, CLI)
    first.approve_plan(1, CLI)
    snap = first.approve_completion(CLI)
    assert snap["state"] == "COMPLETED"
    events = [json.loads(line) for line in (Path(snap["run_dir"]) / "events.jsonl").read_text().splitlines()]
    [saved] = [e for e in events if e["event"] == "memory_saved"]
    assert saved["result"]["saved"] is True and saved["result"]["scope"] == "project"
    # The memory is a durable lesson, not a convention: the record does not hold it.
    assert LESSON not in json.dumps(read_record(repo))

    git(repo, "checkout", "-q", "--", ".")
    second = TaskRun.start(repo, f"Add longest_word again via {patch}")
    launch = json.loads((Path(second.snapshot()["run_dir"]) / "launch.json").read_text())
    assert [m["content"] for m in launch["recall"]["project"]] == [LESSON]
    assert launch["recall"]["receipt"]["project"][0]["id"] == saved["result"]["id"]
    assert LESSON in launch["recall"]["rendered"]
    # Recall is context, never this task's answers.
    assert second.details()["ledger"]["answers"] == []

    # Another repository never sees it.
    elsewhere = TaskRun.start(other, "Something else", TaskOptions(scenario="no-questions"))
    launch = json.loads((Path(elsewhere.snapshot()["run_dir"]) / "launch.json").read_text())
    assert launch["recall"]["project"] == []


def test_a_refused_save_is_recorded_and_does_not_fail_the_task(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    scenario = tmp_path / "refused.json"
    scenario.write_text(json.dumps({
        "name": "refused",
        "questions": [],
        "save_memory": [{"content": "T-28 is blocked until this task is merged.", "scope": "project"}],
    }))
    run = TaskRun.start(repo, f"via {patch}", TaskOptions(scenario=str(scenario)))
    snap = run.approve_plan(1, CLI)
    assert snap["needs"]["kind"] == "approve_completion"
    events = [json.loads(line) for line in (Path(snap["run_dir"]) / "events.jsonl").read_text().splitlines()]
    [refused] = [e for e in events if e["event"] == "memory_not_saved"]
    assert refused["result"]["saved"] is False and refused["result"]["refused"]
    with open_memory(resolve_settings(repo)) as service:
        assert service.search(MemoryContext(agent="implementer", repository=repo), "blocked").hits == []
