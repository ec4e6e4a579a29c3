"""From a task's ProviderContext to an agent loop, and back to an Implementation."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from autocode.errors import AutoCodeError
from autocode.memory import MemoryContext
from autocode.memory.pool import lease_for
from autocode.providers.agent import AGENT_DIR, read_status, status_path
from autocode.providers.agent.families import Family, RequestShape, served_window
from autocode.providers.agent.http import ChatClient, ToolsRefused
from autocode.providers.agent.loop import AgentLoop, Budgets, LoopResult, Usage, make_clean
from autocode.providers.agent.tools import ALL_TOOLS, READ_ONLY, Edits, Toolbox
from autocode.providers.agent.transcript import write_markdown
from autocode.providers.base import Implementation, ProviderContext, ProviderError
from autocode.providers.excerpts import file_excerpts, strip_fence
from autocode.tasks.store import append_event, read_events, write_json_atomic, write_text_atomic

IMPLEMENTER_SYSTEM = """\
You are the implementer of a coding assistant. You work in a copy of a git repository through tools;
the person's own files are never touched until they approve your change.
Read what you need (read_file, list_files, search), make the change with edit_file (exact text,
matched once) or write_file, and run the project's tests with run_tests until they pass.
Only paths relative to the repository root work. Keep the change as small as the task allows and
follow the project's conventions. When the change is done and the tests pass, answer without
calling a tool: a short summary of what you changed and why. That answer ends your work."""

READER_NOTE = (
    "Before answering you may read the repository with the tools read_file, list_files and search. "
    "When you know enough, answer with the JSON object only (no tool call)."
)


def _status_writer(run_dir: Path) -> Any:
    # Read once: this writer is the only one while its loop runs.
    roles: dict[str, Any] = dict((read_status(run_dir) or {}).get("roles") or {})

    def write(entry: dict[str, Any]) -> None:
        roles[str(entry["role"])] = entry
        total = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        for item in roles.values():
            for key in total:
                total[key] += int((item.get("usage") or {}).get(key) or 0)
        fallback = [r for r, item in roles.items() if item.get("mode") == "edit_blocks"]
        write_json_atomic(
            status_path(run_dir),
            {"roles": roles, "usage": total, "edit_blocks_fallback": fallback},
            durable=False,
        )

    return write


def record_request(run_dir: Path, role: str, usage: Any) -> None:
    """Count one plain (JSON answer) request of a role and the usage the endpoint reported for it."""
    entry = dict(((read_status(run_dir) or {}).get("roles") or {}).get(role) or {})
    if entry.get("mode") not in (None, "json"):
        entry = {}
    total = Usage(**{k: int(v) for k, v in (entry.get("usage") or {}).items() if k in ("prompt_tokens", "completion_tokens", "total_tokens")})
    total.add(usage)
    (run_dir / AGENT_DIR).mkdir(exist_ok=True)
    _status_writer(run_dir)(
        {"role": role, "mode": "json", "turns": int(entry.get("turns") or 0) + 1, "tool_calls": 0, "usage": total.to_dict()}
    )


_SERVED: dict[tuple[str, str, str], int | None] = {}  # (base_url, model, family) -> the window a server reported


def _served(client: ChatClient, family: Family, model: str) -> int | None:
    """The context window the server reports (asked once per process and endpoint)."""
    key = (client.base_url, model, family.name)
    if key not in _SERVED:
        _SERVED[key] = served_window(client.look, family, model)
    return _SERVED[key]


def reopen_loops(run_dir: Path) -> list[str]:
    """Let the loops a budget stopped go on (a `reopen` event after their `end`); the names reopened."""
    folder = run_dir / AGENT_DIR
    reopened = []
    for transcript in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        events = read_events(transcript)
        if events and events[-1].get("event") == "end" and events[-1].get("stopped") != "answered":
            append_event(transcript, "reopen", {"after": events[-1].get("stopped")})
            reopened.append(transcript.stem)
    return reopened


def _loop(
    client: ChatClient,
    model: str,
    ctx: ProviderContext,
    role: str,
    name: str,
    tools: tuple[str, ...],
    budgets: Budgets,
    mode: str,
    edits: Edits | None,
    shape: RequestShape | None = None,
) -> AgentLoop:
    if ctx.copy is None or ctx.run_dir is None:
        raise ProviderError(f"the {role} needs the prep copy and the run directory to work in")
    folder = ctx.run_dir / AGENT_DIR
    folder.mkdir(exist_ok=True)
    toolbox = Toolbox(
        ctx.copy,
        edits,
        allowed=tools,
        run_tests=ctx.run_tests,
        recall=_recaller(ctx),
        save_memory=_saver(ctx),
    )
    say = ctx.say
    notes: tuple[str, ...] = ()
    if shape is not None and shape.context_window is None:
        served = _served(client, shape.family, model)
        if served:
            shape = dataclasses.replace(shape, context_window=served)
            notes = (f"the server serves {model} with a context window of {served:,} tokens; requests are kept within it",)

    return AgentLoop(
        start_notes=notes,
        final_anyway=lambda text: _legacy_diff(text) is not None,
        client=client,
        model=model,
        role=role,
        toolbox=toolbox,
        transcript=folder / f"{name}.jsonl",
        budgets=budgets,
        clean=make_clean(ctx.copy, ctx.workspace),
        mode=mode,
        cancelled=ctx.cancelled,
        say=say,
        note=ctx.note,
        status=_status_writer(ctx.run_dir),
        shape=shape,
    )


def _saver(ctx: ProviderContext) -> Any:
    save = ctx.save_memory
    if save is None:
        return None

    def saver(text: str) -> dict[str, Any]:
        return save(text, {"content": text})

    return saver


def _recaller(ctx: ProviderContext) -> Any:
    def recall(query: str) -> str:
        with lease_for(ctx.workspace) as service:
            found = service.recall(MemoryContext(agent=ctx.agent, repository=ctx.workspace, run_id=ctx.task_id), query)
            return str(found.render())

    return recall


def implement(
    client: ChatClient, model: str, ctx: ProviderContext, user_text: str, budgets: Budgets, edit_format: str,
    *, shape: RequestShape | None = None,
) -> Implementation:
    """Run the implementer's loop; the change is already in the copy when this returns.

    Whatever stops the loop early (a budget, an endpoint error), what it changed so far is
    kept in evidence/partial.diff; the transcript lets `task resume` continue from there."""
    if ctx.copy is None or ctx.run_dir is None:
        raise ProviderError("the implementer needs the prep copy and the run directory to work in")
    (ctx.run_dir / AGENT_DIR).mkdir(exist_ok=True)
    edits = Edits.open(ctx.copy, ctx.run_dir / AGENT_DIR / "originals.json")
    tools = ALL_TOOLS if ctx.run_tests is not None else tuple(t for t in ALL_TOOLS if t != "run_tests")
    loop = _loop(client, model, ctx, "implementer", "implementer", tools, budgets, edit_format, edits, shape)
    partial = ctx.run_dir / "evidence" / "partial.diff"
    try:
        result = loop.run(IMPLEMENTER_SYSTEM, user_text, edit_blocks_intro=_intro(ctx))
    except ProviderError as exc:
        if exc.kind != "cancelled":
            write_text_atomic(partial, edits.diff())
        raise
    finally:
        write_markdown(ctx.run_dir)
    diff = edits.diff()
    if not result.answered:
        write_text_atomic(partial, diff)
        files = edits.files()
        kept = (
            f"What it changed so far ({len(files)} file(s){': ' + ', '.join(files[:5]) if files else ''}) "
            "is kept in evidence/partial.diff and in the copy"
        )
        if result.stopped == "repeated_failure":
            raise AutoCodeError(
                f"the implementer was stopped: {_why(result, budgets)}. {kept}; start the task again with a "
                "brief that names the file and the change, or use another model",
                kind="agentLoop",
            )
        raise AutoCodeError(
            f"the implementer stopped before finishing: {_why(result, budgets)}. What it changed so far "
            f"({len(files)} file(s){': ' + ', '.join(files[:5]) if files else ''}) is kept in "
            f"evidence/partial.diff and in the copy; raise the budget (setting {result.stopped}) and start again",
            kind="budgetExhausted",
        )
    if not diff.strip():
        legacy = _legacy_diff(result.text)
        if legacy is not None:
            return legacy
    return Implementation(diff=diff, summary=result.text.strip(), applied=True)


def read_then_answer(
    client: ChatClient, model: str, ctx: ProviderContext, role: str, system: str, user_text: str, budgets: Budgets,
    *, shape: RequestShape | None = None,
) -> str | None:
    """Let a role read the copy, then return its final text; None when the endpoint takes no tools."""
    name = role if not ctx.feedback else f"{role}-{len(ctx.feedback)}"
    loop = _loop(client, model, ctx, role, name, READ_ONLY, budgets, "tools", None, shape)
    try:
        result = loop.run(system + "\n\n" + READER_NOTE, user_text)
    except ToolsRefused:
        return None
    except ProviderError as exc:
        if "refused the tools" in exc.message:
            return None
        raise
    finally:
        if ctx.run_dir is not None:
            write_markdown(ctx.run_dir)
    if result.stopped == "repeated_failure":
        raise AutoCodeError(f"the {role} was stopped: {_why(result, budgets)}; start the task again or use another model", kind="agentLoop")
    if not result.answered:
        raise ProviderError(f"the {role} did not answer: {_why(result, budgets)}")
    return result.text


def _why(result: LoopResult, budgets: Budgets) -> str:
    return {
        "max_turns": f"it made {result.turns} requests (max_turns = {budgets.max_turns})",
        "token_budget": f"it used {result.usage.total_tokens} tokens (token_budget = {budgets.token_budget})",
        "time_budget": f"it ran out of time (time_budget = {budgets.time_budget:g} s)",
        "repeated_failure": f"it repeated a failing call after being told it fails: {result.reason}",
    }.get(result.stopped, result.stopped)


def _intro(ctx: ProviderContext) -> str:
    """For the edit-block format: the cited files, since there are no tools to read them."""
    text = file_excerpts(ctx, [c for c in ctx.citations if "/" in c or "." in c], limit=30000)
    return "Files:\n" + text if text else ""


def _legacy_diff(text: str) -> Implementation | None:
    """A model that answered the old way (one JSON object with a unified diff) instead of editing."""
    try:
        data = json.loads(strip_fence(text))
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("diff"), str) and data["diff"].strip():
        return Implementation(diff=data["diff"], summary=str(data.get("summary") or ""))
    return None
