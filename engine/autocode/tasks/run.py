"""TaskRun: one coding task as a persisted state machine.

Phases: requirements -> planning -> implementing -> verifying -> completed
(failed and cancelled also end a task). Every public call takes the run's
lock, re-reads `state.json`, changes it, commits it atomically, and keeps
working synchronously until the task needs a person or ends. A process
killed at any point leaves the last committed state; `load()` then
`resume()` continue from it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import secrets
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from autocode import gitsafe
from autocode import workspace as workspace_mod
from autocode.errors import AutoCodeError, UsageError
from autocode.providers import (
    LOOP_SETTINGS,
    Plan,
    ProviderConfig,
    ProviderContext,
    RequirementsReport,
    check_config,
    provider_for,
)
from autocode.tasks import ledger as ledger_mod
from autocode.tasks import store
from autocode.tasks.errors import (
    AlreadyDecided,
    NotAwaitingInput,
    PlanRevisionMismatch,
    TaskNotFound,
)

RUNS_DIR = Path(".autocode") / "runs"
TASK_ID = re.compile(r"^t-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")

WORKING = ("REQUIREMENTS", "PLANNING", "IMPLEMENTING", "VERIFYING", "APPLYING")
PAUSES = (
    "WAITING_FOR_USER",
    "WAITING_FOR_PLAN_APPROVAL",
    "WAITING_FOR_COMPLETION_APPROVAL",
    "WAITING_FOR_CONFLICT_RESOLUTION",
)
ENDS = ("COMPLETED", "FAILED", "CANCELLED")
PHASE_OF = {
    "REQUIREMENTS": "requirements",
    "WAITING_FOR_USER": "requirements",
    "PLANNING": "planning",
    "WAITING_FOR_PLAN_APPROVAL": "planning",
    "IMPLEMENTING": "implementing",
    "VERIFYING": "verifying",
    "WAITING_FOR_COMPLETION_APPROVAL": "verifying",
    "WAITING_FOR_CONFLICT_RESOLUTION": "verifying",
    "APPLYING": "verifying",
    "COMPLETED": "completed",
    "FAILED": "failed",
    "CANCELLED": "cancelled",
}
NEEDS_OF = {
    "WAITING_FOR_USER": "answer_questions",
    "WAITING_FOR_PLAN_APPROVAL": "approve_plan",
    "WAITING_FOR_COMPLETION_APPROVAL": "approve_completion",
    "WAITING_FOR_CONFLICT_RESOLUTION": "resolve_conflicts",
}
OUTPUT_TAIL = 8000
DIFF_IN_SNAPSHOT = 200_000


@dataclass(frozen=True)
class Source:
    """Who gave an answer or approval: channel `cli` or `lsp:<client name>`, and an actor."""

    channel: str
    actor: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"channel": self.channel, "actor": self.actor, "time": store.now_iso()}

    @classmethod
    def coerce(cls, value: Source | Mapping[str, Any] | str | None) -> Source:
        if isinstance(value, Source):
            source = value
        elif isinstance(value, str):
            source = cls(channel=value)
        elif isinstance(value, Mapping):
            source = cls(channel=str(value.get("channel") or ""), actor=value.get("actor"))
        else:
            raise UsageError("a source is required: Source(channel='cli' or 'lsp:<client>', actor=...)")
        if not source.channel or not re.fullmatch(r"cli|machine|lsp:[\w .@+-]{1,80}", source.channel):
            raise UsageError(
                f"source channel {source.channel!r} is not valid; use 'cli' or 'lsp:<client name>'"
            )
        return source


@dataclass
class TaskOptions:
    test_command: str | None = None
    package: str | None = None
    manifest: str | Path | None = None
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    scenario: str | None = None
    agent: str | None = None
    prep: Any = None  # a PrepResult the caller already made and checked (the pilot coordinator)
    on_change: Callable[[dict[str, Any]], None] | None = None
    progress: Callable[[str, str], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def coerce(cls, value: TaskOptions | Mapping[str, Any] | None) -> TaskOptions:
        if value is None:
            return cls()
        if isinstance(value, TaskOptions):
            return value
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise UsageError(f"unknown task option(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**dict(value))


def runs_root(workspace: Path) -> Path:
    return workspace / RUNS_DIR


def _checked_runs_root(root: Path, *, create: bool = False) -> Path:
    """`.autocode/runs`, refused (exit 2, with the remedy) when it or `.autocode` is a link or a file."""
    from autocode.record.location import checked_folder

    return checked_folder(root, RUNS_DIR.name, create=create)


def _workspace_root(workspace: Path | str) -> Path:
    return workspace_mod.root(workspace)  # the one check of a workspace (kind workspaceInvalid)


def _new_task_id() -> str:
    return time.strftime("t-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(3)


class TaskRun:
    """One task. Construct with `start` or `load`; every method is safe from any thread or process."""

    def __init__(
        self,
        workspace: Path,
        task_id: str,
        state: dict[str, Any],
        launch: dict[str, Any],
        *,
        on_change: Callable[[dict[str, Any]], None] | None = None,
        progress: Callable[[str, str], None] | None = None,
    ) -> None:
        self.workspace = workspace
        self.id = task_id
        self.run_dir = runs_root(workspace) / task_id
        self._state = state
        self._launch = launch
        self._on_change = on_change
        self._progress = progress
        self._editor: Any = None

    # ------------------------------------------------------------------ create / open

    @classmethod
    def start(
        cls,
        workspace: Path | str,
        brief: str,
        options: TaskOptions | Mapping[str, Any] | None = None,
    ) -> TaskRun:
        """Create a task and run it until it needs a person or ends."""
        from autocode.tasks.launch import resolve_launch

        opts = TaskOptions.coerce(options)
        root = _workspace_root(workspace)
        if not isinstance(brief, str) or not brief.strip():
            raise UsageError("the brief is empty; say what the task should do (--brief or --brief-file)")
        package = _check_package(root, opts.package)
        manifest = _check_manifest(opts.manifest)
        if opts.test_command is not None and not opts.test_command.strip():
            raise UsageError("--test-command is empty; give the command that runs the tests")
        flags = {
            k: v
            for k, v in {
                "test_command": opts.test_command,
                "provider": opts.provider,
                "model": opts.model,
                "base_url": opts.base_url,
                "api_key_env": opts.api_key_env,
                "agent": opts.agent,
            }.items()
            if v is not None
        }
        launch = resolve_launch(root, flags, package)
        values = launch.values
        config = ProviderConfig.from_dict(
            {
                "provider": values.get("provider") or "fixture",
                "model": values.get("model"),
                "base_url": values.get("base_url"),
                "api_key_env": values.get("api_key_env"),
                # A scenario given as a file is kept absolute so a resume from elsewhere finds it.
                "scenario": str(Path(opts.scenario).resolve()) if opts.scenario and Path(opts.scenario).is_file() else opts.scenario,
                "routes": values.get("routes") or {},
                **{name: values[name] for name in LOOP_SETTINGS if values.get(name) is not None},
            }
        )
        check_config(config)
        if opts.progress:
            opts.progress("requirements", "making the prep copy")
        task_id = _new_task_id()
        agent = str(values.get("agent") or "implementer")
        # The copy waits on the file system most of the time; the memory
        # recall and HEAD are read beside it.
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            recalled = pool.submit(_recall, launch.settings_obj, root, agent, task_id, brief)
            head = pool.submit(gitsafe.head, root)
            prep = opts.prep if opts.prep is not None else _make_copy(root, manifest, opts.progress)
            recall, head_sha = recalled.result(), head.result()
        cites = _citations(root, prep)
        run_dir = _checked_runs_root(root, create=True) / task_id
        _ensure_gitignore(root)
        # A run's state (brief, answers, test output) is its owner's alone: 0700 folders
        # and 0600 files (store.py), whatever the umask.
        run_dir.mkdir(mode=0o700)
        (run_dir / "evidence").mkdir(mode=0o700)
        if opts.progress and recall.get("error"):
            opts.progress("requirements", f"memory recall unavailable: {recall['error']}")
        launch_data = {
            "version": 1,
            "task_id": task_id,
            "workspace": str(root),
            "brief": brief,
            "head": head_sha,
            "options": {
                "test_command": opts.test_command,
                "package": package,
                "manifest": str(manifest) if manifest else None,
                "scenario": opts.scenario,
            },
            "settings": launch.settings,
            "values": values,
            "record": launch.record,
            "project_conventions": launch.conventions,
            "provider": config.to_dict(),
            "prep": _prep_dict(prep),
            "citations": cites,
            "recall": recall,
        }
        store.write_json_atomic(run_dir / "launch.json", launch_data)
        now = store.now_iso()
        state: dict[str, Any] = {
            "version": 1,
            "id": task_id,
            "created": now,
            "updated": now,
            "state": "REQUIREMENTS",
            "revision": 0,
            "plan_revision": 0,
            "ledger": ledger_mod.empty_ledger(),
            "requirements": None,
            "plan": None,
            "feedback": [],
            "approvals": [],
            "paused_states": [],
            "human_pause_states": [],
            "routes": [],
            "implementation": None,
            "tests": None,
            "review": None,
            "apply": None,
            "learning": {"status": "pending"},
            "result": None,
            "error": None,
        }
        run = cls(root, task_id, state, launch_data, on_change=opts.on_change, progress=opts.progress)
        with store.locked(run_dir):
            run._commit("started", {"brief": brief.strip().splitlines()[0][:200]})
            if recall.get("error"):
                run._note("memory_recall_failed", {"error": recall["error"]})
            else:
                run._note("memory_recalled", {"receipt": recall.get("receipt")})
            store.kill_point("started")
            run._advance()
        return run

    @classmethod
    def load(
        cls,
        workspace: Path | str,
        task_id: str,
        *,
        on_change: Callable[[dict[str, Any]], None] | None = None,
        progress: Callable[[str, str], None] | None = None,
    ) -> TaskRun:
        """Open a saved task in its last committed state (nothing runs)."""
        root = _workspace_root(workspace)
        if not isinstance(task_id, str) or not TASK_ID.match(task_id):
            raise TaskNotFound(f"{task_id!r} is not a task id; `autocode task list` shows them")
        run_dir = _checked_runs_root(root) / task_id
        try:
            state = store.read_json(run_dir / "state.json")
            launch = store.read_json(run_dir / "launch.json")
        except FileNotFoundError:
            raise TaskNotFound(
                f"no task {task_id} in {root}; `autocode task list --workspace {root}` shows its tasks"
            ) from None
        except (ValueError, OSError) as exc:
            raise AutoCodeError(
                f"the saved files of task {task_id} cannot be read ({exc}); AutoCode never writes them "
                f"partially, so they were changed by hand: restore them or start a new task",
                kind="taskDamaged",
            ) from None
        run = cls(root, task_id, state, launch, on_change=on_change, progress=progress)
        run._refresh_views_if_stale()
        return run

    # ------------------------------------------------------------------ reading

    def snapshot(self) -> dict[str, Any]:
        """The task as last committed (read from disk, so any instance in any process agrees)."""
        s = self._committed()
        kind = NEEDS_OF.get(s["state"])
        needs: dict[str, Any] = {"kind": kind}
        if kind == "answer_questions":
            needs["questions"] = [
                {k: q[k] for k in ("id", "text", "category", "convention", "default")}
                for q in ledger_mod.pending_questions(s["ledger"])
            ]
        elif kind == "approve_plan":
            needs["plan_revision"] = s["plan_revision"]
            needs["plan"] = s["plan"]
            needs["markdown"] = render_plan(s["plan"], s["plan_revision"])
        elif kind == "approve_completion":
            diff = self._read_text("evidence/changes.diff")
            needs["diff"] = diff[:DIFF_IN_SNAPSHOT]
            needs["files"] = (s["implementation"] or {}).get("files", [])
            needs["tests"] = s["tests"]
            needs["review"] = s["review"]
            needs["head_moved"] = self.head_moved()
            last = s.get("apply") or {}
            needs["apply"] = last if last.get("status") == "not_applied" else None
        elif kind == "resolve_conflicts":
            last = s.get("apply") or {}
            needs["conflicts"] = list(last.get("details") or [])
            needs["files"] = (s["implementation"] or {}).get("files", [])
            needs["head_moved"] = self.head_moved()
            needs["apply"] = last
        return {
            "id": self.id,
            "state": s["state"],
            "phase": PHASE_OF[s["state"]],
            "revision": s["revision"],
            "needs": needs,
            "done": s["state"] in ENDS,
            "result": s["result"],
            "brief": self._launch.get("brief", ""),
            "workspace": str(self.workspace),
            "run_dir": str(self.run_dir),
            "copy": (self._launch.get("prep") or {}).get("copy"),
            "plan_revision": s["plan_revision"],
            "human_pause_states": list(s["human_pause_states"]),
            "answers": [
                {
                    "question_id": a["question_id"],
                    "text": a["text"],
                    "how": ledger_mod.answer_how(a),
                    "kind": a["kind"],
                    "channel": (a.get("source") or {}).get("channel"),
                    "time": (a.get("source") or {}).get("time"),
                }
                for a in s["ledger"]["answers"]
            ],
            "learning": s["learning"],
            "agent": self._agent_status(),
            "error": s["error"],
            "created": s["created"],
            "updated": s["updated"],
        }

    def details(self) -> dict[str, Any]:
        """Everything recorded about the run (for `task show`)."""
        s = self._committed()
        return {
            "snapshot": self.snapshot(),
            "ledger": s["ledger"],
            "requirements": s["requirements"],
            "plan": s["plan"],
            "approvals": s["approvals"],
            "tests": s["tests"],
            "apply": s["apply"],
            "launch": {k: self._launch.get(k) for k in ("head", "options", "values", "record", "recall", "prep")},
            "events": store.read_events(self.run_dir / "events.jsonl"),
        }

    def _committed(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = store.read_json(self.run_dir / "state.json")
        except (FileNotFoundError, ValueError):
            state = self._state
        return state

    # ------------------------------------------------------------------ person's actions

    def answer(
        self,
        question_id: str,
        text: str,
        source: Source | Mapping[str, Any] | str,
        *,
        kind: str | None = None,
        how: str | None = None,
    ) -> dict[str, Any]:
        """Record an answer verbatim, with how it was given; when none is pending, plan.

        `how` is typed, chosen, acceptedDefault or delegated. Without it (and
        without a legacy `kind`), a text equal to the proposed default is an
        accepted default and anything else is typed. Only typed and chosen
        answers are the person's own and may be learned.
        """
        src = Source.coerce(source)
        if how is not None and how not in ledger_mod.ANSWER_HOWS:
            raise UsageError(f"answer how {how!r} is not one of {', '.join(ledger_mod.ANSWER_HOWS)}")
        if kind is not None and kind not in ledger_mod.ANSWER_KINDS:
            raise UsageError(f"answer kind {kind!r} is not one of {', '.join(ledger_mod.ANSWER_KINDS)}")
        if not isinstance(text, str):
            raise UsageError("the answer must be text")
        with self._changing():
            if self._state["state"] != "WAITING_FOR_USER":
                done = self._answered_at(question_id)
                if done is not None:
                    raise AlreadyDecided(
                        f"question {question_id!r} of task {self.id} was already answered at {done}",
                        data={"decidedAt": done, "state": self._state["state"]},
                    )
                raise NotAwaitingInput(self._not_waiting("answers"))
            pending = {q["id"] for q in ledger_mod.pending_questions(self._state["ledger"])}
            if question_id not in pending:
                asked = ledger_mod.find_question(self._state["ledger"], question_id)
                done = self._answered_at(question_id)
                if asked and asked["asked"] and done is not None:
                    raise AlreadyDecided(
                        f"question {question_id!r} of task {self.id} was already answered at {done}",
                        data={"decidedAt": done, "state": self._state["state"]},
                    )
                raise UsageError(
                    f"question {question_id!r} was not asked; pending: {', '.join(sorted(pending)) or 'none'}"
                )
            question = ledger_mod.find_question(self._state["ledger"], question_id) or {}
            text, how, kind = _answer_rule(question, text, how, kind)
            ledger_mod.record_answer(self._state["ledger"], question_id, text, kind, src.to_dict(), how)
            if not ledger_mod.pending_questions(self._state["ledger"]):
                self._mark_pause_resolved("WAITING_FOR_USER", by_person=self._answered_by_person())
                self._state["state"] = "PLANNING"
            self._commit(
                "answered", {"question_id": question_id, "kind": kind, "how": how, "channel": src.channel}
            )
            self._advance()
        return self.snapshot()

    def _answered_at(self, question_id: str) -> str | None:
        for a in self._state["ledger"]["answers"]:
            if a["question_id"] == question_id:
                return str((a.get("source") or {}).get("time") or "an earlier time")
        return None

    def _decided_at(self, kind: str, plan_revision: int | None = None) -> dict[str, Any] | None:
        for approval in reversed(self._state["approvals"]):
            if approval.get("kind") == kind and (plan_revision is None or approval.get("plan_revision") == plan_revision):
                return dict(approval)
        return None

    def approve_plan(self, revision: int, source: Source | Mapping[str, Any] | str) -> dict[str, Any]:
        src = Source.coerce(source)
        with self._changing():
            if self._state["state"] != "WAITING_FOR_PLAN_APPROVAL":
                self._raise_if_decided("plan", revision)
            self._expect_plan(revision)
            self._state["approvals"].append(
                {"kind": "plan", "plan_revision": revision, "source": src.to_dict()}
            )
            self._mark_pause_resolved("WAITING_FOR_PLAN_APPROVAL", by_person=src.channel != "machine")
            self._state["state"] = "IMPLEMENTING"
            self._commit("plan_approved", {"plan_revision": revision, "channel": src.channel})
            store.kill_point("plan_approved")
            self._advance()
        return self.snapshot()

    def reject_plan(
        self, feedback: str, source: Source | Mapping[str, Any] | str, *, revision: int | None = None
    ) -> dict[str, Any]:
        """Send the plan back with feedback; a new plan revision follows."""
        src = Source.coerce(source)
        if not isinstance(feedback, str) or not feedback.strip():
            raise UsageError("say what to change in the plan (--feedback TEXT)")
        with self._changing():
            if self._state["state"] != "WAITING_FOR_PLAN_APPROVAL":
                self._raise_if_decided("plan", revision)
            self._expect_plan(revision if revision is not None else self._state["plan_revision"])
            self._state["approvals"].append(
                {
                    "kind": "plan_rejected",
                    "plan_revision": self._state["plan_revision"],
                    "feedback": feedback,
                    "source": src.to_dict(),
                }
            )
            self._state["feedback"].append(feedback)
            self._state["state"] = "PLANNING"
            self._commit("plan_rejected", {"plan_revision": self._state["plan_revision"]})
            self._advance()
        return self.snapshot()

    def approve_completion(
        self, source: Source | Mapping[str, Any] | str, *, editor: Any = None
    ) -> dict[str, Any]:
        """Apply the verified change to the workspace (three-way merge per file), then learn.

        `editor` (an `apply.Editor`) applies it through the person's editor; without one the
        files are written here. Conflicts make the task wait for `resolve_conflicts`.
        """
        src = Source.coerce(source)
        with self._changing():
            if self._state["state"] != "WAITING_FOR_COMPLETION_APPROVAL":
                self._raise_if_decided("completion")
                raise NotAwaitingInput(self._not_waiting("completion approval"))
            self._state["approvals"].append({"kind": "completion", "source": src.to_dict()})
            self._mark_pause_resolved("WAITING_FOR_COMPLETION_APPROVAL", by_person=src.channel != "machine")
            self._state["state"] = "APPLYING"
            self._commit("completion_approved", {"channel": src.channel})
            store.kill_point("completion_approved")
            self._editor = editor
            try:
                self._advance()
            finally:
                self._editor = None
        return self.snapshot()

    def resolve_conflicts(
        self, choices: Mapping[str, str], source: Source | Mapping[str, Any] | str, *, editor: Any = None
    ) -> dict[str, Any]:
        """The person's choice per conflicted file (mine, theirs or markers); once every conflict
        has one, the whole change is applied and the task completes."""
        from autocode.tasks.apply import CHOICES

        src = Source.coerce(source)
        if not isinstance(choices, Mapping) or not choices:
            raise UsageError("choose for each conflicted file: mine, theirs or markers")
        for path, choice in choices.items():
            if choice not in CHOICES:
                raise UsageError(f"the choice for {path} is {choice!r}; use one of {', '.join(CHOICES)}")
        with self._changing():
            if self._state["state"] != "WAITING_FOR_CONFLICT_RESOLUTION":
                self._raise_if_decided("conflicts_resolved")
                raise NotAwaitingInput(self._not_waiting("a conflict resolution"))
            conflicted = [c["path"] for c in (self._state.get("apply") or {}).get("details") or []]
            unknown = sorted(set(choices) - set(conflicted))
            if unknown:
                raise UsageError(
                    f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not in conflict; "
                    f"the conflicted files are: {', '.join(conflicted)}"
                )
            chosen = dict(self._state.get("apply_choices") or {})
            chosen.update({str(k): str(v) for k, v in choices.items()})
            self._state["apply_choices"] = chosen
            self._state["approvals"].append({"kind": "conflicts_resolved", "choices": dict(choices), "source": src.to_dict()})
            missing = [c for c in conflicted if c not in chosen]
            if not missing:
                self._mark_pause_resolved("WAITING_FOR_CONFLICT_RESOLUTION", by_person=src.channel != "machine")
                self._state["state"] = "APPLYING"
            self._commit("conflicts_chosen", {"choices": dict(choices), "waiting_for": missing, "channel": src.channel})
            if not missing:
                self._editor = editor
                try:
                    self._advance()
                finally:
                    self._editor = None
        return self.snapshot()

    def head_moved(self) -> dict[str, Any] | None:
        """HEAD now and when the task started, when they differ (new commits, another branch)."""
        start = self._launch.get("head")
        try:
            now = gitsafe.head(self.workspace)
        except Exception:
            return None
        if now == start:
            return None
        return {"from": start, "to": now}

    def cancel(self) -> dict[str, Any]:
        """End the task. While another call is working, ask it to stop at its next step."""
        with store.locked(self.run_dir, blocking=False) as got:
            if not got:
                store.write_text_atomic(self.run_dir / "cancel.request", store.now_iso() + "\n")
                store.append_event(self.run_dir / "events.jsonl", "cancel_requested", {})
                return self.snapshot()
            self._reload()
            if self._state["state"] in ENDS:
                raise NotAwaitingInput(f"task {self.id} already ended ({self._state['state'].lower()})")
            self._cancel_now()
        return self.snapshot()

    def resume(self) -> dict[str, Any]:
        """Continue a task whose process stopped while it was working (after a crash or kill)."""
        with self._changing():
            if self._state["state"] in PAUSES:
                return self.snapshot()
            if self._state["state"] in ENDS:
                if self._state["state"] == "COMPLETED" and self._state["learning"]["status"] == "pending":
                    self._learn()
                return self.snapshot()
            store.append_event(self.run_dir / "events.jsonl", "resumed", {"state": self._state["state"]})
            self._advance()
        return self.snapshot()

    # ------------------------------------------------------------------ the machine

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        with store.locked(self.run_dir):
            self._reload()
            yield

    def _reload(self) -> None:
        self._state = store.read_json(self.run_dir / "state.json")

    def _commit(self, event: str, data: dict[str, Any] | None = None) -> None:
        s = self._state
        if s["state"] in PAUSES and s["state"] not in s["paused_states"]:
            s["paused_states"].append(s["state"])
        s["revision"] += 1
        s["updated"] = store.now_iso()
        store.write_json_atomic(self.run_dir / "state.json", s)
        self._write_views()
        store.append_event(
            self.run_dir / "events.jsonl",
            event,
            {"state": s["state"], "revision": s["revision"], **(data or {})},
        )
        if self._on_change is not None:
            try:
                self._on_change(self.snapshot())
            except Exception as exc:  # a face's callback must not break the run
                store.append_event(self.run_dir / "events.jsonl", "on_change_failed", {"error": repr(exc)})

    def _note(self, event: str, data: dict[str, Any]) -> None:
        store.append_event(self.run_dir / "events.jsonl", event, data)

    def _say(self, phase: str, message: str) -> None:
        if self._progress is not None:
            with contextlib.suppress(Exception):
                self._progress(phase, message)

    def _advance(self) -> None:
        while self._state["state"] in WORKING:
            if self._cancel_requested():
                self._cancel_now()
                return
            current = self._state["state"]
            store.kill_point(f"in:{current}")
            try:
                step = {
                    "REQUIREMENTS": self._step_requirements,
                    "PLANNING": self._step_planning,
                    "IMPLEMENTING": self._step_implementing,
                    "VERIFYING": self._step_verifying,
                    "APPLYING": self._step_applying,
                }[current]
                step()
            except AutoCodeError as exc:
                if exc.kind == "cancelled" and self._cancel_requested():
                    self._cancel_now()  # the agent loop stopped for a cancel request
                    return
                self._fail(exc.kind, exc.message)
            except Exception as exc:
                from autocode.errors import fault_error

                # A full or read-only disk is named as such (kind and remedy), anything else is a bug.
                fault = fault_error(exc)
                if fault is not None:
                    self._fail(fault.kind, fault.message)
                else:
                    self._fail("internalError", f"{type(exc).__name__}: {exc}")
        if self._state["state"] in PAUSES and self._cancel_requested():
            # Asked to stop while the last step was finishing: honour it now.
            self._cancel_now()
        if self._state["state"] == "COMPLETED" and self._state["learning"]["status"] == "pending":
            self._learn()

    def _fail(self, kind: str, message: str) -> None:
        self._state["error"] = {"kind": kind, "message": message, "phase": PHASE_OF[self._state["state"]]}
        self._state["result"] = {"status": "failed", "error": self._state["error"], "tests": self._state["tests"]}
        self._state["state"] = "FAILED"
        self._commit("failed", {"kind": kind, "message": message})

    def _cancel_now(self) -> None:
        self._state["state"] = "CANCELLED"
        self._state["result"] = {"status": "cancelled"}
        with contextlib.suppress(FileNotFoundError):
            (self.run_dir / "cancel.request").unlink()
        self._commit("cancelled", {})
        self._release_prep_copy()

    def _cancel_requested(self) -> bool:
        return (self.run_dir / "cancel.request").exists()

    def _context(self) -> ProviderContext:
        launch = self._launch
        prep = launch.get("prep") or {}
        recall = launch.get("recall") or {}
        recalled = {
            section: [str(m["content"]) for m in recall.get(section) or [] if isinstance(m, dict) and m.get("content")]
            for section in ("project", "global")
        }
        return ProviderContext(
            task_id=self.id,
            brief=launch["brief"],
            workspace=self.workspace,
            copy=Path(prep["copy"]) if prep.get("copy") else None,
            citations=list(launch.get("citations") or []),
            inputs=[str(i["path"]) for i in prep.get("inputs") or [] if isinstance(i, dict) and i.get("path")],
            project_conventions=list(launch.get("project_conventions") or []),
            answers=ledger_mod.answers_for_context(self._state["ledger"]),
            recalled=recalled,
            feedback=list(self._state["feedback"]),
            save_memory=self._save_memory,
            note=self._note,
            run_dir=self.run_dir,
            cancelled=self._cancel_requested,
            say=lambda message: self._say(PHASE_OF[self._state["state"]], message),
            run_tests=self._tests_in_copy if self._launch.get("values", {}).get("test_command") else None,
            agent=str(self._launch.get("values", {}).get("agent") or "implementer"),
        )

    def _tests_in_copy(self) -> dict[str, Any]:
        """The project's test command in the copy, for the implementer's run_tests tool."""
        values = self._launch.get("values", {})
        copy = Path(self._launch["prep"]["copy"])
        package = (self._launch.get("options") or {}).get("package")
        timeout = float(values.get("test_timeout") or 600)
        return _run_tests(str(values["test_command"]), copy / package if package else copy, timeout, self._cancel_requested)

    def _agent_status(self) -> dict[str, Any] | None:
        from autocode.providers.agent import read_status

        return read_status(self.run_dir)

    def _save_memory(self, content: str, item: dict[str, Any]) -> dict[str, Any]:
        from autocode.tasks.launch import save_memory

        try:
            result = save_memory(
                self.workspace,
                str(self._launch.get("values", {}).get("agent") or "implementer"),
                self.id,
                content,
                item,
            )
        except AutoCodeError as exc:
            result = {"saved": False, "error": exc.kind, "message": exc.message}
        self._note("memory_saved" if result.get("saved") else "memory_not_saved", {"result": result})
        return result

    def _use_role(self, role: str) -> Any:
        config = ProviderConfig.from_dict(self._launch["provider"])
        provider = provider_for(config, role)
        route = {"role": role, "provider": provider.name, "model": provider.model}
        if route not in self._state["routes"]:
            self._state["routes"].append(route)
        return provider

    def _step_requirements(self) -> None:
        self._say("requirements", "reading the brief and the repository")
        ctx = self._context()
        cites = self._use_role("investigator").investigate(ctx)
        ctx.citations = list(dict.fromkeys([*ctx.citations, *cites]))
        report = self._use_role("requirements").requirements(ctx)
        known = {c["question"] for c in ctx.project_conventions}
        at = store.now_iso()
        led = self._state["ledger"]
        led["questions"] = []
        led["answers"] = []
        reused: list[str] = []
        for question in report.questions:
            if question.convention and question.text in known:
                reused.append(question.id)
                continue
            ledger_mod.issue_question(led, question.to_dict(), asked=True, at=at)
        for decision in report.machine_decisions:
            ledger_mod.issue_question(
                led,
                {"id": decision.question_id, "text": decision.text, "category": decision.category, "convention": decision.convention},
                asked=False,
                at=at,
            )
            ledger_mod.record_answer(
                led, decision.question_id, decision.answer, "machine", {"channel": "machine", "actor": "requirements", "time": at}
            )
        data = report.to_dict()
        data["questions"] = [q.to_dict() for q in report.questions if q.id not in reused]
        data["answered_by_project_data"] = reused
        self._state["requirements"] = data
        self._state["state"] = "WAITING_FOR_USER" if ledger_mod.pending_questions(led) else "PLANNING"
        self._commit("requirements_done", {"questions": len(ledger_mod.pending_questions(led)), "reused": reused})

    def _step_planning(self) -> None:
        self._say("planning", "writing the plan")
        ctx = self._context()
        requirements = RequirementsReport.from_dict(self._state["requirements"])
        plan = self._use_role("planner").plan(ctx, requirements)
        self._state["plan_revision"] += 1
        self._state["plan"] = plan.to_dict()
        self._state["state"] = "WAITING_FOR_PLAN_APPROVAL"
        self._commit("plan_ready", {"plan_revision": self._state["plan_revision"]})

    def _step_implementing(self) -> None:
        self._say("implementing", "changing the prep copy")
        ctx = self._context()
        if ctx.copy is None or not ctx.copy.is_dir():
            raise UsageError(f"the prep copy {ctx.copy} is gone; start the task again")
        diff_path = self.run_dir / "evidence" / "changes.diff"
        if diff_path.exists() and _patch_already_applied(ctx.copy, diff_path):
            diff = diff_path.read_text(encoding="utf-8", errors="surrogateescape")
        else:
            implementation = self._use_role("implementer").implement(ctx, Plan.from_dict(self._state["plan"]))
            diff = implementation.diff
            if not diff.strip():
                raise AutoCodeError("the implementer produced no change", kind="emptyChange")
            store.write_text_atomic(diff_path, diff)
            base = self.run_dir / "evidence" / "base"
            if implementation.applied:  # the agent loop's tools already changed the copy
                _capture_base(ctx.copy, _diff_files(diff), base, before=_agent_originals(self.run_dir))
            else:
                _capture_base(ctx.copy, _diff_files(diff), base)
                _apply_in_copy(ctx.copy, diff_path)
            store.kill_point("patched")
        files = _diff_files(diff)
        store.write_text_atomic(
            self.run_dir / "evidence" / "head.diff",
            diff_against_head(self.workspace, ctx.copy, files, self._launch.get("head")),
        )
        self._state["implementation"] = {"files": files, "bytes": len(diff.encode())}
        self._state["state"] = "VERIFYING"
        self._commit("implemented", {"files": self._state["implementation"]["files"]})

    def _step_verifying(self) -> None:
        values = self._launch.get("values", {})
        command = values.get("test_command")
        if not command:
            raise AutoCodeError(
                "no test command is known for this repository; pass --test-command, or set test_command "
                "in .autocode/config.toml",
                kind="noTestCommand",
            )
        copy = Path(self._launch["prep"]["copy"])
        package = (self._launch.get("options") or {}).get("package")
        cwd = copy / package if package else copy
        timeout = float(values.get("test_timeout") or 600)
        self._say("verifying", f"running {command}")
        tests = _run_tests(str(command), cwd, timeout, self._cancel_requested)
        store.write_text_atomic(self.run_dir / "evidence" / "test-output.txt", tests.pop("output"))
        store.write_json_atomic(self.run_dir / "evidence" / "tests.json", tests)
        self._state["tests"] = tests
        if tests["status"] == "cancelled":
            self._cancel_now()
            return
        if tests["exit_code"] != 0:
            self._state["review"] = None
            raise AutoCodeError(
                f"the tests failed in the copy ({tests['status']}, exit code {tests['exit_code']}); "
                f"see {self.run_dir / 'evidence' / 'test-output.txt'}",
                kind="testsFailed",
            )
        diff = self._read_text("evidence/changes.diff")
        review = self._use_role("reviewer").review(self._context(), diff, tests["exit_code"])
        self._state["review"] = review.to_dict()
        self._state["state"] = "WAITING_FOR_COMPLETION_APPROVAL"
        self._commit("verified", {"exit_code": tests["exit_code"]})

    def _step_applying(self) -> None:
        self._say("completed", "merging the change into the workspace")
        head_moved = self.head_moved()
        if head_moved:
            self._note("head_moved", head_moved)
        # One task at a time changes the person's working tree.
        with store.locked(runs_root(self.workspace), name=".apply.lock"):
            try:
                plans = self._plan_apply()
            except Exception as exc:  # an unsafe path, an unreadable file, an editor gone: nothing written
                self._apply_refused(f"the change cannot be applied: {exc}; nothing was written", head_moved)
                return
            conflicts = [p for p in plans if p.action == "conflict"]
            if conflicts:
                paths = [p.path for p in conflicts]
                self._state["apply"] = {
                    "status": "conflicts",
                    "applied": False,
                    "written": [],
                    "conflicts": paths,
                    "details": [p.conflict_dict() for p in conflicts],
                    "via": None,
                    "head_moved": head_moved,
                    "message": "both you and the task changed " + ", ".join(paths)
                    + "; nothing was written. Choose for each file: keep mine, take theirs, or write "
                    "conflict markers to resolve in the editor.",
                }
                self._state["state"] = "WAITING_FOR_CONFLICT_RESOLUTION"
                self._commit("conflicts", {"conflicts": paths})
                return
            outcome_or_none = self._write_change(plans, head_moved)
            if outcome_or_none is None:
                return
            written, by_editor = outcome_or_none
            via = "editor" if by_editor else "disk"
        store.kill_point("applied")
        chosen = dict(self._state.get("apply_choices") or {})
        outcome = {
            "status": "applied",
            "applied": True,
            "written": written,
            "written_by_editor": by_editor,
            "conflicts": [],
            "via": via,
            "choices": chosen,
            "head_moved": head_moved,
            "message": (f"wrote {', '.join(written)}" if written else "nothing needed writing")
            + (f" ({', '.join(by_editor)} through the editor)" if by_editor else ""),
        }
        self._state["apply"] = outcome
        checkpoint = {
            "task_id": self.id,
            "time": store.now_iso(),
            "head": self._launch.get("head"),
            "tests": self._state["tests"],
            "apply": outcome,
            "plan_revision": self._state["plan_revision"],
            "approvals": self._state["approvals"],
            "human_pause_states": self._state["human_pause_states"],
        }
        store.write_json_atomic(self.run_dir / "checkpoint.json", checkpoint)
        self._state["result"] = {
            "status": "completed",
            "verified": True,
            "tests": self._state["tests"],
            "apply": outcome,
            "files": (self._state["implementation"] or {}).get("files", []),
        }
        self._state["state"] = "COMPLETED"
        self._commit("completed", {"apply": outcome["status"], "written": written, "via": via})

    def _write_change(self, plans: list[Any], head_moved: dict[str, Any] | None) -> tuple[list[str], list[str]] | None:
        """Write the planned files: the ones open in an editor that applies edits go through it
        (unsaved edits and undo included), the others to disk. Returns (written, through the
        editor), or None when the apply was refused (then nothing was written)."""
        from autocode.tasks import apply as apply_mod

        editor = self._editor
        brief = (self._launch.get("brief") or "").strip()
        label = "AutoCode: apply changes for " + brief.splitlines()[0][:80] if brief else "AutoCode: apply changes"
        changing = [p for p in plans if p.action in ("write", "delete")]
        by_editor: list[Any] = []
        try:
            if editor is not None and getattr(editor, "can_apply", True):
                opened = set(editor.open_paths([p.path for p in changing]))
                by_editor = [p for p in changing if p.path in opened and p.action == "write"]
            on_disk = [p for p in changing if p not in by_editor]
            if by_editor:
                ok, why = editor.apply(label, by_editor)
                if ok is None:  # the editor cannot take it (e.g. not UTF-8 text): the disk, if safe
                    self._note("apply_from_disk", {"why": why})
                    on_disk, by_editor = changing, []
                elif not ok:
                    self._apply_refused(
                        f"the editor did not apply the change ({why or 'no reason given'}); nothing was "
                        "recorded as applied. Approve the completion again to retry.", head_moved,
                    )
                    return None
            unsaved = editor.unsaved([p.path for p in on_disk]) if editor is not None and on_disk else []
        except Exception as exc:  # the editor went away or failed: nothing is claimed
            self._apply_refused(
                f"the editor did not take the change (it answered with an error or went away: "
                f"{type(exc).__name__}: {exc}); nothing was recorded as applied. Approve the "
                "completion again to retry.",
                head_moved,
            )
            return None
        if unsaved:
            self._apply_refused(
                f"{', '.join(unsaved)} {'has' if len(unsaved) == 1 else 'have'} unsaved edits in the editor, "
                "which cannot take this change itself; save or revert them, then approve again "
                "(nothing was written)", head_moved,
            )
            return None
        try:
            written = apply_mod.write_plans(self.workspace, on_disk)
        except (ValueError, OSError) as exc:
            self._apply_refused(f"writing the change failed: {exc}", head_moved)
            return None
        return [p.path for p in by_editor] + written, [p.path for p in by_editor]

    def _apply_refused(self, message: str, head_moved: dict[str, Any] | None) -> None:
        """The change was not applied: back to waiting for the completion approval (retry)."""
        self._state["apply"] = {
            "status": "not_applied", "applied": False, "written": [], "conflicts": [], "via": None,
            "head_moved": head_moved, "message": message,
        }
        self._state["apply_choices"] = {}
        self._state["state"] = "WAITING_FOR_COMPLETION_APPROVAL"
        self._commit("apply_failed", {"message": message})

    def _plan_apply(self) -> list[Any]:
        """Each touched file's three versions and what to do with it (the person's choices in)."""
        from autocode.tasks import apply as apply_mod

        copy = Path(self._launch["prep"]["copy"])
        files = list((self._state["implementation"] or {}).get("files", []))
        disk = apply_mod.read_disk(self.workspace)
        editor = self._editor

        def mine(rel: str) -> bytes | None:
            if editor is not None:
                buffer = editor.read(rel)
                if buffer is not None:
                    return bytes(buffer)
            return disk(rel)

        def theirs(rel: str) -> bytes | None:
            target = apply_mod.safe_path(copy, rel)
            return target.read_bytes() if target.is_file() and not target.is_symlink() else None

        base = self._base_reader(copy, theirs)
        plans = apply_mod.plan_change(files, base, mine, theirs)
        renamed = {
            line[len("rename from "):].strip()
            for line in self._read_text("evidence/changes.diff").splitlines()
            if line.startswith("rename from ")
        }
        for plan in plans:
            if plan.action == "conflict" and plan.reason == "deletedByTask" and plan.path in renamed:
                plan.reason = "renamed"  # the task moved a file the person changed
        chosen = self._state.get("apply_choices") or {}
        return [
            apply_mod.resolve_file(p, chosen[p.path]) if p.action == "conflict" and p.path in chosen else p
            for p in plans
        ]

    def _base_reader(self, copy: Path, theirs: Callable[[str], bytes | None]) -> Callable[[str], bytes | None]:
        """The files as the copy captured them (saved before the change); else worked back from the
        task's result and its diff."""
        from autocode.tasks import apply as apply_mod

        saved = self.run_dir / "evidence" / "base"
        try:
            index = store.read_json(saved / "index.json")
        except (FileNotFoundError, ValueError):
            index = None
        parts = apply_mod.split_diff(self._read_text("evidence/changes.diff"))

        def base(rel: str) -> bytes | None:
            if index is not None and rel in index.get("files", {}):
                entry = index["files"][rel]
                return (saved / "files" / entry).read_bytes() if entry else None
            if rel in parts:
                return apply_mod.unapply(theirs(rel), parts[rel])
            return theirs(rel)  # not in the diff: the task did not change it

        return base

    def _learn(self) -> None:
        from autocode.tasks.learning import learn

        try:
            outcome = learn(self.workspace, self._launch, self._state)
        except Exception as exc:  # learning can never make completion fail
            outcome = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        self._record_lessons()
        self._state["learning"] = outcome
        self._release_prep_copy()
        store.kill_point("learned")
        self._commit(
            "learned",
            {
                "learning": outcome.get("status"),
                "conventions": outcome.get("conventions", []),
                "dropped_for_credentials": outcome.get("dropped_for_credentials", []),
                "omitted": outcome.get("omitted", []),
                "errors": outcome.get("errors", []) or ([outcome["error"]] if outcome.get("error") else []),
            },
        )

    def _release_prep_copy(self) -> None:
        """The task has ended: its copy goes (evidence stays), unless `keep_prep_copies` keeps it."""
        from autocode.prep.retention import release_task_copy

        try:
            from autocode.settings import resolve_settings

            keep = int(resolve_settings(self.workspace).value("keep_prep_copies") or 0)
        except Exception:
            keep = 0
        try:
            outcome = release_task_copy(
                self.workspace, (self._launch.get("prep") or {}).get("copy"), self.run_dir / "evidence", keep
            )
        except Exception as exc:  # disk housekeeping never changes how a task ended
            self._note("prep_copy_kept", {"error": f"{type(exc).__name__}: {exc}"})
            return
        self._note("prep_copy_released", outcome)

    def _record_lessons(self) -> None:
        """Offer the reviewer's lessons to memory reflection; a failure is an event, never a failed task."""
        from autocode.providers.base import clean_lessons

        lessons = clean_lessons((self._state.get("review") or {}).get("lessons") or [])
        if not lessons:
            return
        from autocode.tasks.launch import record_lessons

        agent = str(self._launch.get("values", {}).get("agent") or "implementer")
        try:
            ids = record_lessons(self.workspace, agent, self.id, lessons)
        except Exception as exc:  # memory trouble never fails completion
            self._note("lessons_not_recorded", {"count": len(lessons), "error": f"{type(exc).__name__}: {exc}"})
            return
        self._note("lessons_recorded", {"ids": ids})

    # ------------------------------------------------------------------ helpers

    def _expect_plan(self, revision: int) -> None:
        if self._state["state"] != "WAITING_FOR_PLAN_APPROVAL":
            raise NotAwaitingInput(self._not_waiting("plan approval"))
        if revision != self._state["plan_revision"]:
            raise PlanRevisionMismatch(
                f"plan revision {revision} is not the current one ({self._state['plan_revision']}); "
                "review the current plan and approve that revision",
                data={"current": self._state["plan_revision"]},
            )

    def _raise_if_decided(self, kind: str, plan_revision: int | None = None) -> None:
        """A decision already recorded: say when (and where the task is now)."""
        found = self._decided_at(kind, plan_revision)
        if found is None:
            return
        at = (found.get("source") or {}).get("time") or "an earlier time"
        channel = (found.get("source") or {}).get("channel") or "someone"
        what = {"plan": "the plan", "completion": "the completion"}.get(kind, "the conflict choice")
        state = self._state["state"]
        raise AlreadyDecided(
            f"{what} of task {self.id} was already approved at {at} ({channel}); the task is now {state}",
            data={"decidedAt": at, "state": state},
        )

    def _not_waiting(self, what: str) -> str:
        state = self._state["state"]
        needs = NEEDS_OF.get(state)
        hint = f"it needs {needs.replace('_', ' ')}" if needs else "it is not waiting for anything"
        return f"task {self.id} is not waiting for {what} (state {state}; {hint})"

    def _answered_by_person(self) -> bool:
        return any(a["kind"] != "machine" for a in self._state["ledger"]["answers"])

    def _mark_pause_resolved(self, pause: str, *, by_person: bool) -> None:
        if by_person and pause not in self._state["human_pause_states"]:
            self._state["human_pause_states"].append(pause)

    def _read_text(self, rel: str) -> str:
        try:
            return (self.run_dir / rel).read_text(encoding="utf-8", errors="surrogateescape")
        except FileNotFoundError:
            return ""

    def _write_views(self) -> None:
        s = self._state
        rev = s["revision"]
        views: list[tuple[str, Any]] = [("ledger.json", {"revision": rev, **s["ledger"]})]
        if s["requirements"] is not None:
            views.append(("requirements.json", {"revision": rev, **s["requirements"]}))
        if s["plan"] is not None:
            views.append(("plan.json", {"revision": rev, "plan_revision": s["plan_revision"], **s["plan"]}))
        views.append(("approvals.json", {"revision": rev, "approvals": s["approvals"]}))
        for name, data in views:
            store.write_json_atomic(self.run_dir / name, data, durable=False)
        if s["plan"] is not None:
            store.write_text_atomic(
                self.run_dir / "plan.md", render_plan(s["plan"], s["plan_revision"]), durable=False
            )

    def _refresh_views_if_stale(self) -> None:
        try:
            seen = store.read_json(self.run_dir / "ledger.json").get("revision")
        except (FileNotFoundError, ValueError):
            seen = None
        if seen != self._state["revision"]:
            # Never wait here: a task busy in another call writes its own views.
            with store.locked(self.run_dir, blocking=False) as got:
                if got:
                    self._reload()
                    self._write_views()


def _answer_rule(
    question: Mapping[str, Any], text: str, how: str | None, kind: str | None
) -> tuple[str, str, str]:
    """The one answer rule: (text recorded, how, ledger kind) for an answer as given."""
    default = question.get("default")
    given = text.strip()
    if how is None and kind is not None:
        how = ledger_mod.HOW_OF_KIND[kind]
    if how is None:
        how = "acceptedDefault" if default is not None and text == default else "typed"
    if how == "machine":
        if not given:
            raise UsageError("a machine answer needs its text")
        return text, how, "machine"
    if how == "acceptedDefault":
        if default is None:
            raise UsageError(f"question {question.get('id')!r} has no proposed default; type an answer")
        if given and text != default:
            raise UsageError(
                "the text differs from the proposed default; send it as typed (or leave the text empty "
                "to accept the default)"
            )
        text = default
    elif how == "delegated":
        # The task decides: the value it will use is recorded (the proposed default when there is one).
        if not given:
            text = default if default is not None else "(left to AutoCode to decide)"
    elif not given:
        raise UsageError("the answer is empty; type the answer, accept the proposed default, or delegate it")
    return text, how, kind if kind == "machine" else ledger_mod.KIND_OF_HOW[how]


def render_plan(plan: dict[str, Any] | None, revision: int) -> str:
    if not plan:
        return ""
    lines = [f"# Plan (revision {revision})", "", plan.get("summary", ""), "", "## Steps", ""]
    lines += [f"{i}. {step}" for i, step in enumerate(plan.get("steps", []), 1)]
    if plan.get("acceptance_criteria"):
        lines += ["", "## Acceptance criteria", ""]
        lines += [f"- {c}" for c in plan["acceptance_criteria"]]
    if plan.get("citations"):
        lines += ["", "## Cited", ""]
        lines += [f"- `{c}`" for c in plan["citations"]]
    return "\n".join(lines) + "\n"


def list_tasks(workspace: Path | str) -> list[dict[str, Any]]:
    """Snapshots of every task saved in the workspace, oldest first."""
    root = _workspace_root(workspace)
    out: list[dict[str, Any]] = []
    base = runs_root(root)
    if not base.is_dir():
        return out
    for entry in sorted(base.iterdir()):
        if not TASK_ID.match(entry.name) or not (entry / "state.json").is_file():
            continue
        try:
            out.append(TaskRun.load(root, entry.name).snapshot())
        except (AutoCodeError, ValueError, OSError):
            continue
    return out


def _check_package(root: Path, package: str | None) -> str | None:
    if package is None:
        return None
    rel = Path(package)
    if rel.is_absolute():
        try:
            rel = rel.resolve().relative_to(root)
        except ValueError:
            raise UsageError(f"--package {package} is outside the workspace {root}") from None
    if ".." in rel.parts or not (root / rel).is_dir():
        raise UsageError(f"--package {package} is not a folder inside the workspace; give its path relative to {root}")
    return rel.as_posix()


def _check_manifest(manifest: str | Path | None) -> Path | None:
    if manifest is None:
        return None
    path = Path(manifest)
    if not path.is_file():
        raise UsageError(f"the manifest {path} does not exist; pass the path of the JSON manifest")
    return path.resolve()


def _make_copy(root: Path, manifest: Path | None, progress: Callable[[str, str], None] | None) -> Any:
    from autocode.prep import make_prep_copy

    if progress is None:
        return make_prep_copy(root, manifest=manifest)
    report = progress

    def copied(done: int, total: int) -> None:
        if done == total or done % 2000 == 0:
            report("requirements", f"prep copy: {done}/{total} entries")

    return make_prep_copy(root, manifest=manifest, progress=copied)


def _recall(settings_obj: Any, root: Path, agent: str, task_id: str, brief: str) -> dict[str, Any]:
    from autocode.tasks.launch import recall_memories

    try:
        return recall_memories(settings_obj, root, agent, task_id, brief)
    except Exception as exc:  # memory trouble must not block a task; it is reported
        return {"error": f"{type(exc).__name__}: {exc}", "project": [], "global": []}


NO_SOURCE_FILES = "(no source files yet: the workspace has nothing to cite)"


def citation_fallback(prep: Any) -> list[str]:
    """What a task cites when the workspace has no eligible file: its declared inputs, or a stated entry."""
    inputs = prep.get("inputs") if isinstance(prep, dict) else getattr(prep, "inputs", None)
    declared = [str(i.get("path") if isinstance(i, dict) else getattr(i, "path", "")) for i in inputs or []]
    return [p for p in declared if p] or [NO_SOURCE_FILES]


def _citations(root: Path, prep: Any) -> list[str]:
    from autocode.prep import citations

    # The copy's own inventory when it has one: no second walk of the git listing.
    inv = getattr(prep, "inventory", None)
    return list(citations(root, limit=20, fallback=citation_fallback(prep), inv=inv))


def _prep_dict(prep: Any) -> dict[str, Any]:
    from autocode.tasks.launch import _plain

    data = _plain(prep)
    if not isinstance(data, dict) or not data.get("copy"):
        raise UsageError("the prep result has no copy path")
    return data


def _ensure_gitignore(root: Path) -> None:
    from autocode.record import ensure_gitignore

    ensure_gitignore(root)


def _outside_repo_env(directory: Path) -> dict[str, str]:
    # The copy lives inside the workspace; stop git from finding the workspace's
    # repository above it so paths in the patch are taken relative to the copy.
    return {"GIT_CEILING_DIRECTORIES": str(directory.parent)}


def _copy_git(args: list[str], copy: Path) -> subprocess.CompletedProcess[bytes]:
    is_root = (copy / ".git").exists()
    return gitsafe.run(args, copy, check=False, env=None if is_root else _outside_repo_env(copy))


def _capture_base(
    copy: Path, files: list[str], dest: Path, *, before: Mapping[str, str | None] | None = None
) -> None:
    """Save the copy's version of each file the change touches (the merge base), before it changes.

    `before`: the first content of files already changed in the copy (the agent loop records
    each file as it found it before its first edit); other files are read from the copy."""
    index: dict[str, str | None] = {}
    for n, rel in enumerate(files):
        source = copy / rel
        data: bytes | None
        if before is not None and rel in before:
            text = before[rel]
            data = None if text is None else text.encode("utf-8", "surrogateescape")
        elif source.is_file() and not source.is_symlink():
            data = source.read_bytes()
        else:
            data = None
        if data is not None:
            name = f"{n:05d}"
            (dest / "files").mkdir(parents=True, exist_ok=True)
            (dest / "files" / name).write_bytes(data)
            index[rel] = name
        else:
            index[rel] = None
    store.write_json_atomic(dest / "index.json", {"files": index})


def _agent_originals(run_dir: Path) -> dict[str, str | None]:
    """What the agent loop found in each file before its first edit (its own record)."""
    from autocode.providers.agent import AGENT_DIR

    try:
        data = store.read_json(run_dir / AGENT_DIR / "originals.json")
    except (FileNotFoundError, ValueError):
        return {}
    return {str(k): (v if isinstance(v, str) else None) for k, v in dict(data).items()}


def _apply_in_copy(copy: Path, diff_path: Path) -> None:
    proc = _copy_git(["apply", "--whitespace=nowarn", str(diff_path)], copy)
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise AutoCodeError(
            f"the change does not apply to the prep copy: {message}", kind="patchDoesNotApply"
        )


def _patch_already_applied(copy: Path, diff_path: Path) -> bool:
    return _copy_git(["apply", "--reverse", "--check", str(diff_path)], copy).returncode == 0


def _diff_files(diff: str) -> list[str]:
    files: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("rename from ", "rename to ")):
            # A rename (maybe with no content change, so no ---/+++ lines): both paths are touched.
            name = line.split(" ", 2)[2].strip()
            if name not in files:
                files.append(name)
        elif line.startswith("+++ ") or line.startswith("--- "):
            name = line[4:].split("\t")[0].strip()
            if name == "/dev/null":
                continue
            name = name[2:] if name[:2] in ("a/", "b/") else name
            if name not in files:
                files.append(name)
    return files


def diff_against_head(workspace: Path, copy: Path, files: list[str], head: str | None) -> str:
    """The copy's version of each changed file against HEAD (includes the person's uncommitted edits)."""
    import difflib

    chunks: list[str] = []
    for rel in files:
        old: str | None = None
        if head:
            proc = gitsafe.run(["show", f"{head}:{rel}"], workspace, check=False)
            if proc.returncode == 0:
                old = proc.stdout.decode("utf-8", "surrogateescape")
        target = copy / rel
        new = target.read_text(encoding="utf-8", errors="surrogateescape") if target.is_file() else None
        if old == new:
            continue
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"a/{rel}" if old is not None else "/dev/null",
            tofile=f"b/{rel}" if new is not None else "/dev/null",
        )
        chunks.append(f"diff --git a/{rel} b/{rel}\n" + "".join(lines))
    return "".join(chunks)


def _run_tests(
    command: str, cwd: Path, timeout: float, cancelled: Callable[[], bool]
) -> dict[str, Any]:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"the test command {command!r} cannot be split into words: {exc}") from exc
    started = time.monotonic()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError) as exc:
        return {
            "command": command,
            "cwd": cwd.name,
            "exit_code": 127,
            "status": "could_not_run",
            "seconds": 0.0,
            "output": f"could not run {argv[0]!r}: {exc}\n",
            "output_tail": f"could not run {argv[0]!r}: {exc}\n",
        }
    status = "finished"
    output = b""
    while True:
        try:
            output, _ = proc.communicate(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            over = time.monotonic() - started > timeout
            if over or cancelled():
                status = "timed_out" if over else "cancelled"
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                output, _ = proc.communicate()
                break
    text = output.decode("utf-8", "replace")
    return {
        "command": command,
        "cwd": cwd.name,
        "exit_code": proc.returncode,
        "status": status,
        "seconds": round(time.monotonic() - started, 3),
        "output": text,
        "output_tail": text[-OUTPUT_TAIL:],
    }
