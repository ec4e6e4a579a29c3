"""A scripted model for the agent CLIs AutoCode runs as engines (real socket, real HTTP).

The CLIs (Claude Code, Aider, Codex) each talk to their model in their own way and may make
side requests (a title, a quota probe, a summary). So the model here answers by what it is
asked rather than by a fixed list of steps: in a conversation that offers tools (Claude
Code's Messages API), it reads the file, edits it, then says it is done; a chat completion
(Aider) gets the fix as a search/replace block; a Responses API request (Codex) gets a call of
its `exec_command` tool that edits the file, then a message. Every format streams server-sent
events when the request asks for them.

`hold` (an Event) keeps every answer waiting until the test sets it: the CLI is then mid-run
for a cancel or an idle timeout. `seen` is set at the first request.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from support import serve_http

USAGE_IN, USAGE_OUT = 120, 30


@dataclass
class Fix:
    """The edit the model makes: in `path` (relative), `old` becomes `new`."""

    path: str
    old: str
    new: str
    workspace: Path  # the program sees the copy at the workspace's path
    also: str = ""  # a shell command the model asks to run after the edit (Codex's exec_command)

    def block(self) -> str:
        return (
            f"{self.path}\n```python\n<<<<<<< SEARCH\n{self.old}\n=======\n{self.new}\n>>>>>>> REPLACE\n```\n"
        )


@dataclass
class EngineModel:
    fix: Fix
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    hold: threading.Event | None = None
    seen: threading.Event = field(default_factory=threading.Event)
    key: str | None = None  # when set, a request without this key is answered 401, as a real endpoint would
    fail: int | None = None  # when set, every model request is answered with this status (a 5xx outage)
    latency: float = 0.0  # seconds each model request waits before its answer, as a model's thinking
    url: str = ""  # …/v1
    root: str = ""  # scheme://host:port

    def paths(self) -> list[str]:
        with self.lock:
            return [str(r["path"]) for r in self.requests]

    # ------------------------------------------------------------ what the model says

    def messages_reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Content blocks for a Messages API request."""
        tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        if "Edit" not in tools:  # a side request (a title, a summary): plain text
            return [{"type": "text", "text": "Fix add"}]
        results = sum(
            1
            for m in body.get("messages") or []
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        target = str(self.fix.workspace / self.fix.path)
        if results == 0:
            return [{"type": "tool_use", "id": "toolu_read1", "name": "Read", "input": {"file_path": target}}]
        if results == 1:
            return [{"type": "tool_use", "id": "toolu_edit1", "name": "Edit",
                     "input": {"file_path": target, "old_string": self.fix.old, "new_string": self.fix.new}}]
        return [{"type": "text", "text": "I changed add to return the sum."}]

    def responses_reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The output item for a Responses API request (Codex): the edit as a command, then a message."""
        outputs = [str(i.get("output") or "") for i in body.get("input") or []
                   if isinstance(i, dict) and i.get("type") == "function_call_output"]
        running = re.search(r"Process running with session ID (\d+)", outputs[-1]) if outputs else None
        if running:  # the command outlasted Codex's wait: wait for it, as a model would
            return {"type": "function_call", "id": f"fc_{len(outputs) + 1}", "call_id": f"call_{len(outputs) + 1}",
                    "name": "write_stdin", "arguments": json.dumps(
                        {"session_id": int(running.group(1)), "chars": "", "yield_time_ms": 30000})}
        if outputs:
            return {"type": "message", "role": "assistant", "id": "msg_1",
                    "content": [{"type": "output_text", "text": "I changed add to return the sum."}]}
        old, new = self.fix.old.strip(), self.fix.new.strip()
        command = f"sed -i 's/{old}/{new}/' {self.fix.path}"
        if self.fix.also:
            command += f" && {self.fix.also}"
        return {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command",
                "arguments": json.dumps({"cmd": command})}

    def gemini_reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The parts of a Gemini API answer (Gemini CLI): read the file, replace the line, then say so.
        A request without the edit tool (a side question of the CLI's) gets text."""
        tools = {f.get("name") for t in body.get("tools") or [] if isinstance(t, dict)
                 for f in t.get("functionDeclarations") or [] if isinstance(f, dict)}
        if "replace" not in tools:
            return [{"text": "Fix add"}]
        answered = sum(1 for c in body.get("contents") or [] if isinstance(c, dict)
                       for part in c.get("parts") or [] if isinstance(part, dict) and "functionResponse" in part)
        target = str(self.fix.workspace / self.fix.path)
        if answered == 0:
            return [{"functionCall": {"name": "read_file", "args": {"file_path": target}}}]
        if answered == 1:
            return [{"functionCall": {"name": "replace", "args": {
                "file_path": target, "instruction": "make add return the sum",
                "old_string": self.fix.old, "new_string": self.fix.new}}}]
        return [{"text": "I changed add to return the sum."}]

    def chat_tool_call(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """For a chat completion that offers OpenCode's tools: read the file, edit it (one call each),
        then None (the final text). Aider's requests offer no tools."""
        tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        if not {"read", "edit"} <= tools:
            return None
        answered = sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool")
        target = str(self.fix.workspace / self.fix.path)
        if answered == 0:
            return {"name": "read", "arguments": {"filePath": target}}
        if answered == 1:
            return {"name": "edit", "arguments": {"filePath": target, "oldString": self.fix.old,
                                                  "newString": self.fix.new}}
        return None

    def chat_reply(self, body: dict[str, Any]) -> str:
        """The text of a chat completion (Aider): the fix as a search/replace block. Aider's own
        prompt shows such blocks as examples, so every request gets the same answer."""
        return "I will fix add.\n\n" + self.fix.block()


@contextmanager
def serve(fix: Fix, *, hold: threading.Event | None = None, key: str | None = None,
          fail: int | None = None, latency: float = 0.0) -> Iterator[EngineModel]:
    model = EngineModel(fix=fix, hold=hold, key=key, fail=fail, latency=latency)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            with model.lock:
                model.requests.append({"path": self.path, "method": "GET", "body": None})
            raw = b"{}" if not self.path.rstrip("/").endswith("/models") else json.dumps(
                {"object": "list", "data": [{"id": "scripted", "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            auth = (self.headers.get("Authorization") or self.headers.get("x-api-key")
                    or self.headers.get("x-goog-api-key"))
            with model.lock:
                model.requests.append({"path": self.path, "method": "POST", "body": body, "auth": auth})
            model.seen.set()
            if model.hold is not None:
                model.hold.wait(120)
            if model.latency and "count_tokens" not in self.path:
                time.sleep(model.latency)
            try:
                if model.key is not None and model.key not in str(auth or ""):
                    self._refuse(401, "the API key is missing or not valid")
                    return
                if model.fail is not None:
                    self._refuse(model.fail, "the model is overloaded; try again later")
                    return
                if "/messages" in self.path:
                    if "count_tokens" in self.path:
                        self._json({"input_tokens": USAGE_IN})
                    else:
                        self._messages(body)
                elif self.path.rstrip("/").endswith("/chat/completions"):
                    self._chat(body)
                elif self.path.rstrip("/").endswith("/responses"):
                    self._responses(body)
                elif ":streamGenerateContent" in self.path or ":generateContent" in self.path:
                    self._gemini(body, stream=":streamGenerateContent" in self.path)
                else:
                    self._json({"error": {"message": f"no such path {self.path}"}}, 404)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _refuse(self, status: int, message: str) -> None:
            """An error in the shape of the API the path belongs to."""
            if ":streamGenerateContent" in self.path or ":generateContent" in self.path:
                name = "UNAUTHENTICATED" if status == 401 else "UNAVAILABLE"
                self._json({"error": {"code": status, "message": message, "status": name}}, status)
            elif "/messages" in self.path:
                kind = "authentication_error" if status == 401 else "overloaded_error"
                self._json({"type": "error", "error": {"type": kind, "message": message}}, status)
            else:
                kind = "invalid_api_key" if status == 401 else "server_error"
                self._json({"error": {"message": message, "type": kind, "code": kind}}, status)

        def _json(self, data: Any, status: int = 200) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if status >= 500:  # as the hosted APIs answer an outage: when to try again
                self.send_header("retry-after-ms", "200")
                self.send_header("retry-after", "1")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _chunk(self, raw: bytes) -> None:
            self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            self.wfile.flush()

        def _start_stream(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

        def _chat(self, body: dict[str, Any]) -> None:
            usage = {"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT, "total_tokens": USAGE_IN + USAGE_OUT}
            name = body.get("model")
            call = model.chat_tool_call(body)
            if call is not None:
                self._chat_tool_call(call, usage, name)
                return
            content = "I changed add to return the sum." if body.get("tools") else model.chat_reply(body)
            if not body.get("stream"):
                self._json({"id": "chatcmpl-engine", "object": "chat.completion", "created": 0, "model": name,
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": content}}],
                            "usage": usage})
                return
            self._start_stream()
            pieces = [content[i:i + 40] for i in range(0, len(content), 40)]
            deltas = [{"role": "assistant", "content": ""}] + [{"content": p} for p in pieces]
            for i, delta in enumerate(deltas):
                last = i == len(deltas) - 1
                event = {"id": "chatcmpl-engine", "object": "chat.completion.chunk", "created": 0, "model": name,
                         "choices": [{"index": 0, "delta": delta, "finish_reason": "stop" if last else None}]}
                self._chunk(f"data: {json.dumps(event)}\n\n".encode())
            event = {"id": "chatcmpl-engine", "object": "chat.completion.chunk", "created": 0, "model": name,
                     "choices": [], "usage": usage}
            self._chunk(f"data: {json.dumps(event)}\n\n".encode())
            self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _gemini(self, body: dict[str, Any], *, stream: bool) -> None:
            answer = {"candidates": [{"content": {"role": "model", "parts": model.gemini_reply(body)},
                                      "finishReason": "STOP", "index": 0}],
                      "usageMetadata": {"promptTokenCount": USAGE_IN, "candidatesTokenCount": USAGE_OUT,
                                        "totalTokenCount": USAGE_IN + USAGE_OUT},
                      "modelVersion": "scripted"}
            if not stream:
                self._json(answer)
                return
            self._start_stream()
            self._chunk(f"data: {json.dumps(answer)}\r\n\r\n".encode())
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _chat_tool_call(self, call: dict[str, Any], usage: dict[str, int], name: Any) -> None:
            self._start_stream()
            with model.lock:
                number = len(model.requests)
            delta = {"role": "assistant", "content": None, "tool_calls": [{
                "index": 0, "id": f"call_{number}", "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}]}
            for event in (
                {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                {"choices": [], "usage": usage},
            ):
                event = {"id": "chatcmpl-engine", "object": "chat.completion.chunk", "created": 0, "model": name,
                         **event}
                self._chunk(f"data: {json.dumps(event)}\n\n".encode())
            self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _responses(self, body: dict[str, Any]) -> None:
            item = model.responses_reply(body)
            self._start_stream()

            def send(kind: str, data: dict[str, Any]) -> None:
                self._chunk(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())

            send("response.created", {"response": {"id": "resp_engine"}})
            if item["type"] == "message":
                send("response.output_item.added", {"output_index": 0, "item": {**item, "content": []}})
                send("response.output_text.delta", {"output_index": 0, "content_index": 0, "item_id": item["id"],
                                                     "delta": item["content"][0]["text"]})
            else:
                send("response.output_item.added", {"output_index": 0, "item": {**item, "arguments": ""}})
            send("response.output_item.done", {"output_index": 0, "item": item})
            send("response.completed", {"response": {"id": "resp_engine", "usage": {
                "input_tokens": USAGE_IN, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": USAGE_OUT,
                "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": USAGE_IN + USAGE_OUT}}})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _messages(self, body: dict[str, Any]) -> None:
            blocks = model.messages_reply(body)
            stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
            name = body.get("model")
            if not body.get("stream"):
                self._json({"id": "msg_engine", "type": "message", "role": "assistant", "model": name,
                            "content": blocks, "stop_reason": stop, "stop_sequence": None,
                            "usage": {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT}})
                return
            self._start_stream()

            def send(kind: str, data: dict[str, Any]) -> None:
                self._chunk(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())

            send("message_start", {"message": {"id": "msg_engine", "type": "message", "role": "assistant",
                                               "content": [], "model": name, "stop_reason": None,
                                               "stop_sequence": None,
                                               "usage": {"input_tokens": USAGE_IN, "output_tokens": 1}}})
            for index, block in enumerate(blocks):
                if block["type"] == "tool_use":
                    send("content_block_start", {"index": index, "content_block": {
                        "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
                    send("content_block_delta", {"index": index, "delta": {
                        "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
                else:
                    send("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
                    send("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": block["text"]}})
                send("content_block_stop", {"index": index})
            send("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": USAGE_OUT}})
            send("message_stop", {})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    with serve_http(Handler) as url:
        model.url = url
        model.root = url[: -len("/v1")]
        yield model
