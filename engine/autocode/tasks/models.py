"""What a task looks like from outside: the typed results every face gets.

`TaskRun` returns a `TaskSnapshot`; the language server sends it as it is (the
protocol module reuses these models) and `autocode task ... --json` prints the
same dump, so the engine, the wire, the CLI and the generated editor types
(`docs/protocol.schema.json`) share one shape. Python names are snake_case;
the wire is camelCase only (`wire()`, or `model_dump(by_alias=True)`).

`Needs` is a union told apart by `kind`: each paused state carries exactly what
the person needs to decide, and nothing else. The phase results a person reads
but no client decides on (`tests`, `review`, `result`, `error`, `learning`,
`agent`) stay JSON objects as the engine writes them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """A model whose wire form is camelCase (`from_` is `from`); validation takes either name."""

    model_config = ConfigDict(
        alias_generator=lambda name: to_camel(name.rstrip("_")),
        populate_by_name=True,
        extra="forbid",
        use_attribute_docstrings=True,
        # Validators are built on first use, not at import: the protocol module imports these
        # models on the server's first command, most of which never build a snapshot.
        defer_build=True,
    )

    def wire(self) -> dict[str, Any]:
        """JSON-ready data, camelCase keys, every field present."""
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True)
        return data


class Question(WireModel):
    """One question a task asks a person."""

    id: str
    text: str
    category: str | None = None
    convention: str | None = None
    """Set when the answer may be learned as a project convention."""
    default: str | None = None
    """The proposed default answer, if any."""
    choices: list[str] = Field(default_factory=list)
    """Answers a client may offer as buttons (the proposed default when there is one)."""


class Plan(WireModel):
    """The plan a person approves before anything is changed."""

    model_config = ConfigDict(extra="ignore")

    summary: str
    steps: list[str]
    citations: list[str] = Field(default_factory=list)
    """Files (and answers, as `answer:<id>`) the plan rests on."""
    acceptance_criteria: list[str] = Field(default_factory=list)


class ConflictHunk(WireModel):
    """Where the two sides changed the same lines (1-based lines; 0 lines means an insertion point)."""

    mine_start: int
    mine_lines: int
    theirs_start: int
    theirs_lines: int


class Conflict(WireModel):
    path: str
    reason: Literal["overlap", "deletedInWorkspace", "deletedByTask", "renamed"]
    hunks: list[ConflictHunk] = Field(default_factory=list)


class HeadMoved(WireModel):
    from_: str | None
    """On the wire: `from`."""
    to: str | None


class ApplyResult(WireModel):
    """One attempt to apply the verified change to the work tree."""

    status: Literal["applied", "conflicts", "not_applied"]
    applied: bool
    written: list[str] = Field(default_factory=list)
    """Files written (through the editor or on disk)."""
    written_by_editor: list[str] = Field(default_factory=list)
    """The files the editor changed (unsaved edits and undo kept)."""
    conflicts: list[str] = Field(default_factory=list)
    """Paths both the person and the task changed (nothing was written)."""
    via: Literal["editor", "disk"] | None = None
    choices: dict[str, str] = Field(default_factory=dict)
    """The person's choice per conflicted file that this apply used."""
    head_moved: HeadMoved | None = None
    message: str
    """What happened, in words a person can read."""


class NoNeeds(WireModel):
    """The task is working or has ended: it waits for nobody."""

    kind: Literal[None] = None


class AnswerQuestions(WireModel):
    kind: Literal["answer_questions"] = "answer_questions"
    questions: list[Question]
    """The open questions; a client may ask them one by one."""


class ApprovePlan(WireModel):
    kind: Literal["approve_plan"] = "approve_plan"
    plan_revision: int
    """The plan revision to approve (`autocode.task.approvePlan`'s `revision`)."""
    plan: Plan
    markdown: str
    """The plan as Markdown."""
    plan_uri: str | None = None
    """`file://` URI of the plan document (what `window/showDocument` opens)."""


class ApproveCompletion(WireModel):
    kind: Literal["approve_completion"] = "approve_completion"
    diff: str
    """The verified change, as a unified diff against the prep copy's base."""
    files: list[str]
    tests: dict[str, Any] | None
    """The test run in the copy (command, exit code, status, seconds, output tail)."""
    review: dict[str, Any] | None
    head_moved: HeadMoved | None = None
    """Set when HEAD moved since the task started (shown before applying)."""
    apply: ApplyResult | None = None
    """The last apply attempt when it did not go through (e.g. the editor refused the edit)."""


class ResolveConflicts(WireModel):
    kind: Literal["resolve_conflicts"] = "resolve_conflicts"
    conflicts: list[Conflict]
    """The conflicted files (nothing was written yet)."""
    files: list[str]
    head_moved: HeadMoved | None = None
    apply: ApplyResult


Needs = Annotated[
    NoNeeds | AnswerQuestions | ApprovePlan | ApproveCompletion | ResolveConflicts,
    Field(discriminator="kind", title="Needs"),
]
"""What a paused task waits for, told apart by `kind` (null while it works or after it ended)."""


class AnswerRecord(WireModel):
    """One answer in the task's ledger."""

    question_id: str
    text: str
    how: str
    """typed, chosen, acceptedDefault, delegated (or machine for the model's own decisions)."""
    kind: str
    """The ledger kind: human (typed or chosen), proposed_default, delegated or machine."""
    channel: str | None = None
    time: str | None = None


class TaskSnapshot(WireModel):
    """The full state of one task run. `revision` increases with every change."""

    id: str
    workspace: str
    brief: str
    state: str
    """REQUIREMENTS, WAITING_FOR_USER, PLANNING, WAITING_FOR_PLAN_APPROVAL, IMPLEMENTING, VERIFYING, WAITING_FOR_COMPLETION_APPROVAL, APPLYING, COMPLETED, FAILED or CANCELLED."""
    phase: str
    revision: int
    needs: Needs
    done: bool
    result: dict[str, Any] | None
    """The engine's result once the task ended (status, tests, applied change)."""
    error: dict[str, Any] | None
    learning: dict[str, Any] | None
    """What completion learned into `.autocode/project.json`."""
    run_dir: str
    copy_: str | None
    """The prep copy the task works in."""
    plan_revision: int
    """The latest plan revision (0 before the first plan)."""
    human_pause_states: list[str]
    created: str
    updated: str
    answers: list[AnswerRecord] = Field(default_factory=list)
    """The answer ledger: every answer with how it was given."""
    agent: dict[str, Any] | None = None
    """The agent loops of an OpenAI-compatible provider: per role its mode (tools or edit_blocks), turns, tool calls, token usage the endpoint reported, budgets and why it stopped; `usage` sums them. Null with the fixture provider."""


class TaskList(WireModel):
    tasks: list[TaskSnapshot]
