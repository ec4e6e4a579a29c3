"""Whole tasks against endpoints that behave as real servers do (scripted, real HTTP on 127.0.0.1).

Each test is one behaviour a real model server shows (a refused parameter,
a slow stream, a reset, a run of 503s, a context-length error, a reply cut
at the output limit, content as parts, reasoning fields, tool calls left in
the text) and the task ends as it would with that server: completed, or
failed with the endpoint's own message.
"""

from __future__ import annotations

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
    last_message,
    review,
    roles_before_implementing,
    serve,
    text,
)

CLI = Source("cli", "tester")
FIX = {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}

# Error bodies as the servers send them.
OPENAI_TEMPERATURE = {"error": {
    "message": "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
    "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}
LMSTUDIO_FORMAT = {"error": "'response_format.type' must be 'json_schema' or 'text'"}
OPENAI_CONTEXT = {"error": {
    "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. "
               "Please reduce the length of the messages.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
OPENAI_TOOL_ORDER = {"error": {
    "message": "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
               "'tool_call_id'. The following tool_call_ids did not have response messages: call_9",
    "type": "invalid_request_error", "param": "messages.[3].role", "code": None}}
VLLM_NO_TOOLS = {"object": "error", "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                 "--tool-call-parser to be set", "type": "BadRequestError", "param": None, "code": 400}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


def start(repo: Path, url: str, config: str = "", **kw: Any) -> TaskRun:
    if config:
        (repo / ".autocode").mkdir(exist_ok=True)
        (repo / ".autocode" / "config.toml").write_text(config)
    options = {"provider": "openai", "base_url": url, "model": "scripted", "test_command": TEST_COMMAND, **kw}
    return TaskRun.start(repo, "add(2, 3) gives -1; fix it.", TaskOptions(**options))


def transcript(run: TaskRun, name: str = "implementer") -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.run_dir / "agent" / f"{name}.jsonl").read_text().splitlines()]


def events(run: TaskRun) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.run_dir / "events.jsonl").read_text().splitlines()]


def fix_steps(**kw: Any) -> list[Step]:
    return [call("edit_file", FIX, **kw), call("run_tests"), text("add adds now; the tests pass.")]


def completed(run: TaskRun, endpoint: ScriptedEndpoint) -> dict[str, Any]:
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"] and snap["needs"]["kind"] == "approve_completion", snap["error"]
    return snap


# -- request parameters --------------------------------------------------------------


def test_a_model_that_refuses_temperature_0_gets_requests_without_it(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *fix_steps(), review())
    refusal = endpoint.refuse(lambda b: "temperature" in b, OPENAI_TEMPERATURE)
    run = start(repo, endpoint.url, model="refuses-temperature")
    snap = completed(run, endpoint)
    assert refusal.hits == 1  # refused once; remembered for every later request and role
    assert [("temperature" in b) for b in endpoint.bodies()] == [True] + [False] * 7
    notices = [e["text"] for e in events(run) if e["event"] == "agent_notice"]
    assert any("refused 'temperature'" in n and "Only the default (1)" in n for n in notices), notices
    assert "+    return a + b" in snap["needs"]["diff"]


def test_openai_reasoning_models_get_no_temperature_and_max_completion_tokens(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *fix_steps(), review())
    endpoint.refuse(lambda b: "temperature" in b or "max_tokens" in b, OPENAI_TEMPERATURE)
    run = start(repo, endpoint.url, 'endpoint_family = "openai"\nmax_output_tokens = 2000\n', model="gpt-5-mini")
    completed(run, endpoint)
    assert all(b.get("max_completion_tokens") == 2000 and "temperature" not in b for b in endpoint.bodies())


def test_lm_studio_refusing_response_format_gets_json_roles_without_it(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *fix_steps(), review())
    refusal = endpoint.refuse(lambda b: "response_format" in b, LMSTUDIO_FORMAT)
    run = start(repo, endpoint.url, model="refuses-format")
    completed(run, endpoint)
    assert refusal.hits == 1
    assert any("refused 'response_format'" in e["text"] for e in events(run) if e["event"] == "agent_notice")


def test_a_model_that_refuses_streaming_gets_whole_answers(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *fix_steps(), review())
    refusal = endpoint.refuse(lambda b: bool(b.get("stream")), {"error": {
        "message": "Unsupported value: 'stream' does not support true with this model. Supported values are: false.",
        "type": "invalid_request_error", "param": "stream", "code": "unsupported_value"}})
    run = start(repo, endpoint.url, model="refuses-stream")
    completed(run, endpoint)
    assert refusal.hits == 1
    assert all("stream" not in b and "stream_options" not in b for b in endpoint.bodies()[1:])


def test_the_lm_studio_family_never_asks_for_response_format(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *fix_steps(), review())
    endpoint.refuse(lambda b: "response_format" in b, LMSTUDIO_FORMAT)
    run = start(repo, endpoint.url, 'endpoint_family = "lmstudio"\ntemperature = 0.2\n')
    completed(run, endpoint)
    assert all("response_format" not in b and b["temperature"] == 0.2 for b in endpoint.bodies())


# -- errors told as they are ---------------------------------------------------------


def test_a_400_about_tool_messages_is_the_endpoints_error_not_a_switch_to_edit_blocks(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), Step(status=400, body=OPENAI_TOOL_ORDER))
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "providerError"
    assert "HTTP 400: An assistant message with 'tool_calls' must be followed" in snap["error"]["message"]
    assert snap["agent"]["roles"]["implementer"]["mode"] == "tools"
    assert snap["agent"]["editBlocksFallback"] == []


def test_a_clear_refusal_of_tools_falls_back_to_edit_blocks_and_says_why(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    block = "calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    endpoint.load(*roles_before_implementing(), text(block), text("add adds now."), review())
    endpoint.refuse(lambda b: "tools" in b, VLLM_NO_TOOLS)
    run = start(repo, endpoint.url, "reading_roles = []\n")
    snap = completed(run, endpoint)
    implementer = snap["agent"]["roles"]["implementer"]
    assert implementer["mode"] == "edit_blocks" and "--enable-auto-tool-choice" in implementer["fallbackReason"]


def test_three_503s_then_an_answer_completes(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    busy = Step(status=503, body={"error": {"message": "Service Unavailable", "type": "server_error"}},
                headers={"Retry-After": "0"})
    endpoint.load(*roles_before_implementing(), busy, busy, busy, *fix_steps(), review())
    run = start(repo, endpoint.url)
    completed(run, endpoint)
    assert len(endpoint.requests) == 3 + 3 + 3 + 1


def test_503s_that_do_not_stop_fail_with_the_endpoints_message(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    busy = Step(status=503, body={"error": {"message": "Service Unavailable: model loading", "type": "server_error"}},
                headers={"Retry-After": "0"})
    endpoint.load(*roles_before_implementing(), *[busy] * 4)
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED"
    assert "kept failing (HTTP 503: Service Unavailable: model loading) after 4 attempts" in snap["error"]["message"]
    assert (run.run_dir / "evidence" / "partial.diff").is_file()  # what was changed so far (nothing), kept


@pytest.mark.parametrize("when", ["before", "during"])
def test_a_connection_reset_once_is_sent_again(endpoint: ScriptedEndpoint, tmp_path: Path, when: str) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX, reset=when, pieces=6),
                  *fix_steps(), review())
    run = start(repo, endpoint.url)
    snap = completed(run, endpoint)
    assert len(endpoint.requests) == 3 + 1 + 3 + 1
    # The reset request was sent again whole; the edit was made once.
    assert endpoint.bodies()[3]["messages"] == endpoint.bodies()[4]["messages"]
    assert snap["needs"]["diff"].count("+    return a + b") == 1


def test_an_http_error_carries_the_servers_message(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(Step(status=404, body={"error": {"message": "model 'scripted' not found, try pulling it first"}}))
    run = start(repo, endpoint.url)
    snap = run.snapshot().wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED"
    assert "HTTP 404: model 'scripted' not found, try pulling it first; check base_url and model" in snap["error"]["message"]


# -- streaming -------------------------------------------------------------------------


def test_a_reply_streaming_longer_than_the_idle_timeout_completes_with_progress(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    # 12 pieces 0.1 s apart: 1.1 s of streaming under an idle timeout of 0.6 s.
    slow = dict(gap=0.1, pieces=12)
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX, **slow), call("run_tests"),
                  text("add adds now; the tests pass, and this reply streamed slowly.", **slow), review())
    run = start(repo, endpoint.url, "request_timeout = 0.6\n")
    said: list[str] = []
    run = TaskRun.load(repo, run.id, progress=lambda phase, message: said.append(message))
    completed(run, endpoint)
    assert all(b["stream"] is True and b["stream_options"] == {"include_usage": True} for b in endpoint.bodies())
    assert any(m.startswith("the model is answering (") for m in said), said
    usage = run.snapshot().wire()["agent"]["roles"]["implementer"]["usage"]
    assert usage["totalTokens"] == 330  # the usage chunk at the end of each stream


def test_a_stream_that_stalls_fails_with_the_idle_timeout(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX, gap=0.8, pieces=2))
    run = start(repo, endpoint.url, "request_timeout = 0.3\n")
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED"
    assert "sent nothing for 0.3 s in the middle of its answer (request_timeout = 0.3)" in snap["error"]["message"]


def test_one_connection_serves_the_whole_task(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *fix_steps(), review())
    run = start(repo, endpoint.url)
    completed(run, endpoint)
    assert len(endpoint.requests) == 7
    assert len(endpoint.connections) == 1, endpoint.connections


def test_a_server_that_answers_a_streamed_request_whole_is_understood(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    whole = [Step(message=s.message, stream=False) for s in [*roles_before_implementing(), *fix_steps(), review()]]
    endpoint.load(*whole)
    completed(start(repo, endpoint.url), endpoint)


# -- what a reply means ------------------------------------------------------------------


def test_a_reply_cut_at_the_output_limit_is_continued_never_the_summary(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    cut = calls(("edit_file", '{"path": "calc/ops.py", "old_text": "a - b", "new_te'),
                content="I will fix add by", finish_reason="length")
    endpoint.load(
        *roles_before_implementing(), cut,
        call("edit_file", FIX, check=lambda b: _has(last_message(b)["content"], "finish_reason: length", "not run")),
        call("run_tests"), text("add adds now."), review(),
    )
    run = start(repo, endpoint.url)
    snap = completed(run, endpoint)
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == FIXED_OPS
    end = transcript(run)[-1]
    assert end["event"] == "end" and end["text"] == "add adds now."


def test_replies_cut_three_times_fail_naming_max_output_tokens(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    cut = text("Here is the long explanation of", finish_reason="length")
    endpoint.load(*roles_before_implementing(), cut, cut, cut)
    run = start(repo, endpoint.url, "max_output_tokens = 64\n")
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED"
    assert "cut at the output limit (finish_reason: length) 3 times in a row; raise max_output_tokens (now 64)" in snap["error"]["message"]
    assert all(b["max_tokens"] == 64 for b in endpoint.bodies())


def test_a_json_answer_cut_at_the_output_limit_fails_clearly(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(text('{"citations": ["README', finish_reason="length"))
    run = start(repo, endpoint.url, "reading_roles = []\n")
    snap = run.snapshot().wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED" and "cut at the output limit (finish_reason: length)" in snap["error"]["message"]


def test_content_as_a_list_of_parts_is_read(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")

    def parts(content: str) -> Step:
        return Step(message={"role": "assistant", "content": [{"type": "text", "text": content[:5]},
                                                              {"type": "text", "text": content[5:]}]}, stream=False)

    before = roles_before_implementing()
    endpoint.load(parts(before[0].message["content"]), *before[1:], call("edit_file", FIX), call("run_tests"),
                  parts("add adds now."), review())
    run = start(repo, endpoint.url)
    completed(run, endpoint)
    assert transcript(run)[-1]["text"] == "add adds now."


def test_reasoning_is_kept_in_the_transcript_and_out_of_requests_and_the_summary(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    thinking = call("edit_file", FIX)
    assert thinking.message is not None
    thinking.message["reasoning_content"] = "The bug is the minus sign in add."
    endpoint.load(
        *roles_before_implementing(), thinking, call("run_tests"),
        text("<think>Tests pass, so I can stop.</think>\nadd adds now."),
        review(),
    )
    run = start(repo, endpoint.url)
    completed(run, endpoint)
    replies = [e for e in transcript(run) if e["event"] == "reply"]
    assert replies[0]["reasoning"] == "The bug is the minus sign in add."
    assert replies[-1]["reasoning"] == "Tests pass, so I can stop." and replies[-1]["message"]["content"] == "add adds now."
    assert transcript(run)[-1]["text"] == "add adds now."
    sent = json.dumps(endpoint.bodies())
    assert "minus sign" not in sent and "reasoning_content" not in sent
    # The readable transcript: written to the run folder, printed by `autocode task transcript`.
    from support.tasks import autocode

    shown = autocode("task", "transcript", run.id, "--workspace", str(repo))
    assert shown.returncode == 0, shown.stderr
    page = (run.run_dir / "transcript.md").read_text()
    assert shown.stdout == page
    assert "## implementer" in page and "<summary>reasoning</summary>" in page and "> The bug is the minus sign in add." in page
    assert "calls **edit_file**" in page and "**ended: answered**" in page and "> add adds now." in page


def test_tool_calls_left_in_the_text_are_run_not_taken_as_the_summary(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    written = '<tool_call>\n{"name": "edit_file", "arguments": ' + json.dumps(FIX) + "}\n</tool_call>"
    endpoint.load(*roles_before_implementing(), text(written),
                  call("run_tests", check=lambda b: _has(last_message(b)["content"], "edited calc/ops.py")),
                  text("add adds now."), review())
    run = start(repo, endpoint.url)
    snap = completed(run, endpoint)
    assert "+    return a + b" in snap["needs"]["diff"]
    assert transcript(run)[-1]["text"] == "add adds now."
    assert any("tool calls in its text" in e["text"] for e in transcript(run) if e["event"] == "notice")


# -- context -------------------------------------------------------------------------------


def test_a_context_length_error_condenses_the_conversation_and_retries_once(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    big = "".join(f"NOTE_{i} = {'x' * 60!r}\n" for i in range(70))  # about 5,000 characters
    names = ("calc/notes.py", "calc/more.py", "calc/extra.py")
    repo = build_calc(tmp_path / "calc", dict.fromkeys(names, big))
    # Three reads: more than the endpoint takes, within what the engine keeps whole on its own.
    endpoint.load(*roles_before_implementing(), *[call("read_file", {"path": n}) for n in names], *fix_steps(), review())
    limit = 12_000
    refusal = endpoint.refuse(lambda b: len(json.dumps(b.get("messages"))) > limit, OPENAI_CONTEXT)
    run = start(repo, endpoint.url)
    completed(run, endpoint)
    assert refusal.hits == 1
    notices = [e["text"] for e in transcript(run) if e["event"] == "notice"]
    assert any("maximum context length is 8192 tokens" in n and "condensed" in n for n in notices), notices
    # Condensed once, the conversation stays within what the endpoint took.
    assert sum(len(json.dumps(b["messages"])) > limit for b in endpoint.bodies()) == 1


def test_a_context_length_error_that_condensing_cannot_cure_fails_with_the_endpoints_message(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing())
    endpoint.refuse(lambda b: any("Approved plan" in str(m.get("content")) for m in b["messages"]), OPENAI_CONTEXT)
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED"
    assert "maximum context length is 8192 tokens" in snap["error"]["message"]
    assert "set context_window" in snap["error"]["message"]
    assert (Path(snap["copy"]) / "calc" / "ops.py").read_text() == BUGGY_OPS


def _has(content: str, *needles: str) -> None:
    for needle in needles:
        assert needle in content, (needle, content)


# -- resume after a failure ------------------------------------------------------------------


def test_resume_after_a_budget_ran_out_continues_from_the_transcript_under_the_raised_budget(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), call("read_file", {"path": "calc/ops.py"}), call("edit_file", FIX))
    run = start(repo, endpoint.url, "max_turns = 2\n")
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "budgetExhausted"
    assert "+    return a + b" in (run.run_dir / "evidence" / "partial.diff").read_text()
    (repo / ".autocode" / "config.toml").write_text("max_turns = 5\n")
    endpoint.load(call("run_tests"), text("add adds now."), review())
    snap = TaskRun.load(repo, run.id).resume().wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    # The first request after the resume carries the whole conversation so far.
    assert [m["role"] for m in endpoint.bodies()[0]["messages"]][-4:] == ["assistant", "tool", "assistant", "tool"]
    assert snap["agent"]["roles"]["implementer"]["turns"] == 4
    assert snap["agent"]["roles"]["implementer"]["budgets"]["maxTurns"] == 5
    resumed = [e for e in events(run) if e["event"] == "resumed"]
    assert resumed[-1]["after"] == "budgetExhausted" and resumed[-1]["settings"] == {"max_turns": 5}


def test_resume_after_the_endpoint_failed_sends_the_failed_request_again(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    down = Step(status=502, body="<html>Bad Gateway</html>", headers={"Retry-After": "0"})
    endpoint.load(*roles_before_implementing(), call("edit_file", FIX), *[down] * 4)
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["state"] == "FAILED" and "HTTP 502: <html>Bad Gateway</html>" in snap["error"]["message"]
    failed = endpoint.bodies()[-1]
    endpoint.load(call("run_tests"), text("add adds now."), review())
    snap = TaskRun.load(repo, run.id).resume().wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    assert endpoint.bodies()[0]["messages"] == failed["messages"]


def test_resume_does_not_reopen_a_task_whose_tests_failed(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    # add(5, 0) passes before the change and fails after it: the proof calls that a regression.
    zero = (
        "import unittest\n\nfrom calc.ops import add\n\n\nclass ZeroTest(unittest.TestCase):\n"
        "    def test_adding_zero_keeps_the_number(self):\n        self.assertEqual(add(5, 0), 5)\n"
    )
    repo = build_calc(tmp_path / "calc", {"tests/test_zero.py": zero})
    wrong = {**FIX, "new_text": "a * b"}
    endpoint.load(*roles_before_implementing(), call("edit_file", wrong), text("done"))
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "testsRegressed", snap["error"]
    endpoint.load()
    again = TaskRun.load(repo, run.id).resume().wire()
    assert again["state"] == "FAILED" and again["revision"] == snap["revision"] and endpoint.requests == []


# -- doctor --check-provider -------------------------------------------------------------------


def test_doctor_check_provider_sends_one_tiny_request_and_reports_tools_and_the_key_variable(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    from support.tasks import autocode, cli_env

    repo = build_calc(tmp_path / "calc")
    key = "sk-check-" + "k" * 20  # assembled at run time
    endpoint.load(call("ping", {"ok": True}))
    flags = ("--provider", "openai", "--base-url", endpoint.url, "--model", "scripted", "--api-key-env", "AUTOCODE_CHECK_KEY")
    shown = autocode("doctor", "--workspace", str(repo), "--check-provider", *flags, "--json",
                     env=cli_env(AUTOCODE_CHECK_KEY=key))
    endpoint.assert_clean()
    assert shown.returncode == 0, shown.stderr
    check = json.loads(shown.stdout)["provider_check"]
    assert check["result"] == "answered" and check["tools"] == "called" and check["api_key_set"] is True
    assert check["endpoint"] == endpoint.url and check["model"] == "scripted" and check["family"] == "generic"
    assert len(endpoint.requests) == 1 and endpoint.requests[0]["body"]["tools"][0]["function"]["name"] == "ping"
    assert key not in shown.stdout and key not in shown.stderr
    # Text, with the variable unset: named, never sent, and the failure says what to do.
    endpoint.load()
    text_out = autocode("doctor", "--workspace", str(repo), "--check-provider", *flags, env=cli_env())
    assert text_out.returncode == 1
    assert "AUTOCODE_CHECK_KEY is NOT set" in text_out.stdout and "export your API key" in text_out.stdout
    assert endpoint.requests == []


def test_doctor_check_provider_reports_an_endpoint_that_refuses_tools(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    from support.tasks import autocode

    repo = build_calc(tmp_path / "calc")
    endpoint.load()
    endpoint.refuse(lambda b: "tools" in b, {"error": {"message": "registry.ollama.ai/library/gemma:2b does not support tools"}})
    shown = autocode("doctor", "--workspace", str(repo), "--check-provider", "--provider", "openai",
                     "--base-url", endpoint.url, "--model", "gemma:2b")
    assert shown.returncode == 0, shown.stderr
    assert "tools          refused" in shown.stdout and "does not support tools" in shown.stdout


def test_ollamas_small_window_is_said_and_the_first_message_fits_it(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    notes = {f"calc/mod{i:03d}.py": f"def helper_{i}(value, *, scale=1):\n    return value * scale\n" for i in range(300)}
    repo = build_calc(tmp_path / "calc", notes)

    def small(body: dict[str, Any]) -> None:
        first = body["messages"][1]["content"]
        section = first.split("Repository map", 1)[1].split("\n\n", 1)[0]
        assert len(section) <= 2_200 and "more file(s); list_files shows them" in section, len(section)

    endpoint.load(*roles_before_implementing(), *fix_steps(check=small), review())
    run = start(repo, endpoint.url, 'endpoint_family = "ollama"\n')
    completed(run, endpoint)
    notices = [e["text"] for e in transcript(run) if e["event"] == "notice"]
    assert any("4,096 tokens of context" in n and "OLLAMA_CONTEXT_LENGTH" in n for n in notices), notices
    # The scripted server counts 100 prompt tokens for thousands of characters, as Ollama does once it cut the prompt.
    assert any("Ollama likely cut the conversation" in n for n in notices), notices


@pytest.mark.parametrize(("family", "path", "page"), [
    ("vllm", "/v1/models", {"object": "list", "data": [{"id": "served-model", "object": "model", "max_model_len": 8192}]}),
    ("llamacpp", "/props", {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}),
])
def test_the_window_a_local_server_reports_is_the_one_requests_are_kept_within(
    endpoint: ScriptedEndpoint, tmp_path: Path, family: str, path: str, page: dict[str, Any]
) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(*roles_before_implementing(), *fix_steps(), review())
    endpoint.pages[path] = page
    run = start(repo, endpoint.url, f'endpoint_family = "{family}"\n', model="served-model")
    completed(run, endpoint)
    assert endpoint.looked == [path]  # asked once for the whole process, not per loop
    notices = [e["text"] for e in transcript(run) if e["event"] == "notice"]
    assert "the server serves served-model with a context window of 8,192 tokens; requests are kept within it" in notices
