"""A scripted OpenAI-compatible server (real socket, real HTTP) and a small buggy repository.

`ScriptedEndpoint` answers each POST with the next step of its script. A step
may check the request it answers (`check(body)`); a failed check is kept and
reported by `assert_clean()`, since it happens in the server's thread.

It behaves as real servers do: HTTP/1.1 with keep-alive; a request with
`stream: true` gets server-sent events (the content, reasoning and tool-call
arguments in pieces, `gap` seconds apart, then the usage and `[DONE]`); a
step can reset the connection (`reset="before"` or `"during"` the answer).
A `refuse(...)` rule answers every request it matches with an error, before
any step is used, the way a server refuses a parameter on every request.

A POST to `.../messages` is answered as Anthropic's Messages API answers:
the step's message as content blocks (thinking, text, tool_use), its stop
reason, and when asked the API's own event stream; a step can end that
stream with an `event: error` (`event_error`, as the API reports an
overload mid-stream) or cut it in the middle of an event (`reset="during"`).
"""

from __future__ import annotations

import json
import socket
import struct
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
    finish_reason: str = "stop"
    gap: float = 0.0  # seconds between streamed chunks
    pieces: int = 3  # chunks the content (and each tool call's arguments) is streamed in
    reset: str | None = None
    """"before": close without answering; "during": reset after part of the stream (mid-event);
    "cut" (Messages API): the answer ends cleanly in the middle of an event, as a proxy that gave up does."""
    event_error: dict[str, Any] | None = None  # Messages API: an `event: error` with this error after the first block starts
    stream: bool | None = None  # None: as the request asks; False: a whole JSON answer even when asked to stream
    hold: threading.Event | None = None
    """When set, the answer waits until the test sets this event (at most a minute): a request
    the client gave up on is proved by the client returning while the answer is still held."""


@dataclass
class Rule:
    matches: Callable[[dict[str, Any]], bool]
    status: int
    body: Any
    hits: int = 0


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
        self.rules: list[Rule] = []
        self.connections: set[tuple[str, int]] = set()
        self.pages: dict[str, Any] = {}  # GET path -> JSON answer (what a server tells about itself)
        self.looked: list[str] = []

    def load(self, *steps: Step) -> None:
        with self.lock:
            self.steps = list(steps)
            self.requests = []
            self.failures = []
            self.rules = []
            self.connections = set()
            self.pages = {}
            self.looked = []

    def refuse(self, matches: Callable[[dict[str, Any]], bool], body: Any, status: int = 400) -> Rule:
        """Answer every request `matches` accepts with this error (a step is not used)."""
        rule = Rule(matches, status, body)
        with self.lock:
            self.rules.append(rule)
        return rule

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

        def setup(self) -> None:
            super().setup()
            # As real servers do: small writes of a stream leave at once (no Nagle wait for the client's ACK).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self) -> None:
            with state.lock:
                state.looked.append(self.path)
                page = state.pages.get(self.path)
            raw = json.dumps(page if page is not None else {"error": "not found"}).encode()
            self.send_response(200 if page is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            started = time.perf_counter()
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            with state.lock:
                state.connections.add(self.client_address)
                state.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                rule = next((r for r in state.rules if r.matches(body)), None)
                if rule is not None:
                    rule.hits += 1
                    step = Step(status=rule.status, body=rule.body)
                else:
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
            try:
                if step.reset == "before":
                    self._reset()
                elif self.path.endswith("/messages") and step.status == 200 and step.body is None:
                    self._messages(step, body)
                elif step.status == 200 and step.body is None and body.get("stream") and step.stream is not False:
                    self._stream(step, body)
                else:
                    self._whole(step, body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            state.seconds_in_handler += time.perf_counter() - started
            state.served.set()

        def _reset(self) -> None:
            # An abortive close (RST), as a proxy or a restarting server does.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True

        def _whole(self, step: Step, body: dict[str, Any]) -> None:
            payload = step.body
            if payload is None:
                payload = {
                    "id": "chatcmpl-script",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": step.finish_reason, "message": step.message}],
                    "usage": step.usage or USAGE,
                }
            raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(step.status)
            for key, value in step.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _stream(self, step: Step, body: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunks = list(_deltas(step))
            for i, delta in enumerate(chunks):
                if step.reset == "during" and i == len(chunks) // 2:
                    self.wfile.flush()
                    self._reset()
                    return
                last = i == len(chunks) - 1
                event = {"id": "chatcmpl-script", "object": "chat.completion.chunk", "model": body.get("model"),
                         "choices": [{"index": 0, "delta": delta, "finish_reason": step.finish_reason if last else None}]}
                self._event(json.dumps(event))
                if step.gap and not last:
                    time.sleep(step.gap)
            if (body.get("stream_options") or {}).get("include_usage"):
                self._event(json.dumps({"id": "chatcmpl-script", "object": "chat.completion.chunk", "choices": [],
                                        "usage": step.usage or USAGE}))
            self._event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _messages(self, step: Step, body: dict[str, Any]) -> None:
            blocks = _blocks(step)
            usage = step.usage or USAGE
            stop = {"length": "max_tokens", "content_filter": "refusal"}.get(step.finish_reason)
            stop = stop or ("tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn")
            if not body.get("stream") or step.stream is False:
                whole = [{**b, "input": _loads(b["input"])} if b["type"] == "tool_use" else b for b in blocks]
                raw = json.dumps({"id": "msg_script", "type": "message", "role": "assistant", "model": body.get("model"),
                                  "content": whole, "stop_reason": stop,
                                  "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            sent = [0]
            cut_at = 3 + 3 * len(blocks) // 2  # an event about halfway through the answer

            def send(kind: str, data: dict[str, Any]) -> None:
                raw = f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
                sent[0] += 1
                if step.reset == "during" and sent[0] == cut_at:
                    half = raw[: len(raw) // 2]  # the connection drops in the middle of this event
                    self.wfile.write(f"{len(raw):x}\r\n".encode() + half)
                    self.wfile.flush()
                    raise _Cut
                if step.reset == "cut" and sent[0] == cut_at:
                    half = raw[: len(raw) // 2]  # the body ends in the middle of this event
                    self.wfile.write(f"{len(half):x}\r\n".encode() + half + b"\r\n0\r\n\r\n")
                    self.wfile.flush()
                    self.close_connection = True
                    raise _Cut
                self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                self.wfile.flush()
                if step.gap:
                    time.sleep(step.gap)

            try:
                self._message_events(send, step, body, blocks, usage, stop)
            except _Cut:
                if step.reset == "during":
                    self._reset()
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _message_events(self, send: Callable[[str, dict[str, Any]], None], step: Step, body: dict[str, Any],
                            blocks: list[dict[str, Any]], usage: dict[str, int], stop: str) -> None:
            send("message_start", {"message": {"id": "msg_script", "type": "message", "role": "assistant", "content": [],
                                               "model": body.get("model"), "stop_reason": None,
                                               "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": 1}}})
            send("ping", {})  # as the API does, now and then
            for index, block in enumerate(blocks):
                kind = block["type"]
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}} if kind == "tool_use" \
                    else {"type": kind, kind: ""}
                send("content_block_start", {"index": index, "content_block": start})
                if step.event_error is not None:
                    send("error", {"error": step.event_error})
                    return
                whole = block["input"] if kind == "tool_use" else block[kind]
                delta = {"tool_use": ("input_json_delta", "partial_json"), "text": ("text_delta", "text"),
                         "thinking": ("thinking_delta", "thinking")}[kind]
                for piece in _split(whole, step.pieces):
                    send("content_block_delta", {"index": index, "delta": {"type": delta[0], delta[1]: piece}})
                send("content_block_stop", {"index": index})
            send("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": usage["completion_tokens"]}})
            send("message_stop", {})

        def _event(self, data: str) -> None:
            raw = f"data: {data}\n\n".encode()
            self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            self.wfile.flush()

    with serve_http(Handler) as url:
        state.url = url
        yield state


class _Cut(Exception):
    """The scripted connection drops in the middle of an event."""


def _deltas(step: Step) -> Iterator[dict[str, Any]]:
    """The deltas a streaming server sends for a step's message: role, reasoning, content, tool calls."""
    message = step.message or {}
    yield {"role": "assistant", "content": ""}
    reasoning = message.get("reasoning_content")
    if reasoning:
        for piece in _split(reasoning, step.pieces):
            yield {"reasoning_content": piece}
    content = message.get("content")
    if isinstance(content, list):
        yield {"content": content}
    elif content:
        for piece in _split(content, step.pieces):
            yield {"content": piece}
    for index, call in enumerate(message.get("tool_calls") or []):
        fn = call["function"]
        yield {"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                               "function": {"name": fn["name"], "arguments": ""}}]}
        for piece in _split(fn["arguments"], step.pieces):
            yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
    yield {}


def _blocks(step: Step) -> list[dict[str, Any]]:
    """A step's message as Messages API content blocks (tool inputs kept as the raw JSON text)."""
    message = step.message or {}
    blocks: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        blocks.append({"type": "thinking", "thinking": message["reasoning_content"]})
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        blocks.append({"type": "tool_use", "id": call["id"].replace("call_", "toolu_"), "name": call["function"]["name"],
                       "input": call["function"]["arguments"]})
    return blocks


def _loads(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return {}


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i:i + size] for i in range(0, len(text), size)]


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
