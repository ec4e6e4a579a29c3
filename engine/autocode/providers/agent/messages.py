"""The Anthropic Messages API behind the same client: a request body out, a chat completion back.

`MessagesClient` is a `ChatClient` whose wire format is the Messages API, so
the agent loop, its tools, budgets, context view and transcript are the
same for both providers. Going out, the system messages become `system`,
each assistant tool call a `tool_use` block, each tool result a
`tool_result` block in the next user turn (turns of one role are merged, as
the API wants them alternating), the tools `input_schema`s, and
`max_tokens` is always sent (the API requires it); the system text and the
tools, the same every turn, are marked for prompt caching. Coming back, text blocks
are the content, `tool_use` blocks the tool calls, `thinking` blocks the
reasoning, and the stop reason a finish reason (`max_tokens` is `length`).
Streams are the API's server-sent events (message_start, content_block_*,
message_delta, message_stop); an `event: error` in one (overloaded_error,
api_error) is told with its type, and sent again when the type is a passing
one (`stream.StreamFailed`). The key goes in `x-api-key`, read from the
variable the settings name (ANTHROPIC_API_KEY by default).
"""

from __future__ import annotations

import json
import os
from typing import Any

from autocode.providers.agent.http import ChatClient
from autocode.providers.agent.stream import Assembly, StreamError
from autocode.providers.base import ProviderError

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
          "refusal": "content_filter", "pause_turn": "stop"}


class MessagesClient(ChatClient):
    chat_path = "/messages"

    def headers(self, streaming: bool = False) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if streaming else "application/json",
            "anthropic-version": API_VERSION,
        }
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ProviderError(
                    f"the environment variable {self.api_key_env} (setting 'api_key_env') is not set; "
                    "export your Anthropic API key there"
                )
            headers["x-api-key"] = key
        return headers

    def wire(self, body: dict[str, Any]) -> dict[str, Any]:
        system, messages = _messages(body.get("messages") or [])
        out: dict[str, Any] = {
            "model": body.get("model"),
            "max_tokens": body.get("max_tokens") or body.get("max_completion_tokens") or DEFAULT_MAX_TOKENS,
            "messages": messages,
        }
        if system:
            # The system text and the tools are the same every turn: cached (prompt caching), they cost
            # a tenth on later turns. The mark on the last tool covers the tools and the system both.
            out["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        if "temperature" in body:
            out["temperature"] = body["temperature"]
        tools = body.get("tools") or []
        if tools:
            out["tools"] = [
                {
                    "name": t["function"]["name"],
                    "description": t["function"].get("description", ""),
                    "input_schema": t["function"].get("parameters") or {"type": "object", "properties": {}},
                }
                for t in tools
                if isinstance(t, dict) and isinstance(t.get("function"), dict)
            ]
            if out["tools"]:
                out["tools"][-1]["cache_control"] = {"type": "ephemeral"}
            out["tool_choice"] = {"type": "auto"}
        if body.get("stream"):
            out["stream"] = True
        return out

    def unwire(self, reply: dict[str, Any]) -> dict[str, Any]:
        if "choices" in reply:  # already a completion (a stream put back together)
            return reply
        blocks = reply.get("content")
        if not isinstance(blocks, list):
            raise ProviderError(
                f"{self.base_url} answered without a content list; check that base_url points at the Messages API"
            )
        assembly = MessagesAssembly()
        for index, block in enumerate(blocks):
            assembly.chunk({"type": "content_block_start", "index": index, "content_block": block})
        assembly.chunk({"type": "message_start", "message": {"model": reply.get("model"), "usage": reply.get("usage") or {}}})
        assembly.chunk({"type": "message_delta", "delta": {"stop_reason": reply.get("stop_reason")}, "usage": reply.get("usage") or {}})
        return assembly.completion()

    def assembly(self) -> Assembly:
        return MessagesAssembly()


class MessagesAssembly(Assembly):
    """A Messages API stream (or a whole message, block by block) as one chat completion."""

    def __init__(self) -> None:
        super().__init__()
        self._input = 0
        self._output = 0

    def chunk(self, chunk: dict[str, Any]) -> None:
        kind = chunk.get("type")
        if kind == "error":
            err = chunk.get("error")
            if isinstance(err, dict):
                raise StreamError(str(err.get("message") or err)[:500], str(err.get("type") or "") or None)
            raise StreamError(str(err)[:500])
        if kind == "message_start":
            message = chunk.get("message") or {}
            self.model = message.get("model") or self.model
            self._count(message.get("usage"))
        elif kind == "content_block_start":
            self._start(int(chunk.get("index") or 0), chunk.get("content_block") or {})
        elif kind == "content_block_delta":
            self._delta(int(chunk.get("index") or 0), chunk.get("delta") or {})
        elif kind == "message_delta":
            reason = (chunk.get("delta") or {}).get("stop_reason")
            if reason:
                self.finish_reason = FINISH.get(str(reason), str(reason))
            self._count(chunk.get("usage"))
        elif kind == "message_stop":
            self.done = True

    def _start(self, index: int, block: dict[str, Any]) -> None:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            self.content.append(str(block["text"]))
        elif kind == "tool_use":
            given = block.get("input")
            self.calls[index] = {
                "id": str(block.get("id") or f"toolu-{index}"),
                "name": str(block.get("name") or ""),
                "arguments": [json.dumps(given)] if isinstance(given, dict) and given else [],
            }
        elif kind == "thinking" and block.get("thinking"):
            self.reasoning.append(str(block["thinking"]))

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            self.content.append(str(delta.get("text") or ""))
            self.chars += len(str(delta.get("text") or ""))
        elif kind == "input_json_delta" and index in self.calls:
            self.calls[index]["arguments"].append(str(delta.get("partial_json") or ""))
            self.chars += len(str(delta.get("partial_json") or ""))
        elif kind == "thinking_delta":
            self.reasoning.append(str(delta.get("thinking") or ""))
            self.chars += len(str(delta.get("thinking") or ""))

    def _count(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        # Cached and cache-written input are input too: the budget counts what the model read.
        read = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        self._input = max(self._input, read)
        self._output = max(self._output, int(usage.get("output_tokens") or 0))
        self.usage = {"prompt_tokens": self._input, "completion_tokens": self._output,
                      "total_tokens": self._input + self._output}


def _messages(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        content = m.get("content")
        text = content if isinstance(content, str) else ""
        if role == "system":
            system.append(text)
            continue
        blocks: list[dict[str, Any]] = []
        if role == "tool":
            role = "user"
            blocks.append({"type": "tool_result", "tool_use_id": str(m.get("tool_call_id")), "content": text or "(empty)"})
        else:
            if text.strip():
                blocks.append({"type": "text", "text": text})
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                try:
                    given = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    given = {}
                blocks.append({"type": "tool_use", "id": str(call.get("id")), "name": str(fn.get("name") or ""),
                               "input": given if isinstance(given, dict) else {}})
            if not blocks:
                blocks.append({"type": "text", "text": "(no text)"})
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return "\n\n".join(s for s in system if s), out
