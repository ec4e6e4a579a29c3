"""Applying a verified change to the person's work tree: the APPLYING phase of a task.

Each touched file is merged three ways (the copy's base, the person's version on
disk or in the editor, the task's version); conflicts make the task wait for the
person's choice, and nothing is written until every file has a way through.
The per-file merge itself lives in `file_merge.py`.

Kept whole: the merge, the hand-over to the editor and the record of what reached the disk
share one apply attempt and its locks; split, each part would re-read what the other decided.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from autocode import diffnames
from autocode.errors import AutoCodeError
from autocode.tasks import store
from autocode.tasks.core import EDITOR_MARK, RunCore
from autocode.tasks.models import Conflict, HeadMoved, TaskResult
from autocode.tasks.state import ApplyAttempt, EditorHandoff, runs_root, stored_form

if TYPE_CHECKING:
    from autocode.tasks.file_merge import Editor, FilePlan


def _names(paths: list[str]) -> str:
    """Paths for a sentence: a name with a newline, quote or odd bytes is shown quoted as git shows it."""
    return ", ".join(diffnames.quote(p) for p in paths)


def _digest(data: bytes | None) -> str:
    """What a file on disk holds, in short (a missing file has its own value)."""
    return "absent" if data is None else hashlib.sha256(data).hexdigest()


def _unsaved_note(unsaved: list[str], marked: list[str]) -> str:
    """The part of the apply message that says which files wait for the person's save, and why."""
    plain = [rel for rel in unsaved if rel not in marked]
    with_markers = [rel for rel in unsaved if rel in marked]
    parts = []
    if plain:
        parts.append(f"{_names(plain)} {'holds' if len(plain) == 1 else 'hold'} the change in the editor "
                     "(any unsaved edits of yours kept)")
    if with_markers:
        parts.append(f"{_names(with_markers)} {'holds' if len(with_markers) == 1 else 'hold'} conflict markers "
                     "in the editor (your unsaved edits kept between them)")
    note = "; " + " and ".join(parts) + ", not on disk yet: save to complete"
    if with_markers:
        note += f" (resolve the markers in {_names(with_markers)} before or after you save)"
    return note


class ApplyPhase(RunCore):
    """The APPLYING phase and what it needs."""

    _editor: Editor | None

    def _step_applying(self) -> None:
        if not self._state.files:
            # Never COMPLETED for a change that touches nothing: there is nothing to have done.
            raise AutoCodeError(
                "the change touches no file, so there is nothing to apply; nothing was written. "
                "Start the task again.",
                kind="emptyChange",
            )
        self._say("completed", "merging the change into the workspace")
        head_moved = self.head_moved(ask_git=True)  # the person acts: git's own answer
        if head_moved:
            self._note("head_moved", head_moved.wire())
        # One task at a time changes the person's working tree.
        with store.holding(runs_root(self.workspace), name=".apply.lock") as apply_lock:
            self._apply_lock = apply_lock
            if store.busy(runs_root(self.workspace), EDITOR_MARK):
                self._apply_refused("another task's change is with the editor, waiting for its answer; "
                                    "nothing was written. Answer the editor, then approve again.", head_moved)
                return
            try:
                plans = self._plan_apply()
                marked_over = self._marked_over(plans)
            except Exception as exc:  # an unsafe path, an unreadable file, an editor gone: nothing written
                self._apply_refused(f"the change cannot be applied: {exc}; nothing was written", head_moved)
                return
            conflicts = [p for p in plans if p.action == "conflict"]
            if conflicts:
                paths = [p.path for p in conflicts]
                self._state.apply = ApplyAttempt(
                    status="conflicts",
                    applied=False,
                    written=[],
                    conflicts=paths,
                    details=[Conflict.model_validate(p.conflict_dict()) for p in conflicts],
                    via=None,
                    head_moved=head_moved,
                    message="both you and the task changed " + _names(paths)
                    + "; nothing was written. Choose for each file: keep mine, take theirs, or write "
                    "conflict markers to resolve in the editor.",
                )
                self._state.state = "WAITING_FOR_CONFLICT_RESOLUTION"
                self._commit("conflicts", {"conflicts": paths})
                return
            try:
                outcome_or_none = self._write_change(plans, head_moved)
            finally:
                self._apply_lock = None
            if outcome_or_none is None:
                return
            written, by_editor = outcome_or_none
            via: Literal["editor", "disk"] = "editor" if by_editor else "disk"
        store.kill_point("applied")
        chosen = dict(self._state.apply_choices or {})
        kept, undone = self._hunk_record()
        outcome = ApplyAttempt(
            status="applied",
            applied=True,
            written=written,
            written_by_editor=by_editor,
            conflicts=[],
            via=via,
            choices=chosen,
            head_moved=head_moved,
            message=(f"wrote {_names(written)}" if written else "nothing needed writing")
            + (f" ({_names(by_editor)} through the editor)" if by_editor else "")
            + (f"; {len(kept)} of {len(kept) + len(undone)} hunks taken, the rest left out as you chose"
               if undone else ""),
        )
        if self._state.apply_keep is not None:
            outcome.hunks_kept, outcome.hunks_undone = kept, undone
        if marked_over:
            outcome.marked_over = marked_over
        # Applied means on disk: read back, every written file must hold the change there.
        unsaved = self.not_on_disk(written, marked_over)
        if unsaved:
            outcome.unsaved = unsaved
            outcome.message += _unsaved_note(unsaved, list(marked_over))
            self._state.apply = outcome
            self._state.state = "WAITING_FOR_SAVE"
            self._commit("applied_unsaved", {"unsaved": unsaved, "written": written, "via": via})
            return
        self._complete_apply(outcome)

    def not_on_disk(self, written: list[str], marked_over: Mapping[str, str]) -> list[str]:
        """Of the written files, those whose file on disk does not hold the change: merging the
        task's change (the person's hunk choice in) into the disk's text would still change it.
        A file settled with conflict markers is on disk once the disk no longer holds what it
        held before the apply (`marked_over`): what the person then makes of the markers is
        theirs, as is a file they kept as theirs."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks import file_merge

        editor, self._editor = self._editor, None  # the disk only, never a buffer
        try:
            plans = {p.path: p for p in self._plan_apply()}
        finally:
            self._editor = editor
        disk = file_merge.read_disk(self.workspace)
        chosen = self._state.apply_choices or {}

        def waiting(rel: str) -> bool:
            if rel in marked_over:
                return _digest(disk(rel)) == marked_over[rel]
            return rel in plans and chosen.get(rel) not in ("markers", "mine") \
                and plans[rel].action != "none" and plans[rel].after != plans[rel].before

        return [rel for rel in written if waiting(rel)]

    def _marked_over(self, plans: list[FilePlan]) -> dict[str, str]:
        """For each file to be written with conflict markers, what its file on disk holds now."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks import file_merge

        chosen = self._state.apply_choices or {}
        disk = file_merge.read_disk(self.workspace)
        return {p.path: _digest(disk(p.path)) for p in plans if p.action == "write" and chosen.get(p.path) == "markers"}

    def _complete_apply(self, outcome: ApplyAttempt) -> None:
        """The change is applied and on disk: record it, and the task is COMPLETED."""
        _kept, undone = self._hunk_record()
        self._state.apply = outcome
        checkpoint = {
            "task_id": self.id,
            "time": store.now_iso(),
            "head": self._launch.get("head"),
            "tests": stored_form(self._state.tests),
            "apply": stored_form(outcome),
            "plan_revision": self._state.plan_revision,
            "approvals": [stored_form(a) for a in self._state.approvals],
            "human_pause_states": self._state.human_pause_states,
        }
        store.write_json_atomic(self.run_dir / "checkpoint.json", checkpoint)
        proof = self._state.proof
        self._state.result = TaskResult(
            status="completed",
            # The proof covered the whole change: a part of it is not what was proved.
            verified=proof is not None and proof.status == "verified" and not undone,
            partial=bool(undone),
            proof=proof,
            tests=self._state.tests,
            apply=outcome.result(),
            files=self._state.files,
        )
        self._state.state = "COMPLETED"
        self._commit("completed", {"apply": outcome.status, "written": outcome.written, "via": outcome.via})

    def _hunk_record(self) -> tuple[list[str], list[str]]:
        """(kept, left out) hunk ids of the per-hunk choice, as recorded with the approval."""
        for approval in reversed(self._state.approvals):
            if approval.kind == "completion":
                hunks = approval.hunks
                return (list(hunks.kept), list(hunks.undone)) if hunks is not None else ([], [])
        return [], []

    def _write_change(self, plans: list[FilePlan], head_moved: HeadMoved | None) -> tuple[list[str], list[str]] | None:
        """Write the planned files: the ones open in an editor that applies edits go through it
        (unsaved edits and undo included), the others to disk. Returns (written, through the
        editor), or None when the apply was refused (then nothing was written, in the editor or on
        disk).

        All or nothing: every check that can refuse comes first, then the disk files are written
        (each one's earlier content kept), then the editor is asked; if the editor refuses or
        fails, the disk files are put back as they were."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks import file_merge

        editor = self._editor
        brief = (self._launch.get("brief") or "").strip()
        label = "AutoCode: apply changes for " + brief.splitlines()[0][:80] if brief else "AutoCode: apply changes"
        changing = [p for p in plans if p.action in ("write", "delete")]
        by_editor: list[FilePlan] = []
        clean: list[FilePlan] = []
        try:
            if editor is not None and getattr(editor, "can_apply", True):
                opened = set(editor.open_paths([p.path for p in changing]))
                by_editor = [p for p in changing if p.path in opened and p.action == "write"]
            on_disk = [p for p in changing if p not in by_editor]
            unsaved = editor.unsaved([p.path for p in on_disk]) if editor is not None and on_disk else []
        except Exception as exc:  # the editor went away or failed: nothing is claimed
            self._editor_failed(exc, head_moved)
            return None
        if unsaved:
            self._unsaved_refused(unsaved, head_moved)
            return None
        written = self._write_disk(on_disk, head_moved)
        if written is None:
            return None
        saved, disk_written = written
        if by_editor and editor is not None:  # (only an editor's open files are by_editor)
            try:
                # Which buffers hold the person's unsaved edits: those keep them, merged, unsaved.
                had_unsaved = set(editor.unsaved([p.path for p in by_editor]))
                clean = [p for p in by_editor if p.path not in had_unsaved]
                ok, why, saved_clean = self._through_editor(editor, label, by_editor, clean)
                if ok is None:  # the editor cannot take it (e.g. not UTF-8 text): the disk, if safe
                    self._note("apply_from_disk", {"why": why})
                    paths = [p.path for p in by_editor]
                    unsaved = editor.unsaved(paths)
            except Exception as exc:
                file_merge.restore_files(self.workspace, saved)
                self._editor_failed(exc, head_moved)
                return None
            if ok is False:
                file_merge.restore_files(self.workspace, saved)
                self._apply_refused(
                    f"the editor did not apply the change ({why or 'no reason given'}); nothing was "
                    "written. Approve the completion again to retry.", head_moved,
                )
                return None
            if ok is None:
                if unsaved:
                    file_merge.restore_files(self.workspace, saved)
                    self._unsaved_refused(unsaved, head_moved)
                    return None
                more = self._write_disk(by_editor, head_moved, undo=saved)
                if more is None:
                    return None
                return disk_written + more[1], []
        if clean:
            self._note("saved_after_apply", {"by_editor": sorted(saved_clean),
                                             "waiting": sorted(p.path for p in clean if p.path not in saved_clean)})
        return [p.path for p in by_editor] + disk_written, [p.path for p in by_editor]

    def _through_editor(
        self, editor: Editor, label: str, plans: list[FilePlan], clean: list[FilePlan],
    ) -> tuple[bool | None, str, set[str]]:
        """Hand the files to the editor and wait for its answer without the task's locks: (its
        answer, its reason, the clean buffers it saved). The hand-over is committed first
        (`editor_handoff`) and marked by marker locks nobody waits on; meanwhile a second approval,
        a cancel, a resume and another task's apply are refused (docs/dev/architecture.md)."""
        paths = [p.path for p in plans]
        self._state.editor_handoff = EditorHandoff(paths=paths, since=store.now_iso())
        self._commit("handed_to_editor", {"paths": paths})
        self._say("completed", "waiting for the editor to apply the change")
        revision = self._state.revision
        saved: set[str] = set()
        try:
            with contextlib.ExitStack() as marks:
                for folder in (self.run_dir, runs_root(self.workspace)):
                    marks.enter_context(store.locked(folder, blocking=False, name=EDITOR_MARK))
                with self._locks_let_go():
                    ok, why = editor.apply(label, plans)
                    if ok and clean:
                        saved = self._save_clean(editor, clean)
        finally:
            self._reload()
            if self._state.revision != revision:  # nothing may change it meanwhile; say so if it did
                self._note("changed_while_in_editor", {"revision": self._state.revision})
            self._state.editor_handoff = None
        return ok, why, saved

    def _save_clean(self, editor: Editor, clean: list[FilePlan]) -> set[str]:
        """The paths the editor saved of the buffers that held nothing unsaved before the apply
        (`autocode/task/saveDocuments`). A file it did not save is never written behind its open
        buffer (the editor's next save would ask whether to overwrite): it waits for the person's
        save (`not_on_disk` finds it, the task is WAITING_FOR_SAVE)."""
        try:
            return set(editor.save(clean)) if hasattr(editor, "save") else set()
        except Exception as exc:
            self._note("save_failed", {"error": f"{type(exc).__name__}: {exc}"})
            return set()

    def _write_disk(
        self, plans: list[FilePlan], head_moved: HeadMoved | None, undo: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], list[str]] | None:
        """Write `plans` to disk, keeping what each file held; on a failure put back everything
        written (these and `undo`) and refuse. Returns (what to put back, paths written) or None."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks import file_merge

        saved: dict[str, Any] = {}
        try:
            saved = file_merge.save_files(self.workspace, [p.path for p in plans])
            written = file_merge.write_plans(self.workspace, plans)
        except (ValueError, OSError) as exc:
            try:
                file_merge.restore_files(self.workspace, {**(undo or {}), **saved})
                put_back = "nothing was written"
            except OSError as again:
                put_back = f"putting the files back also failed ({again}); check them with git status"
            self._apply_refused(f"writing the change failed: {exc}; {put_back}. Fix the cause, then approve "
                                "the completion again.", head_moved)
            return None
        return {**(undo or {}), **saved}, written

    def _editor_failed(self, exc: Exception, head_moved: HeadMoved | None) -> None:
        self._apply_refused(
            f"the editor did not take the change (it answered with an error or went away: "
            f"{type(exc).__name__}: {exc}); nothing was written. Approve the "
            "completion again to retry.",
            head_moved,
        )

    def _unsaved_refused(self, unsaved: list[str], head_moved: HeadMoved | None) -> None:
        self._apply_refused(
            f"{', '.join(unsaved)} {'has' if len(unsaved) == 1 else 'have'} unsaved edits in the editor, "
            "which cannot take this change itself; save or revert them, then approve again "
            "(nothing was written)", head_moved,
        )

    def _apply_refused(self, message: str, head_moved: HeadMoved | None) -> None:
        """The change was not applied: back to waiting for the completion approval (retry)."""
        self._state.apply = ApplyAttempt(
            status="not_applied", applied=False, written=[], conflicts=[], via=None,
            head_moved=head_moved, message=message,
        )
        self._state.apply_choices = {}
        self._state.apply_keep = None
        self._state.state = "WAITING_FOR_COMPLETION_APPROVAL"
        self._commit("apply_failed", {"message": message})

    def _plan_apply(self, buffers: Callable[[str], bytes | None] | None = None, *, choices: bool = True) -> list[FilePlan]:
        """Each touched file's three versions and what to do with it (the person's hunk and conflict
        choices in, unless `choices` is False). `buffers` gives the person's text of a file when
        the caller has it (a preview's documents); else the editor's buffer, else the disk."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks import file_merge

        copy = Path(self._launch["prep"]["copy"])
        files = self._state.files
        disk = file_merge.read_disk(self.workspace)
        editor = self._editor

        def mine(rel: str) -> bytes | None:
            if buffers is not None:
                given = buffers(rel)
                if given is not None:
                    return given
            if editor is not None:
                buffer = editor.read(rel)
                if buffer is not None:
                    return bytes(buffer)
            return disk(rel)

        def theirs(rel: str) -> bytes | None:
            target = file_merge.safe_path(copy, rel)
            return target.read_bytes() if target.is_file() and not target.is_symlink() else None

        base = self._base_reader(copy, theirs)
        plans = file_merge.plan_change(files, base, mine, theirs)
        renamed = diffnames.renamed_from(self._read_text("evidence/changes.diff"))
        for plan in plans:
            if plan.action == "conflict" and plan.reason == "deletedByTask" and plan.path in renamed:
                plan.reason = "renamed"  # the task moved a file the person changed
        if not choices:
            return plans
        keep = self._state.apply_keep
        if keep is not None:
            # lazy: only a per-hunk choice needs the hunks
            from autocode.tasks.hunks import keep_only

            plans = [keep_only(p, set(keep)) for p in plans]
        chosen = self._state.apply_choices or {}
        return [
            file_merge.resolve_file(p, chosen[p.path]) if p.action == "conflict" and p.path in chosen else p
            for p in plans
        ]

    def _base_reader(self, copy: Path, theirs: Callable[[str], bytes | None]) -> Callable[[str], bytes | None]:
        """The files as the copy captured them (saved before the change); else worked back from the
        task's result and its diff."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks import file_merge

        saved = self.run_dir / "evidence" / "base"
        try:
            index = store.read_json(saved / "index.json")
        except (FileNotFoundError, ValueError):
            index = None
        parts = file_merge.split_diff(self._read_text("evidence/changes.diff"))

        def base(rel: str) -> bytes | None:
            if index is not None and rel in index.get("files", {}):
                entry = index["files"][rel]
                return (saved / "files" / entry).read_bytes() if entry else None
            if rel in parts:
                return file_merge.unapply(theirs(rel), parts[rel])
            return theirs(rel)  # not in the diff: the task did not change it

        return base
