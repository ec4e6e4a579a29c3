"""What a task looks like from outside: the typed results every face gets.

`TaskRun` returns a `TaskSnapshot`; the language server sends it as it is (the
protocol module reuses these models) and `autocode task ... --json` prints the
same dump, so the engine, the wire, the CLI and the generated editor types
(`docs/protocol.schema.json`) share one shape. Python names are snake_case;
the wire is camelCase only (`wire()`, or `model_dump(by_alias=True)`).

`Needs` is a union told apart by `kind`: each paused state carries exactly what
the person needs to decide, and nothing else. The phase results (`TestRun`,
`Review`, `TaskResult`, `TaskError`, `Learning`, `AgentStatus`) are typed here
too, and `TaskState` holds them as these models: `state.json` keeps them as
the snake_case objects the engine has always written (folders from earlier
versions load unchanged; `state.stored_form`), and the snapshot sends them as
they are, so the wire has one spelling. They ignore keys they do not know (a
newer version's state stays readable); a test checks that every key the engine
writes is declared.

Kept whole: this is the one definition of the task's wire shape; the protocol
schema and the editors' generated types are produced from this module, and
the snapshot's models refer to each other, so one file keeps the contract
readable from top to bottom.
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
    unsaved: list[str] = Field(default_factory=list)
    """Files changed in the editor's buffers and not on disk yet (they held unsaved edits, kept and
    merged): the task completes once each is saved with the change; a file given conflict markers,
    once its file on disk holds something other than before the apply (the markers resolved or not)."""
    hunks_kept: list[str] = Field(default_factory=list)
    """With a per-hunk choice: the ids of the hunks applied."""
    hunks_undone: list[str] = Field(default_factory=list)
    """With a per-hunk choice: the ids of the hunks the person left out (not applied)."""


class PhaseResult(WireModel):
    """A phase result as `state.json` keeps it: unknown keys (from a newer version) are dropped, not refused."""

    model_config = ConfigDict(extra="ignore")


class TestRun(PhaseResult):
    """The project's test command as run in the prep copy (its full output is in `evidence/test-output.txt`)."""

    __test__ = False  # not a pytest test class, despite its name

    command: str
    cwd: str
    """The folder the command ran in, by name (the prep copy's, or the package's within it)."""
    exit_code: int
    """The command's exit code (127 when it could not be started; negative when it was killed)."""
    status: Literal["finished", "timed_out", "cancelled", "could_not_run"]
    seconds: float
    output_tail: str = ""
    """The last 8000 characters of its output."""
    sandbox: str = "none"
    """What confined the command: `bwrap`, or `none` when it ran without a sandbox (`sandbox = "off"`)."""
    sandbox_notes: list[str] = Field(default_factory=list)
    """What the sandbox did beyond the rule (folders shown from the workspace, names refused)."""


class Regression(PhaseResult):
    """A test that passed on the base and does not pass with the change."""

    id: str
    base: str
    now: str
    """failed, error, skipped or missing."""


class ProofConcern(PhaseResult):
    """Something in the change that weakens the tests (a person sees it before approving)."""

    kind: str
    """testDeleted, testRenamed, skipAdded, assertionRemoved, assertionLoosened, expectationChanged, testConfigChanged, testOnlyChange, ..."""
    path: str
    """The file ("" for the change as a whole)."""
    sentence: str
    """The concern in words a person can read."""
    line: int | None = None
    """1-based, in the new file (in the base file for what the change removed)."""


class ProofRun(PhaseResult):
    """One run of the suite behind the verdict."""

    role: Literal["candidate", "base", "probe"]
    """candidate (with the change), base (before it) or probe (the change's tests over the base source)."""
    command: str
    status: str
    exit_code: int | None = None
    seconds: float = 0.0
    sandbox: str = "none"
    """The sandbox that confined the run (bwrap), or none."""
    framework: str
    per_test: bool
    """Whether the run gave per-test results."""
    reason: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    """Tests per outcome (passed, failed, error, skipped)."""
    cached: bool = False
    """The base run came from the cache (same base tree and command)."""


class Proof(PhaseResult):
    """The verdict on the change, proved by named tests (evidence in `evidence/proof.json`)."""

    status: Literal["verified", "unproven", "regressed", "failed"]
    """verified: a named test failed before the change and passes with it, and nothing regressed; unproven: nothing proves the change; regressed: a test that passed before no longer does; failed."""
    verified: bool
    """True only for status verified."""
    summary: str
    proofs: list[str] = Field(default_factory=list)
    """Tests that failed on the base and pass with the change."""
    regressions: list[Regression] = Field(default_factory=list)
    failing: list[str] = Field(default_factory=list)
    """Tests that fail with the change."""
    already_failing: list[str] = Field(default_factory=list)
    """Tests that failed before the change too (not counted against it)."""
    reasons: list[str] = Field(default_factory=list)
    """Why the verdict is not verified, in words."""
    concerns: list[ProofConcern] = Field(default_factory=list)
    test_files: list[str] = Field(default_factory=list)
    """The change's test files."""
    runs: list[ProofRun] = Field(default_factory=list)


class Review(PhaseResult):
    """The reviewer's verdict on the verified change."""

    summary: str
    concerns: list[str] = Field(default_factory=list)
    """What the reviewer thinks a person should look at before applying."""
    lessons: list[str] = Field(default_factory=list)
    """Repository-independent lessons offered to memory reflection at completion."""


class TaskRemedy(PhaseResult):
    """The remedy in a failed task's message as data: the message is `before`, the remedy in the
    reader's words, then `after` (`message` has the CLI's words; each face words it its own way)."""

    kind: Literal["setSettings", "setTestCommand", "turnOffSandbox", "useRealModel", "resumeTask", "giveWorkspace",
                  "listTasks", "listMemories", "trustRepository", "nameArgument"]
    """What the person can do (`autocode.remedy.RemedyKind`)."""
    keys: list[str] = Field(default_factory=list)
    """The settings to set (`setSettings`): `base_url`, `model`."""
    task_id: str = ""
    """The task to resume (`resumeTask`), when the message names one."""
    workspace: str = ""
    """The repository the remedy is about (`listTasks`, `trustRepository`), when it names one."""
    argument: str = ""
    """The command argument the message talks of (`nameArgument`): `agent`, `brief`, `feedback`, `package`,
    `test_command` (each face names it its own way)."""
    before: str
    after: str = ""


class TaskError(PhaseResult):
    """Why a task failed."""

    kind: str
    """The error kind (`testsFailed`, `budgetExhausted`, `internalError`, ...; see the error table)."""
    message: str
    phase: str
    """The phase the task was in when it failed."""
    remedy: TaskRemedy | None = None
    """The remedy in `message` as data, when it has one a face words its own way."""


class TaskResult(PhaseResult):
    """How a task ended."""

    status: Literal["completed", "failed", "cancelled"]
    verified: bool = False
    """True only when the change was proved by named tests (proof status verified); never from an exit code alone."""
    proof: Proof | None = None
    """The verdict and its evidence (when the tests ran)."""
    tests: TestRun | None = None
    """The last test run (completed and failed tasks, when the tests ran)."""
    apply: ApplyResult | None = None
    """What the apply wrote (completed tasks)."""
    partial: bool = False
    """True when the person left hunks out: only part of the change was applied. The proof
    covered the whole change, so a partial apply is never `verified`."""
    files: list[str] = Field(default_factory=list)
    """The files the change touches (completed tasks)."""
    error: TaskError | None = None
    """Why it failed (failed tasks)."""


class Learning(PhaseResult):
    """What completion learned into `.autocode/project.json`."""

    status: Literal["pending", "done", "failed"]
    """pending until the task completed and learning ran."""
    written: bool = False
    """Whether the project record was written."""
    path: str | None = None
    """The project record's path."""
    conventions: list[str] = Field(default_factory=list)
    """Ids of the questions whose answers were learned as conventions."""
    dropped_for_credentials: list[str] = Field(default_factory=list)
    """Ids of answers not learned because they carry a credential."""
    omitted: list[str] = Field(default_factory=list)
    """What the record left out, in words."""
    errors: list[str] = Field(default_factory=list)
    """The record's problems (status failed)."""
    error: str | None = None
    """Set when learning itself broke (status failed); completion stands."""
    framework: str | None = None
    test_command: str | None = None
    """The test command learned (only after it passed, never for --package runs)."""


class TokenUsage(PhaseResult):
    """Token counts the endpoint reported."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class AgentBudgets(PhaseResult):
    """The limits an agent loop ran under."""

    max_turns: int
    token_budget: int
    time_budget: float
    """Seconds."""


class AgentRole(PhaseResult):
    """One role's work with the model (a tool loop, an edit-block loop, or plain JSON requests)."""

    role: str
    mode: Literal["tools", "edit_blocks", "json", "engine"]
    """tools (a tool loop), edit_blocks (the endpoint takes no tools), json (plain requests) or
    engine (an agent CLI played the role: `engine` names it)."""
    fallback_reason: str | None = None
    """Why the loop fell back to edit blocks."""
    turns: int
    """Requests made."""
    tool_calls: int
    usage: TokenUsage
    seconds: float | None = None
    """Time spent (loops only)."""
    budgets: AgentBudgets | None = None
    """The loop's limits (loops only)."""
    stopped: str | None = None
    """answered, max_turns, token_budget or time_budget once the loop ended; null while it runs."""
    transcript: str | None = None
    """The loop's transcript file in the run's agent folder."""
    summary: str | None = None
    """The model's final answer once the loop answered (its reasoning left out); null before."""
    engine: str | None = None
    """The agent CLI that played the role (mode engine), e.g. claude-code or aider."""
    engine_version: str | None = None
    """Its version, as `--version` printed it."""
    cost_usd: float | None = None
    """The cost the engine reported, in US dollars (null when it reports none)."""


class AgentStatus(PhaseResult):
    """The model's work in a task: per role, with usage summed over them."""

    roles: dict[str, AgentRole]
    """Per role (investigator, requirements, planner, implementer, reviewer) that asked the model."""
    usage: TokenUsage
    """Summed over the roles."""
    edit_blocks_fallback: list[str] = Field(default_factory=list)
    """Roles whose endpoint took no tools (they worked with edit blocks)."""


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
    tests: TestRun | None
    """The test run in the copy."""
    proof: Proof | None = None
    """The verdict on the change, by named tests."""
    confirmation: str | None = None
    """Set when applying needs the person's typed confirmation (the change is unproven or weakens the tests): the word to send as `confirm`."""
    review: Review | None
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


class SaveFiles(WireModel):
    kind: Literal["save_files"] = "save_files"
    paths: list[str]
    """The files whose change is in the editor's buffer but not on disk: save them to complete."""
    apply: ApplyResult


Needs = Annotated[
    NoNeeds | AnswerQuestions | ApprovePlan | ApproveCompletion | ResolveConflicts | SaveFiles,
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
    """REQUIREMENTS, WAITING_FOR_USER, PLANNING, WAITING_FOR_PLAN_APPROVAL, IMPLEMENTING, VERIFYING, WAITING_FOR_COMPLETION_APPROVAL, APPLYING, WAITING_FOR_SAVE (applied into buffers that held unsaved edits: complete once saved), COMPLETED, FAILED or CANCELLED; INTERRUPTED when a working step's process stopped (a killed server) and nothing works on it now: `autocode.task.resume` continues it."""
    interrupted_in: str | None = None
    """For INTERRUPTED: the working state the step stopped in."""
    phase: str
    revision: int
    needs: Needs
    done: bool
    result: TaskResult | None
    """How the task ended (null while it runs)."""
    error: TaskError | None
    """Why the task failed (null unless it did)."""
    learning: Learning | None
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
    agent: AgentStatus | None = None
    """The model's work with an OpenAI-compatible provider (per role, usage summed); null with the fixture provider."""


class PreviewHunk(WireModel):
    """One change between the person's text and the merged result (1-based lines; 0 lines is an
    insertion point before `start`)."""

    id: str
    """Stable while the hunk's own lines are the same (edits elsewhere in the file keep it)."""
    mine_start: int
    mine_lines: int
    merged_start: int
    merged_lines: int
    overlaps: bool
    """The hunk touches lines the person changed since the task started."""
    conflict: bool
    """git could not merge these lines: the merged text holds conflict markers here."""


class FilePreview(WireModel):
    """One touched file as applying would leave it."""

    path: str
    action: Literal["write", "delete", "none", "conflict"]
    """conflict: both sides changed the same lines (or one deleted the file)."""
    reason: str | None = None
    """For a conflict: overlap, deletedInWorkspace, deletedByTask or renamed."""
    binary: bool = False
    """A file with no lines to show (its texts are null)."""
    mine: str | None
    """The person's text now (the editor's buffer when given or open, else the disk); null when absent."""
    merged: str | None
    """What applying writes (with conflict markers for a conflict); null when the file is removed."""
    hunks: list[PreviewHunk] = Field(default_factory=list)


class TaskPreview(WireModel):
    """What approving the completion would do, before anything is written."""

    task_id: str
    revision: int
    """The task revision the preview was made from."""
    files: list[FilePreview]
    overlaps: int
    """Hunks that touch the person's own edits, over all files."""
    conflicts: int
    """Hunks git could not merge, over all files."""


class TaskList(WireModel):
    tasks: list[TaskSnapshot]
