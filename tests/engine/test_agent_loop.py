"""The implementer's agent loop against a scripted OpenAI-compatible server (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_support import (
    BUGGY_OPS,
    FIXED_OPS,
    TEST_COMMAND,
    ScriptedEndpoint,
    build_calc,
    call,
    last_message,
    review,
    roles_before_implementing,
    serve,
    text,
    tool_names,
)
from autocode.tasks import Source, TaskOptions, TaskRun

CLI = Source("cli", "tester")
ALL_TOOLS = ["read_file", "list_files", "search", "edit_file", "write_file", "run_tests", "recall_memories", "save_memory"]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


def start(repo: Path, url: str, **kw: Any) -> TaskRun:
    options = {"provider": "openai", "base_url": url, "model": "scripted", "test_command": TEST_COMMAND, **kw}
    return TaskRun.start(repo, "add(2, 3) gives -1; fix it.", TaskOptions(**options))


def events(run: TaskRun) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.run_dir / "events.jsonl").read_text().splitlines()]


def transcript(run: TaskRun, name: str = "implementer") -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.run_dir / "agent" / f"{name}.jsonl").read_text().splitlines()]


def test_a_bug_fix_through_tools_reaches_completion_with_the_right_diff(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")

    def first_request(body: dict[str, Any]) -> None:
        assert tool_names(body) == ALL_TOOLS
        assert body["tool_choice"] == "auto"
        # The file with the bug is not among the paths the task cites: the model has to find it.
        assert "calc/ops.py" not in body["messages"][1]["content"]

    def sees(*needles: str) -> Any:
        def check(body: dict[str, Any]) -> None:
            message = last_message(body)
            assert message["role"] == "tool" and message["tool_call_id"], message
            for needle in needles:
                assert needle in message["content"], (needle, message["content"])
        return check

    progress: list[tuple[str, str]] = []
    endpoint.load(
        *roles_before_implementing(check=lambda b: tool_names(b) == ["read_file", "list_files", "search"] or None),
        call("search", {"pattern": r"def add"}, check=first_request),
        call("read_file", {"path": "calc/ops.py"}, check=sees("calc/ops.py:1: def add(a, b):")),
        # A wrong first edit...
        call("edit_file", {"path": "calc/ops.py", "old_text": "return a - b", "new_text": "return a * b"},
             check=sees("1  def add(a, b):", "2      return a - b")),
        call("run_tests", check=sees("edited calc/ops.py")),
        # ...whose failing test output the next request carries.
        call("edit_file", {"path": "calc/ops.py", "old_text": "return a * b", "new_text": "return a + b"},
             check=sees("exit code 1", "FAILED (failures=2)", "AssertionError: 6 != 5")),
        call("run_tests", check=sees("edited calc/ops.py")),
        text("add subtracted instead of adding; it adds now and both tests pass.", check=sees("exit code 0", "OK")),
        review(),
    )
    run = start(repo, endpoint.url)
    assert run.snapshot()["needs"]["kind"] == "approve_plan"
    run = TaskRun.load(repo, run.id, progress=lambda phase, message: progress.append((phase, message)))
    snap = run.approve_plan(1, CLI)
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    assert snap["needs"]["files"] == ["calc/ops.py"]
    assert "-    return a - b\n+    return a + b\n" in snap["needs"]["diff"]
    assert "a * b" not in snap["needs"]["diff"]
    # Usage the endpoint reported, summed over the task's requests; the loop's own record.
    agent = snap["agent"]
    implementer = agent["roles"]["implementer"]
    assert implementer["mode"] == "tools" and implementer["turns"] == 7 and implementer["tool_calls"] == 6
    assert implementer["usage"] == {"prompt_tokens": 700, "completion_tokens": 70, "total_tokens": 770}
    assert len(endpoint.requests) == 11  # investigator, requirements, planner, 7 turns, reviewer
    assert agent["usage"]["total_tokens"] == 110 * 11  # summed over every request of the task
    assert run.details()["snapshot"]["agent"] == agent  # `task show`
    # Progress people can follow, in the task's events and through the progress callback.
    reports = [e["report"] for e in events(run) if e["event"] == "agent_tool"]
    assert reports == [
        "searching 'def add'", "reading calc/ops.py", "editing calc/ops.py", "running tests: 2 failed",
        "editing calc/ops.py", "running tests: passed",
    ]
    said = [m for phase, m in progress if phase == "implementing"]
    assert "reading calc/ops.py" in said and "running tests: 2 failed" in said and "running tests" in said
    # The transcript: a start, then every request, reply and tool call.
    kinds = [e["event"] for e in transcript(run)]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert kinds.count("request") == 7 and kinds.count("reply") == 7 and kinds.count("tool") == 6
    snap = run.approve_completion(CLI)
    assert snap["state"] == "COMPLETED", snap["error"]
    assert (repo / "calc" / "ops.py").read_text() == FIXED_OPS


def test_budget_of_turns_stops_endless_reads_and_keeps_what_was_done(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text("max_turns = 4\n")
    endpoint.load(
        *roles_before_implementing(),
        call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}),
        *[call("read_file", {"path": "calc/ops.py"}) for _ in range(3)],
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI)
    endpoint.assert_clean()
    assert snap["state"] == "FAILED"
    assert snap["error"]["kind"] == "budgetExhausted"
    assert "max_turns = 4" in snap["error"]["message"] and "evidence/partial.diff" in snap["error"]["message"]
    assert snap["agent"]["roles"]["implementer"]["stopped"] == "max_turns"
    partial = (run.run_dir / "evidence" / "partial.diff").read_text()
    assert "+    return a + b" in partial
    assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS  # the person's tree is untouched
    assert len(endpoint.requests) == 3 + 4


def test_token_budget_stops_the_loop(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text("token_budget = 1000\n")
    big = {"prompt_tokens": 900, "completion_tokens": 200, "total_tokens": 1100}
    endpoint.load(*roles_before_implementing(), call("list_files", usage=big))
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI)
    endpoint.assert_clean()
    assert snap["error"]["kind"] == "budgetExhausted" and "token_budget = 1000" in snap["error"]["message"]
    assert snap["agent"]["roles"]["implementer"]["usage"]["total_tokens"] == 1100
