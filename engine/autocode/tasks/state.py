"""A task's persisted state (`state.json`), its states and phases, and who acts on it.

`TaskState` is the typed form of the file every committed change rewrites.
Its field names are the file's keys, so folders written before it existed
load unchanged; top-level keys it does not know are kept and written back (a
newer version's data is never dropped by an older one).

Every part of it is a model, validated once when the file is read (a part
changed by hand is refused then, naming the key), and the code reads them by
attribute. The phase results (plan, tests, proof, review, apply, learning,
result, error) are the models a client sees (`autocode.tasks.models`), and the
snapshot hands them on as they are; the parts no client sees (the answer
ledger, requirements, approvals, routes, implementation) are `StoredModel`s
here and in `ledger.py`. On disk they stay the snake_case objects the engine
has always written, with the keys that were written and no more
(`stored_form`), so a file round-trips with its keys unchanged. Keys a newer
version added are kept everywhere but inside a phase result, where the wire
model drops them when this version rewrites the file.

Kept whole: the parts of `state.json` and the `TaskState` that holds them are one on-disk
schema, read and reviewed together; a change to one part is a change to the file's form.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer

from autocode.errors import UsageError
from autocode.tasks import ledger as ledger_mod
from autocode.tasks import store
from autocode.tasks.ledger import DecidedBy, Ledger, LedgerQuestion
from autocode.tasks.models import (
    ApplyResult,
    Conflict,
    HeadMoved,
    Learning,
    Plan,
    Proof,
    Question,
    Review,
    TaskError,
    TaskRemedy,
    TaskResult,
    TestRun,
)

if TYPE_CHECKING:
    from autocode.prep.core import PrepResult
    from autocode.tasks.models import TaskSnapshot

RUNS_DIR = Path(".autocode") / "runs"
TASK_ID = re.compile(r"^t-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")

WORKING = ("REQUIREMENTS", "PLANNING", "IMPLEMENTING", "VERIFYING", "APPLYING")
PAUSES = (
    "WAITING_FOR_USER",
    "WAITING_FOR_PLAN_APPROVAL",
    "WAITING_FOR_COMPLETION_APPROVAL",
    "WAITING_FOR_CONFLICT_RESOLUTION",
    "WAITING_FOR_SAVE",
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
    "WAITING_FOR_SAVE": "verifying",
    "COMPLETED": "completed",
    "FAILED": "failed",
    "CANCELLED": "cancelled",
}
NEEDS_OF = {
    "WAITING_FOR_USER": "answer_questions",
    "WAITING_FOR_PLAN_APPROVAL": "approve_plan",
    "WAITING_FOR_COMPLETION_APPROVAL": "approve_completion",
    "WAITING_FOR_CONFLICT_RESOLUTION": "resolve_conflicts",
    "WAITING_FOR_SAVE": "save_files",
}


def runs_root(workspace: Path) -> Path:
    return workspace / RUNS_DIR


class ApplyAttempt(ApplyResult):
    """An apply attempt as `state.json` keeps it: the wire's `ApplyResult` and, while the task
    waits for a conflict choice, each conflicted file's details (sent as `needs.conflicts`)."""

    details: list[Conflict] = Field(default_factory=list)
    marked_over: dict[str, str] = Field(default_factory=dict)
    """Per file settled with conflict markers: a digest of what its file on disk held just
    before the apply. Markers cannot be merged again to see whether they reached the disk;
    the file has reached it once the disk holds anything else (the person's save, markers
    resolved or not)."""

    def result(self) -> ApplyResult:
        """The attempt as the wire shows it (its conflict details are sent apart)."""
        return ApplyResult.model_validate(self.model_dump(exclude={"details", "marked_over"}, exclude_unset=True))


# Keys `state.json` spells as the wire does: these objects were written in their wire form
# before the state had models (HEAD's move, and a failure's remedy).
_WIRE_SPELLED: dict[type[BaseModel], dict[str, str]] = {HeadMoved: {"from_": "from"}, TaskRemedy: {"task_id": "taskId"}}


def stored_form(value: BaseModel | None) -> dict[str, Any] | None:
    """A part of the state as `state.json` keeps it: snake_case, only the keys that were given (a
    part read from an older file is written back with its own keys, no defaults added) and the
    keys a newer version added to a `StoredModel`."""
    if value is None:
        return None
    spelled = _WIRE_SPELLED.get(type(value), {})
    data = {
        spelled.get(name, name): _stored_value(getattr(value, name))
        for name in type(value).model_fields
        if name in value.model_fields_set
    }
    for key, item in (value.model_extra or {}).items():  # a newer version's keys, kept
        data[key] = _stored_value(item)
    return data


def _stored_value(value: object) -> object:
    if isinstance(value, BaseModel):
        return stored_form(value)
    if isinstance(value, list):
        return [_stored_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _stored_value(item) for key, item in value.items()}
    return value


class Implementation(store.StoredModel):
    """The change the implementer made in the copy."""

    files: list[str]
    """The files its diff touches."""
    bytes: int
    """The diff's size."""


class Route(store.StoredModel):
    """A role and the provider (and model) that played it."""

    role: str
    provider: str
    model: str | None


class MachineDecision(store.StoredModel):
    """A choice the requirements role made itself instead of asking (never learned)."""

    question_id: str
    text: str
    answer: str
    category: str = "other"
    convention: str | None = None


class Requirements(store.StoredModel):
    """What the requirements role found: the questions it asked, what it decided itself, and the
    files the investigator cited."""

    summary: str
    questions: list[Question] = Field(default_factory=list)
    """The questions asked (those the project's record already answered left out)."""
    acceptance_criteria: list[str] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list)
    machine_decisions: list[MachineDecision] = Field(default_factory=list)
    answered_by_project_data: list[str] = Field(default_factory=list)
    """Ids of the questions a learned convention answered."""
    investigated: list[str] = Field(default_factory=list)
    """The investigator's citations (the planner and implementer read these first)."""


class PlannedTests(store.StoredModel):
    """The exact test command a task will run, where it came from and in which folder."""

    command: str | None
    origin: str
    """flag, config, pyproject, learned, detected or default."""
    source: str
    """The settings file (or `built-in`) the command was read from."""
    folder: str


class HunkChoice(store.StoredModel):
    """With a per-hunk choice: the hunk ids applied and those left out."""

    kept: list[str]
    undone: list[str]


class Approval(store.StoredModel):
    """One decision a person (or a machine channel) made: a plan approved or rejected, a
    completion approved, conflicts resolved, a verification retried."""

    kind: str
    """plan, plan_rejected, completion, conflicts_resolved or retry_verification."""
    source: DecidedBy
    plan_revision: int | None = None
    """For plan and plan_rejected."""
    tests: PlannedTests | None = None
    """The tests the approval let run (plan, retry_verification)."""
    feedback: str | None = None
    """What to change (plan_rejected)."""
    confirmed: str | None = None
    """The confirmation word typed for a change nothing proves (completion)."""
    hunks: HunkChoice | None = None
    """The per-hunk choice (completion)."""
    choices: dict[str, str] | None = None
    """The choice per conflicted file (conflicts_resolved)."""


MODELLED = ("ledger", "requirements", "plan", "tests", "proof", "review", "apply", "learning", "result", "error", "implementation")


class EditorHandoff(store.StoredModel):
    """The change handed to the editor and not yet answered: which files, since when."""

    paths: list[str]
    since: str


class TaskState(BaseModel):
    """`state.json`: where the task is and everything decided so far."""

    model_config = ConfigDict(extra="allow", validate_assignment=False)

    version: int = 1
    id: str
    created: str
    updated: str
    state: str
    revision: int = 0
    plan_revision: int = 0
    ledger: Ledger = Field(default_factory=ledger_mod.empty_ledger)
    requirements: Requirements | None = None
    plan: Plan | None = None
    feedback: list[str] = Field(default_factory=list)
    approvals: list[Approval] = Field(default_factory=list)
    paused_states: list[str] = Field(default_factory=list)
    human_pause_states: list[str] = Field(default_factory=list)
    routes: list[Route] = Field(default_factory=list)
    implementation: Implementation | None = None
    tests: TestRun | None = None
    proof: Proof | None = None
    review: Review | None = None
    apply: ApplyAttempt | None = None
    apply_choices: dict[str, str] = Field(default_factory=dict)
    """The person's choice per conflicted file (mine, theirs, markers) until the apply succeeds."""
    apply_keep: list[str] | None = None
    """The hunk ids the person kept (None: the whole change), until the apply succeeds."""
    editor_handoff: EditorHandoff | None = None
    """Set while the change is with the editor (`workspace/applyEdit`) and the run's locks are let go."""
    learning: Learning = Field(default_factory=lambda: Learning(status="pending"))
    result: TaskResult | None = None
    error: TaskError | None = None

    @classmethod
    def new(cls, task_id: str) -> TaskState:
        now = store.now_iso()
        return cls(id=task_id, created=now, updated=now, state="REQUIREMENTS")

    @field_serializer(*MODELLED)
    def _stored(self, value: BaseModel | None) -> dict[str, Any] | None:
        return stored_form(value)

    @field_serializer("approvals", "routes")
    def _stored_list(self, value: list[Approval] | list[Route]) -> list[dict[str, Any] | None]:
        return [stored_form(item) for item in value]

    @classmethod
    def read(cls, path: Path) -> TaskState:
        """The state saved at `path` (FileNotFoundError, or ValueError naming the first key that
        is not as a task state has it)."""
        data = store.read_json(path)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(part) for part in first["loc"]) or "the file"
            raise ValueError(f"{path.name}: {at}: {first['msg']}") from None

    def to_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        if not data["apply_choices"] and "apply_choices" not in self.model_fields_set:
            del data["apply_choices"]  # written only once a choice was made, as before
        if data["apply_keep"] is None:
            del data["apply_keep"]  # written only with a per-hunk choice
        if data["editor_handoff"] is None:
            del data["editor_handoff"]  # written only while the editor holds the change
        if data["proof"] is None and "proof" not in self.model_fields_set:
            del data["proof"]  # a state saved before the proof existed is written back as it was
        return data

    def write(self, path: Path) -> None:
        store.write_json_atomic(path, self.to_json())

    @property
    def files(self) -> list[str]:
        """The files the change touches (once implemented)."""
        return list(self.implementation.files) if self.implementation is not None else []


@dataclass(frozen=True)
class Source:
    """Who gave an answer or approval: channel `cli`, `lsp:<client name>` or `mcp:<client name>`
    (an agent through the MCP server, which only ever delegates), and an actor."""

    channel: str
    actor: str | None = None

    def decided(self) -> DecidedBy:
        """Who decided, and now."""
        return DecidedBy(channel=self.channel, actor=self.actor, time=store.now_iso())

    @classmethod
    def coerce(cls, value: Source | Mapping[str, Any] | str | None) -> Source:
        if isinstance(value, Source):
            source = value
        elif isinstance(value, str):
            source = cls(channel=value)
        elif isinstance(value, Mapping):
            source = cls(channel=str(value.get("channel") or ""), actor=value.get("actor"))
        else:
            raise UsageError("a source is required: Source(channel='cli', 'lsp:<client>' or 'mcp:<client>', actor=...)")
        if not source.channel or not re.fullmatch(r"cli|machine|(?:lsp|mcp):[\w .@+-]{1,80}", source.channel):
            raise UsageError(
                f"source channel {source.channel!r} is not valid; use 'cli', 'lsp:<client name>' or 'mcp:<client name>'"
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
    engine: str | None = None  # an agent CLI as the implementer (a flag: the person's choice)
    scenario: str | None = None
    agent: str | None = None
    prep: PrepResult | None = None  # a copy the caller already made and checked (the pilot coordinator)
    on_change: Callable[[TaskSnapshot], None] | None = None
    progress: Callable[[str, str], None] | None = None
    # Told each settings warning (an unknown key and its closest known one) once the settings resolve.
    warn: Callable[[str], None] | None = None
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


def answer_rule(question: LedgerQuestion, text: str, how: str | None, kind: str | None) -> tuple[str, str, str]:
    """The one answer rule: (text recorded, how, ledger kind) for an answer as given."""
    default = question.default
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
            raise UsageError(f"question {question.id!r} has no proposed default; type an answer")
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


_ORIGIN_WORDS = {
    "flag": "the command line",
    "config": "the repository's settings",
    "pyproject": "the repository's settings",
    "learned": "the learned project record",
    "detected": "detection from the project's files",
    "default": "the built-in default",
}


def planned_tests(launch: Mapping[str, Any]) -> PlannedTests:
    """The exact test command a task will run, where it came from and in which folder:
    named in the plan and recorded with its approval, so a person approves what will run."""
    values = launch.get("values") or {}
    command = values.get("test_command")
    origin = (values.get("origins") or {}).get("test_command") or "default"
    source = ((launch.get("settings") or {}).get("test_command") or {}).get("source") or "built-in"
    package = (launch.get("options") or {}).get("package")
    return PlannedTests(command=command, origin=str(origin), source=str(source), folder=package or ".")


def _tests_lines(tests: PlannedTests) -> list[str]:
    lines = ["", "## Tests that will run", ""]
    if not tests.command:
        lines.append(
            "No test command is known: the task stops before verifying. Set test_command in "
            ".autocode/config.toml, or give the task a test command when you start it."
        )
        return lines
    where = _ORIGIN_WORDS.get(tests.origin, tests.origin)
    folder = tests.folder or "."
    lines += [
        f"`{tests.command}`",
        "",
        f"from {where} ({tests.origin}, `{tests.source}`), run in `{folder}` of the copy.",
    ]
    return lines


def render_plan(plan: Plan | None, revision: int, tests: PlannedTests | None = None) -> str:
    if plan is None:
        return ""
    lines = [f"# Plan (revision {revision})", "", plan.summary, "", "## Steps", ""]
    lines += [f"{i}. {step}" for i, step in enumerate(plan.steps, 1)]
    if tests is not None:
        lines += _tests_lines(tests)
    if plan.acceptance_criteria:
        lines += ["", "## Acceptance criteria", ""]
        lines += [f"- {c}" for c in plan.acceptance_criteria]
    if plan.citations:
        lines += ["", "## Cited", ""]
        lines += [f"- `{c}`" for c in plan.citations]
    return "\n".join(lines) + "\n"


# The word a person types to apply a change nothing proves (or that weakens the tests).
CONFIRM_UNPROVEN = "unproven"


def confirmation_needed(proof: Proof | None) -> str | None:
    """The confirmation applying needs: None for a verified change with no concern."""
    if proof is None:
        return CONFIRM_UNPROVEN  # the tests never ran through the proof: nothing proves the change
    if proof.status == "verified" and not proof.concerns:
        return None
    return CONFIRM_UNPROVEN
