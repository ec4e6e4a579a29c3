"""The person's review of a finished change and the ways on from it: the preview of what
applying does (git's merge against their text, as hunks), the check of the hunks they kept, a
verification run again on the same change, and the save that puts an applied change on disk.

`TaskRun` (run.py) is built on these steps; the hunks themselves are in `hunks.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode.errors import AutoCodeError, UsageError
from autocode.tasks.errors import NotAwaitingInput
from autocode.tasks.machine import PhaseMachine
from autocode.tasks.models import TaskPreview, TaskSnapshot
from autocode.tasks.state import Approval, HunkChoice, Source, planned_tests

if TYPE_CHECKING:
    from autocode.tasks.file_merge import Editor


def end_orphaned_programs() -> None:
    """Before a step runs again: end what a killed process left running (its test command)."""
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.sandbox import reap_orphans

    reap_orphans()


class ReviewSteps(PhaseMachine):
    """What a person does with a change between its verification and its completion."""

    def preview(self, buffers: Callable[[str], bytes | None] | None = None, *, editor: Editor | None = None) -> TaskPreview:
        """What approving the completion would do to each touched file, nothing written: git's
        three-way merge against the person's text (`buffers`, else the editor's buffer, else the
        disk) and the hunks between the two (`hunks.py`)."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks.hunks import preview_files

        with self._changing():
            if self._state.state not in ("WAITING_FOR_COMPLETION_APPROVAL", "WAITING_FOR_CONFLICT_RESOLUTION"):
                raise NotAwaitingInput(self._not_waiting("a review of its change"))
            self._editor = editor
            try:
                plans = self._plan_apply(buffers, choices=False)
            finally:
                self._editor = None
            files = preview_files(plans)
            return TaskPreview(
                task_id=self.id, revision=self._state.revision, files=files,
                overlaps=sum(h.overlaps for f in files for h in f.hunks),
                conflicts=sum(h.conflict for f in files for h in f.hunks),
            )

    def _check_kept(self, keep: list[str], editor: Editor | None) -> HunkChoice:
        """The person's per-hunk choice against the change as it merges now: {kept, undone}; an id
        it no longer has is refused before anything is recorded or written."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks.hunks import file_hunks

        if not isinstance(keep, list) or not all(isinstance(k, str) for k in keep):
            raise UsageError("keep must be a list of hunk ids (from the preview)")
        self._editor = editor
        try:
            plans = self._plan_apply(choices=False)
        finally:
            self._editor = None
        known = [h.id for p in plans for h in file_hunks(p)[2]]
        unknown = sorted(set(keep) - set(known))
        if unknown:
            raise AutoCodeError(
                f"hunk {', '.join(unknown)} is not in the change as it merges now (the file changed "
                "since the preview); nothing was written. Preview the change again and choose from its hunks",
                kind="hunksChanged", data={"unknown": unknown},
            )
        return HunkChoice(kept=[h for h in known if h in set(keep)], undone=[h for h in known if h not in set(keep)])

    def confirm_saved(self) -> TaskSnapshot:
        """The person saved files the change went into with their unsaved edits: read the disk
        back and complete the task once every file holds the change there."""
        with self._changing():
            if self._state.state != "WAITING_FOR_SAVE":
                return self.snapshot()
            if self._state.apply is None:
                return self.snapshot()
            outcome = self._state.apply.model_copy()
            waiting = list(outcome.unsaved)
            pending = self.not_on_disk(waiting, outcome.marked_over)
            if pending == waiting:
                return self.snapshot()
            if pending:
                outcome.unsaved = pending
                self._state.apply = outcome
                self._commit("saved", {"unsaved": pending})
                return self.snapshot()
            outcome.unsaved = []
            message = outcome.message
            cut = message.rfind("; ", 0, max(message.find(" in the editor ("), 0))
            outcome.message = (message[:cut] if cut >= 0 else message) + "; saved by you, on disk"
            self._mark_pause_resolved("WAITING_FOR_SAVE", by_person=True)
            self._complete_apply(outcome)
            self._advance()  # learning, now that the task completed
        return self.snapshot()

    def retry_verification(self, source: Source | Mapping[str, Any] | str) -> TaskSnapshot:
        """Prove the task's existing change again: after the person fixed the environment or the
        test command (read again from the settings, a `--test-command` given at start still
        first). For a task that FAILED while verifying, one waiting for the completion approval,
        or one whose verifying step was interrupted; the change in the copy is not touched."""
        src = Source.coerce(source)
        end_orphaned_programs()
        with self._changing():
            s = self._state
            failed_verifying = s.state == "FAILED" and s.error is not None and s.error.phase == "verifying" \
                and bool(s.implementation)
            if not (failed_verifying or s.state in ("WAITING_FOR_COMPLETION_APPROVAL", "VERIFYING")):
                raise NotAwaitingInput(
                    f"task {self.id} has no verification to retry (state {s.state}); only a task that "
                    "failed while verifying, one waiting for the completion approval or one interrupted "
                    "while verifying can be verified again"
                )
            copy = Path(str((self._launch.get("prep") or {}).get("copy") or ""))
            if not str(copy) or not copy.is_dir():
                raise AutoCodeError(
                    f"the prep copy of task {self.id} is gone, so its change cannot be proved again; "
                    "start the task again", kind="copyGone",
                )
            before = planned_tests(self._launch)
            self._refresh_test_settings()
            tests = planned_tests(self._launch)
            self._state.approvals.append(Approval(kind="retry_verification", source=src.decided(), tests=tests))
            previous = {"state": s.state, "error": s.error.kind if s.error else None,
                        "proof": s.proof.status if s.proof else None}
            s.state, s.error, s.result, s.apply, s.apply_choices = "VERIFYING", None, None, None, {}
            self._commit("verification_retried", {
                "channel": src.channel, "before": previous, "command": tests.command,
                "command_changed": before.command != tests.command,
            })
            self._advance()
        return self.snapshot()
