"""A scripted Anthropic Messages endpoint on 127.0.0.1, for agent CLIs (Claude Code) in tests.

Each POST to `/v1/messages` (query string allowed: Claude Code adds `?beta=true`) is answered
with the next reply of the script as the API's event stream (message_start, one
content_block_start/delta/stop per block, message_delta, message_stop). A reply is a list of
blocks (`text(...)`, `tool_use(...)`) or a function of the request body that returns one, so a
step can use what an earlier tool answered. Other POSTs (token counting) and GETs get `{}`-like
answers. Every request body is kept in `requests`.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from support import serve_http

Block = dict[str, Any]
Reply = list[Block] | Callable[[dict[str, Any]], list[Block]]

_ids = itertools.count(1)


def text(content: str) -> Block:
    return {"type": "text", "text": content}


def tool_use(name: str, arguments: dict[str, Any]) -> Block:
    return {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": arguments}


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """Every tool result the conversation so far carries, by tool_use id, as text."""
    found: dict[str, str] = {}
    for message in body.get("messages") or []:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "\n".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))
                found[str(block.get("tool_use_id"))] = str(inner)
    return found


class MessagesScript:
    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.lock = threading.Lock()
        self.url = ""

    def next_blocks(self, body: dict[str, Any]) -> list[Block]:
        with self.lock:
            self.requests.append(body)
            if not self.replies:
                self.failures.append("a request came after the script ended")
                return [text("(the script has ended)")]
            reply = self.replies.pop(0)
        try:
            return reply(body) if callable(reply) else reply
        except Exception as exc:  # kept for the test: this runs in the server's thread
            self.failures.append(f"a scripted step failed: {exc!r}")
            return [text("(a scripted step failed)")]


def _handler(script: MessagesScript) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            self._json({})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.split("?", 1)[0].endswith("/messages"):
                self._json({"input_tokens": 10})
                return
            blocks = script.next_blocks(body)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.close_connection = True

            def send(kind: str, data: dict[str, Any]) -> None:
                self.wfile.write(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())
                self.wfile.flush()

            send("message_start", {"message": {
                "id": "msg_script", "type": "message", "role": "assistant", "content": [],
                "model": body.get("model"), "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            }})
            for index, block in enumerate(blocks):
                if block["type"] == "tool_use":
                    start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                else:
                    start = {"type": "text", "text": ""}
                    delta = {"type": "text_delta", "text": block["text"]}
                send("content_block_start", {"index": index, "content_block": start})
                send("content_block_delta", {"index": index, "delta": delta})
                send("content_block_stop", {"index": index})
            stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
            send("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}})
            send("message_stop", {})

    return Handler


@contextmanager
def serve(replies: list[Reply]) -> Iterator[MessagesScript]:
    script = MessagesScript(replies)
    with serve_http(_handler(script)) as url:
        script.url = url.rstrip("/").removesuffix("/v1")  # Claude Code adds /v1/messages itself
        yield script
