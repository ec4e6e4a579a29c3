"""The agent loops' transcripts as one Markdown page a person can read (`transcript.md` in the run folder).

The loops keep their transcripts as JSON lines (`agent/<role>.jsonl`), the
form a resumed loop is rebuilt from. This renders them in order of the roles'
first event: the task given to the model, each request and reply (with the
reasoning the model showed, folded), each tool call with its result, the
engine's feedback and notices about the endpoint, and how the loop ended; then
an engine's run (an agent CLI as the implementer), from its parsed events.
Everything in it was already scrubbed when the loop wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autocode.providers.agent import AGENT_DIR
from autocode.tasks.store import read_events, write_text_atomic

FILE = "transcript.md"
# Where an engine's run keeps its parsed events and its raw output (providers.engines.runner).
ENGINE_EVENTS = "engine/events.jsonl"
ENGINE_OUTPUT = "engine/output.jsonl"
RESULT_CHARS = 4_000  # of one tool result on the page (the JSON lines keep it whole)


def write_markdown(run_dir: Path) -> tuple[Path, str]:
    """Render every loop of the run into run_dir/transcript.md; (its path, its text)."""
    text = render(run_dir)
    path = run_dir / FILE
    write_text_atomic(path, text, durable=False)
    return path, text


def render(run_dir: Path) -> str:
    folder = run_dir / AGENT_DIR
    files = sorted(folder.glob("*.jsonl"), key=_first_time) if folder.is_dir() else []
    out = [f"# Transcript of task {run_dir.name}", ""]
    engine = run_dir / ENGINE_EVENTS
    if not files and not engine.is_file():
        out.append("No agent loop ran in this task (the fixture provider, or no request was made yet).")
    for path in files:
        out += _loop(path.stem, read_events(path))
    if engine.is_file():
        out += _engine(read_events(engine))
    return "\n".join(out).rstrip() + "\n"


def _engine(events: list[dict[str, Any]]) -> list[str]:
    """An engine's run (an agent CLI as the implementer), from the events its output was parsed into."""
    out = ["## implementer (engine)", "", f"The CLI's own output is in `{ENGINE_OUTPUT}`.", ""]
    for e in events:
        kind = str(e.get("event") or "")
        text = str(e.get("text") or "")
        if kind in ("engine_tool", "engine_edit"):
            out += [f"**{text}**", ""]
        elif kind == "engine_text" and text.strip():
            out += [_quote(text), ""]
        elif kind in ("engine_usage", "engine_result"):
            usage = e.get("usage") or {}
            cost = f", ${e['cost_usd']:.4f}" if isinstance(e.get("cost_usd"), int | float) else ""
            out += [f"*{kind[len('engine_'):]}: {usage.get('total_tokens', 0)} tokens{cost}*", ""]
            if kind == "engine_result" and text:
                out += [_quote(text), ""]
        elif kind in ("engine_login", "engine_error"):
            out += [f"> **{kind[len('engine_'):]}:** {text}", ""]
        elif kind == "engine_egress_refused":
            out += [f"> **network refused:** {e.get('method')} {e.get('destination')} "
                    f"(only {e.get('allowed')} may be reached)", ""]
    return out


def _first_time(path: Path) -> str:
    events = read_events(path)
    return str(events[0].get("time") or "") if events else ""


def _loop(name: str, events: list[dict[str, Any]]) -> list[str]:
    out = [f"## {name}", ""]
    for e in events:
        kind = e.get("event")
        if kind == "start":
            out.append(f"Model `{e.get('model')}`, mode {e.get('mode')}"
                       + (f"; fell back because: {e['fallback_reason']}" if e.get("fallback_reason") else ""))
            for message in e.get("messages") or []:
                out += [f"### {message.get('role')}", "", _quote(str(message.get("content") or "")), ""]
        elif kind == "request":
            context = f"; {e['context']}" if e.get("context") else ""
            out += [f"### turn {e.get('turn')}: request ({e.get('messages')} messages{context})", ""]
        elif kind == "reply":
            out += _reply(e)
        elif kind == "tool":
            mark = "" if e.get("ok") else " (refused)"
            result = str(e.get("result") or "")
            shown = result if len(result) <= RESULT_CHARS else result[:RESULT_CHARS] + f"\n… ({len(result):,} characters in all)"
            out += [f"**{e.get('name')}**{mark} → ", "", _fence(shown), ""]
        elif kind == "feedback":
            out += ["**feedback to the model:**", "", _quote(str(e.get("content") or "")), ""]
        elif kind == "notice":
            out += [f"> **note:** {e.get('text')}", ""]
        elif kind == "reopen":
            out += [f"*resumed after {e.get('after')}*", ""]
        elif kind == "end":
            out += [f"**ended: {e.get('stopped')}** after {e.get('turn')} turn(s)", ""]
            if e.get("text"):
                out += [_quote(str(e["text"])), ""]
    return out


def _reply(e: dict[str, Any]) -> list[str]:
    message = e.get("message") or {}
    usage = e.get("usage") or {}
    finish = e.get("finish_reason")
    head = "reply" + (f" (finish_reason: {finish})" if finish and finish != "stop" else "")
    if usage.get("total_tokens"):
        head += f", {usage['total_tokens']} tokens"
    out = [f"*{head}*", ""]
    if e.get("reasoning"):
        out += ["<details><summary>reasoning</summary>", "", _quote(str(e["reasoning"])), "", "</details>", ""]
    if message.get("content"):
        out += [_quote(str(message["content"])), ""]
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        out += [f"calls **{fn.get('name')}**", "", _fence(_pretty(fn.get("arguments")), "json"), ""]
    return out


def _pretty(raw: Any) -> str:
    try:
        return json.dumps(json.loads(raw) if isinstance(raw, str) else raw, indent=1)
    except ValueError:
        return str(raw)


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines()) or ">"


def _fence(text: str, lang: str = "") -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}{lang}\n{text}\n{ticks}"
