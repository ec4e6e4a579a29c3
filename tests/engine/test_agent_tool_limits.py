"""Tool calls inside a real task: cancel and the time budget stop them, resume never repeats them
blindly, a repeated failing call ends the loop, and the model sees code as it is.

A real TaskRun against the scripted OpenAI-compatible endpoint (real HTTP on
127.0.0.1); the hanging tool calls are real processes (a test command that
sleeps, a backtracking search in the fallback engine).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autocode.tasks import Source, TaskOptions, TaskRun
from support.agent import (
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
)

CLI = Source("cli", "tester")
EDIT = {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


def start(repo: Path, url: str, **kw: Any) -> TaskRun:
    options = {"provider": "openai", "base_url": url, "model": "scripted", "test_command": TEST_COMMAND, **kw}
    return TaskRun.start(repo, "add(2, 3) gives -1; fix it.", TaskOptions(**options))


def transcript(run: TaskRun) -> list[dict[str, Any]]:
    path = run.run_dir / "agent" / "implementer.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tool_events(run: TaskRun) -> list[dict[str, Any]]:
    return [e for e in transcript(run) if e["event"] == "tool"]


def sleeper(token: str) -> str:
    """A test command that never ends by itself. It marks its start with a file in the copy (the
    only place a sandboxed test can write) and carries `token` in its command line."""
    code = f"import time; open('started-{token}', 'w').close(); time.sleep(600)"
    return f"{sys.executable} -c \"{code}\""


def running(token: str) -> list[int]:
    """Live processes (any namespace, zombies aside) whose command line holds `token`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def run_in_thread(run: TaskRun) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.setdefault("snap", run.approve_plan(1, CLI).wire()))
    worker.start()
    return worker, out


def wait_for(predicate: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "the task never reached the hanging call"
        time.sleep(0.02)


# --------------------------------------------------------------------------- cancel


def test_cancel_during_a_hanging_run_tests_ends_the_task_and_its_process(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    token = f"hang-{uuid.uuid4().hex}"
    endpoint.load(*roles_before_implementing(), call("edit_file", EDIT), call("run_tests"))
    run = start(repo, endpoint.url, test_command=sleeper(token))
    copy = Path(run.snapshot().wire()["copy"])
    worker, out = run_in_thread(run)
    wait_for(lambda: (copy / f"started-{token}").exists())
    TaskRun.load(repo, run.id).cancel()  # another caller: it can only ask the busy task to stop
    worker.join(120)
    assert not worker.is_alive()  # the test command alone would run 600 s
    endpoint.assert_clean()
    assert out["snap"]["state"] == "CANCELLED"
    assert running(token) == []
    last = tool_events(run)[-1]
    assert last["name"] == "run_tests" and last["stopped"] == "cancelled" and not last["ok"]
    assert "the task was cancelled while it ran" in last["result"]
    events = [json.loads(line) for line in (run.run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["report"] for e in events if e["event"] == "agent_tool"][-1] == "running tests: cancelled"


def test_cancel_during_a_search_that_never_ends_stops_it(
    endpoint: ScriptedEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine without ripgrep (every other program of PATH stays): the fallback's
    # backtracking engine would run this for ever.
    bare = tmp_path / "bin"
    bare.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        for program in Path(folder).glob("*") if folder and Path(folder).is_dir() else []:
            if program.name != "rg" and not (bare / program.name).exists() and os.access(program, os.X_OK):
                (bare / program.name).symlink_to(program)
    monkeypatch.setenv("PATH", str(bare))
    assert shutil.which("rg") is None and shutil.which("git") is not None
    repo = build_calc(tmp_path / "calc", {"calc/data.txt": "a" * 60 + "!\n"})
    endpoint.load(*roles_before_implementing(), call("search", {"pattern": "(a+)+$"}))
    run = start(repo, endpoint.url)
    worker, out = run_in_thread(run)
    wait_for(lambda: any(e["event"] == "tool_start" for e in transcript(run)))
    TaskRun.load(repo, run.id).cancel()
    worker.join(120)
    assert not worker.is_alive()  # the search alone would run for ever
    assert out["snap"]["state"] == "CANCELLED"
    last = tool_events(run)[-1]
    assert last["name"] == "search" and last["stopped"] == "cancelled"


# --------------------------------------------------------------------------- the time budget


def test_the_time_budget_stops_a_hanging_run_tests_and_the_call_is_recorded(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text("time_budget = 2\n")
    token = f"hang-{uuid.uuid4().hex}"
    endpoint.load(*roles_before_implementing(), call("edit_file", EDIT), call("run_tests"))
    run = start(repo, endpoint.url, test_command=sleeper(token))
    copy = Path(run.snapshot().wire()["copy"])
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "budgetExhausted", snap["error"]
    assert "time_budget = 2 s" in snap["error"]["message"]
    assert (copy / f"started-{token}").exists() and running(token) == []
    last = tool_events(run)[-1]
    assert last["name"] == "run_tests" and "(timed_out" in last["result"]
    assert "time budget" in last["result"]
    assert [e["event"] for e in transcript(run)][-1] == "end"
    assert "+    return a + b" in (run.run_dir / "evidence" / "partial.diff").read_text()


# --------------------------------------------------------------------------- resume


CHILD = "import sys\nfrom autocode.tasks import TaskRun\nTaskRun.load(sys.argv[1], sys.argv[2]).approve_plan(1, 'cli')\n"


def test_a_call_the_process_died_in_is_not_run_again_on_resume(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    from support.tasks import cli_env

    repo = build_calc(tmp_path / "calc")

    def told(body: dict[str, Any]) -> None:
        message = last_message(body)
        assert message["role"] == "tool" and "this call was interrupted before it finished" in message["content"]

    endpoint.load(
        *roles_before_implementing(),
        call("edit_file", EDIT),
        call("run_tests"),
        text("add adds now.", check=told),
        review(),
    )
    run = start(repo, endpoint.url)
    # Killed as the second call (run_tests) begins: the transcript says it started, not how it ended.
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(repo), run.id],
                             env=cli_env(AUTOCODE_TEST_KILL_AT="agent_tool_running@2"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.wait(timeout=60)
    assert child.returncode == -9, child.stderr.read() if child.stderr else ""
    assert [e["event"] for e in transcript(run)][-1] == "tool_start"
    snap = TaskRun.load(repo, run.id).resume().wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    started = [e["name"] for e in transcript(run) if e["event"] == "tool_start"]
    assert started == ["edit_file", "run_tests"]  # the interrupted run_tests never started again
    last = tool_events(run)[-1]
    assert last["name"] == "run_tests" and last["stopped"] == "interrupted" and not last["ok"]
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == FIXED_OPS


# --------------------------------------------------------------------------- loop detection


def test_the_same_failing_call_is_told_once_then_ends_the_loop(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    wrong = {"path": "calc/ops.py", "old_text": "return a - c", "new_text": "return a + b"}

    def warned(body: dict[str, Any]) -> None:
        assert "This exact call has now failed 3 times" in last_message(body)["content"]

    def not_warned(body: dict[str, Any]) -> None:
        assert "failed 3 times" not in last_message(body)["content"]

    endpoint.load(
        *roles_before_implementing(),
        call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}),
        call("edit_file", wrong),
        call("read_file", {"path": "calc/ops.py"}, check=not_warned),
        # The same arguments, spaced and ordered differently, are the same call.
        call("edit_file", json.dumps(dict(reversed(wrong.items())), indent=2), check=not_warned),
        call("edit_file", wrong, check=not_warned),
        call("edit_file", wrong, check=warned),
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()  # no request after the fourth failure
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "agentLoop", snap["error"]
    message = snap["error"]["message"]
    assert "edit_file failed 4 times with the same arguments" in message and "old_text does not occur" in message
    assert "evidence/partial.diff" in message
    assert snap["agent"]["roles"]["implementer"]["stopped"] == "repeated_failure"
    assert "+    return a + b" in (run.run_dir / "evidence" / "partial.diff").read_text()


# --------------------------------------------------------------------------- code as it is


def test_the_model_reads_and_edits_machine_paths_as_they_are(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    key = "sk-proj-" + "Zr4mK" * 9  # assembled at run time
    settings = f'CACHE_DIR = "/tmp/shop-cache"\nOPENAI_API_KEY = "{key}"\n'
    repo = build_calc(tmp_path / "calc", {"calc/settings.py": settings})

    def sees_paths(body: dict[str, Any]) -> None:
        content = last_message(body)["content"]
        assert '1  CACHE_DIR = "/tmp/shop-cache"' in content, content
        assert key not in content and '2  OPENAI_API_KEY = "[redacted:openai_key]"' in content

    def refused(body: dict[str, Any]) -> None:
        content = last_message(body)["content"]
        assert "old_text quotes [redacted:openai_key]" in content and "line 2" in content, content

    endpoint.load(
        *roles_before_implementing(),
        call("read_file", {"path": "calc/settings.py"}),
        call("edit_file", {"path": "calc/settings.py", "old_text": '"/tmp/shop-cache"', "new_text": '"/tmp/shop-cache-2"'},
             check=sees_paths),
        call("edit_file", {"path": "calc/settings.py", "old_text": 'OPENAI_API_KEY = "[redacted:openai_key]"',
                           "new_text": 'OPENAI_API_KEY = os.environ["OPENAI_API_KEY"]'},
             check=lambda b: None),
        call("edit_file", EDIT, check=refused),
        text("fixed add; the cache folder moved."),
        review(),
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    copy = Path(snap["copy"])
    assert (copy / "calc" / "settings.py").read_text() == settings.replace("shop-cache", "shop-cache-2")
    assert [i for i, r in enumerate(endpoint.requests) if key in json.dumps(r["body"])] == []
