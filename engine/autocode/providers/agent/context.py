"""What of a loop's conversation is sent: the history, kept within the model's window.

The transcript keeps every message whole; each request sends a view of it
built here, a pure function of the messages and the limits (so a resumed
loop sends what it would have sent):

1. old tool outputs are trimmed first: outside the most recent
   `RECENT_CHARS` of tool output, a long result becomes its first line and
   a note saying how to get it again, and long arguments of old calls
   (a whole file given to write_file) become a note;
2. when the view still nears the window (`limit` tokens, the window less
   the reply's share), the middle of the conversation is replaced by a
   summary the engine writes from it (each call, its outcome, the files
   edited, the last test result): the system message, the task and the most
   recent turns stay whole.

Tokens are estimated from characters at a ratio the loop calibrates with
the prompt tokens the endpoint reports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

RECENT_CHARS = 12_000  # tool output kept whole, counted back from the newest result
LONG = 600  # results and arguments shorter than this are never trimmed
TAIL_SHARE = 0.5  # of the limit, for the turns kept whole after a summary
SUMMARY_CHARS = 6_000


@dataclass
class Sizing:
    window: int  # the model's context window, in tokens
    reserve: int  # tokens left for the reply
    chars_per_token: float = 3.5

    @property
    def limit(self) -> int:
        """Tokens a request may carry: 85% of the window less the reply's share (at most a quarter of it)."""
        return max(500, int(self.window * 0.85) - min(self.reserve, self.window // 4))

    def tokens(self, chars: int) -> int:
        return int(chars / max(self.chars_per_token, 1.0)) + 1

    def calibrate(self, chars: int, prompt_tokens: int) -> None:
        """Learn the ratio from a request of `chars` characters the endpoint counted as `prompt_tokens`."""
        # Bounded: a server that cuts the prompt silently (Ollama past its window) reports fewer
        # tokens than it was sent, which must not make the next request look smaller still.
        if prompt_tokens > 50 and chars > 200:
            self.chars_per_token = min(5.0, max(2.0, chars / prompt_tokens))


def size(messages: list[dict[str, Any]]) -> int:
    """Characters of a message list as it goes on the wire (content and tool-call arguments)."""
    total = 0
    for m in messages:
        total += len(m.get("content") or "") + 16
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            total += len(str(fn.get("arguments") or "")) + len(str(fn.get("name") or "")) + 40
    return total


def view(messages: list[dict[str, Any]], sizing: Sizing, *, squeeze: float = 1.0, extra_chars: int = 0) -> tuple[list[dict[str, Any]], str | None]:
    """(the messages to send, what was done to them or None). `squeeze` < 1 asks for a smaller view
    (after the endpoint said the last one was too long); `extra_chars` is what the body adds (tools)."""
    limit = int(sizing.limit * squeeze)
    # Recent tool output kept whole: at most a third of what a request may carry.
    recent = min(RECENT_CHARS, int(limit * sizing.chars_per_token / 3))
    out = _trim_old(messages, recent)
    done = "trimmed old tool output" if out != messages else None
    if sizing.tokens(size(out) + extra_chars) <= limit:
        return out, done
    summarised = _summarise(out, sizing, limit, extra_chars)
    if summarised is None:
        return out, done
    return summarised, "summarised the conversation so far"


def _names(messages: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """tool_call_id -> (tool name, a short form of its arguments)."""
    out: dict[str, tuple[str, str]] = {}
    for m in messages:
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            out[str(call.get("id"))] = (str(fn.get("name") or "?"), _short_args(fn.get("arguments")))
    return out


def _short_args(raw: Any) -> str:
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return str(raw)[:80]
    if not isinstance(data, dict):
        return ""
    parts = []
    for key in ("path", "pattern", "query", "start_line"):
        if key in data:
            parts.append(f"{key}={str(data[key])[:80]!r}")
    return ", ".join(parts)


def _trim_old(messages: list[dict[str, Any]], recent: int) -> list[dict[str, Any]]:
    names = _names(messages)
    budget = recent
    keep_whole: set[int] = set()
    newest_tool = True
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") != "tool":
            continue
        length = len(m.get("content") or "")
        if newest_tool or length <= budget:
            keep_whole.add(i)
            budget -= length
        newest_tool = False
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m.get("role") == "tool" and i not in keep_whole and len(m.get("content") or "") > LONG:
            content = str(m.get("content") or "")
            name, args = names.get(str(m.get("tool_call_id")), ("?", ""))
            first = content.split("\n", 1)[0][:100]
            note = f"[trimmed: {len(content):,} characters of this earlier {name}({args}); call it again to see them]"
            out.append({**m, "content": f"{first}\n{note}"})
        elif m.get("role") == "assistant" and i < last_assistant and m.get("tool_calls"):
            out.append({**m, "tool_calls": [_trim_call(c) for c in m["tool_calls"]]})
        else:
            out.append(m)
    return out


def _trim_call(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    raw = fn.get("arguments")
    if not isinstance(raw, str) or len(raw) <= LONG:
        return call
    try:
        data = json.loads(raw)
    except ValueError:
        return call
    if not isinstance(data, dict):
        return call
    for key, value in list(data.items()):
        if isinstance(value, str) and len(value) > LONG // 2:
            data[key] = f"[{len(value):,} characters, trimmed from this earlier call]"
    return {**call, "function": {**fn, "arguments": json.dumps(data)}}


def _summarise(messages: list[dict[str, Any]], sizing: Sizing, limit: int, extra_chars: int) -> list[dict[str, Any]] | None:
    head = messages[:2]
    body = messages[2:]
    if len(body) < 3:
        return None
    tail_budget = int(limit * TAIL_SHARE)
    # A kept tail starts at a turn (never at a tool result, which stays with its call): the longest that fits.
    starts = [i for i, m in enumerate(body) if i > 0 and m.get("role") in ("assistant", "user")]
    if not starts:
        return None
    cut = next((i for i in starts if sizing.tokens(size(body[i:]) + extra_chars) <= tail_budget), starts[-1])
    summary = summary_of(body[:cut])
    return [*head, {"role": "user", "content": summary}, *body[cut:]]


def summary_of(messages: list[dict[str, Any]]) -> str:
    """The engine's summary of a stretch of conversation: calls, outcomes, files edited, last tests."""
    names = _names(messages)
    lines: list[str] = []
    edited: list[str] = []
    tests = ""
    for m in messages:
        role = m.get("role")
        content = str(m.get("content") or "")
        if role == "assistant":
            if content.strip():
                lines.append("- you said: " + " ".join(content.split())[:200])
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                lines.append(f"- you called {fn.get('name')}({_short_args(fn.get('arguments'))})")
        elif role == "tool":
            name, args = names.get(str(m.get("tool_call_id")), ("?", ""))
            first = content.split("\n", 1)[0][:160]
            lines.append(f"  -> {first}")
            if name in ("edit_file", "write_file") and not content.startswith("error"):
                path = args.split("'")[1] if "'" in args else args
                if path and path not in edited:
                    edited.append(path)
            if name == "run_tests":
                tests = first
        elif role == "user":
            lines.append("- feedback: " + " ".join(content.split())[:200])
    text = "\n".join(lines)
    if len(text) > SUMMARY_CHARS:
        text = "...\n" + text[-SUMMARY_CHARS:].split("\n", 1)[-1]
    parts = [
        "The conversation so far was condensed to fit the model's context window. What happened:",
        text,
        "Files edited so far: " + (", ".join(edited) if edited else "none"),
    ]
    if tests:
        parts.append("Last test run: " + tests)
    parts.append("Files may have changed since; read them again before editing. Continue the task.")
    return "\n".join(parts)
