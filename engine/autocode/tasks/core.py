"""The core every part of a task run shares: its folder, its committed state, and the commit.

`TaskRun` is built in layers, one module each: `RunCore` (here: reading and
committing the state, the views, the checks behind a person's actions),
`ApplyPhase` (`apply_phase.py`: merging the verified change into the work tree),
`PhaseMachine` (`machine.py`: the phases and the roles they call) and
`TaskRun` (`run.py`: starting, loading and the person's actions). Every change
goes through `_commit` under the run's lock.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from autocode import gitsafe, scrub
from autocode.errors import AutoCodeError
from autocode.tasks import ledger as ledger_mod
from autocode.tasks import store
from autocode.tasks.errors import AlreadyDecided, NotAwaitingInput, PlanRevisionMismatch
from autocode.tasks.ledger import LedgerQuestion
from autocode.tasks.live import LIVE
from autocode.tasks.models import (
    AgentStatus,
    AnswerQuestions,
    AnswerRecord,
    ApproveCompletion,
    ApprovePlan,
    HeadMoved,
    Needs,
    NoNeeds,
    PhaseResult,
    Plan,
    Question,
    ResolveConflicts,
    SaveFiles,
    TaskSnapshot,
)
from autocode.tasks.state import (
    ENDS,
    NEEDS_OF,
    PAUSES,
    PHASE_OF,
    WORKING,
    Approval,
    TaskState,
    confirmation_needed,
    planned_tests,
    render_plan,
    runs_root,
)

if TYPE_CHECKING:
    from autocode.tasks.file_merge import Editor

DIFF_IN_SNAPSHOT = 200_000
EDITOR_MARK = ".editor.lock"
"""Held (in the run folder, and in the runs folder for the workspace) while a change is with the editor."""
R = TypeVar("R", bound=PhaseResult)


class RunCore:
    """A task's folder and state; see the module docstring for the layers above it."""

    def __init__(
        self,
        workspace: Path,
        task_id: str,
        state: TaskState,
        launch: dict[str, Any],
        *,
        on_change: Callable[[TaskSnapshot], None] | None = None,
        progress: Callable[[str, str], None] | None = None,
    ) -> None:
        self.workspace = workspace
        self.id = task_id
        self.run_dir = runs_root(workspace) / task_id
        self._state = state
        self._launch = launch
        self._on_change = on_change
        self._progress = progress
        self._editor: Editor | None = None
        self._run_lock: store.HeldLock | None = None  # while a call of this instance holds the run's lock
        self._apply_lock: store.HeldLock | None = None  # and the workspace's apply lock (apply_phase.py)
        self._seen: tuple[tuple[int, int, int], TaskState] | None = None  # state.json as last read or written here

    # ------------------------------------------------------------------ reading

    def snapshot(self) -> TaskSnapshot:
        """The task as last committed (read from disk, so any instance in any process agrees)."""
        s = self._committed()
        interrupted = s.state in WORKING and not self._worked_on(s)
        return TaskSnapshot(
            id=self.id,
            workspace=str(self.workspace),
            brief=str(self._launch.get("brief", "")),
            state="INTERRUPTED" if interrupted else s.state,
            interrupted_in=s.state if interrupted else None,
            phase=PHASE_OF[s.state],
            revision=s.revision,
            needs=self._needs(s),
            done=s.state in ENDS,
            result=s.result,
            error=s.error,
            learning=s.learning,
            run_dir=str(self.run_dir),
            copy_=(self._launch.get("prep") or {}).get("copy"),
            plan_revision=s.plan_revision,
            human_pause_states=list(s.human_pause_states),
            answers=[
                AnswerRecord(
                    question_id=a.question_id,
                    text=a.text,
                    how=ledger_mod.answer_how(a),
                    kind=a.kind,
                    channel=a.source.channel if a.source else None,
                    time=a.source.time if a.source else None,
                )
                for a in s.ledger.answers
            ],
            agent=self._agent_status(),
            created=s.created,
            updated=s.updated,
        )

    def _worked_on(self, s: TaskState) -> bool:
        """Whether a call holds the run's lock now (in this process or another), or waits for the
        editor's answer with the lock let go. A working state with both free was left by a process
        that stopped mid-step: the task is interrupted. The locks are flocks, so they go with the
        process that held them, however it ended."""
        if LIVE.event(self.run_dir) is not None:
            return True  # a call of this process is working on it: no lock to look at
        try:
            with store.locked(self.run_dir, blocking=False) as got:
                return not got or self._editor_waiting(s)
        except OSError:  # a lock that cannot be opened (a read-only copy): the state is shown as saved
            return True

    def _editor_waiting(self, s: TaskState) -> bool:
        """The change is with the editor now: handed over (in the state) by a call still waiting
        for the answer (its marker lock held; nobody ever waits on that lock, they only look)."""
        return s.editor_handoff is not None and store.busy(self.run_dir, EDITOR_MARK)

    def _needs(self, s: TaskState) -> Needs:
        """What the task waits for, with exactly what the person needs to decide it."""
        kind = NEEDS_OF.get(s.state)
        if kind == "answer_questions":
            return AnswerQuestions(questions=[_question(q) for q in ledger_mod.pending_questions(s.ledger)])
        if kind == "approve_plan":
            plan_file = self.run_dir / "plan.md"
            return ApprovePlan(
                plan_revision=s.plan_revision,
                plan=s.plan if s.plan is not None else Plan(summary="", steps=[]),
                markdown=render_plan(s.plan, s.plan_revision, planned_tests(self._launch)),
                plan_uri=plan_file.as_uri() if plan_file.is_file() else None,
            )
        head_moved = self.head_moved()
        last = s.apply
        if kind == "approve_completion":
            return ApproveCompletion(
                diff=self._read_text("evidence/changes.diff")[:DIFF_IN_SNAPSHOT],
                files=s.files,
                tests=s.tests,
                proof=s.proof,
                confirmation=confirmation_needed(s.proof),
                review=s.review,
                head_moved=head_moved,
                apply=last.result() if last is not None and last.status == "not_applied" else None,
            )
        if last is None:  # a pause after applying with no apply recorded: changed by hand
            return NoNeeds()
        if kind == "save_files":
            return SaveFiles(paths=list(last.unsaved), apply=last.result())
        if kind == "resolve_conflicts":
            return ResolveConflicts(conflicts=list(last.details), files=s.files, head_moved=head_moved,
                                    apply=last.result())
        return NoNeeds()

    def _committed(self) -> TaskState:
        try:
            return self._read_state()
        except (FileNotFoundError, ValueError):
            return self._state

    def _read_state(self) -> TaskState:
        """state.json as committed: read again only when the file is another than the one this
        instance last read or wrote (every commit replaces it, so its inode, time and size name it)."""
        path = self.run_dir / "state.json"
        info = os.stat(path)
        mark = (info.st_ino, info.st_mtime_ns, info.st_size)
        if self._seen is not None and self._seen[0] == mark:
            return self._seen[1]
        state = TaskState.read(path)
        self._seen = (mark, state)
        return state

    def _answered_at(self, question_id: str) -> str | None:
        for a in self._state.ledger.answers:
            if a.question_id == question_id:
                return (a.source.time if a.source else None) or "an earlier time"
        return None

    def _decided_at(self, kind: str, plan_revision: int | None = None) -> Approval | None:
        for approval in reversed(self._state.approvals):
            if approval.kind == kind and (plan_revision is None or approval.plan_revision == plan_revision):
                return approval
        return None

    def head_moved(self, *, ask_git: bool = False) -> HeadMoved | None:
        """HEAD now and when the task started (recorded in launch.json), when they differ (new
        commits, another branch); None when they agree or HEAD cannot be read.

        A snapshot reads HEAD from the git folder's files (`gitsafe.head_from_files`: no process,
        nothing the repository configures runs); `ask_git` asks git itself, for the check made
        when the person acts (the apply), where a layout the file reader does not know must not
        hide a move."""
        start = self._launch.get("head")
        try:
            now = gitsafe.head(self.workspace) if ask_git else gitsafe.head_from_files(self.workspace)
        except Exception:
            return None
        if now == start:
            return None
        return HeadMoved.model_validate({"from": start, "to": now})

    # ------------------------------------------------------------------ the machine

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        with store.holding(self.run_dir) as held, LIVE.working(self.run_dir):
            self._run_lock = held
            try:
                self._reload()
                yield
            finally:
                self._run_lock = None

    @contextlib.contextmanager
    def _locks_let_go(self) -> Iterator[None]:
        """Without the apply lock and the run's lock for the block; back in their order after it."""
        with contextlib.ExitStack() as stack:
            for held in (self._apply_lock, self._run_lock):
                if held is not None:
                    stack.enter_context(held.released())
            yield

    def _reload(self) -> None:
        self._state = self._read_state().model_copy(deep=True)  # changed in place by the call

    def _commit(self, event: str, data: dict[str, Any] | None = None) -> None:
        s = self._state
        if s.state in PAUSES and s.state not in s.paused_states:
            s.paused_states.append(s.state)
        s.revision += 1
        s.updated = store.now_iso()
        path = self.run_dir / "state.json"
        s.write(path)
        info = os.stat(path)
        self._seen = ((info.st_ino, info.st_mtime_ns, info.st_size), s.model_copy(deep=True))
        self._write_views()
        self._note(event, {"state": s.state, "revision": s.revision, **(data or {})})
        if self._on_change is not None:
            try:
                self._on_change(self.snapshot())
            except Exception as exc:  # a face's callback must not break the run
                self._note("on_change_failed", {"error": repr(exc)})

    def _note(self, event: str, data: dict[str, Any]) -> None:
        # Events quote errors and model text: no credential is kept in them, whatever its source.
        store.append_event(
            self.run_dir / "events.jsonl", event, {key: scrub.redact_values(value) for key, value in data.items()}
        )

    def _say(self, phase: str, message: str) -> None:
        if self._progress is not None:
            with contextlib.suppress(Exception):
                self._progress(phase, message)

    def _cancel_requested(self) -> bool:
        """Asked to stop: by a message from this process (`LIVE`), or by the record another process left."""
        event = LIVE.event(self.run_dir)
        return (event is not None and event.is_set()) or (self.run_dir / "cancel.request").exists()

    def _agent_status(self) -> AgentStatus | None:
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.providers.agent import read_status

        return self._typed(AgentStatus, read_status(self.run_dir), "agent status (agent/status.json)")

    def _typed(self, model: type[R], data: dict[str, Any] | None, where: str) -> R | None:
        """A phase result as its typed model; a shape this version cannot read is a damaged task."""
        if not data:
            return None
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(part) for part in first["loc"])
            raise AutoCodeError(
                f"the {where} of task {self.id} cannot be read ({at}: {first['msg']}); AutoCode never "
                "writes it that way, so it was changed by hand: restore it or start a new task",
                kind="taskDamaged",
            ) from None

    # ------------------------------------------------------------------ helpers

    def _expect_plan(self, revision: int) -> None:
        if self._state.state != "WAITING_FOR_PLAN_APPROVAL":
            raise NotAwaitingInput(self._not_waiting("plan approval"))
        if revision != self._state.plan_revision:
            raise PlanRevisionMismatch(
                f"plan revision {revision} is not the current one ({self._state.plan_revision}); "
                "review the current plan and approve that revision",
                data={"current": self._state.plan_revision},
            )

    def _raise_if_decided(self, kind: str, plan_revision: int | None = None) -> None:
        """A decision already recorded: say when (and where the task is now)."""
        found = self._decided_at(kind, plan_revision)
        if found is None:
            return
        at = found.source.time or "an earlier time"
        channel = found.source.channel or "someone"
        what = {"plan": "the plan", "completion": "the completion"}.get(kind, "the conflict choice")
        state = self._state.state
        where = "; its change is with the editor, which is asked to apply it" if self._editor_waiting(self._state) else ""
        raise AlreadyDecided(
            f"{what} of task {self.id} was already approved at {at} ({channel}); the task is now {state}{where}",
            data={"decidedAt": at, "state": state},
        )

    def _not_waiting(self, what: str) -> str:
        state = self._state.state
        needs = NEEDS_OF.get(state)
        hint = f"it needs {needs.replace('_', ' ')}" if needs else "it is not waiting for anything"
        return f"task {self.id} is not waiting for {what} (state {state}; {hint})"

    def _answered_by_person(self) -> bool:
        # An agent's delegated answer through the MCP server (`mcp:<client>`) is not the person's.
        return any(
            a.kind != "machine" and not (a.source.channel if a.source else "").startswith("mcp:")
            for a in self._state.ledger.answers
        )

    def _mark_pause_resolved(self, pause: str, *, by_person: bool) -> None:
        if by_person and pause not in self._state.human_pause_states:
            self._state.human_pause_states.append(pause)

    def _read_text(self, rel: str) -> str:
        try:
            return (self.run_dir / rel).read_text(encoding="utf-8", errors="surrogateescape")
        except FileNotFoundError:
            return ""

    def _write_views(self) -> None:
        s = self._state
        rev = s.revision
        stored = s.to_json()
        views: list[tuple[str, Any]] = [("ledger.json", {"revision": rev, **stored["ledger"]})]
        if s.requirements is not None:
            views.append(("requirements.json", {"revision": rev, **stored["requirements"]}))
        if s.plan is not None:
            views.append(("plan.json", {"revision": rev, "plan_revision": s.plan_revision, **s.plan.model_dump()}))
        views.append(("approvals.json", {"revision": rev, "approvals": stored["approvals"]}))
        for name, data in views:
            store.write_json_atomic(self.run_dir / name, data, durable=False)
        if s.plan is not None:
            store.write_text_atomic(
                self.run_dir / "plan.md", render_plan(s.plan, s.plan_revision, planned_tests(self._launch)),
                durable=False,
            )

    def _refresh_views_if_stale(self) -> None:
        try:
            seen = store.read_json(self.run_dir / "ledger.json").get("revision")
        except (FileNotFoundError, ValueError):
            seen = None
        if seen != self._state.revision:
            # Never wait here: a task busy in another call writes its own views.
            with store.locked(self.run_dir, blocking=False) as got:
                if got:
                    self._reload()
                    self._write_views()



def _question(q: LedgerQuestion) -> Question:
    return Question(
        id=q.id,
        text=q.text,
        category=q.category,
        convention=q.convention,
        default=q.default,
        choices=[q.default] if q.default else [],
    )
