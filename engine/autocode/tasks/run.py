"""TaskRun: one coding task as a persisted state machine.

Phases: requirements -> planning -> implementing -> verifying -> completed
(failed and cancelled also end a task). Every public call takes the run's
lock, re-reads `state.json` (when another call replaced it), changes it,
commits it atomically, and keeps working synchronously until the task needs
a person or ends; the one wait outside, for the editor's answer to an apply,
is made with the locks let go (`apply_phase.py`). A cancel is a message to
the working call (`live.LIVE`, `cancel.request`). A process killed at any
point leaves the last committed state; `load()` then `resume()` continue
from it. docs/dev/architecture.md, "Who owns a task's state", draws it.

This module holds the public face (start, load, the person's actions); the
layers beneath are described in `core.py`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode.errors import AutoCodeError, UsageError
from autocode.remedy import Advice, Remedy, RemedyKind
from autocode.tasks import ledger as ledger_mod
from autocode.tasks import start, store
from autocode.tasks.errors import (
    AlreadyDecided,
    ConfirmationRequired,
    NotAwaitingInput,
    TaskNotFound,
)
from autocode.tasks.live import LIVE
from autocode.tasks.models import TaskSnapshot
from autocode.tasks.review import ReviewSteps, end_orphaned_programs
from autocode.tasks.state import (
    ENDS,
    PAUSES,
    TASK_ID,
    Approval,
    Source,
    TaskOptions,
    TaskState,
    answer_rule,
    confirmation_needed,
    planned_tests,
    runs_root,
    stored_form,
)

if TYPE_CHECKING:
    from autocode.tasks.file_merge import Editor

# How long a cancel that found the task busy waits for the task to settle before answering; a
# call that holds the lock for longer (planning, tests) honours the request at its next look.
CANCEL_WAIT_S = 0.5


class TaskRun(ReviewSteps):
    """One task. Construct with `start` or `load`; every method is safe from any thread or process."""

    # ------------------------------------------------------------------ create / open

    @classmethod
    def start(
        cls,
        workspace: Path | str,
        brief: str,
        options: TaskOptions | Mapping[str, Any] | None = None,
    ) -> TaskRun:
        """Create a task and run it until it needs a person or ends."""
        opts = TaskOptions.coerce(options)
        ready = start.prepare(workspace, brief, opts)
        state = TaskState.new(ready.task_id)
        run = cls(ready.root, ready.task_id, state, ready.launch, on_change=opts.on_change, progress=opts.progress)
        with store.locked(ready.run_dir), LIVE.working(ready.run_dir):
            run._commit("started", {"brief": str(ready.launch["brief"]).strip().splitlines()[0][:200]})
            if ready.recall_error:
                run._note("memory_recall_failed", {"error": ready.recall_error})
            else:
                run._note("memory_recalled", {"receipt": ready.receipt})
            store.kill_point("started")
            run._advance()
        run._honour_late_cancel()
        return run

    @classmethod
    def load(
        cls,
        workspace: Path | str,
        task_id: str,
        *,
        on_change: Callable[[TaskSnapshot], None] | None = None,
        progress: Callable[[str, str], None] | None = None,
    ) -> TaskRun:
        """Open a saved task in its last committed state (nothing runs)."""
        root = start.workspace_root(workspace)
        if not isinstance(task_id, str) or not TASK_ID.match(task_id):
            raise TaskNotFound(Advice(f"{task_id!r} is not a task id; ", Remedy(RemedyKind.LIST_TASKS), " them"))
        run_dir = start.checked_runs_root(root) / task_id
        try:
            info = os.stat(run_dir / "state.json")  # before the read: a newer file is then read again
            state = TaskState.read(run_dir / "state.json")
            launch = store.read_json(run_dir / "launch.json")
        except FileNotFoundError:
            raise TaskNotFound(
                Advice(f"no task {task_id} in {root}; ", Remedy(RemedyKind.LIST_TASKS, workspace=str(root)),
                       " its tasks")
            ) from None
        except (ValueError, OSError) as exc:
            raise AutoCodeError(
                f"the saved files of task {task_id} cannot be read ({exc}); AutoCode never writes them "
                f"partially, so they were changed by hand: restore them or start a new task",
                kind="taskDamaged",
            ) from None
        run = cls(root, task_id, state, launch, on_change=on_change, progress=progress)
        run._seen = ((info.st_ino, info.st_mtime_ns, info.st_size), state.model_copy(deep=True))
        run._refresh_views_if_stale()
        return run

    def transcript(self) -> tuple[Path, str]:
        """The model's work as Markdown, written to transcript.md in the run folder: (its path, its text)."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.providers.agent.transcript import write_markdown

        return write_markdown(self.run_dir)

    def details(self) -> dict[str, Any]:
        """Everything recorded about the run (for `task show`)."""
        s = self._committed()
        return {
            "snapshot": self.snapshot().wire(),
            "ledger": stored_form(s.ledger),
            "requirements": stored_form(s.requirements),
            "plan": stored_form(s.plan),
            "approvals": [stored_form(a) for a in s.approvals],
            # The phase results in their typed wire form, as the snapshot carries them.
            "tests": s.tests.wire() if s.tests is not None else None,
            "apply": s.apply.result().wire() if s.apply is not None else None,
            "launch": {k: self._launch.get(k) for k in ("head", "options", "values", "record", "recall", "prep", "sandbox")},
            "events": store.read_events(self.run_dir / "events.jsonl"),
        }

    # ------------------------------------------------------------------ person's actions

    def answer(
        self,
        question_id: str,
        text: str,
        source: Source | Mapping[str, Any] | str,
        *,
        kind: str | None = None,
        how: str | None = None,
    ) -> TaskSnapshot:
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
            if self._state.state != "WAITING_FOR_USER":
                done = self._answered_at(question_id)
                if done is not None:
                    raise AlreadyDecided(
                        f"question {question_id!r} of task {self.id} was already answered at {done}",
                        data={"decidedAt": done, "state": self._state.state},
                    )
                raise NotAwaitingInput(self._not_waiting("answers"))
            pending = {q.id for q in ledger_mod.pending_questions(self._state.ledger)}
            question = ledger_mod.find_question(self._state.ledger, question_id)
            if question is None or question_id not in pending:
                done = self._answered_at(question_id)
                if question is not None and question.asked and done is not None:
                    raise AlreadyDecided(
                        f"question {question_id!r} of task {self.id} was already answered at {done}",
                        data={"decidedAt": done, "state": self._state.state},
                    )
                raise UsageError(
                    f"question {question_id!r} was not asked; pending: {', '.join(sorted(pending)) or 'none'}"
                )
            text, how, kind = answer_rule(question, text, how, kind)
            ledger_mod.record_answer(self._state.ledger, question_id, text, kind, src.decided(), how)
            if not ledger_mod.pending_questions(self._state.ledger):
                self._mark_pause_resolved("WAITING_FOR_USER", by_person=self._answered_by_person())
                self._state.state = "PLANNING"
            self._commit(
                "answered", {"question_id": question_id, "kind": kind, "how": how, "channel": src.channel}
            )
            self._advance()
        return self.snapshot()

    def approve_plan(self, revision: int, source: Source | Mapping[str, Any] | str) -> TaskSnapshot:
        src = Source.coerce(source)
        with self._changing():
            if self._state.state != "WAITING_FOR_PLAN_APPROVAL":
                self._raise_if_decided("plan", revision)
            self._expect_plan(revision)
            # The approval names the exact test command it let run, and where it came from.
            self._state.approvals.append(
                Approval(kind="plan", plan_revision=revision, source=src.decided(), tests=planned_tests(self._launch))
            )
            self._mark_pause_resolved("WAITING_FOR_PLAN_APPROVAL", by_person=src.channel != "machine")
            self._state.state = "IMPLEMENTING"
            self._commit("plan_approved", {"plan_revision": revision, "channel": src.channel})
            store.kill_point("plan_approved")
            self._advance()
        return self.snapshot()

    def reject_plan(
        self, feedback: str, source: Source | Mapping[str, Any] | str, *, revision: int | None = None
    ) -> TaskSnapshot:
        """Send the plan back with feedback; a new plan revision follows."""
        src = Source.coerce(source)
        if not isinstance(feedback, str) or not feedback.strip():
            raise UsageError(Advice("say what to change in the plan (", Remedy(RemedyKind.NAME_ARGUMENT, argument="feedback"), ")"))
        with self._changing():
            if self._state.state != "WAITING_FOR_PLAN_APPROVAL":
                self._raise_if_decided("plan", revision)
            self._expect_plan(revision if revision is not None else self._state.plan_revision)
            self._state.approvals.append(
                Approval(kind="plan_rejected", plan_revision=self._state.plan_revision, feedback=feedback,
                         source=src.decided())
            )
            self._state.feedback.append(feedback)
            self._state.state = "PLANNING"
            self._commit("plan_rejected", {"plan_revision": self._state.plan_revision})
            self._advance()
        return self.snapshot()

    def approve_completion(
        self, source: Source | Mapping[str, Any] | str, *, editor: Editor | None = None, confirm: str | None = None,
        keep: list[str] | None = None,
    ) -> TaskSnapshot:
        """Apply the verified change to the workspace (three-way merge per file), then learn.

        `editor` (an `file_merge.Editor`) applies it through the person's editor; without one the
        files are written here. Conflicts make the task wait for `resolve_conflicts`. A change
        nothing proves (or that weakens the tests) is applied only with `confirm` set to the
        word `needs.confirmation` names, typed by the person.
        """
        src = Source.coerce(source)
        with self._changing():
            if self._state.state != "WAITING_FOR_COMPLETION_APPROVAL":
                self._raise_if_decided("completion")
                raise NotAwaitingInput(self._not_waiting("completion approval"))
            needed = confirmation_needed(self._state.proof)
            if needed is not None and confirm != needed:
                proof = self._state.proof
                summary = proof.summary if proof is not None else "unproven: the tests never ran through the proof"
                raise ConfirmationRequired(
                    f"this change is not proved ({summary}); to apply it anyway, confirm with "
                    f"{needed!r} (CLI: --confirm {needed}; editors: 'Apply unproven change')",
                    data={"confirmation": needed},
                )
            hunks = self._check_kept(keep, editor) if keep is not None else None
            approval = Approval(kind="completion", source=src.decided())
            if needed:
                approval.confirmed = needed
            if hunks is not None:
                approval.hunks = hunks
            self._state.approvals.append(approval)
            self._state.apply_keep = list(hunks.kept) if hunks is not None else None
            self._mark_pause_resolved("WAITING_FOR_COMPLETION_APPROVAL", by_person=src.channel != "machine")
            self._state.state = "APPLYING"
            self._commit("completion_approved", {"channel": src.channel})
            store.kill_point("completion_approved")
            self._advance_applying(editor)
        return self.snapshot()

    def _advance_applying(self, editor: Editor | None) -> None:
        """Go on from APPLYING with the editor that applies the change (None: write the files)."""
        self._editor = editor
        try:
            self._advance()
        finally:
            self._editor = None

    def resolve_conflicts(
        self, choices: Mapping[str, str], source: Source | Mapping[str, Any] | str, *, editor: Editor | None = None
    ) -> TaskSnapshot:
        """The person's choice per conflicted file (mine, theirs or markers); once every conflict
        has one, the whole change is applied and the task completes."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks.file_merge import CHOICES

        src = Source.coerce(source)
        if not isinstance(choices, Mapping) or not choices:
            raise UsageError("choose for each conflicted file: mine, theirs or markers")
        for path, choice in choices.items():
            if choice not in CHOICES:
                raise UsageError(f"the choice for {path} is {choice!r}; use one of {', '.join(CHOICES)}")
        with self._changing():
            if self._state.state != "WAITING_FOR_CONFLICT_RESOLUTION":
                self._raise_if_decided("conflicts_resolved")
                raise NotAwaitingInput(self._not_waiting("a conflict resolution"))
            conflicted = [c.path for c in self._state.apply.details] if self._state.apply is not None else []
            unknown = sorted(set(choices) - set(conflicted))
            if unknown:
                raise UsageError(
                    f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not in conflict; "
                    f"the conflicted files are: {', '.join(conflicted)}"
                )
            chosen = dict(self._state.apply_choices or {})
            chosen.update({str(k): str(v) for k, v in choices.items()})
            self._state.apply_choices = chosen
            self._state.approvals.append(
                Approval(kind="conflicts_resolved", choices={str(k): str(v) for k, v in choices.items()},
                         source=src.decided())
            )
            missing = [c for c in conflicted if c not in chosen]
            if not missing:
                self._mark_pause_resolved("WAITING_FOR_CONFLICT_RESOLUTION", by_person=src.channel != "machine")
                self._state.state = "APPLYING"
            self._commit("conflicts_chosen", {"choices": dict(choices), "waiting_for": missing, "channel": src.channel})
            if not missing:
                self._advance_applying(editor)
        return self.snapshot()

    def cancel(self) -> TaskSnapshot:
        """End the task. While a call is working on it, ask that call to stop at its next look.

        A free task is cancelled here, under its lock. A busy one gets a message: the durable
        record (`cancel.request`, the `cancel_requested` event) that any process reads, and, when
        the working call is in this process, its cancel event (`live.LIVE`), which it sees at once.
        No lock is probed in a loop: one helper thread waits for the lock and honours the request
        if it is still pending when it gets it (a holder that never looks at requests, such as a
        view refresh, lets go soon); this call waits up to CANCEL_WAIT_S for that, then answers
        with the task as it is. A change with the editor (waiting for its answer) is not
        cancelled: the editor's answer decides it."""
        with store.locked(self.run_dir, blocking=False) as got:
            if got:
                self._reload()
                self._refuse_cancel_if_settled()
                self._cancel_now()
                return self.snapshot()
        store.write_text_atomic(self.run_dir / "cancel.request", store.now_iso() + "\n")
        store.append_event(self.run_dir / "events.jsonl", "cancel_requested", {})
        live = LIVE.event(self.run_dir)
        if live is not None:
            live.set()
        settled = threading.Event()
        # Its own instance: this call reads the task again meanwhile, the helper may commit.
        twin = type(self)(self.workspace, self.id, self._state, self._launch, on_change=self._on_change,
                          progress=self._progress)
        threading.Thread(target=twin._cancel_when_free, args=(settled,), daemon=True,
                         name=f"autocode-cancel-{self.id}").start()
        settled.wait(CANCEL_WAIT_S)
        self._reload()
        return self.snapshot()

    def resume(self) -> TaskSnapshot:
        """Continue a task whose process stopped while it was working (after a crash or kill), or
        one that FAILED on the model endpoint or a budget: the agent loop goes on from its
        transcript under the budgets and endpoint limits the settings give now."""
        end_orphaned_programs()
        with self._changing():
            if self._state.state in PAUSES:
                return self.snapshot()
            if self._state.state == "FAILED" and self._reopen_after_provider_failure():
                self._advance()  # from the agent's transcript, under the settings as they are now
                return self.snapshot()
            if self._state.state in ENDS:
                if self._state.state == "COMPLETED" and self._state.learning.status == "pending":
                    self._learn()
                return self.snapshot()
            store.append_event(self.run_dir / "events.jsonl", "resumed", {"state": self._state.state})
            self._advance()
        return self.snapshot()


def list_tasks(workspace: Path | str) -> list[TaskSnapshot]:
    """Snapshots of every task saved in the workspace, oldest first."""
    root = start.workspace_root(workspace)
    out: list[TaskSnapshot] = []
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


