"""The implementer's agent loop against a scripted OpenAI-compatible server (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autocode.providers.agent import read_status
from autocode.tasks import Source, TaskOptions, TaskRun
from autocode.tasks.models import AgentStatus
from support.agent import (
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
from support.wire import keys_not_camel, undeclared

CLI = Source("cli", "tester")
ALL_TOOLS = ["read_file", "list_files", "search", "edit_file", "write_file", "run_tests", "recall_memories", "save_memory"]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


def must(predicate: Any) -> Any:
    def check(body: dict[str, Any]) -> None:
        assert predicate(body), json.dumps(body)[-600:]
    return check


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
        # The repository map: the investigator's citation first, then every file with its definitions.
        first = body["messages"][1]["content"]
        assert "Repository map" in first and "Repository paths" not in first
        assert first.index("README.md") < first.index("a_notes/n00.md")
        assert "calc/ops.py: def add(a, b), def double(x)" in first

    def sees(*needles: str) -> Any:
        def check(body: dict[str, Any]) -> None:
            message = last_message(body)
            assert message["role"] == "tool" and message["tool_call_id"], message
            for needle in needles:
                assert needle in message["content"], (needle, message["content"])
        return check

    progress: list[tuple[str, str]] = []
    endpoint.load(
        *roles_before_implementing(check=must(lambda b: tool_names(b) == ["read_file", "list_files", "search"])),
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
    assert run.snapshot().wire()["needs"]["kind"] == "approve_plan"
    run = TaskRun.load(repo, run.id, progress=lambda phase, message: progress.append((phase, message)))
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    assert snap["needs"]["files"] == ["calc/ops.py"]
    assert "-    return a - b\n+    return a + b\n" in snap["needs"]["diff"]
    assert "a * b" not in snap["needs"]["diff"]
    # Usage the endpoint reported, summed over the task's requests; the loop's own record.
    agent = snap["agent"]
    implementer = agent["roles"]["implementer"]
    assert implementer["mode"] == "tools" and implementer["turns"] == 7 and implementer["toolCalls"] == 6
    assert implementer["usage"] == {"promptTokens": 700, "completionTokens": 70, "totalTokens": 770}
    assert len(endpoint.requests) == 11  # investigator, requirements, planner, 7 turns, reviewer
    assert agent["usage"]["totalTokens"] == 110 * 11  # summed over every request of the task
    assert run.details()["snapshot"]["agent"] == agent  # `task show`
    assert implementer["summary"] == "add subtracted instead of adding; it adds now and both tests pass."
    # Every key the loop writes into its status is declared on the typed model.
    assert undeclared(AgentStatus, read_status(run.run_dir) or {}, "agent") == []
    assert keys_not_camel(agent) == []
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
    snap = run.approve_completion(CLI).wire()
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
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED"
    assert snap["error"]["kind"] == "budgetExhausted"
    assert "max_turns = 4" in snap["error"]["message"] and "evidence/partial.diff" in snap["error"]["message"]
    assert snap["agent"]["roles"]["implementer"]["stopped"] == "max_turns"
    partial = (run.run_dir / "evidence" / "partial.diff").read_text()
    assert "+    return a + b" in partial
    assert (repo / "calc" / "ops.py").read_text() == BUGGY_OPS  # the person's tree is untouched
    assert len(endpoint.requests) == 3 + 4


def test_token_budget_stops_the_loop_before_a_request_would_overrun_it(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text("token_budget = 3000\n")
    # The first request cost 1,700 tokens; the next would carry as many prompt tokens again: not sent.
    big = {"prompt_tokens": 1500, "completion_tokens": 200, "total_tokens": 1700}
    endpoint.load(*roles_before_implementing(), call("list_files", usage=big))
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert len(endpoint.requests) == 4
    assert snap["error"]["kind"] == "budgetExhausted" and "token_budget = 3000" in snap["error"]["message"]
    assert snap["agent"]["roles"]["implementer"]["usage"]["totalTokens"] == 1700


def _tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results at the end of a request, in order."""
    out: list[str] = []
    for message in reversed(body["messages"]):
        if message["role"] != "tool":
            break
        out.insert(0, message["content"])
    return out


def test_hostile_tool_calls_come_back_as_errors_and_change_nothing(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    from support.agent import calls

    repo = build_calc(tmp_path / "calc")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the copy\n")
    seen: dict[str, list[str]] = {}
    endpoint.load(
        *roles_before_implementing(),
        calls(
            ("read_file", '{"path": "calc/ops.py"'),  # malformed JSON
            ("delete_everything", {"path": "."}),
            ("read_file", {"path": "../../etc/passwd"}),
            ("read_file", {"path": "/etc/passwd"}),
            ("read_file", {"path": "link/secret.txt"}),
            ("write_file", {"path": "link/new.txt", "content": "x"}),
            ("write_file", {"path": ".git/config", "content": "x"}),
            ("write_file", {"path": ".autocode/config.toml", "content": "x"}),
            ("edit_file", {"path": "calc/ops.py", "old_text": "return a - c", "new_text": "return a + b"}),
            ("edit_file", {"path": "calc/ops.py", "old_text": "add(", "new_text": "plus("}),
            ("read_file", {"path": "calc/ops.py", "start_line": "two"}),
        ),
        text("I could not change anything.", check=lambda body: seen.setdefault("results", _tool_results(body)) and None),
    )
    run = start(repo, endpoint.url)
    copy = Path(run.snapshot().wire()["copy"])
    (copy / "link").symlink_to(outside)  # a link out of the copy
    before = {p.relative_to(copy).as_posix(): p.read_bytes() for p in copy.rglob("*") if p.is_file() and not p.is_symlink()}
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    results = seen["results"]
    assert len(results) == 11
    expected = [
        "error: the arguments are not valid JSON",
        "error: unknown tool 'delete_everything'; the tools here are: read_file, list_files, search, edit_file",
        "goes up with '..'",
        "is an absolute path",
        "leads out of the repository through a link",
        "leads out of the repository through a link",
        "inside .git or .autocode",
        "inside .git or .autocode",
        "old_text does not occur in calc/ops.py; nothing was changed. The closest lines are:",
        "old_text occurs 2 times in calc/ops.py (at lines 1, 6); nothing was changed",
        "start_line must be a line number",
    ]
    for result, needle in zip(results, expected, strict=True):
        assert needle in result, (needle, result)
    assert "2      return a - b" in results[8]  # the closest lines, numbered
    # Nothing was written anywhere: the copy, the outside folder, the task failed with no change.
    after = {p.relative_to(copy).as_posix(): p.read_bytes() for p in copy.rglob("*") if p.is_file() and not p.is_symlink()}
    assert after == before
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "emptyChange"
    assert [e["ok"] for e in events(run) if e["event"] == "agent_tool"] == [False] * 11


def test_a_reply_with_neither_text_nor_tool_calls_is_nudged_once_then_fails(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")

    def nudged(body: dict[str, Any]) -> None:
        assert last_message(body)["role"] == "user" and "neither text nor a tool call" in last_message(body)["content"]

    endpoint.load(*roles_before_implementing(), text(""), text("", check=nudged))
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "providerError"
    assert "neither text nor a tool call" in snap["error"]["message"]


def test_an_endpoint_that_refuses_tools_gets_edit_blocks(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    from support.agent import Step

    repo = build_calc(tmp_path / "calc")

    def plain(body: dict[str, Any]) -> None:
        assert "tools" not in body and "tool_choice" not in body
        assert "<<<<<<< SEARCH" in body["messages"][0]["content"]

    def sees(*needles: str) -> Any:
        def check(body: dict[str, Any]) -> None:
            plain(body)
            message = last_message(body)
            assert message["role"] == "user"
            for needle in needles:
                assert needle in message["content"], (needle, message["content"])
        return check

    block = "calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    endpoint.load(
        *roles_before_implementing(),
        Step(status=400, body={"error": {"message": "model 'tiny' does not support tools", "type": "invalid_request_error"}},
             check=must(lambda b: bool(b.get("tools")))),
        text("Let me look first.\nREAD calc/ops.py", check=plain),
        text("The bug:\n\n" + block, check=sees("2      return a - b")),
        text("add now adds; the tests pass.", check=sees("applied the block for calc/ops.py", "tests: exit code 0")),
        review(),
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    implementer = snap["agent"]["roles"]["implementer"]
    assert implementer["mode"] == "edit_blocks" and "does not support tools" in implementer["fallbackReason"]
    assert snap["agent"]["editBlocksFallback"] == ["implementer"]
    assert "+    return a + b" in snap["needs"]["diff"]
    assert any(e["event"] == "agent_fallback" for e in events(run))


def test_a_credential_in_a_file_never_reaches_the_transcript_or_the_next_request(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    key = "sk-proj-" + "Ab3dE" * 9  # assembled at run time, never in the repository's text
    repo = build_calc(tmp_path / "calc", {"calc/settings.py": f'OPENAI_API_KEY = "{key}"\n'})

    def scrubbed(body: dict[str, Any]) -> None:
        content = last_message(body)["content"]
        assert key not in content and "[redacted:" in content, content

    endpoint.load(
        *roles_before_implementing(),
        call("read_file", {"path": "calc/settings.py"}),
        call("search", {"pattern": "API_KEY"}, check=scrubbed),
        call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}, check=scrubbed),
        text("fixed"),
        review(),
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    assert all(key not in json.dumps(r["body"]) for r in endpoint.requests)
    for path in run.run_dir.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path
    assert "[redacted:" in (run.run_dir / "agent" / "implementer.jsonl").read_text()


def test_a_reading_role_reads_before_answering_and_cannot_write(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    from support.agent import json_answer

    repo = build_calc(tmp_path / "calc")
    endpoint.load(
        call("read_file", {"path": "calc/ops.py"}),
        call("write_file", {"path": "calc/ops.py", "content": "x"},
             check=must(lambda b: "return a - b" in last_message(b)["content"])),
        json_answer({"citations": ["calc/ops.py"]},
                    check=must(lambda b: "unknown tool 'write_file'" in last_message(b)["content"])),
        *roles_before_implementing()[1:],
    )
    run = start(repo, endpoint.url)
    endpoint.assert_clean()
    assert run.snapshot().wire()["needs"]["kind"] == "approve_plan"
    assert tool_names(endpoint.requests[0]["body"]) == ["read_file", "list_files", "search"]
    assert (Path(run.snapshot().wire()["copy"]) / "calc" / "ops.py").read_text() == BUGGY_OPS
    assert "calc/ops.py" in endpoint.requests[3]["body"]["messages"][1]["content"]  # the investigator's citation


CHILD = "import sys\nfrom autocode.tasks import TaskRun\nTaskRun.load(sys.argv[1], sys.argv[2]).approve_plan(1, 'cli')\n"


def _child(repo: Path, task_id: str, **env: str) -> Any:
    import subprocess
    import sys

    from support.tasks import cli_env

    return subprocess.Popen([sys.executable, "-c", CHILD, str(repo), task_id], env=cli_env(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_killed_between_two_tool_calls_resumes_from_the_last_completed_one(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    from support.agent import calls

    repo = build_calc(tmp_path / "calc")
    endpoint.load(
        *roles_before_implementing(),
        calls(
            ("read_file", {"path": "calc/ops.py"}),
            ("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}),
            ("run_tests", {}),
        ),
        text("fixed add"),
        review(),
    )
    run = start(repo, endpoint.url)
    child = _child(repo, run.id, AUTOCODE_TEST_KILL_AT="agent_tool@2")  # killed right after the edit
    child.wait(timeout=60)
    assert child.returncode == -9, child.stderr.read()
    assert run.snapshot().wire()["state"] == "INTERRUPTED"
    assert [e["name"] for e in transcript(run) if e["event"] == "tool"] == ["read_file", "edit_file"]
    snap = TaskRun.load(repo, run.id).resume().wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    # After the resume only run_tests ran; the request carries the three results in order.
    results = _tool_results(endpoint.requests[4]["body"])
    assert [r.split("\n")[0][:12] for r in results] == ["calc/ops.py ", "edited calc/", "exit code 0 "]
    assert [e["name"] for e in transcript(run) if e["event"] == "tool"] == ["read_file", "edit_file", "run_tests"]
    assert "+    return a + b" in snap["needs"]["diff"]
    assert any(e["event"] == "agent_resumed" for e in events(run))


def test_killed_while_waiting_for_the_model_sends_the_same_request_again(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    import os
    import signal

    from support.agent import Step

    repo = build_calc(tmp_path / "calc")
    holder: dict[str, Any] = {}
    endpoint.load(
        *roles_before_implementing(),
        call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}),
        Step(message={"role": "assistant", "content": "never read"}, delay=0.5,
             on_receive=lambda: os.kill(holder["pid"], signal.SIGKILL)),
        call("run_tests"),
        text("fixed add"),
        review(),
    )
    run = start(repo, endpoint.url)
    child = _child(repo, run.id)
    holder["pid"] = child.pid
    child.wait(timeout=60)
    assert child.returncode == -9
    snap = TaskRun.load(repo, run.id).resume().wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    killed, again = endpoint.requests[4]["body"], endpoint.requests[5]["body"]
    assert again["messages"] == killed["messages"]
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == FIXED_OPS


def test_cancel_aborts_the_request_in_flight(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    import threading

    repo = build_calc(tmp_path / "calc")
    arrived = threading.Event()
    from support.agent import Step

    answer = threading.Event()
    endpoint.load(*roles_before_implementing(),
                  Step(message={"role": "assistant", "content": "late"}, hold=answer, on_receive=arrived.set))
    run = start(repo, endpoint.url)
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.setdefault("snap", run.approve_plan(1, CLI).wire()))
    worker.start()
    assert arrived.wait(30)
    try:
        TaskRun.load(repo, run.id).cancel()  # another caller: it can only ask the busy task to stop
        worker.join(50)
        # The task ended while its request's answer was still held: the answer was not waited for.
        assert not worker.is_alive() and not answer.is_set()
    finally:
        answer.set()
    assert out["snap"]["state"] == "CANCELLED"
    assert [e["event"] for e in transcript(run)][-1] == "request"


def test_a_slow_endpoint_is_a_clear_timeout(endpoint: ScriptedEndpoint) -> None:
    import threading

    from autocode.providers import ProviderError
    from autocode.providers.agent.http import ChatClient
    from support.agent import Step

    answer = threading.Event()
    endpoint.load(Step(message={"role": "assistant", "content": "slow"}, hold=answer))
    endpoint.served.clear()
    try:
        # The answer is held until after the call: only the client's own timeout can end it.
        with pytest.raises(ProviderError, match=r"sent nothing for 0\.3 s"):
            ChatClient(base_url=endpoint.url, timeout=0.3).post("/chat/completions", {"messages": []})
    finally:
        answer.set()
    assert endpoint.served.wait(30)  # the handler is done before the next test loads the script


def test_azure_addressing_puts_the_deployment_in_the_path_and_the_key_in_api_key(
    endpoint: ScriptedEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autocode.providers.agent.http import ChatClient

    monkeypatch.setenv("AUTOCODE_AZURE_TEST_KEY", "k-" + "z" * 10)
    endpoint.load(text("hi"))
    base = endpoint.url.removesuffix("/v1")
    client = ChatClient(base_url=base, api_key_env="AUTOCODE_AZURE_TEST_KEY",
                        azure_api_version="2024-06-01", azure_deployment="gpt-dep")
    client.post("/chat/completions", {"messages": []})
    request = endpoint.requests[0]
    assert request["path"] == "/openai/deployments/gpt-dep/chat/completions?api-version=2024-06-01"
    assert request["headers"].get("api-key") == "k-" + "z" * 10 and "Authorization" not in request["headers"]


def test_retry_after_is_honoured_by_the_loop_client(endpoint: ScriptedEndpoint) -> None:
    from autocode.providers.agent.http import ChatClient
    from support.agent import Step

    slept: list[float] = []
    endpoint.load(Step(status=429, body={"error": "slow down"}, headers={"Retry-After": "2"}),
                  Step(status=503, body={"error": "busy"}), text("ok"))
    reply = ChatClient(base_url=endpoint.url, sleep=slept.append, backoff=0.1).post("/chat/completions", {"messages": []})
    assert reply["choices"][0]["message"]["content"] == "ok"
    assert slept[0] == 2.0 and 0.1 <= slept[1] <= 0.3  # Retry-After wins; then backoff with jitter


def test_task_show_prints_the_usage_and_the_settings_have_origins(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    from autocode.settings import resolve_settings
    from support.tasks import autocode

    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text("max_turns = 4\n")
    endpoint.load(*roles_before_implementing(),
                  call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}),
                  *[call("list_files") for _ in range(3)])
    run = start(repo, endpoint.url)
    run.approve_plan(1, CLI)
    shown = autocode("task", "show", run.id, "--workspace", str(repo))
    assert "model usage: 770 tokens (700 prompt, 70 completion)" in shown.stdout, shown.stdout
    assert "implementer: tools, 4 request(s), 4 tool call(s), 440 tokens, stopped: max_turns reached" in shown.stdout
    settings = resolve_settings(repo)
    assert settings["max_turns"].origin != settings["token_budget"].origin  # config file vs built-in default
    doctor = autocode("doctor", "--workspace", str(repo), "--json")
    assert '"max_turns"' in doctor.stdout and '"time_budget"' in doctor.stdout


def test_the_time_budget_stops_the_loop(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text("time_budget = 1\n")
    endpoint.load(*roles_before_implementing(), call("list_files", delay=1.2))
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["error"]["kind"] == "budgetExhausted" and "time_budget = 1 s" in snap["error"]["message"]
    assert snap["agent"]["roles"]["implementer"]["stopped"] == "time_budget"


def test_edit_format_tools_makes_a_refusal_a_clear_failure(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    from support.agent import Step

    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text('edit_format = "tools"\n')
    endpoint.load(*roles_before_implementing(), Step(status=400, body={"error": {"message": "tools are not supported"}}))
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["error"]["kind"] == "providerError"
    assert "refused the tools" in snap["error"]["message"] and 'edit_format = "auto"' in snap["error"]["message"]


def test_edit_format_edit_blocks_never_offers_tools(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "config.toml").write_text('edit_format = "edit_blocks"\n')
    block = "calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    endpoint.load(
        *roles_before_implementing(),
        text(block, check=must(lambda b: "tools" not in b)),
        text("done", check=must(lambda b: "tests: exit code 0" in last_message(b)["content"])),
        review(),
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    assert snap["agent"]["roles"]["implementer"]["mode"] == "edit_blocks"
    assert snap["agent"]["roles"]["implementer"]["fallbackReason"] is None


def test_the_fixture_provider_has_no_agent_record(tmp_path: Path) -> None:
    from support.tasks import build_sample

    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"Apply {patch}", TaskOptions(scenario="no-questions"))
    assert run.snapshot().wire()["agent"] is None
    assert not (run.run_dir / "agent").exists()


def test_a_chatty_first_reply_is_asked_once_to_use_the_tools_and_the_loop_stays_in_tools(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(
        *roles_before_implementing(),
        text("I would change add in calc/ops.py to add its arguments.", check=must(lambda b: "tools" in b)),
        call("edit_file", {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"},
             check=must(lambda b: "tools" in b and "without calling a tool" in last_message(b)["content"])),
        text("add adds now.", check=must(lambda b: "tools" in b and "edited calc/ops.py" in last_message(b)["content"])),
        review(),
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    implementer = snap["agent"]["roles"]["implementer"]
    assert implementer["mode"] == "tools" and implementer["fallbackReason"] is None
    assert snap["agent"]["editBlocksFallback"] == []


def test_a_model_that_never_calls_a_tool_fails_saying_so_instead_of_switching_formats(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(
        *roles_before_implementing(),
        text("I would change add."),
        text("Change add to return a + b.", check=must(lambda b: "tools" in b)),
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "providerError"
    assert "without calling any tool" in snap["error"]["message"] and 'edit_format = "edit_blocks"' in snap["error"]["message"]
    assert snap["agent"]["roles"]["implementer"]["mode"] == "tools"
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == BUGGY_OPS
