"""The agent loop: ask the model, run the tools it calls, send the results back, until it answers.

The loop ends when the model answers without tool calls (its text is the
result), when a budget runs out (requests, tokens the endpoint reports,
wall time), or when the model repeats a failing call after being told it
fails (`REPEATS`). Every request, reply and tool call is appended, scrubbed,
to a transcript in the run directory; the messages are rebuilt from it, so a
process killed mid-loop continues from the last completed tool call. A call
is marked as started before it runs: one the process died in is answered as
interrupted on resume, never run again blindly. Cancel and the time left
bound every call as well as the request in flight.

Each request sends a view of the history kept within the model's window
(`context`: old tool output trimmed first, then a summary); the budgets are
checked before a request with its estimated size, and a request the
endpoint finds over its window is sent once more, smaller. A reply cut at
the output limit (`finish_reason: length`) is never the answer: the model
is told and continues, and three cuts in a row fail the loop clearly. The
reasoning a model shows is kept in the transcript, never sent back.

Only when the endpoint clearly refuses the tools parameter (and the edit
format allows it) does the loop start again in the edit-block text format
(`editblocks`), and the status says so. A model that answers in words
without calling a tool is asked once to use the tools; a second time the
loop fails saying so, rather than switching formats silently.

Kept whole: the loop, its budgets and the transcript it is rebuilt from are
one state machine; resuming after a kill depends on the three agreeing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocode import scrub
from autocode.errors import AutoCodeError
from autocode.providers.agent import context, editblocks
from autocode.providers.agent.families import RequestShape, family_of
from autocode.providers.agent.http import (
    ChatClient,
    ContextTooLong,
    OutOfTime,
    RequestCancelled,
    ToolsRefused,
)
from autocode.providers.agent.reply import turn_of
from autocode.providers.agent.tools import (
    CallLimits,
    Toolbox,
    ToolError,
    ToolStopped,
    bounded,
    outcome_of_tests,
    read_text,
    refuse_placeholders,
    replace_once,
    schemas,
)
from autocode.providers.base import ProviderError
from autocode.tasks.store import append_event, kill_point, read_events

NO_TOOL_NUDGE = (
    "You answered without calling a tool, and nothing has been changed yet. Use the tools to read the "
    "code, edit it and run the tests; answer in words only once the change is made."
)
CUT_NUDGE = (
    "Your reply was cut off at the output token limit (finish_reason: length){what}. Continue, "
    "and keep each reply short: one tool call at a time, small edits."
)
MAX_CUTS = 3
EMPTY_NUDGE = (
    "Your reply had neither text nor a tool call. Call a tool to continue, "
    "or answer with a short summary of the change when it is done."
)
REPEATS = 3  # the same failing call this many times: the model is told; once more ends the loop
INTERRUPTED = (
    "error: this call was interrupted before it finished (the engine stopped while it ran) and was "
    "not run again. Whatever it did before it stopped is in the copy: check before calling it again, "
    "and narrow it if it may have been too slow"
)


@dataclass(frozen=True)
class Budgets:
    max_turns: int = 40
    token_budget: int = 400_000
    time_budget: float = 1800.0


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def add(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        p, c = _count(raw.get("prompt_tokens")), _count(raw.get("completion_tokens"))
        t = _count(raw.get("total_tokens")) or p + c
        self.prompt_tokens += p
        self.completion_tokens += c
        self.total_tokens += t

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass
class LoopResult:
    text: str
    stopped: str  # answered, max_turns, token_budget, time_budget
    mode: str  # tools or edit_blocks
    turns: int
    tool_calls: int
    usage: Usage
    fallback_reason: str | None = None
    reason: str | None = None  # why the loop stopped, when it was not a budget (repeated_failure)

    @property
    def answered(self) -> bool:
        return self.stopped == "answered"


@dataclass
class _State:
    messages: list[dict[str, Any]] = field(default_factory=list)
    mode: str = "tools"
    fallback_reason: str | None = None
    turns: int = 0
    tool_calls: int = 0
    empties: int = 0
    usage: Usage = field(default_factory=Usage)
    elapsed: float = 0.0
    pending: list[dict[str, Any]] = field(default_factory=list)  # tool calls of the last reply not yet run
    unanswered_reply: str | None = None  # an edit-block reply whose feedback was not written
    end: dict[str, Any] | None = None
    started: bool = False
    nudged: bool = False  # asked once to use the tools after a reply in words
    cuts: int = 0  # replies in a row cut at the output limit
    squeeze: float = 1.0  # < 1 after the endpoint said a request was over its window
    started_calls: set[str] = field(default_factory=set)  # calls begun and never answered: interrupted
    failures: dict[str, int] = field(default_factory=dict)  # failing calls by their key
    stuck: str | None = None  # the repeated failing call that ends the loop


class AgentLoop:
    def __init__(
        self,
        *,
        client: ChatClient,
        model: str,
        role: str,
        toolbox: Toolbox,
        transcript: Path,
        budgets: Budgets,
        clean: Callable[[str], str],
        mode: str = "tools",  # tools, edit_blocks, or auto (tools, falling back to edit blocks)
        cancelled: Callable[[], bool] | None = None,
        say: Callable[[str], None] | None = None,
        note: Callable[[str, dict[str, Any]], None] | None = None,
        status: Callable[[dict[str, Any]], None] | None = None,
        final_anyway: Callable[[str], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        shape: RequestShape | None = None,
        start_notes: tuple[str, ...] = (),
    ) -> None:
        self.client = client
        self.model = model
        self.role = role
        self.toolbox = toolbox
        self.transcript = transcript
        self.budgets = budgets
        self.clean = clean
        self.mode = mode
        self.cancelled = cancelled
        self._say = say
        self._note = note
        self._status = status
        self._final_anyway = final_anyway or (lambda text: False)
        self._clock = clock
        self.shape = shape or RequestShape(family_of("openai", client.base_url, model), stream=False)
        self.sizing = context.Sizing(self.shape.window, self.shape.output_limit() or min(4_096, self.shape.window // 8))
        self._tool_chars: int | None = None
        self._start_notes = start_notes
        self._truncation_said = False
        self.engine_seconds = 0.0  # the loop's own time, the endpoint's excluded (for the bench)

    # -- the loop -------------------------------------------------------------

    def run(self, system: str, user: str, *, edit_blocks_intro: str | None = None) -> LoopResult:
        st = self._load()
        if st.end is not None:
            return self._result(st, str(st.end.get("text") or ""), str(st.end.get("stopped")))
        began = self._clock() - st.elapsed
        if not st.started:
            first = "edit_blocks" if self.mode == "edit_blocks" else "tools"
            self._begin(st, first, system, user, edit_blocks_intro, None)
            if self.shape.family.note and self.shape.context_window is None:
                self._notice(self.shape.family.note)
            for note in self._start_notes:
                self._notice(note)
        while True:
            mark = self._clock()
            st.elapsed = mark - began
            if st.pending:
                self._run_pending(st, began)
                if st.stuck is not None:
                    return self._finish(st, "", "repeated_failure", began, reason=st.stuck)
                if st.pending:  # the time budget ran out before these calls could start
                    return self._finish(st, "", "time_budget", began)
                continue
            if st.unanswered_reply is not None:
                text, st.unanswered_reply = st.unanswered_reply, None
                if self._edit_block_turn(st, text, began):
                    continue
                return self._finish(st, text, "answered", began)
            self._check_cancel()
            body, chars, condensed = self._request_body(st)
            stop = self._budget_stop(st, self.sizing.tokens(chars))
            if stop is not None:
                return self._finish(st, "", stop, began)
            st.turns += 1
            self._append("request", {"turn": st.turns, "messages": len(body["messages"]), "mode": st.mode,
                                     "chars": chars, "context": condensed, "elapsed": round(st.elapsed, 3)})
            self._tell(f"asking the model (turn {st.turns} of {self.budgets.max_turns})")
            self.engine_seconds += self._clock() - mark
            try:
                reply = self.client.chat(
                    body,
                    cancelled=self.cancelled,
                    deadline=time.monotonic() + max(0.0, self.budgets.time_budget - st.elapsed),
                    progress=self._streaming,
                    notice=self._notice,
                )
            except OutOfTime as exc:
                self._notice(exc.message)
                return self._finish(st, "", "time_budget", began)
            except ContextTooLong as exc:
                if st.squeeze < 1.0:
                    raise ProviderError(exc.message) from None
                st.turns -= 1
                if exc.limit:
                    self.sizing.window = min(self.sizing.window, exc.limit)
                # Once, smaller: at most 60% of what was refused, whatever the window was thought to be.
                st.squeeze = min(0.6, 0.6 * self.sizing.tokens(chars) / max(1, self.sizing.limit))
                self._notice(f"the endpoint found the request over its context window ({exc.text}); sending it again condensed")
                continue
            except ToolsRefused as exc:
                if st.mode != "tools" or self.mode != "auto":
                    raise ProviderError(
                        f"{exc.message}; set edit_format = \"auto\" or \"edit_blocks\" to use edit blocks with this model"
                    ) from None
                st.turns -= 1
                self._begin(st, "edit_blocks", system, user, edit_blocks_intro, exc.message)
                continue
            mark = self._clock()
            turn = turn_of(reply, self.client.base_url, tools_offered=st.mode == "tools", call_prefix=f"text-{st.turns}")
            st.usage.add(turn.usage)
            prompt = _count((turn.usage or {}).get("prompt_tokens"))
            if prompt:
                self._check_truncation(chars, prompt)
                self.sizing.calibrate(chars, prompt)
            cut = turn.finish_reason == "length"
            if cut:
                # Arguments cut short are not run; the partial text is never the answer.
                raw_message = {"role": "assistant", "content": turn.content or "(cut off)"}
            else:
                raw_message = turn.message()
            # The history and the transcript hold the scrubbed message; the tools run what was asked.
            message = clean_message(raw_message, self.clean)
            asked = clean_message(raw_message, _same).get("tool_calls") or []
            st.elapsed = self._clock() - began
            entry: dict[str, Any] = {"turn": st.turns, "message": message, "usage": turn.usage,
                                     "finish_reason": turn.finish_reason, "elapsed": round(st.elapsed, 3)}
            if turn.reasoning:
                entry["reasoning"] = self.clean(turn.reasoning)
            if turn.calls_from_text:
                entry["calls_from_text"] = True
            self._append("reply", entry)
            st.messages.append(message)
            self._publish(st)
            if turn.calls_from_text:
                self._notice("the endpoint left the model's tool calls in its text (a server without tool-call parsing); running them as tool calls")
            if cut:
                st.cuts += 1
                if st.cuts >= MAX_CUTS:
                    limit = self.shape.output_limit()
                    raise ProviderError(
                        f"the {self.role} model's replies were cut at the output limit (finish_reason: length) "
                        f"{st.cuts} times in a row; raise max_output_tokens"
                        + (f" (now {limit})" if limit else " (unset: the server's own limit)")
                        + " or use a model that answers in fewer tokens"
                    )
                what = "; its tool calls were not run" if turn.tool_calls else ""
                self._feedback(st, CUT_NUDGE.format(what=what), began)
                self.engine_seconds += self._clock() - mark
                continue
            st.cuts = 0
            if turn.finish_reason == "content_filter":
                raise ProviderError(
                    f"{self.client.base_url} stopped the {self.role}'s reply (finish_reason: content_filter); "
                    "rephrase the brief or use another model"
                )
            calls = message.get("tool_calls") or []
            content = message.get("content") or ""
            if st.mode == "tools" and calls:
                st.empties = 0
                st.pending = list(asked)
                self.engine_seconds += self._clock() - mark
                continue
            if not content.strip():
                st.empties += 1
                if st.empties >= 2:
                    raise ProviderError(
                        f"the {self.role} model answered twice with neither text nor a tool call; "
                        "check that the model supports this API"
                    )
                self._feedback(st, EMPTY_NUDGE, began)
                self.engine_seconds += self._clock() - mark
                continue
            st.empties = 0
            if st.mode == "edit_blocks" and self._edit_block_turn(st, str(raw_message.get("content") or ""), began):
                self.engine_seconds += self._clock() - mark
                continue
            self.engine_seconds += self._clock() - mark
            if st.mode == "tools" and self.mode == "auto" and st.tool_calls == 0 and not self._final_anyway(content):
                # No tool was ever called: ask once; a second time is a model or server that ignores tools.
                if not st.nudged:
                    st.nudged = True
                    self._feedback(st, NO_TOOL_NUDGE, began)
                    continue
                raise ProviderError(
                    f"the {self.role} model answered in words twice without calling any tool (a model or server "
                    'without tool support?); use a model with tool calls, or set edit_format = "edit_blocks" '
                    "to have it write edit blocks instead"
                )
            return self._finish(st, content, "answered", began)

    # -- steps ------------------------------------------------------------------

    def _begin(self, st: _State, mode: str, system: str, user: str, intro: str | None, reason: str | None) -> None:
        if mode == "edit_blocks":
            system = system + "\n\n" + editblocks.INSTRUCTIONS
            if intro:
                user = user + "\n\n" + intro
        messages = [
            {"role": "system", "content": self.clean(system)},
            {"role": "user", "content": self.clean(user)},
        ]
        st.messages = messages
        st.mode = mode
        st.pending = []
        st.started = True
        if reason is not None:
            st.fallback_reason = self.clean(reason)
            self._tell("no tool calls from this endpoint: using edit blocks")
            if self._note:
                self._note("agent_fallback", {"role": self.role, "mode": mode, "reason": st.fallback_reason})
        self._append(
            "start",
            {
                "role": self.role,
                "mode": mode,
                "model": self.model,
                "tools": list(self.toolbox.allowed) if mode == "tools" else [],
                "messages": messages,
                "fallback_reason": st.fallback_reason,
                "elapsed": round(st.elapsed, 3),
            },
        )
        self._publish(st)

    def _request_body(self, st: _State) -> tuple[dict[str, Any], int, str | None]:
        """(the body, its estimated characters, how the history was condensed for it or None)."""
        tools = schemas(self.toolbox.allowed) if st.mode == "tools" else None
        extra = 0
        if tools:
            if self._tool_chars is None:
                self._tool_chars = len(json.dumps(tools))
            extra = self._tool_chars
        messages, condensed = context.view(st.messages, self.sizing, squeeze=st.squeeze, extra_chars=extra)
        return self.shape.body(self.model, messages, tools=tools), context.size(messages) + extra, condensed

    def _run_pending(self, st: _State, began: float) -> None:
        while st.pending:
            self._check_cancel()
            mark = self._clock()
            if mark - began >= self.budgets.time_budget:
                return
            call = st.pending[0]
            call_id = str(call.get("id") or f"call-{st.turns}-{st.tool_calls}")
            fn_raw = call.get("function")
            fn: dict[str, Any] = fn_raw if isinstance(fn_raw, dict) else {}
            name = str(fn.get("name") or "")
            raw_args = fn.get("arguments")
            ok = True
            stopped: str | None = None
            args: dict[str, Any] = {}
            key = _call_key(name, raw_args)
            if call_id in st.started_calls:
                ok, stopped, result = False, "interrupted", INTERRUPTED
            else:
                self._append("tool_start", {"turn": st.turns, "id": call_id, "name": name})
                kill_point("agent_tool_running")
                try:
                    args = _arguments(raw_args)
                    self._announce_before(name, args)
                    result = self.toolbox.call(name, args, self._limits(st, began))
                except ToolStopped as exc:
                    ok, stopped = False, exc.reason
                    result = f"error: {exc}"
                except ToolError as exc:
                    ok = False
                    result = f"error: {exc}"
                except RequestCancelled:
                    raise
                except AutoCodeError as exc:
                    ok = False
                    result = f"error: {exc.message}"
                except (OSError, ValueError) as exc:  # a null byte in a path, a file that vanished...
                    ok = False
                    result = f"error: {type(exc).__name__}: {exc}"
            repeats = 0
            if not ok and stopped is None:
                repeats = st.failures[key] = st.failures.get(key, 0) + 1
                if repeats == REPEATS:
                    result += (
                        f"\n\n[This exact call has now failed {REPEATS} times. Do something different "
                        "(read the file again, quote other lines, another approach): the same call once "
                        "more ends your work with an error.]"
                    )
            result = bounded(self.clean(result))
            st.tool_calls += 1
            st.pending.pop(0)
            st.started_calls.discard(call_id)
            st.messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
            st.elapsed = self._clock() - began
            entry: dict[str, Any] = {
                "turn": st.turns,
                "id": call_id,
                "name": name,
                "ok": ok,
                "result": result,
                "seconds": round(self._clock() - mark, 4),
                "elapsed": round(st.elapsed, 3),
            }
            if not ok:
                entry["key"] = key
            if stopped is not None:
                entry["stopped"] = stopped
            self._append("tool", entry)
            self._announce_after(name, args, ok, result, stopped)
            if repeats > REPEATS:
                first = result.removeprefix("error: ").split("\n")[0][:300]
                st.stuck = f"{name} failed {repeats} times with the same arguments ({first})"
            if not st.pending or st.stuck is not None:
                self._publish(st)
            self.engine_seconds += self._clock() - mark
            kill_point("agent_tool")
            if stopped == "cancelled":
                self._check_cancel()
            if st.stuck is not None:
                return

    def _limits(self, st: _State, began: float) -> CallLimits:
        left = self.budgets.time_budget - (self._clock() - began)
        return CallLimits(seconds=max(left, 0.0), cancelled=self.cancelled)

    def _edit_block_turn(self, st: _State, text: str, began: float) -> bool:
        """Apply a reply's blocks and READs; True when there was something to do (the loop goes on)."""
        blocks, reads, problems = editblocks.parse(text)
        if not blocks and not reads and not problems:
            return False
        out: list[str] = list(problems)
        for rel_raw in reads:
            try:
                out.append(self.toolbox.call("read_file", {"path": rel_raw}))
                self._tell(f"reading {rel_raw}")
            except ToolError as exc:
                out.append(f"READ {rel_raw}: error: {exc}")
        applied = 0
        for block in blocks:
            try:
                rel, target = self.toolbox.resolve(block.path, for_write=True)
                if block.search.strip() == "":
                    if target.is_file() and read_text(target).strip():
                        raise ToolError(f"{rel} exists and is not empty; quote the lines to replace in SEARCH")
                    refuse_placeholders(rel, "", block.replace, "the block")
                    content = block.replace
                else:
                    if not target.is_file():
                        raise ToolError(f"{rel} does not exist; leave SEARCH empty to create it")
                    current = read_text(target)
                    content = replace_once(rel, current, block.search, block.replace)
                assert self.toolbox.edits is not None
                self.toolbox.edits.write(rel, target, content)
                applied += 1
                out.append(f"applied the block for {rel}")
                self._tell(f"editing {rel}")
            except ToolError as exc:
                out.append(f"the block for {block.path} was not applied: {exc}")
                self._tell(f"editing {block.path}: not applied")
        st.tool_calls += len(blocks) + len(reads)
        if applied and self.toolbox._run_tests is not None:
            self._tell("running tests")
            try:
                result = self.toolbox.tests(self._limits(st, began))
            except ToolStopped as exc:  # only a cancel stops this run early
                raise RequestCancelled(f"the task was cancelled during the {self.role}'s loop ({exc})") from None
            outcome = outcome_of_tests(result)
            self._tell(f"running tests: {outcome}")
            out.append(_tests_text(result))
        self._feedback(st, "\n\n".join(out), began)
        return True

    def _feedback(self, st: _State, text: str, began: float) -> None:
        content = bounded(self.clean(text))
        st.messages.append({"role": "user", "content": content})
        st.elapsed = self._clock() - began
        self._append("feedback", {"turn": st.turns, "content": content, "elapsed": round(st.elapsed, 3)})

    def _finish(self, st: _State, text: str, stopped: str, began: float, reason: str | None = None) -> LoopResult:
        st.elapsed = self._clock() - began
        clean = self.clean(text)
        end: dict[str, Any] = {"turn": st.turns, "stopped": stopped, "text": clean, "usage": st.usage.to_dict(), "elapsed": round(st.elapsed, 3)}
        if reason is not None:
            end["reason"] = self.clean(reason)
        self._append("end", end)
        st.end = {"stopped": stopped, "text": clean, "reason": end.get("reason")}
        self._publish(st)
        if stopped == "repeated_failure":
            self._tell("stopped: the model repeated a failing call")
        elif stopped != "answered":
            self._tell(f"stopped: {stopped.replace('_', ' ')} reached")
        return self._result(st, clean, stopped)

    def _result(self, st: _State, text: str, stopped: str) -> LoopResult:
        reason = (st.end or {}).get("reason")
        return LoopResult(
            text, stopped, st.mode, st.turns, st.tool_calls, st.usage, st.fallback_reason,
            str(reason) if reason else None,
        )

    def _budget_stop(self, st: _State, next_prompt: int = 0) -> str | None:
        """The budget the next request (of about `next_prompt` tokens) would overrun, or None."""
        if st.turns >= self.budgets.max_turns:
            return "max_turns"
        if st.usage.total_tokens + next_prompt > self.budgets.token_budget:
            return "token_budget"
        if st.elapsed >= self.budgets.time_budget:
            return "time_budget"
        return None

    def _check_cancel(self) -> None:
        if self.cancelled is not None and self.cancelled():
            raise RequestCancelled(f"the task was cancelled during the {self.role}'s loop")

    # -- transcript ---------------------------------------------------------------

    def _append(self, kind: str, data: dict[str, Any]) -> None:
        append_event(self.transcript, kind, data)

    def _load(self) -> _State:
        st = _State(mode="edit_blocks" if self.mode == "edit_blocks" else "tools")
        answered: set[str] = set()
        for entry in read_events(self.transcript):
            kind = entry.get("event")
            st.elapsed = float(entry.get("elapsed") or st.elapsed)
            if kind == "start":
                st.messages = list(entry.get("messages") or [])
                st.mode = str(entry.get("mode") or "tools")
                st.fallback_reason = entry.get("fallback_reason")
                st.pending, st.unanswered_reply, st.started = [], None, True
            elif kind == "request":
                st.turns = int(entry.get("turn") or st.turns)
            elif kind == "reply":
                message = entry.get("message") or {}
                st.usage.add(entry.get("usage"))
                st.messages.append(message)
                calls = message.get("tool_calls") or []
                st.pending = list(calls) if st.mode == "tools" else []
                content = message.get("content") or ""
                st.unanswered_reply = content if st.mode == "edit_blocks" and content.strip() else None
            elif kind == "tool_start":
                st.started_calls.add(str(entry.get("id")))
            elif kind == "tool":
                answered.add(str(entry.get("id")))
                st.started_calls.discard(str(entry.get("id")))
                if entry.get("key") and not entry.get("stopped"):
                    st.failures[str(entry["key"])] = st.failures.get(str(entry["key"]), 0) + 1
                st.tool_calls += 1
                st.messages.append({"role": "tool", "tool_call_id": entry.get("id"), "content": entry.get("result", "")})
                st.pending = [c for c in st.pending if str(c.get("id")) != str(entry.get("id"))]
            elif kind == "feedback":
                st.messages.append({"role": "user", "content": entry.get("content", "")})
                st.unanswered_reply = None
            elif kind == "end":
                st.end = entry
            elif kind == "reopen":  # resumed under a raised budget: the loop goes on
                st.end = None
        if st.started and self._note and st.end is None:
            self._note("agent_resumed", {"role": self.role, "turns": st.turns, "tool_calls": st.tool_calls})
        return st

    # -- reporting -----------------------------------------------------------------

    def _publish(self, st: _State) -> None:
        if self._status is None:
            return
        self._status(
            {
                "role": self.role,
                "mode": st.mode,
                "fallback_reason": st.fallback_reason,
                "turns": st.turns,
                "tool_calls": st.tool_calls,
                "usage": st.usage.to_dict(),
                "seconds": round(st.elapsed, 3),
                "budgets": {
                    "max_turns": self.budgets.max_turns,
                    "token_budget": self.budgets.token_budget,
                    "time_budget": self.budgets.time_budget,
                },
                "stopped": (st.end or {}).get("stopped"),
                "transcript": self.transcript.name,
                "summary": (st.end or {}).get("text") if (st.end or {}).get("stopped") == "answered" else None,
            }
        )

    def _tell(self, message: str) -> None:
        if self._say is not None:
            self._say(message)

    def _notice(self, text: str) -> None:
        """Something about the endpoint the person should know: in the transcript, the events and the progress."""
        clean = self.clean(text)
        self._append("notice", {"text": clean})
        self._tell(clean)
        if self._note is not None:
            self._note("agent_notice", {"role": self.role, "text": clean})

    def _check_truncation(self, chars: int, prompt: int) -> None:
        """Ollama cuts a prompt longer than its window without a word; its token count gives it away."""
        if self._truncation_said or not self.shape.family.name.startswith("ollama") or prompt * 4 >= chars * 0.6:
            return
        self._truncation_said = True
        self._notice(
            f"the endpoint counted {prompt:,} prompt tokens for about {chars // 4:,}: Ollama likely cut the "
            "conversation to its context window; start it with a larger OLLAMA_CONTEXT_LENGTH and set context_window to match"
        )

    def _streaming(self, chars: int, seconds: float) -> None:
        self._tell(f"the model is answering ({chars:,} characters in {seconds:.0f} s)")

    def _announce_before(self, name: str, args: dict[str, Any]) -> None:
        if name == "run_tests":
            self._tell("running tests")

    def _announce_after(self, name: str, args: dict[str, Any], ok: bool, result: str, stopped: str | None = None) -> None:
        path = args.get("path") if isinstance(args.get("path"), str) else None
        what = {
            "read_file": f"reading {path}",
            "list_files": f"listing {path}" if path else "listing files",
            "search": f"searching {str(args.get('pattern'))[:60]!r}",
            "edit_file": f"editing {path}",
            "write_file": f"writing {path}",
            "recall_memories": "recalling memories",
            "save_memory": "saving a memory",
        }.get(name, f"calling {name[:40]}")
        if name == "run_tests" and ok:
            what = "running tests: " + _outcome_from_text(result)
        elif stopped is not None:
            what = ("running tests" if name == "run_tests" else what) + ": " + stopped.replace("_", " ")
        elif not ok:
            what += ": not applied" if name in ("edit_file", "write_file") else ": refused"
        self._tell(what)
        if self._note is not None:
            self._note("agent_tool", {"role": self.role, "tool": name, "path": path, "ok": ok, "report": what})


def _tests_text(result: dict[str, Any]) -> str:
    tail = str(result.get("output_tail") or "")[-6000:]
    return f"tests: exit code {result.get('exit_code')} ({result.get('status')})\n{tail}"


def _outcome_from_text(result: str) -> str:
    first, _, rest = result.partition("\n")
    code = first.split(" ")[2] if first.startswith("exit code ") else "?"
    status = "timed_out" if "(timed_out" in first else "finished"
    return outcome_of_tests({"exit_code": int(code) if code.lstrip("-").isdigit() else code, "status": status, "output_tail": rest})


def _call_key(name: str, raw: Any) -> str:
    """Which calls count as the same: the tool and its arguments, spacing and key order aside."""
    try:
        canonical = json.dumps(json.loads(raw) if isinstance(raw, str) else raw, sort_keys=True)
    except ValueError:
        canonical = str(raw)
    return hashlib.blake2b(f"{name}\0{canonical}".encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


def _arguments(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise ToolError("the arguments must be a JSON object")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ToolError(f"the arguments are not valid JSON ({exc}); send a JSON object") from None
    if not isinstance(data, dict):
        raise ToolError("the arguments must be a JSON object")
    return data


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


def make_clean(copy: Path | None, workspace: Path | None) -> Callable[[str], str]:
    """Paths of the copy made relative, then credentials redacted (scrub module).

    Machine and temporary paths stay: they are code the model may have to quote
    exactly (`CACHE_DIR = "/tmp/cache"`), not secrets.
    """
    prefixes: list[str] = []
    for base in (copy, workspace):
        if base is not None:
            prefixes += [str(base), os.path.realpath(base)]
    ordered = sorted(set(prefixes), key=len, reverse=True)

    def clean(text: str) -> str:
        if not text:
            return text
        for prefix in ordered:
            if prefix in text:
                text = text.replace(prefix + "/", "").replace(prefix, ".")
        return scrub.redact(text, paths=False)

    return clean


def clean_message(message: dict[str, Any], clean: Callable[[str], str]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": clean(message.get("content") or "") or None}
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        kept = []
        for i, call in enumerate(calls):
            if not isinstance(call, dict):
                continue
            fn_raw = call.get("function")
            fn: dict[str, Any] = fn_raw if isinstance(fn_raw, dict) else {}
            args = fn.get("arguments")
            kept.append(
                {
                    "id": str(call.get("id") or f"call-{i}"),
                    "type": "function",
                    "function": {
                        "name": str(fn.get("name") or ""),
                        "arguments": clean(args) if isinstance(args, str) else json.dumps(args if args is not None else {}),
                    },
                }
            )
        if kept:
            out["tool_calls"] = kept
    return out


def _same(text: str) -> str:
    return text
