"""The openai provider against a local HTTP server on 127.0.0.1 replaying recorded answers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from autocode.memory import MemoryContext, open_memory
from autocode.providers import ProviderContext, ProviderError, RequirementsReport
from autocode.providers.openai import OpenAIProvider
from autocode.settings import resolve_settings
from autocode.tasks import Source, TaskOptions, TaskRun
from support import serve_http
from support.tasks import NAMING_ANSWER, SCENARIOS, build_sample, read_record

RECORDED = json.loads((SCENARIOS / "openai" / "unittest-task.json").read_text())["responses"]
ERRORS = json.loads((SCENARIOS / "openai" / "errors.json").read_text())


class Replay:
    def __init__(self) -> None:
        self.queue: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.answered = threading.Event()

    def load(self, *responses: dict[str, Any]) -> None:
        with self.lock:
            self.queue = list(responses)
            self.requests = []


@pytest.fixture(scope="module")
def replay() -> Iterator[tuple[Replay, str]]:
    state = Replay()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            with state.lock:
                state.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                item = state.queue.pop(0) if state.queue else {"status": 500, "body": {"error": "replay exhausted"}}
            if item.get("hold") is not None:
                item["hold"].wait(60)  # held until the test has seen the client give up
            raw = item["raw"].encode() if "raw" in item else json.dumps(item["body"]).encode()
            try:
                self.send_response(item["status"])
                for key, value in (item.get("headers") or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass
            state.answered.set()

    with serve_http(Handler) as url:
        yield state, url


def _ctx(tmp_path: Path) -> ProviderContext:
    return ProviderContext(task_id="t", brief="Add it", workspace=tmp_path, copy=None, citations=[])


def _provider(url: str, **kw: Any) -> OpenAIProvider:
    return OpenAIProvider(base_url=url, model="replay-model", sleep=lambda s: None, **kw)


def test_a_whole_task_through_the_openai_provider(replay: tuple[Replay, str], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    state, url = replay
    key = "sk-" + "replay" * 4  # assembled at run time
    monkeypatch.setenv("AUTOCODE_TEST_KEY", key)
    state.load(*RECORDED)
    repo, _patch = build_sample("unittest", tmp_path / "textkit")
    lesson = "The textkit helpers must stay free of third-party imports."
    with open_memory(resolve_settings(repo)) as memory:
        saved = memory.save(MemoryContext(agent="implementer", repository=repo), lesson, shared=True)
    assert saved.saved, saved
    cli = Source("cli", "tester")
    run = TaskRun.start(repo, "Add longest_word with a test.", TaskOptions(
        provider="openai", base_url=url, model="replay-model", api_key_env="AUTOCODE_TEST_KEY"))
    snap = run.snapshot().wire()
    assert snap["needs"]["kind"] == "answer_questions"
    run.answer("test-naming", NAMING_ANSWER, cli)
    snap = run.approve_plan(1, cli).wire()
    assert snap["needs"]["kind"] == "approve_completion", snap
    snap = run.approve_completion(cli).wire()
    assert snap["state"] == "COMPLETED"
    assert [r["path"] for r in state.requests] == ["/v1/chat/completions"] * 5
    assert all(r["auth"] == f"Bearer {key}" for r in state.requests)
    assert all(r["body"]["model"] == "replay-model" for r in state.requests)
    # Recalled memories reach the roles' context, in their own section.
    requirements_prompt = state.requests[1]["body"]["messages"][1]["content"]
    assert "Recalled project memories" in requirements_prompt and lesson in requirements_prompt
    # The project's answers reach the planner as this task's answers, not as project data.
    assert NAMING_ANSWER in state.requests[2]["body"]["messages"][1]["content"]
    run_dir = Path(snap["runDir"])
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path
    record = read_record(repo)
    assert record is not None
    assert {"role": "planner", "provider": "openai", "model": "replay-model"} in record["routes"]


def test_429_then_success_is_retried(replay: tuple[Replay, str], tmp_path: Path) -> None:
    state, url = replay
    state.load(ERRORS["rate_limited"], ERRORS["server_error"], ERRORS["plan"])
    slept: list[float] = []
    provider = OpenAIProvider(base_url=url, model="m", sleep=slept.append, backoff=0.01)
    plan = provider.plan(_ctx(tmp_path), RequirementsReport(summary="s"))
    assert plan.steps == ["Add it"]
    assert len(state.requests) == 3
    assert slept[0] == 0.0  # Retry-After: 0 honoured, then exponential backoff with jitter
    assert 0.01 <= slept[1] <= 0.03


def test_retries_give_up_with_a_clear_error(replay: tuple[Replay, str], tmp_path: Path) -> None:
    state, url = replay
    state.load(*[ERRORS["rate_limited"]] * 4)
    with pytest.raises(ProviderError, match=r"kept failing \(HTTP 429: Rate limit reached\) after 3 attempt"):
        _provider(url, retries=2).plan(_ctx(tmp_path), RequirementsReport(summary="s"))


def test_a_timeout_is_a_clear_error(replay: tuple[Replay, str], tmp_path: Path) -> None:
    state, url = replay
    answer = threading.Event()
    state.load({**ERRORS["plan"], "hold": answer})
    state.answered.clear()
    try:
        # The answer is held until after the call: only the client's own timeout can end it.
        with pytest.raises(ProviderError, match=r"sent nothing for 0\.3 s"):
            _provider(url, timeout=0.3).plan(_ctx(tmp_path), RequirementsReport(summary="s"))
    finally:
        answer.set()
    assert state.answered.wait(30)  # the held handler is done before the next test loads the queue


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("not_json_body", "body that is not JSON"),
        ("content_not_json", "is not valid JSON"),
        ("no_choices", "without choices"),
        ("plan_without_steps", "has no steps"),
    ],
)
def test_malformed_answers_are_clear_errors(replay: tuple[Replay, str], tmp_path: Path, name: str, message: str) -> None:
    state, url = replay
    state.load(ERRORS[name])
    with pytest.raises(ProviderError, match=message):
        _provider(url).plan(_ctx(tmp_path), RequirementsReport(summary="s"))


def test_a_missing_key_variable_names_the_variable_and_sends_nothing(replay: tuple[Replay, str], tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    state, url = replay
    state.load(ERRORS["plan"])
    monkeypatch.delenv("AUTOCODE_MISSING_KEY", raising=False)
    with pytest.raises(ProviderError, match="AUTOCODE_MISSING_KEY"):
        _provider(url, api_key_env="AUTOCODE_MISSING_KEY").plan(_ctx(tmp_path), RequirementsReport(summary="s"))
    assert state.requests == []


def test_a_provider_failure_fails_the_task_with_its_message(replay: tuple[Replay, str], tmp_path: Path) -> None:
    state, url = replay
    state.load(RECORDED[0], ERRORS["content_not_json"])
    repo, _ = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, "Add it", TaskOptions(provider="openai", base_url=url, model="replay-model"))
    snap = run.snapshot().wire()
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "providerError"
    assert "not valid JSON" in snap["error"]["message"]
