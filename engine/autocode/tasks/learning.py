"""Learning at completion: what a finished task may add to `.autocode/project.json`.

Runs only after the completed checkpoint and its evidence are written. It
hands the record part the observed framework and test command (not for
--package runs, not for a command that could not run, never one given as a flag or
already set in config.toml or pyproject), the eligible
convention answers verbatim, the routes used and the pause states that
needed a person. Answers that carry a credential are dropped whole here
(and the record part checks again). Nothing here can change the task's
state or result; problems are returned for the run's events and doctor. A change
that was not proved (verdict other than verified) teaches nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode.record import Convention, ObservedFacts, Route, merge_record
from autocode.record.origin import note_origin
from autocode.scrub import contains_secret
from autocode.tasks.ledger import eligible_conventions

if TYPE_CHECKING:
    from autocode.tasks.state import TaskState

# Where a learned test command may come from: detection (or the record itself). A flag is for
# one invocation and config.toml or pyproject already hold theirs; none is copied into the record.
LEARNABLE_ORIGINS = frozenset({"detected", "learned"})


def learn(workspace: Path, launch: dict[str, Any], state: TaskState) -> dict[str, Any]:
    package = bool((launch.get("options") or {}).get("package"))
    values = launch.get("values") or {}
    tests = state.tests
    ran = tests is not None and tests.status == "finished" and tests.exit_code == 0
    origin = (values.get("origins") or {}).get("test_command")
    framework = values.get("framework") if not package else None
    command = values.get("test_command") if (ran and not package and origin in LEARNABLE_ORIGINS) else None

    verdict = state.proof.status if state.proof is not None else "unproven"
    if verdict != "verified":
        # A change nothing proved (applied on the person's typed confirmation) teaches nothing.
        return {
            "status": "done",
            "written": False,
            "omitted": [f"nothing learned: the change was {verdict}, not verified"],
        }
    eligible = eligible_conventions(state.ledger)
    kept: list[dict[str, str]] = []
    dropped: list[str] = []
    for item in eligible:
        if item.get("redacted") or contains_secret(item["question"]) or contains_secret(item["answer"]):
            dropped.append(item["question_id"])
        else:
            kept.append(item)

    routes = [Route(role=r.role, provider=r.provider, model=r.model) for r in state.routes if r.model]
    observed = ObservedFacts(
        framework=framework,
        test_command=command,
        routes=routes,
        human_pause_states=list(state.human_pause_states),
    )
    answers = [Convention(question=item["question"], answer=item["answer"]) for item in kept]
    result = merge_record(workspace, observed, answers, package=package)
    errors = [str(e) for e in getattr(result, "errors", []) or []]
    if command is not None and getattr(result, "written", False) and not errors:
        note_origin(workspace, command, state.id or str(launch.get("task_id") or ""))
    omitted = [str(o) for o in getattr(result, "omitted", []) or []]
    return {
        "status": "failed" if errors else "done",
        "written": bool(getattr(result, "written", False)),
        "path": str(getattr(result, "path", "")),
        "conventions": [item["question_id"] for item in kept],
        "dropped_for_credentials": dropped,
        "omitted": omitted,
        "errors": errors,
        "framework": framework,
        "test_command": command,
    }

