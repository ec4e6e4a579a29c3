"""A streamed chat completion (server-sent events) put back together as one completion.

Each `data:` line carries a chunk: `choices[0].delta` with pieces of the
content, of the reasoning (`reasoning_content` or `reasoning`) and of tool
calls (by index: the id and name once, the arguments in fragments), then a
`finish_reason`, and with `stream_options.include_usage` a last chunk with
the usage. `data: [DONE]` ends the stream. An `error` object in a chunk (vLLM,
LiteLLM and others report failures mid-stream that way; Anthropic sends an
`event: error`) is the endpoint's error, told with its type: `StreamFailed`,
which says whether the type is one of a passing state (overloaded, an
internal error, a rate limit) that is worth sending the request again for.
`read_answer` reads one HTTP answer, streamed or whole, under the idle timeout;
a body that ends in the middle of an event is a cut connection (sent again),
not a bad chunk.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autocode.providers.base import ProviderError

PROGRESS_EVERY = 2.0  # seconds between progress reports while a reply streams (at most)

Progress = Callable[[int, float], None]  # (characters so far, seconds since the request was sent)


# Error types a stream reports for a passing state of the server: Anthropic's overloaded_error (its
# 529), api_error (its 500) and rate_limit_error (its 429), OpenAI's server_error.
PASSING_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error", "server_error"})


class StreamError(ValueError):
    """A chunk that is not JSON, or an error the endpoint sent inside the stream (`kind`: its type, when told)."""

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind


class ChunkNotJSON(StreamError):
    """An event whose data is not JSON; at the end of the body, an event the connection cut short."""


class StreamFailed(ProviderError):
    """The endpoint reported an error in the middle of a streamed answer; `passing` when sending again may help."""

    def __init__(self, shown: str, error: StreamError) -> None:
        told = f"{error.kind}: {error}" if error.kind else str(error)
        super().__init__(f"{shown} reported an error in the middle of its answer ({told})")
        self.passing = error.kind in PASSING_ERRORS


@dataclass
class Assembly:
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    model: str | None = None
    done: bool = False
    chars: int = 0  # of content, reasoning and arguments so far (for progress)
    _data: list[str] = field(default_factory=list)

    def line(self, raw: bytes) -> None:
        """Feed one line of the event stream (with or without its line end)."""
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not text:
            self._dispatch()
        elif text.startswith("data:"):
            self._data.append(text[5:].lstrip(" "))
        # "event:", "id:", "retry:" and ":" comment lines (keep-alives) carry nothing we use.

    def finish(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        if not self._data:
            return
        data, self._data = "\n".join(self._data), []
        if data.strip() == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise ChunkNotJSON(f"a streamed chunk is not JSON: {data[:120]!r}") from exc
        if isinstance(chunk, dict):
            self.chunk(chunk)

    def chunk(self, chunk: dict[str, Any]) -> None:
        if chunk.get("error") is not None:
            err = chunk["error"]
            message = err.get("message") if isinstance(err, dict) else err
            kind = (err.get("type") or err.get("code")) if isinstance(err, dict) else None
            raise StreamError(str(message or err)[:500], str(kind) if kind else None)
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return
        choice = choices[0]
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta") or choice.get("message") or {}
        if not isinstance(delta, dict):
            return
        piece = delta.get("content")
        if isinstance(piece, str) and piece:
            self.content.append(piece)
            self.chars += len(piece)
        elif isinstance(piece, list):  # parts, as some servers stream them
            for part in piece:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    self.content.append(part["text"])
                    self.chars += len(part["text"])
        for key in ("reasoning_content", "reasoning"):
            thought = delta.get(key)
            if isinstance(thought, str) and thought:
                self.reasoning.append(thought)
                self.chars += len(thought)
                break
        for i, call in enumerate(delta.get("tool_calls") or []):
            if isinstance(call, dict):
                self._call(call, i)

    def _call(self, call: dict[str, Any], position: int) -> None:
        index = call.get("index")
        slot = self.calls.setdefault(index if isinstance(index, int) else position, {"id": None, "name": "", "arguments": []})
        if call.get("id"):
            slot["id"] = str(call["id"])
        fn = call.get("function") or {}
        if isinstance(fn, dict):
            if fn.get("name") and not slot["name"]:  # sent once; some servers repeat it whole
                slot["name"] = str(fn["name"])
            args = fn.get("arguments")
            if isinstance(args, str):
                slot["arguments"].append(args)
                self.chars += len(args)
            elif isinstance(args, dict):
                slot["arguments"].append(json.dumps(args))

    def completion(self) -> dict[str, Any]:
        """The stream as the one completion a non-streaming request would have answered."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": slot["id"] or f"call-{index}",
                    "type": "function",
                    "function": {"name": slot["name"], "arguments": "".join(slot["arguments"])},
                }
                for index, slot in sorted(self.calls.items())
            ]
        out: dict[str, Any] = {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self.model:
            out["model"] = self.model
        if self.usage is not None:
            out["usage"] = self.usage
        return out


def arm(conn: http.client.HTTPConnection, timeout: float, deadline: float | None) -> None:
    """The silence allowed on this connection: the idle timeout, never past the deadline."""
    limit = timeout
    if deadline is not None:
        limit = max(0.01, min(limit, deadline - time.monotonic()))
    conn.timeout = limit
    if conn.sock is not None:
        conn.sock.settimeout(limit)


def read_answer(
    response: http.client.HTTPResponse, conn: http.client.HTTPConnection, shown: str, timeout: float,
    deadline: float | None, streaming: bool, progress: Progress | None, started: float,
    assemble: Callable[[], Assembly] = Assembly,
) -> tuple[int, dict[str, str], bytes, Any]:
    headers = {k.lower(): v for k, v in response.getheaders()}
    kind = headers.get("content-type", "")
    if response.status >= 300 or not streaming or "text/event-stream" not in kind:
        return response.status, headers, response.read(), None  # a server may answer a streamed request whole
    assembly = assemble()
    reported = started
    every = min(PROGRESS_EVERY, timeout / 4)  # several reports within one idle window
    while not assembly.done:
        if deadline is not None:
            arm(conn, timeout, deadline)
        line = response.readline()
        if not line:
            break
        try:
            assembly.line(line)
        except StreamError as exc:
            raise StreamFailed(shown, exc) from None
        if progress is not None:
            now = time.monotonic()
            if now - reported >= every:
                reported = now
                progress(assembly.chars, now - started)
    try:
        assembly.finish()
    except StreamError as exc:
        if isinstance(exc, ChunkNotJSON) and not assembly.done:
            raise http.client.IncompleteRead(b"", None) from None  # the body ended in the middle of an event
        raise StreamFailed(shown, exc) from None
    if assembly.done:
        response.read()  # the end of the chunked body, so the connection can serve the next request
    elif assembly.finish_reason is None:
        raise http.client.IncompleteRead(b"", None)  # the stream ended before the answer did
    return response.status, headers, b"", assembly.completion()
