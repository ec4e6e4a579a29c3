"""The phase machine: requirements, planning, implementing and verifying, each a step that
calls a provider role and commits its outcome; `_advance` runs steps until the task
pauses for a person or ends, and turns any failure into a FAILED state with its kind.

Kept whole: every step reads the same launch, commits through the same state and honours
the same cancel checks, and the steps hand each other their evidence; split across modules
the one transition table would be scattered over several classes sharing one mutable state
(issue 35 asks for a task service that owns that state, which is where it should shrink).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode.errors import AutoCodeError, UsageError, fault_error
from autocode.providers import (
    Plan,
    ProviderConfig,
    ProviderContext,
    RequirementsReport,
    provider_for,
)
from autocode.providers.base import clean_lessons
from autocode.remedy import Advice, Remedy, RemedyKind
from autocode.tasks import ledger as ledger_mod
from autocode.tasks import models, store, verify
from autocode.tasks.apply_phase import ApplyPhase
from autocode.tasks.errors import NotAwaitingInput
from autocode.tasks.models import (
    Learning,
    Proof,
    Review,
    TaskError,
    TaskRemedy,
    TaskResult,
    TestRun,
)
from autocode.tasks.state import (
    ENDS,
    PAUSES,
    PHASE_OF,
    WORKING,
    Implementation,
    Requirements,
    Route,
    stored_form,
)

if TYPE_CHECKING:
    from autocode.proof.run import EarlyBase

# Failures a resume may continue from, and the settings it reads again (setting -> launch key).
# An engine that crashed, went silent or could not log in is run again from the copy's first
# record (`providers.engines.runner`), under the person's engine settings as they are then.
RESUMABLE_FAILURES = ("providerError", "budgetExhausted", "engineCrashed", "engineIdle", "engineLogin")
REFRESHED_ON_RESUME = {
    "max_turns": "max_turns", "token_budget": "token_budget", "time_budget": "time_budget",
    "request_timeout": "timeout", "max_output_tokens": "max_output_tokens", "context_window": "context_window",
    "engine_model": "engine_model", "engine_base_url": "engine_base_url", "engine_api_key_env": "engine_api_key_env",
    "engine_idle_timeout": "engine_idle_timeout",
}


# What a retried verification reads again from the settings (the rest stays as launched).
TEST_SETTINGS = ("test_command", "framework", "test_timeout")


class PhaseMachine(ApplyPhase):
    """The steps of a task between the person's actions."""

    # The base run begun beside the implementer (proof.run.start_base), handed to the proof.
    _early_base: EarlyBase | None = None

    def _advance(self) -> None:
        try:
            self._advance_steps()
        finally:
            if self._early_base is not None:  # the task stopped before its proof took it
                self._early_base.stop()
                self._early_base = None

    def _advance_steps(self) -> None:
        if self._editor_waiting(self._state):
            return  # another call handed the change to the editor and records its answer
        while self._state.state in WORKING:
            if self._cancel_requested():
                self._cancel_now()
                return
            current = self._state.state
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
                self._fail(exc.kind, exc.message, exc.advice)
            except Exception as exc:
                # A full or read-only disk is named as such (kind and remedy), anything else is a bug.
                fault = fault_error(exc)
                if fault is not None:
                    self._fail(fault.kind, fault.message)
                else:
                    self._fail("internalError", f"{type(exc).__name__}: {exc}")
        if self._state.state in PAUSES and self._cancel_requested():
            # Asked to stop while the last step was finishing: honour it now.
            self._cancel_now()
        if self._state.state == "COMPLETED" and self._state.learning.status == "pending":
            self._learn()

    def _reopen_after_provider_failure(self) -> bool:
        """A task that FAILED on the endpoint or a budget goes back to the phase it failed in, with the
        budgets and endpoint limits read from the settings now (so a raised budget counts); False
        for any other failure."""
        error = self._state.error
        if error is None:
            return False
        phase = {"requirements": "REQUIREMENTS", "planning": "PLANNING", "implementing": "IMPLEMENTING",
                 "verifying": "VERIFYING"}.get(error.phase)
        if error.kind not in RESUMABLE_FAILURES or phase is None:
            return False
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.providers.agent.session import reopen_loops
        from autocode.settings import resolve_settings

        settings = resolve_settings(self.workspace)
        provider = dict(self._launch.get("provider") or {})
        changed = {}
        for name, key in REFRESHED_ON_RESUME.items():
            value = settings.value(name)
            if value is not None and value != provider.get(key):
                changed[name] = value
                provider[key] = value
        if changed:
            self._launch["provider"] = provider
            store.write_json_atomic(self.run_dir / "launch.json", self._launch)
        reopened = reopen_loops(self.run_dir)
        self._state.state = phase
        self._state.error = None
        self._state.result = None
        self._commit("resumed", {"after": error.kind, "settings": changed, "loops": reopened})
        return True

    def _refresh_test_settings(self) -> None:
        """Read the test settings again (a retried verification after the person changed the test
        command); a `--test-command` given at start stays first, as at launch."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks.launch import resolve_launch

        options = self._launch.get("options") or {}
        flags = {"test_command": options["test_command"]} if options.get("test_command") else {}
        fresh = resolve_launch(self.workspace, flags, options.get("package"))
        values = dict(self._launch.get("values") or {})
        origins = dict(values.get("origins") or {})
        settings = dict(self._launch.get("settings") or {})
        for name in TEST_SETTINGS:
            values[name] = fresh.values.get(name)
            origins[name] = (fresh.values.get("origins") or {}).get(name)
            if name in fresh.settings:
                settings[name] = fresh.settings[name]
        values["origins"] = origins
        if values != self._launch.get("values") or settings != self._launch.get("settings"):
            self._launch = {**self._launch, "values": values, "settings": settings}
            store.write_json_atomic(self.run_dir / "launch.json", self._launch)

    def _fail(self, kind: str, message: str, advice: Advice | None = None) -> None:
        error = TaskError(kind=kind, message=message, phase=PHASE_OF[self._state.state])
        if advice is not None:
            error.remedy = TaskRemedy.model_validate(advice.to_dict())
        self._state.error = error
        self._state.result = TaskResult(status="failed", error=error, tests=self._state.tests, proof=self._state.proof)
        self._state.state = "FAILED"
        self._commit("failed", {"kind": kind, "message": message})

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        with super()._changing():
            yield
        self._honour_late_cancel()

    def _honour_late_cancel(self) -> bool:
        """A cancel asked for while this process held the lock, after its last look at the request,
        found the lock busy and left the request: honour it now that the lock is free. Without
        this the task would wait at its next pause with the person's cancel lying unread."""
        if not self._cancel_requested():
            return False
        with store.locked(self.run_dir, blocking=False) as got:
            if not got or not self._cancel_requested():
                return False  # whoever holds the lock now looks at the request when it lets go
            self._reload()
            if self._state.state in ENDS or self._editor_waiting(self._state):
                with contextlib.suppress(FileNotFoundError):
                    (self.run_dir / "cancel.request").unlink()
                return False
            self._cancel_now()
            return True

    def _refuse_cancel_if_settled(self) -> None:
        if self._state.state in ENDS:
            raise NotAwaitingInput(f"task {self.id} already ended ({self._state.state.lower()})")
        if self._editor_waiting(self._state):
            raise NotAwaitingInput(
                f"task {self.id} has handed its change to the editor and waits for its answer; accept or "
                "decline it there (declining leaves the files as they were), then cancel"
            )

    def _cancel_when_free(self, settled: threading.Event) -> None:
        """Wait for the run's lock and honour a cancel request still pending then."""
        try:
            with store.locked(self.run_dir):
                if (self.run_dir / "cancel.request").exists():
                    self._reload()
                    if self._state.state in ENDS or self._editor_waiting(self._state):
                        (self.run_dir / "cancel.request").unlink(missing_ok=True)
                    else:
                        self._cancel_now()
        except Exception as exc:  # a helper must not break the caller: the working call still looks
            with contextlib.suppress(Exception):
                self._note("cancel_helper_failed", {"error": repr(exc)})
        finally:
            settled.set()

    def _cancel_now(self) -> None:
        self._state.state = "CANCELLED"
        self._state.result = TaskResult(status="cancelled")
        with contextlib.suppress(FileNotFoundError):
            (self.run_dir / "cancel.request").unlink()
        self._commit("cancelled", {})
        self._release_prep_copy()

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
            # The investigator's citations once it has run, else the first paths of the inventory.
            citations=list((self._state.requirements.investigated if self._state.requirements else None)
                           or launch.get("citations") or []),
            inputs=[str(i["path"]) for i in prep.get("inputs") or [] if isinstance(i, dict) and i.get("path")],
            project_conventions=list(launch.get("project_conventions") or []),
            answers=ledger_mod.answers_for_context(self._state.ledger),
            recalled=recalled,
            feedback=list(self._state.feedback),
            save_memory=self._save_memory,
            note=self._note,
            run_dir=self.run_dir,
            cancelled=self._cancel_requested,
            say=lambda message: self._say(PHASE_OF[self._state.state], message),
            run_tests=self._tests_in_copy if self._launch.get("values", {}).get("test_command") else None,
            agent=str(self._launch.get("values", {}).get("agent") or "implementer"),
            map_paths=list(launch.get("map_paths") or launch.get("citations") or []),
        )

    def _tests_in_copy(self, limit: float | None = None) -> dict[str, Any]:
        """The project's test command in the copy, for the implementer's run_tests tool.

        `limit` is the agent's time left: the run stops there if the test timeout is later."""
        values = self._launch.get("values", {})
        copy = Path(self._launch["prep"]["copy"])
        package = (self._launch.get("options") or {}).get("package")
        timeout = float(values.get("test_timeout") or 600)
        if limit is not None:
            timeout = min(timeout, limit)
        cwd = copy / package if package else copy
        return verify.run_tests(
            str(values["test_command"]), cwd, timeout, self._cancel_requested, copy=copy, workspace=self.workspace,
            policy=self._sandbox_policy(), on_output=self._test_progress("implementing"),
        )

    def _test_progress(self, phase: str) -> Any:
        """A line callback for the test command's output: the latest line as progress, at most
        a few times a second (a suite prints thousands of lines; editors show the last)."""
        last = [0.0]

        def show(line: str) -> None:
            now = time.monotonic()
            if line.strip() and now - last[0] >= 0.25:
                last[0] = now
                self._say(phase, line.strip()[:200])

        return show

    def _sandbox_policy(self) -> Any:
        """The sandbox policy frozen at launch (`autocode.sandbox.Policy`); strict when absent."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode import sandbox

        return sandbox.Policy.from_dict(self._launch.get("sandbox"))

    def _save_memory(self, content: str, item: dict[str, Any]) -> dict[str, Any]:
        # lazy: not needed by `autocode task list`, which imports this module
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
        route = Route(role=role, provider=provider.name, model=provider.model)
        if route not in self._state.routes:
            self._state.routes.append(route)
        return provider

    def _step_requirements(self) -> None:
        self._say("requirements", "reading the brief and the repository")
        ctx = self._context()
        cites = self._use_role("investigator").investigate(ctx)
        ctx.citations = list(dict.fromkeys([*cites, *ctx.citations]))  # the investigator's first
        report = self._use_role("requirements").requirements(ctx)
        known = {c["question"] for c in ctx.project_conventions}
        at = store.now_iso()
        led = self._state.ledger = ledger_mod.empty_ledger()
        reused: list[str] = []
        for question in report.questions:
            if question.convention and question.text in known:
                reused.append(question.id)
                continue
            ledger_mod.issue_question(led, question.id, question.text, category=question.category,
                                      convention=question.convention, default=question.default, asked=True, at=at)
        for decision in report.machine_decisions:
            ledger_mod.issue_question(led, decision.question_id, decision.text, category=decision.category,
                                      convention=decision.convention, asked=False, at=at)
            ledger_mod.record_answer(led, decision.question_id, decision.answer, "machine",
                                     ledger_mod.DecidedBy(channel="machine", actor="requirements", time=at))
        data = report.to_dict()
        data["questions"] = [q.to_dict() for q in report.questions if q.id not in reused]
        data["answered_by_project_data"] = reused
        data["investigated"] = cites
        self._state.requirements = Requirements.model_validate(data)
        self._state.state = "WAITING_FOR_USER" if ledger_mod.pending_questions(led) else "PLANNING"
        self._commit("requirements_done", {"questions": len(ledger_mod.pending_questions(led)), "reused": reused})

    def _step_planning(self) -> None:
        self._say("planning", "writing the plan")
        ctx = self._context()
        requirements = RequirementsReport.from_dict(stored_form(self._state.requirements) or {})
        plan = self._use_role("planner").plan(ctx, requirements)
        self._state.plan_revision += 1
        self._state.plan = models.Plan.model_validate(plan.to_dict())
        self._state.state = "WAITING_FOR_PLAN_APPROVAL"
        self._commit("plan_ready", {"plan_revision": self._state.plan_revision})

    def _step_implementing(self) -> None:
        self._say("implementing", "changing the prep copy")
        ctx = self._context()
        if ctx.copy is None or not ctx.copy.is_dir():
            raise UsageError(f"the prep copy {ctx.copy} is gone; start the task again")
        diff_path = self.run_dir / "evidence" / "changes.diff"
        if diff_path.exists() and verify.patch_already_applied(ctx.copy, diff_path):
            diff = diff_path.read_text(encoding="utf-8", errors="surrogateescape")
        else:
            self._start_early_base(ctx.copy)
            plan = self._state.plan.model_dump() if self._state.plan is not None else {}
            implementation = self._use_role("implementer").implement(ctx, Plan.from_dict(plan))
            diff = implementation.diff
            if not diff.strip():
                raise AutoCodeError("the implementer produced no change", kind="emptyChange")
            store.write_text_atomic(diff_path, diff)
            base = self.run_dir / "evidence" / "base"
            if implementation.applied:  # the agent loop's tools already changed the copy
                verify.capture_base(ctx.copy, verify.diff_files(diff), base, before=verify.agent_originals(self.run_dir))
            else:
                verify.capture_base(ctx.copy, verify.diff_files(diff), base)
                verify.apply_in_copy(ctx.copy, diff_path)
            store.kill_point("patched")
        files = verify.diff_files(diff)
        changed = verify.changed_files(ctx.copy, files, self.run_dir / "evidence" / "base")
        if not changed:
            named = ", ".join(files) if files else "no file AutoCode could read"
            raise AutoCodeError(
                f"the change leaves every file as it was (its diff names {named}); nothing would be "
                f"applied, so the task cannot complete. See {diff_path}; ask for the change again.",
                kind="emptyChange",
            )
        store.write_text_atomic(
            self.run_dir / "evidence" / "head.diff",
            verify.diff_against_head(self.workspace, ctx.copy, files, self._launch.get("head")),
        )
        self._state.implementation = Implementation(files=files, bytes=len(diff.encode()))
        self._state.state = "VERIFYING"
        self._commit("implemented", {"files": files})

    def _start_early_base(self, copy: Path) -> None:
        """Run the tests on the unchanged copy while the implementer works: the proof needs that
        run, and it costs nothing to wait for when it is already done."""
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.proof.run import start_base

        values = self._launch.get("values", {})
        command = values.get("test_command")
        if not command:
            return
        package = (self._launch.get("options") or {}).get("package")
        self._early_base = start_base(
            str(command),
            copy=copy,
            workspace=self.workspace,
            cwd_rel=package or "",
            framework=values.get("framework"),
            timeout=float(values.get("test_timeout") or 600),
            cancelled=self._cancel_requested,
            policy=self._sandbox_policy(),
            cache_dir=self.workspace / ".autocode" / "cache" / "baseline",
        )

    def _step_verifying(self) -> None:
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.proof.run import prove

        values = self._launch.get("values", {})
        command = values.get("test_command")
        if not command:
            raise AutoCodeError(
                Advice("no test command is known for this repository; ", Remedy(RemedyKind.SET_TEST_COMMAND)),
                kind="noTestCommand",
            )
        copy = Path(self._launch["prep"]["copy"])
        package = (self._launch.get("options") or {}).get("package")
        cwd = copy / package if package else copy
        timeout = float(values.get("test_timeout") or 600)
        evidence = self.run_dir / "evidence"
        self._say("verifying", f"running {command}")
        proof = prove(
            str(command),
            copy=copy,
            workspace=self.workspace,
            base_files=verify.base_files(evidence / "base"),
            cwd_rel=package or "",
            framework=values.get("framework"),
            timeout=timeout,
            cancelled=self._cancel_requested,
            output_file=evidence / "test-output.txt",
            cache_dir=self.workspace / ".autocode" / "cache" / "baseline",
            policy=self._sandbox_policy(),
            progress=lambda message: self._say("verifying", message),
            on_output=self._test_progress("verifying"),
            early_base=self._early_base,
        )
        self._early_base = None
        run = proof.candidate
        tests = {
            "command": str(command),
            "cwd": cwd.name,
            "exit_code": run.exit_code if run.exit_code is not None else -1,
            "status": run.status,
            "seconds": run.seconds,
            "sandbox": run.sandbox,
            "output_tail": run.output[-verify.OUTPUT_TAIL :],
        }
        store.write_json_atomic(evidence / "tests.json", {**tests, "results": proof.results()})
        store.write_json_atomic(evidence / "proof.json", proof.to_dict())
        self._state.tests = TestRun.model_validate(tests)
        self._state.proof = Proof.model_validate(proof.to_dict())
        if run.status == "cancelled":
            self._cancel_now()
            return
        verdict = proof.verdict
        if verdict.status == "regressed":
            self._state.review = None
            raise AutoCodeError(f"{verdict.summary()}; the output is in {evidence / 'test-output.txt'}",
                                kind="testsRegressed")
        if verdict.status == "failed":
            self._state.review = None
            raise AutoCodeError(f"{verdict.summary()}; the output is in {evidence / 'test-output.txt'}",
                                kind="testsFailed")
        diff = self._read_text("evidence/changes.diff")
        review = self._use_role("reviewer").review(self._context(), diff, tests["exit_code"])
        self._state.review = Review.model_validate(review.to_dict())
        self._state.state = "WAITING_FOR_COMPLETION_APPROVAL"
        self._commit("verified", {"exit_code": tests["exit_code"], "verdict": verdict.status, "proofs": verdict.proofs})

    def _learn(self) -> None:
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks.learning import learn

        try:
            outcome = learn(self.workspace, self._launch, self._state)
            learning = Learning.model_validate(outcome)
        except Exception as exc:  # learning can never make completion fail
            outcome = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
            learning = Learning.model_validate(outcome)
        self._record_lessons()
        self._state.learning = learning
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
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.prep.retention import release_task_copy

        try:
            # lazy: not needed by `autocode task list`, which imports this module
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
        if self._state.proof is None or self._state.proof.status != "verified":
            return  # a change nothing proved teaches nothing
        lessons = clean_lessons(self._state.review.lessons if self._state.review else [])
        if not lessons:
            return
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.tasks.launch import record_lessons

        agent = str(self._launch.get("values", {}).get("agent") or "implementer")
        try:
            ids = record_lessons(self.workspace, agent, self.id, lessons)
        except Exception as exc:  # memory trouble never fails completion
            self._note("lessons_not_recorded", {"count": len(lessons), "error": f"{type(exc).__name__}: {exc}"})
            return
        self._note("lessons_recorded", {"ids": ids})
