"""Whole tasks through the anthropic provider against a Messages endpoint that behaves as Anthropic's does.

The flows of `test_agent_endpoints` on the Messages API (scripted, real HTTP
on 127.0.0.1): the API's event stream streaming slowly or stalling, a
connection reset before the answer or in the middle of an event, 500/503/529
answers, an `event: error` in the middle of a stream, the API's "prompt is
too long" 400, two tool_use blocks in one reply, `stop_reason: max_tokens`
cutting a tool_use block, resume after a failure, doctor's provider check
and the one kept connection. Each task ends as it would with the API:
completed, or failed with the API's own message.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autocode.tasks import Source, TaskOptions, TaskRun
from support.agent import (
    BUGGY_OPS,
    FIXED_OPS,
    TEST_COMMAND,
    ScriptedEndpoint,
    Step,
    build_calc,
    call,
    calls,
    review,
    roles_before_implementing,
    serve,
    text,
)

CLI = Source("cli", "tester")
FIX = {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}
KEY = "sk-ant-" + "e9dp" * 8  # assembled at run time


def api_error(kind: str, message: str) -> dict[str, Any]:
    """An error body (and an `event: error`'s data) as the Messages API sends it."""
    return {"type": "error", "error": {"type": kind, "message": message}}


OVERLOADED = api_error("overloaded_error", "Overloaded")["error"]
TOO_LONG = api_error("invalid_request_error", "prompt is too long: 9000 tokens > 8192 maximum")


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def start(repo: Path, url: str, config: str = "", model: str = "claude-scripted") -> TaskRun:
    if config:
        (repo / ".autocode").mkdir(exist_ok=True)
        (repo / ".autocode" / "config.toml").write_text(config)
    return TaskRun.start(repo, "add(2, 3) gives -1; fix it.", TaskOptions(
        provider="anthropic", base_url=url, model=model, test_command=TEST_COMMAND))


def transcript(run: TaskRun) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.run_dir / "agent" / "implementer.jsonl").read_text().splitlines()]


def events(run: TaskRun) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.run_dir / "events.jsonl").read_text().splitlines()]


def fix_steps(**kw: Any) -> list[Step]:
    return [call("edit_file", FIX, **kw), call("run_tests"), text("add adds now; the tests pass.")]


def completed(run: TaskRun, endpoint: ScriptedEndpoint) -> dict[str, Any]:
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"] and snap["needs"]["kind"] == "approve_completion", snap["error"]
    for body in endpoint.bodies():
        assert_tool_results_answer_tool_uses(body)
    return snap


def failed(run: TaskRun, endpoint: ScriptedEndpoint) -> dict[str, Any]:
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED", snap["needs"]
    for body in endpoint.bodies():
        assert_tool_results_answer_tool_uses(body)
    return snap


def blocks_of(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in message["content"] if b["type"] == kind]


def assert_tool_results_answer_tool_uses(body: dict[str, Any]) -> None:
    """The Messages API's rule: each tool_use is answered, in the next user turn, by a tool_result of its id."""
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2) + ["user"] * (len(messages) % 2)
    assert not blocks_of(messages[0], "tool_result"), messages[0]
    for asked, answered in itertools.pairwise(messages):
        uses = [b["id"] for b in blocks_of(asked, "tool_use")]
        results = [b["tool_use_id"] for b in blocks_of(answered, "tool_result")]
        assert results == uses or asked["role"] == "user", (asked, answered)
        # Tool results open the user turn they are in; any text comes after them.
        kinds = [b["type"] for b in answered["content"]]
        assert kinds == sorted(kinds, key=lambda k: k != "tool_result"), kinds


# -- streaming ---------------------------------------------------------------------------


def test_a_reply_streaming_longer_than_the_idle_timeout_completes_with_progress(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    # 12 pieces 0.1 s apart: over a second of events under an idle timeout of 0.6 s.
    slow = dict(gap=0.1, pieces=12)
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX, **slow), call("run_tests"),
                  text("add adds now; the tests pass, and this reply streamed slowly.", **slow), review())
    run = start(repo, endpoint.url, "request_timeout = 0.6\n")
    said: list[str] = []
    run = TaskRun.load(repo, run.id, progress=lambda phase, message: said.append(message))
    completed(run, endpoint)
    assert all(b["stream"] is True and "stream_options" not in b for b in endpoint.bodies())
    assert all(r["headers"].get("Accept") == "text/event-stream" for r in endpoint.requests)
    assert any(m.startswith("the model is answering (") for m in said), said
    usage = run.snapshot().wire()["agent"]["roles"]["implementer"]["usage"]
    assert usage == {"promptTokens": 300, "completionTokens": 30, "totalTokens": 330}  # message_start + message_delta
    assert transcript(run)[-1]["text"] == "add adds now; the tests pass, and this reply streamed slowly."


def test_a_stream_that_stalls_fails_with_the_idle_timeout(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX, gap=0.8, pieces=2))
    run = start(repo, endpoint.url, "request_timeout = 0.3\n")
    snap = failed(run, endpoint)
    assert "/v1/messages sent nothing for 0.3 s in the middle of its answer (request_timeout = 0.3)" in snap["error"]["message"]
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == BUGGY_OPS  # the half-streamed edit never ran


def test_one_connection_serves_the_whole_task(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *fix_steps(), review())
    completed(start(repo, endpoint.url), endpoint)
    assert len(endpoint.requests) == 7 and all(r["path"] == "/v1/messages" for r in endpoint.requests)
    assert len(endpoint.connections) == 1, endpoint.connections


# -- errors: retried, or told as the API told them -----------------------------------------


@pytest.mark.parametrize("when", ["before", "during", "cut"])
def test_a_connection_reset_once_is_sent_again(endpoint: ScriptedEndpoint, tmp_path: Path, when: str) -> None:
    repo = build_calc(tmp_path / "calc")
    # "during": the connection drops in the middle of an event of the tool_use block; "cut": the body ends there.
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX, reset=when, pieces=6), *fix_steps(), review())
    snap = completed(start(repo, endpoint.url), endpoint)
    assert len(endpoint.requests) == 3 + 1 + 3 + 1
    assert endpoint.bodies()[3]["messages"] == endpoint.bodies()[4]["messages"]
    assert snap["needs"]["diff"].count("+    return a + b") == 1


def test_a_500_and_a_503_then_an_answer_completes(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(
        *roles_before_implementing(),
        Step(status=500, body=api_error("api_error", "Internal server error"), headers={"Retry-After": "0"}),
        Step(status=503, body=api_error("api_error", "Service unavailable"), headers={"Retry-After": "0"}),
        *fix_steps(), review(),
    )
    completed(start(repo, endpoint.url), endpoint)
    assert len(endpoint.requests) == 3 + 2 + 3 + 1
    assert endpoint.bodies()[3] == endpoint.bodies()[4] == endpoint.bodies()[5]


def test_529s_that_do_not_stop_fail_with_the_apis_message(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    busy = Step(status=529, body=api_error("overloaded_error", "Overloaded"), headers={"Retry-After": "0"})
    endpoint.load(*roles_before_implementing(), *[busy] * 4)
    run = start(repo, endpoint.url)
    snap = failed(run, endpoint)
    assert "/v1/messages kept failing (HTTP 529: Overloaded) after 4 attempts; try again later" in snap["error"]["message"]
    assert (run.run_dir / "evidence" / "partial.diff").is_file()


def test_an_overloaded_error_event_in_the_middle_of_a_stream_is_sent_again(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX, event_error=OVERLOADED), *fix_steps(), review())
    snap = completed(start(repo, endpoint.url), endpoint)
    assert len(endpoint.requests) == 3 + 1 + 3 + 1
    assert endpoint.bodies()[3] == endpoint.bodies()[4]
    assert snap["needs"]["diff"].count("+    return a + b") == 1


def test_error_events_that_do_not_stop_fail_with_the_apis_message(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *[call("edit_file", FIX, event_error=OVERLOADED)] * 4)
    snap = failed(start(repo, endpoint.url), endpoint)
    message = snap["error"]["message"]
    assert "/v1/messages reported an error in the middle of its answer (overloaded_error: Overloaded)" in message, message
    assert "4 attempts" in message
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == BUGGY_OPS


def test_an_invalid_request_error_event_is_told_at_once(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    refused = {"type": "invalid_request_error", "message": "messages.1.content.0.tool_use.input: Input should be a valid dictionary"}
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX, event_error=refused))
    snap = failed(start(repo, endpoint.url), endpoint)
    assert ("(invalid_request_error: messages.1.content.0.tool_use.input: Input should be a valid dictionary)"
            in snap["error"]["message"]), snap["error"]
    assert len(endpoint.requests) == 4  # not sent again: the API said what is wrong with it


def test_a_model_that_refuses_temperature_gets_requests_without_it(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *fix_steps(), review())
    refusal = endpoint.refuse(lambda b: "temperature" in b, api_error(
        "invalid_request_error", "temperature: this model does not support setting temperature"))
    run = start(repo, endpoint.url, model="claude-no-temperature")
    completed(run, endpoint)
    assert refusal.hits == 1  # refused once, remembered for every later request and role
    assert [("temperature" in b) for b in endpoint.bodies()] == [True] + [False] * 7
    assert all(b["max_tokens"] == 8192 for b in endpoint.bodies())  # the API requires it: never dropped
    notices = [e["text"] for e in events(run) if e["event"] == "agent_notice"]
    assert any("refused 'temperature'" in n and "does not support setting temperature" in n for n in notices), notices


def test_max_tokens_over_the_models_output_limit_fails_with_the_apis_message(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load()
    endpoint.refuse(lambda b: b["max_tokens"] > 64_000, api_error(
        "invalid_request_error",
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-scripted"))
    snap = start(repo, endpoint.url, "max_output_tokens = 100000\n").snapshot().wire()
    assert snap["state"] == "FAILED"
    assert "HTTP 400: max_tokens: 100000 > 64000, which is the maximum allowed" in snap["error"]["message"]
    assert [b["max_tokens"] for b in endpoint.bodies()] == [100_000]  # told, not sent again with another limit


# -- context length ---------------------------------------------------------------------------


def test_prompt_is_too_long_condenses_the_conversation_and_retries_once(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    big = "".join(f"NOTE_{i} = {'x' * 60!r}\n" for i in range(70))  # about 5,000 characters
    names = ("calc/notes.py", "calc/more.py", "calc/extra.py")
    repo = build_calc(tmp_path / "calc", dict.fromkeys(names, big))
    endpoint.load(*roles_before_implementing(), *[call("read_file", {"path": n}) for n in names], *fix_steps(), review())
    limit = 12_000
    refusal = endpoint.refuse(lambda b: len(json.dumps(b.get("messages"))) > limit, TOO_LONG)
    run = start(repo, endpoint.url)
    completed(run, endpoint)
    assert refusal.hits == 1
    notices = [e["text"] for e in transcript(run) if e["event"] == "notice"]
    assert any("prompt is too long: 9000 tokens > 8192 maximum" in n and "condensed" in n for n in notices), notices
    assert sum(len(json.dumps(b["messages"])) > limit for b in endpoint.bodies()) == 1
    # Condensed, the conversation is still one the API takes.
    for body in endpoint.bodies()[3:]:
        assert_tool_results_answer_tool_uses(body)


def test_prompt_is_too_long_tells_the_window_the_api_named() -> None:
    from autocode.providers.agent.endpoint_errors import ContextTooLong, classify

    err = classify("http://127.0.0.1/v1/messages", 400, json.dumps(TOO_LONG).encode(), {"messages": []}, 1)
    assert isinstance(err, ContextTooLong) and err.limit == 8192


def test_prompt_is_too_long_that_condensing_cannot_cure_fails_with_the_apis_message(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing())
    endpoint.refuse(lambda b: any("Approved plan" in json.dumps(m["content"]) for m in b["messages"]), TOO_LONG)
    snap = failed(start(repo, endpoint.url), endpoint)
    assert "HTTP 400: prompt is too long: 9000 tokens > 8192 maximum" in snap["error"]["message"]
    assert "set context_window" in snap["error"]["message"]
    assert len(endpoint.requests) == 3 + 2  # once as it was, once condensed
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == BUGGY_OPS


# -- what a reply means -----------------------------------------------------------------------


def test_two_tool_use_blocks_in_one_reply_are_both_answered_in_the_next_user_turn(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")

    def answered(body: dict[str, Any]) -> None:
        assistant, user = body["messages"][-2:]
        uses = blocks_of(assistant, "tool_use")
        assert [(b["name"], b["input"]) for b in uses] == [("read_file", {"path": "calc/ops.py"}), ("edit_file", FIX)]
        results = blocks_of(user, "tool_result")
        assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses] and len(user["content"]) == 2
        assert "return a - b" in results[0]["content"] and "edited calc/ops.py" in results[1]["content"]
        assert_tool_results_answer_tool_uses(body)

    endpoint.load(
        *roles_before_implementing(),
        calls(("read_file", {"path": "calc/ops.py"}), ("edit_file", FIX), content="Reading and fixing add."),
        call("run_tests", check=answered), text("add adds now."), review(),
    )
    snap = completed(start(repo, endpoint.url), endpoint)
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == FIXED_OPS
    assert blocks_of(endpoint.bodies()[4]["messages"][-2], "text") == [{"type": "text", "text": "Reading and fixing add."}]


def test_max_tokens_cutting_a_tool_use_block_is_continued_never_the_summary(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    cut = calls(("edit_file", '{"path": "calc/ops.py", "old_text": "a - b", "new_te'),
                content="I will fix add by", finish_reason="length")

    def nudged(body: dict[str, Any]) -> None:
        said = json.dumps(body["messages"][-1]["content"])
        assert "finish_reason: length" in said and "not run" in said, said
        assert not any(blocks_of(m, "tool_use") for m in body["messages"] if m["role"] == "assistant")
        assert_tool_results_answer_tool_uses(body)

    endpoint.load(*roles_before_implementing(), cut, call("edit_file", FIX, check=nudged), call("run_tests"),
                  text("add adds now."), review())
    run = start(repo, endpoint.url)
    snap = completed(run, endpoint)
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == FIXED_OPS
    replies = [e for e in transcript(run) if e["event"] == "reply"]
    assert replies[0]["finish_reason"] == "length"
    assert transcript(run)[-1]["text"] == "add adds now."


def test_replies_cut_by_max_tokens_three_times_fail_naming_max_output_tokens(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    cut = calls(("edit_file", '{"path": "calc/ops.py", "old_te'), finish_reason="length")
    endpoint.load(*roles_before_implementing(), cut, cut, cut)
    snap = failed(start(repo, endpoint.url, "max_output_tokens = 64\n"), endpoint)
    assert "cut at the output limit (finish_reason: length) 3 times in a row; raise max_output_tokens (now 64)" in snap["error"]["message"]
    assert all(b["max_tokens"] == 64 for b in endpoint.bodies())
    assert snap["agent"]["roles"]["implementer"].get("summary") in (None, "")
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == BUGGY_OPS


# -- resume after a failure ---------------------------------------------------------------------


def test_resume_after_a_budget_ran_out_continues_from_the_transcript(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), call("read_file", {"path": "calc/ops.py"}), call("edit_file", FIX))
    run = start(repo, endpoint.url, "max_turns = 2\n")
    snap = failed(run, endpoint)
    assert snap["error"]["kind"] == "budgetExhausted"
    assert "+    return a + b" in (run.run_dir / "evidence" / "partial.diff").read_text()
    (repo / ".autocode" / "config.toml").write_text("max_turns = 5\n")
    endpoint.load(call("run_tests"), text("add adds now."), review())
    snap = TaskRun.load(repo, run.id).resume().wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    first = endpoint.bodies()[0]
    # The whole conversation so far, as Messages: both tool_use blocks answered by their tool_result.
    assert [m["role"] for m in first["messages"]][-4:] == ["assistant", "user", "assistant", "user"]
    assert [b["name"] for m in first["messages"] for b in blocks_of(m, "tool_use")] == ["read_file", "edit_file"]
    assert_tool_results_answer_tool_uses(first)
    assert snap["agent"]["roles"]["implementer"]["turns"] == 4
    assert snap["agent"]["roles"]["implementer"]["budgets"]["maxTurns"] == 5
    resumed = [e for e in events(run) if e["event"] == "resumed"]
    assert resumed[-1]["after"] == "budgetExhausted" and resumed[-1]["settings"] == {"max_turns": 5}


def test_resume_after_the_api_stayed_overloaded_sends_the_failed_request_again(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    busy = Step(status=529, body=api_error("overloaded_error", "Overloaded"), headers={"Retry-After": "0"})
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX), *[busy] * 4)
    run = start(repo, endpoint.url)
    snap = failed(run, endpoint)
    assert "HTTP 529: Overloaded" in snap["error"]["message"]
    refused = endpoint.bodies()[-1]
    endpoint.load(call("run_tests"), text("add adds now."), review())
    snap = TaskRun.load(repo, run.id).resume().wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    assert endpoint.bodies()[0]["messages"] == refused["messages"]


# -- doctor --check-provider -------------------------------------------------------------------


def test_doctor_check_provider_against_the_messages_api(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    from support.tasks import autocode, cli_env

    repo = build_calc(tmp_path / "calc")
    endpoint.load(call("ping", {"ok": True}))
    flags = ("--provider", "anthropic", "--base-url", endpoint.url, "--model", "claude-scripted")
    shown = autocode("doctor", "--workspace", str(repo), "--check-provider", *flags, "--json", env=cli_env())
    endpoint.assert_clean()
    assert shown.returncode == 0, shown.stderr
    check = json.loads(shown.stdout)["provider_check"]
    assert check["provider"] == "anthropic" and check["family"] == "anthropic" and check["model"] == "claude-scripted"
    assert check["result"] == "answered" and check["tools"] == "called", check
    assert check["api_key_env"] == "ANTHROPIC_API_KEY" and check["api_key_set"] is True
    assert KEY not in shown.stdout and KEY not in shown.stderr
    (request,) = endpoint.requests
    assert request["path"] == "/v1/messages" and request["headers"]["x-api-key"] == KEY
    assert [t["name"] for t in request["body"]["tools"]] == ["ping"] and "input_schema" in request["body"]["tools"][0]
    # The variable unset: named, nothing sent, and the failure says what to do.
    endpoint.load()
    env = cli_env()
    env.pop("ANTHROPIC_API_KEY")
    text_out = autocode("doctor", "--workspace", str(repo), "--check-provider", *flags, env=env)
    assert text_out.returncode == 1
    assert "ANTHROPIC_API_KEY is NOT set" in text_out.stdout and "export your Anthropic API key" in text_out.stdout
    assert endpoint.requests == []
