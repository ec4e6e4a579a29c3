"""One chat completion read the same way whatever server wrote it.

Servers differ in small ways that matter: content comes as a string, as
null, or as a list of parts (`[{"type": "text", "text": ...}]`); reasoning
comes as `reasoning_content` (DeepSeek, vLLM, llama.cpp), `reasoning`
(Ollama, OpenRouter) or inline as a leading `<think>...</think>` block; a
server that does not parse tool calls hands back the model's own
`<tool_call>{...}</tool_call>` text. `turn_of` turns each into a `Turn`:
the text (without the reasoning), the reasoning (kept for the transcript,
never sent back and never part of a summary), the tool calls (recovered
from the text when the server left them there), the finish reason and the usage.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from autocode.providers.base import ProviderError

_THINK = re.compile(r"^\s*(?:<think>|<thinking>)?(.*?)(?:</think>|</thinking>)\s*", re.DOTALL)
_TEXT_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


@dataclass
class Turn:
    content: str
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    calls_from_text: bool = False  # the tool calls were written as text and recovered from it

    def message(self) -> dict[str, Any]:
        """The assistant message as it goes back into the conversation (no reasoning)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            out["tool_calls"] = self.tool_calls
        return out


def turn_of(reply: dict[str, Any], where: str, *, tools_offered: bool = False, call_prefix: str = "text-call") -> Turn:
    try:
        choice = reply["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ProviderError(
            f"{where} answered without choices[0].message; check that base_url points at an "
            "OpenAI-compatible chat-completions API"
        ) from exc
    if not isinstance(message, dict):
        raise ProviderError(f"{where} answered with a message that is not an object")
    content = text_of(message.get("content"))
    reasoning = ""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            reasoning = value
            break
    if "</think>" in content or "</thinking>" in content:
        found = _THINK.match(content)
        if found:
            reasoning = (reasoning + "\n" + found.group(1)).strip() if reasoning else found.group(1).strip()
            content = content[found.end():]
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    from_text = False
    if not calls and tools_offered and "<tool_call>" in content:
        calls, content = _calls_in_text(content, call_prefix)
        from_text = bool(calls)
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else None
    return Turn(content, reasoning, calls, str(finish) if finish else None, usage, from_text)


def text_of(content: Any) -> str:
    """The text of a message's content: a string, null, or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("type") in (None, "text", "output_text"):
                texts.append(part["text"])
        return "".join(texts)
    return str(content)


def _calls_in_text(content: str, prefix: str) -> tuple[list[dict[str, Any]], str]:
    calls: list[dict[str, Any]] = []
    for i, found in enumerate(_TEXT_CALL.finditer(content)):
        try:
            data = json.loads(found.group(1))
        except ValueError:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            continue
        args = data.get("arguments", data.get("parameters", {}))
        calls.append(
            {
                "id": f"{prefix}-{i}",
                "type": "function",
                "function": {"name": data["name"], "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
        )
    rest = _TEXT_CALL.sub("", content).strip() if calls else content
    return calls, rest
