"""A scripted OpenAI-compatible server (real socket, real HTTP) and a small buggy repository.

`ScriptedEndpoint` answers each POST with the next step of its script. A step
may check the request it answers (`check(body)`); a failed check is kept and
reported by `assert_clean()`, since it happens in the server's thread.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from support import serve_http

USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}

Check = Callable[[dict[str, Any]], None]


@dataclass
class Step:
    message: dict[str, Any] | None = None
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    check: Check | None = None
    usage: dict[str, int] | None = None
    on_receive: Callable[[], None] | None = None
    hold: threading.Event | None = None
    """When set, the answer waits until the test sets this event (at most a minute): a request
    the client gave up on is proved by the client returning while the answer is still held."""


def text(content: str, **kw: Any) -> Step:
    return Step(message={"role": "assistant", "content": content}, **kw)


def json_answer(data: dict[str, Any], **kw: Any) -> Step:
    return text(json.dumps(data), **kw)


_ids = iter(range(1, 1_000_000))


def calls(*items: tuple[str, Any], content: str | None = None, **kw: Any) -> Step:
    """A reply calling tools; each item is (name, arguments as a dict or a raw string)."""
    tool_calls = []
    for name, args in items:
        raw = args if isinstance(args, str) else json.dumps(args)
        tool_calls.append({"id": f"call_{next(_ids)}", "type": "function", "function": {"name": name, "arguments": raw}})
    return Step(message={"role": "assistant", "content": content, "tool_calls": tool_calls}, **kw)


def call(name: str, args: Any = None, **kw: Any) -> Step:
    return calls((name, {} if args is None else args), **kw)


class ScriptedEndpoint:
    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.requests: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.lock = threading.Lock()
        self.url = ""
        self.served = threading.Event()
        self.seconds_in_handler = 0.0

    def load(self, *steps: Step) -> None:
        with self.lock:
            self.steps = list(steps)
            self.requests = []
            self.failures = []

    def assert_clean(self) -> None:
        assert not self.failures, "\n".join(self.failures)
        assert not self.steps, f"{len(self.steps)} scripted step(s) were never asked for"

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]


@contextmanager
def serve() -> Iterator[ScriptedEndpoint]:
    state = ScriptedEndpoint()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            started = time.perf_counter()
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            with state.lock:
                state.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                step = state.steps.pop(0) if state.steps else Step(status=500, body={"error": "script exhausted"})
            if step.on_receive is not None:
                step.on_receive()
            if step.check is not None:
                try:
                    step.check(body)
                except AssertionError as exc:
                    state.failures.append(f"request {len(state.requests)}: {exc}")
            if step.delay:
                time.sleep(step.delay)
            if step.hold is not None:
                step.hold.wait(60)
            payload = step.body
            if payload is None:
                payload = {
                    "id": "chatcmpl-script",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop", "message": step.message}],
                    "usage": step.usage or USAGE,
                }
            raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            try:
                self.send_response(step.status)
                for key, value in step.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass
            state.seconds_in_handler += time.perf_counter() - started
            state.served.set()

    with serve_http(Handler) as url:
        state.url = url
        yield state


# --------------------------------------------------------------------------- the buggy repository

BUGGY_OPS = "def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return add(x, x)\n"
FIXED_OPS = "def add(a, b):\n    return a + b\n\n\ndef double(x):\n    return add(x, x)\n"
TESTS = (
    "import unittest\n\nfrom calc.ops import add, double\n\n\n"
    "class OpsTest(unittest.TestCase):\n"
    "    def test_add_sums_two_numbers(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
    "    def test_double_is_twice_the_number(self):\n        self.assertEqual(double(4), 8)\n"
)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def build_calc(dest: Path, extra: dict[str, str] | None = None) -> Path:
    """A repository whose `add` subtracts; 25 notes sort before it so calc/ops.py is not cited."""
    files = {f"a_notes/n{i:02d}.md": f"note {i}\n" for i in range(25)}
    files.update(
        {
            "README.md": "# calc\n",
            "calc/__init__.py": "",
            "calc/ops.py": BUGGY_OPS,
            "tests/__init__.py": "",
            "tests/test_ops.py": TESTS,
            ".gitignore": "__pycache__/\n",
        }
    )
    files.update(extra or {})
    dest.mkdir(parents=True)
    for rel, content in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "calc: initial")
    return dest


TEST_COMMAND = f"{sys.executable} -m unittest"


def roles_before_implementing(**kw: Any) -> list[Step]:
    """investigator (reads nothing), requirements (asks nothing), planner."""
    return [
        json_answer({"citations": ["README.md"]}, **kw),
        json_answer(
            {"summary": "Fix add.", "questions": [], "acceptance_criteria": ["tests pass"], "citations": [], "machine_decisions": []}
        ),
        json_answer({"summary": "Fix add.", "steps": ["Find add", "Fix it", "Run the tests"], "citations": [], "acceptance_criteria": []}),
    ]


def review() -> Step:
    return json_answer({"summary": "add fixed; tests pass", "concerns": []})


def last_message(body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = body["messages"][-1]
    return message


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]
