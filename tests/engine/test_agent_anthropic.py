"""The anthropic provider: the same tasks through the Messages API (scripted, real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autocode.tasks import Source, TaskOptions, TaskRun
from support.agent import (
    FIXED_OPS,
    TEST_COMMAND,
    ScriptedEndpoint,
    Step,
    build_calc,
    call,
    review,
    roles_before_implementing,
    serve,
    text,
)

CLI = Source("cli", "tester")
FIX = {"path": "calc/ops.py", "old_text": "a - b", "new_text": "a + b"}
KEY = "sk-ant-" + "t3st" * 8  # assembled at run time
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def start(repo: Path, url: str, config: str = "") -> TaskRun:
    if config:
        (repo / ".autocode").mkdir(exist_ok=True)
        (repo / ".autocode" / "config.toml").write_text(config)
    return TaskRun.start(repo, "add(2, 3) gives -1; fix it.", TaskOptions(
        provider="anthropic", base_url=url, model="claude-scripted", test_command=TEST_COMMAND))


def transcript(run: TaskRun) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.run_dir / "agent" / "implementer.jsonl").read_text().splitlines()]


def last_user(body: dict[str, Any]) -> list[dict[str, Any]]:
    message = body["messages"][-1]
    assert message["role"] == "user"
    blocks: list[dict[str, Any]] = message["content"]
    return blocks


def test_a_bug_fix_through_the_messages_api_completes(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")

    def first(body: dict[str, Any]) -> None:
        assert body["system"][0]["type"] == "text" and "implementer" in body["system"][0]["text"]
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["max_tokens"] == 8192 and body["stream"] is True
        assert body["tool_choice"] == {"type": "auto"}
        assert {t["name"] for t in body["tools"]} >= {"read_file", "edit_file", "run_tests"}
        assert all("input_schema" in t and "function" not in t for t in body["tools"])
        assert [m["role"] for m in body["messages"]] == ["user"]

    def results(*needles: str) -> Any:
        def check(body: dict[str, Any]) -> None:
            block = last_user(body)[0]
            assert block["type"] == "tool_result" and block["tool_use_id"].startswith("toolu_"), block
            for needle in needles:
                assert needle in block["content"], (needle, block)
        return check

    endpoint.load(
        *roles_before_implementing(),
        call("read_file", {"path": "calc/ops.py"}, check=first),
        call("edit_file", FIX, check=results("return a - b")),
        call("run_tests", check=results("edited calc/ops.py")),
        text("add adds now; the tests pass.", check=results("exit code 0")),
        review(),
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    assert all(r["path"] == "/v1/messages" for r in endpoint.requests)
    assert all(r["headers"].get("x-api-key") == KEY and r["headers"].get("anthropic-version") == "2023-06-01"
               and "Authorization" not in r["headers"] for r in endpoint.requests)
    assert all("response_format" not in b for b in endpoint.bodies())
    implementer = snap["agent"]["roles"]["implementer"]
    assert implementer["usage"] == {"promptTokens": 400, "completionTokens": 40, "totalTokens": 440}
    assert implementer["summary"] == "add adds now; the tests pass."
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED", snap["error"]
    assert (repo / "calc" / "ops.py").read_text() == FIXED_OPS
    for path in run.run_dir.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path


def test_overloaded_529s_are_retried(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    busy = Step(status=529, body=OVERLOADED, headers={"Retry-After": "0"})
    endpoint.load(*roles_before_implementing(), busy, busy, call("edit_file", FIX), call("run_tests"),
                  text("fixed"), review())
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]


def test_max_tokens_stop_is_continued_and_thinking_stays_in_the_transcript(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    thinking = call("edit_file", FIX)
    assert thinking.message is not None
    thinking.message["reasoning_content"] = "The minus sign is the bug."
    endpoint.load(
        *roles_before_implementing(),
        text("I will explain at length", finish_reason="length"),
        thinking,
        call("run_tests"),
        text("fixed", stream=False),
        review(),
    )
    run = start(repo, endpoint.url)
    snap = run.approve_plan(1, CLI).wire()
    endpoint.assert_clean()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    replies = [e for e in transcript(run) if e["event"] == "reply"]
    assert replies[0]["finish_reason"] == "length"
    assert replies[1]["reasoning"] == "The minus sign is the bug."
    assert "minus sign" not in json.dumps(endpoint.bodies())
    assert transcript(run)[-1]["text"] == "fixed"


def test_an_api_error_is_told_as_the_api_told_it(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    endpoint.load(Step(status=400, body={"type": "error", "error": {
        "type": "invalid_request_error", "message": "model: claude-scripted is not a valid model name"}}))
    run = start(repo, endpoint.url)
    snap = run.snapshot().wire()
    assert snap["state"] == "FAILED"
    assert "HTTP 400: model: claude-scripted is not a valid model name" in snap["error"]["message"]


def test_a_missing_key_names_anthropic_api_key_and_sends_nothing(
    endpoint: ScriptedEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    repo = build_calc(tmp_path / "calc")
    endpoint.load()
    run = start(repo, endpoint.url)
    snap = run.snapshot().wire()
    assert snap["state"] == "FAILED" and "ANTHROPIC_API_KEY" in snap["error"]["message"]
    assert endpoint.requests == []
