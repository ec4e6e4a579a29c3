"""One engine run as the implementer: the CLI in the sandboxed prep copy, non-interactively, and
what came of it.

Before: the program found and its version checked (cached by the program's path, size and
time), the key read from the variable the person named, the copy's files captured. During: the
CLI's machine output parsed line by line into progress (tool calls, edits), usage and cost, and
written (the key taken out) to `engine/output.jsonl` and `engine/events.jsonl` in the run
folder; stdin is closed, and no output for `engine_idle_timeout` seconds stops it, as a cancel
does (the whole process group). In the sandbox it reaches only its endpoint (engine_base_url, or
its CLI's default) through the egress proxy; each refused attempt is an `engine_egress_refused`
event. After: the change as a diff against what the copy held, each
file's first content kept for the merge base (`agent/originals.json`, as AutoCode's own loop
keeps it), and the implementer's status (`agent/status.json`) with the engine's usage and cost.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from autocode import diffnames, sandbox, scrub
from autocode.errors import AutoCodeError, UsageError
from autocode.providers.base import (
    Implementation,
    Plan,
    ProviderContext,
    RequirementsReport,
    Review,
)
from autocode.providers.engines import copy_state
from autocode.providers.engines.base import (
    Adapter,
    EngineError,
    Event,
    Job,
)
from autocode.providers.engines.catalog import EngineSettings, load_adapter
from autocode.providers.engines.instructions import instructions
from autocode.providers.engines.versions import cached_version
from autocode.remedy import Advice, Remedy, RemedyKind
from autocode.sandbox import egress
from autocode.tasks.store import append_event, read_json, write_json_atomic

ENGINE_DIR = "engine"
TAIL_LINES = 12


class EngineProvider:
    """The implementer played by an engine; every other role stays with the built-in provider."""

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        self.name = settings.name
        self.model = settings.model
        self.adapter = load_adapter(settings.adapter)

    def requirements(self, ctx: ProviderContext) -> RequirementsReport:
        raise UsageError(f"the {self.name} engine plays the implementer only")

    def plan(self, ctx: ProviderContext, requirements: RequirementsReport) -> Plan:
        raise UsageError(f"the {self.name} engine plays the implementer only")

    def investigate(self, ctx: ProviderContext) -> list[str]:
        raise UsageError(f"the {self.name} engine plays the implementer only")

    def review(self, ctx: ProviderContext, diff: str, test_exit_code: int | None) -> Review:
        raise UsageError(f"the {self.name} engine plays the implementer only")

    def implement(self, ctx: ProviderContext, plan: Plan) -> Implementation:
        if ctx.copy is None or ctx.run_dir is None:
            raise UsageError(f"the {self.name} engine works in a prep copy; this task has none")
        return _Run(self, ctx, plan).run()


class _Run:
    def __init__(self, provider: EngineProvider, ctx: ProviderContext, plan: Plan) -> None:
        self.p = provider
        self.a: Adapter = provider.adapter
        self.s = provider.settings
        self.ctx = ctx
        self.plan = plan
        assert ctx.run_dir is not None and ctx.copy is not None
        self.copy: Path = ctx.copy
        self.run_dir: Path = ctx.run_dir
        self.folder = ctx.run_dir / ENGINE_DIR
        self.folder.mkdir(mode=0o700, exist_ok=True)
        self.key: str | None = None
        self.secrets: list[str] = []
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        self.cost: float | None = None
        self.tool_calls = 0
        self.edits: list[str] = []
        self.login: str | None = None
        self.errors: list[str] = []
        self.result: str | None = None
        self.lines = 0
        self.turns = 0  # model requests, as the CLI reports them (its usage lines, or its own count)
        self.tail: list[str] = []
        self.first_output: float | None = None
        self.last_output: float | None = None
        self.version: str | None = None
        self.status_written = 0.0

    # ---------------------------------------------------------------- the run

    def run(self) -> Implementation:
        started = time.monotonic()
        launch = _launch(self.ctx)
        policy = sandbox.Policy.from_dict(launch.get("sandbox"))
        self.version = self._checked_version()
        self.key = self._key()
        store = self.folder / "tree.git"
        scratch = self.folder / "home"
        scratch.mkdir(mode=0o700, exist_ok=True)
        excluded = (*self.a.scratch_patterns, "/.autocode/runs/", "/.autocode/prep/")
        # A run again (a resumed task) compares with the copy as the first run found it.
        first = self.folder / "base-tree"
        if first.is_file():
            before = first.read_text(encoding="utf-8").strip()
        else:
            before = copy_state.capture(self.copy, store, excluded)
            first.write_text(before + "\n", encoding="utf-8")
        workdir = sandbox.seen_at(self.copy, self.ctx.workspace, self.copy, policy=policy)
        endpoint = self._endpoint()
        # In the sandbox a plain-http endpoint is named by the forwarder there (egress.py says why).
        forward = self.s.base_url and policy.enabled and self.a.forwarded_base_url
        base_url = egress.forwarded_url(self.s.base_url) if forward and self.s.base_url else self.s.base_url
        job = Job(
            prompt=instructions(self.ctx, self.plan, (launch.get("values") or {}).get("test_command")),
            workdir=workdir, scratch=scratch, model=self.s.model, base_url=base_url, key=self.key,
            files=tuple(p for p in self.plan.citations if (self.copy / p).is_file()),
            context_window=self.s.context_window,
        )
        self.a.prepare(job)
        # The engine's own variables (its endpoint, its key, its switches) are set on purpose: names
        # such as ANTHROPIC_BASE_URL would otherwise be kept out as a provider's credentials.
        own = self.a.env(job)
        env = {"HOME": str(scratch)}
        self._say(f"{self.p.name} {self.version} is working in the prep copy")
        self._note("engine_started", {"engine": self.p.name, "version": self.version, "model": self.s.model})
        self._write_status(started, None, force=True)
        self.launched = time.monotonic()
        outcome = sandbox.run(
            self.a.argv(self.s.program, job), copy=self.copy, workspace=self.ctx.workspace, cwd=self.copy,
            timeout=self.s.time_budget, idle_timeout=self.s.idle_timeout,
            cancelled=self.ctx.cancelled or (lambda: False), policy=policy, env=env, credentials=own,
            writable=[scratch], on_output=self._line, egress_to=sandbox.Egress(endpoint, self._refused),
        )
        self.ended = time.monotonic()
        stopped = {"finished": "answered", "idle": "idle", "timed_out": "time_budget",
                   "cancelled": "cancelled"}.get(outcome.status, outcome.status)
        self._write_status(started, stopped, force=True)
        self._write_timing(started)
        self._note("engine_ended", {"engine": self.p.name, "status": outcome.status, "exit_code": outcome.exit_code,
                                    "edits": self.edits, "usage": self.usage, "cost_usd": self.cost})
        self._raise_for(outcome)
        after = copy_state.capture(self.copy, store, excluded)
        originals = copy_state.changes(self.copy, store, before, after)
        # Each file's first content, where the implementing step reads the merge base from (as for
        # AutoCode's own loop).
        (self.run_dir / "agent").mkdir(mode=0o700, exist_ok=True)
        write_json_atomic(self.run_dir / "agent" / "originals.json", originals)
        diff = "".join(
            diffnames.file_diff(rel, old, _current(self.copy / rel)) for rel, old in sorted(originals.items())
        )
        return Implementation(diff=diff, summary=self.result or "", applied=True)

    def _raise_for(self, outcome: Any) -> None:
        where = f"its output is in {self.folder / 'output.jsonl'}"
        tail = "\n".join(self.tail[-TAIL_LINES:])
        if outcome.status == "cancelled":
            raise AutoCodeError(f"the {self.p.name} engine was stopped: the task was cancelled", kind="cancelled")
        if outcome.status == "could_not_run":
            raise EngineError(
                f"the {self.p.name} engine's program {self.s.program} could not be started ({outcome.output.strip()}). "
                f"Remedy: {self.a.install}", kind="engineMissing")
        if self.login is not None:
            raise EngineError(f"the {self.p.name} engine could not log in: {self.login}. Remedy: "
                              f"{self.a.login_remedy(self.s.api_key_env)}; {where}", kind="engineLogin")
        if outcome.status == "idle":
            raise EngineError(
                f"the {self.p.name} engine printed nothing for {self.s.idle_timeout:g} s and was stopped (with every "
                f"process it started). It may be waiting for input it cannot get, or its endpoint "
                f"{self.s.base_url or '(its default)'} may not answer. Remedy: check the endpoint, or raise "
                f"engine_idle_timeout in your user config; {where}", kind="engineIdle")
        if outcome.status == "timed_out":
            raise EngineError(
                f"the {self.p.name} engine ran past time_budget ({self.s.time_budget:g} s) and was stopped. "
                f"Remedy: raise time_budget or make the task smaller; {where}", kind="engineIdle")
        if outcome.exit_code != 0 or (self.errors and not self.edits):
            said = "; ".join(self.errors[-3:]) or tail or "no output"
            raise EngineError(Advice(
                f"the {self.p.name} engine ended with exit code {outcome.exit_code}: {said}. Remedy: read {where}, "
                "fix what it names, and resume the task (", Remedy(RemedyKind.RESUME_TASK), ")"), kind="engineCrashed")

    # ---------------------------------------------------------------- output

    def _line(self, line: str) -> None:
        now = time.monotonic()
        if self.first_output is None:
            self.first_output = now
        self.last_output = now
        clean = self._redact(line)
        self.lines += 1
        with open(self.folder / "output.jsonl", "a", encoding="utf-8") as out:
            out.write(clean + "\n")
        if clean.strip():
            self.tail = [*self.tail[-(TAIL_LINES - 1):], clean[:500]]
        try:
            events = self.a.parse(clean)
        except Exception as exc:  # an output shape this adapter does not know is noted, never fatal
            events = [Event("text", clean, data={"unparsed": type(exc).__name__})]
        for event in events:
            self._take(event)
        self._write_status(None, None)

    def _take(self, event: Event) -> None:
        record = {"kind": event.kind, "text": event.text[:2000], "path": event.path,
                  "usage": event.usage or None, "cost_usd": event.cost_usd}
        append_event(self.folder / "events.jsonl", "engine_" + event.kind,
                     {k: v for k, v in record.items() if v is not None})
        if event.kind in ("tool", "edit"):
            self.tool_calls += 1
            self._say(f"{self.p.name}: {event.text[:160]}")
            self._note("engine_tool", {"engine": self.p.name, "kind": event.kind, "text": event.text[:300],
                                       "path": event.path})
            if event.kind == "edit" and event.path and event.path not in self.edits:
                self.edits.append(event.path)
        elif event.kind == "usage":
            self.turns += 1
            for key in self.usage:
                self.usage[key] += int(event.usage.get(key) or 0)
        elif event.kind == "result":
            if event.usage:
                self.usage = {k: int(event.usage.get(k) or 0) for k in self.usage}
            if isinstance(event.data.get("turns"), int):
                self.turns = int(event.data["turns"])
            self.result = event.text or self.result
        elif event.kind == "login":
            self.login = event.text[:300]
        elif event.kind == "error":
            self.errors.append(event.text[:300])
        if event.cost_usd is not None:
            self.cost = event.cost_usd

    def _redact(self, line: str) -> str:
        if self.key:
            line = line.replace(self.key, "[redacted:engine-key]")
        return str(scrub.redact_values(line))

    def _refused(self, attempt: dict[str, Any]) -> None:
        """An attempt to reach anything but the endpoint (from the proxy's thread): in the task's
        events and the engine's transcript."""
        data = {"engine": self.p.name, **attempt}
        append_event(self.folder / "events.jsonl", "engine_egress_refused", data)
        self._note("engine_egress_refused", data)

    # ---------------------------------------------------------------- before

    def _endpoint(self) -> str:
        """The one URL the engine may reach: engine_base_url, else its CLI's own default."""
        url = self.s.base_url or self.a.endpoint
        try:
            egress.Endpoint.from_url(url)
        except ValueError as exc:
            raise EngineError(
                f"{exc}. Remedy: set engine_base_url in your user config to the URL of the {self.p.name} "
                "engine's model endpoint (http:// or https://, with its host)", kind="engineNetwork") from None
        return url

    def _checked_version(self) -> str:
        version, problem = cached_version(self.a, self.s.program)
        if version is None:
            raise EngineError(
                f"`{self.s.program} --version` did not say which {self.p.name} this is ({problem}). "
                f"Remedy: reinstall it ({self.a.install})", kind="engineVersion")
        if not self.a.supported(version):
            majors = ", ".join(f"{m}.x" for m in self.a.majors)
            raise EngineError(
                f"{self.p.name} {version} is a version AutoCode does not know (it reads the output of {majors}); "
                f"its output could be misread. Remedy: install a {majors} release ({self.a.install})",
                kind="engineVersion")
        return version

    def _key(self) -> str | None:
        name = self.s.api_key_env
        if not name:
            return None
        value = os.environ.get(name)
        if not value:
            raise EngineError(
                f"engine_api_key_env names the variable {name}, which is not set in the environment AutoCode "
                f"runs in. Remedy: set {name} (the {self.p.name} key) there, or change engine_api_key_env",
                kind="engineLogin")
        self.secrets.append(value)
        return value

    # ---------------------------------------------------------------- status

    def _write_status(self, started: float | None, stopped: str | None, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.status_written < 0.5:
            return
        self.status_written = now
        if started is not None:
            self.started = started
        # lazy: the status writer of the agent loops keeps the other roles' entries
        from autocode.providers.agent.session import _status_writer

        _status_writer(self.run_dir)({
            "role": "implementer", "mode": "engine", "engine": self.p.name, "engine_version": self.version,
            "turns": self.turns, "tool_calls": self.tool_calls, "usage": dict(self.usage),
            "cost_usd": self.cost, "seconds": round(now - getattr(self, "started", now), 3), "stopped": stopped,
            "transcript": f"{ENGINE_DIR}/output.jsonl", "summary": self.result,
        })

    def _write_timing(self, started: float) -> None:
        first = self.first_output
        last = self.last_output
        write_json_atomic(self.folder / "timing.json", {
            "before_cli": round(self.launched - started, 4),
            "to_first_output": round((first or self.ended) - started, 4),
            "cli_seconds": round(self.ended - self.launched, 4),
            "after_last_output": round(self.ended - (last or self.ended), 4),
        }, durable=False)

    def _say(self, message: str) -> None:
        if self.ctx.say is not None:
            with contextlib.suppress(Exception):
                self.ctx.say(message)

    def _note(self, event: str, data: dict[str, Any]) -> None:
        self.ctx.emit(event, data)


def _current(path: Path) -> str | None:
    return path.read_bytes().decode("utf-8", "surrogateescape") if path.is_file() else None


def _launch(ctx: ProviderContext) -> dict[str, Any]:
    """The task's launch snapshot (its sandbox policy, its test command)."""
    assert ctx.run_dir is not None
    try:
        data = read_json(ctx.run_dir / "launch.json")
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
