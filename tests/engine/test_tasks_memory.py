"""Memory wired into tasks: recall in the launch snapshot and the providers' context; a role's save_memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autocode.memory import MemoryContext, open_memory
from autocode.settings import resolve_settings
from autocode.tasks import Source, TaskOptions, TaskRun
from support import git, trust
from support.tasks import NAMING_ANSWER, autocode_json, build_sample, cli_env, read_record

CLI = Source("cli", "tester")
LESSON = "This repository's tests import the package from the repository root, so run them from there."


def test_a_scenario_saves_a_memory_and_the_next_task_recalls_it(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    other, _ = build_sample("pytest", tmp_path / "shop")
    first = TaskRun.start(repo, f"Add longest_word via {patch}", TaskOptions(scenario="save-memory"))
    first.answer("test-naming", NAMING_ANSWER, CLI)
    first.approve_plan(1, CLI)
    snap = first.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED"
    events = [json.loads(line) for line in (Path(snap["runDir"]) / "events.jsonl").read_text().splitlines()]
    [saved] = [e for e in events if e["event"] == "memory_saved"]
    assert saved["result"]["saved"] is True and saved["result"]["scope"] == "project"
    # The memory is a durable lesson, not a convention: the record does not hold it.
    assert LESSON not in json.dumps(read_record(repo))

    git(repo, "checkout", "-q", "--", ".")
    second = TaskRun.start(repo, f"Add longest_word again via {patch}")
    launch = json.loads((Path(second.snapshot().wire()["runDir"]) / "launch.json").read_text())
    assert [m["content"] for m in launch["recall"]["project"]] == [LESSON]
    assert launch["recall"]["receipt"]["project"][0]["id"] == saved["result"]["id"]
    assert LESSON in launch["recall"]["rendered"]
    # Recall is context, never this task's answers.
    assert second.details()["ledger"]["answers"] == []

    # Another repository never sees it.
    elsewhere = TaskRun.start(other, "Something else", TaskOptions(scenario="no-questions"))
    launch = json.loads((Path(elsewhere.snapshot().wire()["runDir"]) / "launch.json").read_text())
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
    snap = run.approve_plan(1, CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion"
    events = [json.loads(line) for line in (Path(snap["runDir"]) / "events.jsonl").read_text().splitlines()]
    [refused] = [e for e in events if e["event"] == "memory_not_saved"]
    assert refused["result"]["saved"] is False and refused["result"]["refused"]
    with open_memory(resolve_settings(repo)) as service:
        assert service.search(MemoryContext(agent="implementer", repository=repo), "blocked").hits == []


REFLECTED = "Run a project's test command from the repository root so relative imports resolve."


def _reflect(*args: str, unattended: bool = False) -> tuple[int, dict[str, Any]]:
    env = cli_env()
    env.pop("AUTOCODE_UNATTENDED", None)
    if unattended:
        env["AUTOCODE_UNATTENDED"] = "1"
    return autocode_json("memory", "reflect", *args, env=env)


def test_a_completed_tasks_lesson_is_proposed_by_reflect_and_applied_only_with_approval(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"Add longest_word via {patch}", TaskOptions(scenario="lesson"))
    run.approve_plan(1, CLI)
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED"
    events = [json.loads(line) for line in (Path(snap["runDir"]) / "events.jsonl").read_text().splitlines()]
    [recorded] = [e for e in events if e["event"] == "lessons_recorded"]
    assert len(recorded["ids"]) == 1

    code, data = _reflect()
    assert code == 0, data
    [proposal] = [p for p in data["proposals"] if p["sourceRun"] == snap["id"]]
    assert proposal["content"] == REFLECTED and proposal["scope"] == "global" and proposal["verdict"] == "proposed"
    with open_memory(resolve_settings(repo)) as service:
        assert REFLECTED not in [m.content for m in service.list(MemoryContext(agent="implementer", repository=None))]

    # Unattended approval is refused and writes nothing; a person's approval saves it, global.
    code, data = _reflect("--approve", proposal["id"], unattended=True)
    assert code == 3
    with open_memory(resolve_settings(repo)) as service:
        assert REFLECTED not in [m.content for m in service.list(MemoryContext(agent="implementer", repository=None))]
    code, data = _reflect("--approve", proposal["id"])
    assert code == 0, data
    [applied] = data["applied"]
    assert applied["saved"] is True and applied["scope"] == "global"
    with open_memory(resolve_settings(repo)) as service:
        [memory] = [m for m in service.list(MemoryContext(agent="implementer", repository=None)) if m.content == REFLECTED]
        assert memory.scope == "global" and memory.to_dict()["repository"] is None


def test_lessons_that_cannot_be_recorded_go_to_events_and_completion_still_succeeds(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"Add longest_word via {patch}", TaskOptions(scenario="lesson"))
    run.approve_plan(1, CLI)
    # The memory store becomes unreachable before completion: a file stands where its folder should be.
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder\n")
    (repo / ".autocode" / "config.toml").write_text(f'memory_path = "{(blocker / "m.sqlite3").as_posix()}"\n')
    trust(repo)
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED" and snap["result"]["status"] == "completed"
    events = [json.loads(line) for line in (Path(snap["runDir"]) / "events.jsonl").read_text().splitlines()]
    [failed] = [e for e in events if e["event"] == "lessons_not_recorded"]
    assert failed["count"] == 1 and failed["error"]
    assert snap["result"]["verified"] is True and snap["learning"]["status"] != "pending"
