"""The protocol's shapes: argument and result models, the command and method specs, the error
kinds, argument validation and the generated document (docs/protocol.md).

Imported on the first command, not at start-up (see the package docstring).
The argument and result classes are stdlib dataclasses, like the engine's memory
answers; the task shapes are the engine's pydantic models (docs/dev/architecture.md,
"Typed results", says why two). This module's converter is the one bridge: cattrs
(which pygls loads anyway) writes the dataclasses' functions and hands a pydantic
model to its own validation and dump. Python names are snake_case and the wire is
camelCase.

Kept whole: declarations only (argument and result models, command and method
specs), the single source docs/protocol.md and the schema are generated from;
one file keeps the wire reviewable in one place.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import json
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import cattrs
import pydantic
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

# The memory answers are the engine's result dataclasses (autocode.memory.model, camelCase
# `wire()`); importing them does not load the memory service.
from autocode.memory.model import Eviction as Eviction
from autocode.memory.model import MemoryDeleteResult as MemoryDeleteResult
from autocode.memory.model import MemoryList as MemoryList
from autocode.memory.model import MemoryView as MemoryView
from autocode.memory.model import PromotionApplied as PromotionApplied
from autocode.memory.model import PromotionCandidate as PromotionCandidate
from autocode.memory.model import PromotionPlan as PromotionPlan
from autocode.memory.model import RecallView as RecallReceipt
from autocode.memory.model import Refusal as Refusal
from autocode.memory.model import SaveResult as MemorySaveResult
from autocode.memory.model import SearchResult as MemorySearchResult
from autocode.memory.model import SkillView as SkillView

# A task's shapes are the engine's own typed results (pydantic models, camelCase on the
# wire): the server sends what the engine returns, nothing is mapped by hand.
from autocode.tasks.models import AgentBudgets as AgentBudgets
from autocode.tasks.models import AgentRole as AgentRole
from autocode.tasks.models import AgentStatus as AgentStatus
from autocode.tasks.models import AnswerQuestions as AnswerQuestions
from autocode.tasks.models import AnswerRecord as AnswerRecord
from autocode.tasks.models import ApplyResult as ApplyResult
from autocode.tasks.models import ApproveCompletion as ApproveCompletion
from autocode.tasks.models import ApprovePlan as ApprovePlan
from autocode.tasks.models import Conflict as Conflict
from autocode.tasks.models import ConflictHunk as ConflictHunk
from autocode.tasks.models import FilePreview as FilePreview
from autocode.tasks.models import HeadMoved as HeadMoved
from autocode.tasks.models import Learning as Learning
from autocode.tasks.models import NoNeeds as NoNeeds
from autocode.tasks.models import Plan as Plan
from autocode.tasks.models import PreviewHunk as PreviewHunk
from autocode.tasks.models import Proof as Proof
from autocode.tasks.models import ProofConcern as ProofConcern
from autocode.tasks.models import ProofRun as ProofRun
from autocode.tasks.models import Question as Question
from autocode.tasks.models import Regression as Regression
from autocode.tasks.models import ResolveConflicts as ResolveConflicts
from autocode.tasks.models import Review as Review
from autocode.tasks.models import SaveFiles as SaveFiles
from autocode.tasks.models import TaskError as TaskError
from autocode.tasks.models import TaskList as TaskList
from autocode.tasks.models import TaskPreview as TaskPreview
from autocode.tasks.models import TaskResult as TaskResult
from autocode.tasks.models import TaskSnapshot as TaskSnapshot
from autocode.tasks.models import TestRun as TestRun
from autocode.tasks.models import TokenUsage as TokenUsage
from autocode.wire import wire_fields
from autocode_lsp.protocol import limits
from autocode_lsp.protocol.names import FEATURES, INVALID_PARAMS, PROTOCOL_VERSION, REQUEST_FAILED

T = TypeVar("T")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# --------------------------------------------------------------------------- command arguments


@dataclass(kw_only=True, eq=False, repr=False)
class NoArgs:
    """The command takes no arguments (an empty object or no argument at all)."""


@dataclass(kw_only=True, eq=False, repr=False)
class WorkspaceArgs:
    workspace: str | None = None
    """A folder path or `file://` URI. Default: the session's workspace folder."""


@dataclass(kw_only=True, eq=False, repr=False)
class ForgetArgs:
    workspace: str | None = None
    confirm: bool = False
    """Must be `true`: forgetting removes the learned record for good."""


@dataclass(kw_only=True, eq=False, repr=False)
class TrustArgs:
    workspace: str | None = None
    confirm: bool = False
    """`true` records the person's trust; without it the command only says what the repository asks."""
    digest: str | None = None
    """With `confirm`: the `digest` of the values the person was shown (a `trustRequired` error's
    `data.digest`, or this command's answer without `confirm`)."""
    revoke: bool = False
    """`true` forgets the person's trust in this repository instead."""


@dataclass(kw_only=True, eq=False, repr=False)
class PrepRunArgs:
    workspace: str | None = None
    manifest: str | None = None
    """Path of a JSON manifest of declared public inputs (relative to the workspace or absolute)."""


@dataclass(kw_only=True, eq=False, repr=False)
class TaskStartArgs:
    brief: str
    workspace: str | None = None
    package: str | None = None
    """A package folder inside a monorepo; the learned test command is then not used."""
    test_command: str | None = None
    """Overrides every other source of the test command for this task (the `flag` layer)."""
    manifest: str | None = None
    """Make a checked prep copy with these declared inputs first (see `autocode.prep.run`)."""


@dataclass(kw_only=True, eq=False, repr=False)
class VerifyArgs:
    workspace: str | None = None
    range: str | None = None
    """Commits `A..B`: B is the change, A its base. Default: the work tree against HEAD."""
    branch: str | None = None
    """A branch, against its merge base with HEAD."""
    test_command: str | None = None
    """The test command for this verification only (never learned)."""


@dataclass(kw_only=True, eq=False, repr=False)
class TaskRefArgs:
    task_id: str
    workspace: str | None = None
    """Where the task lives. Default: the session's folders are searched for the task."""


@dataclass(kw_only=True, eq=False, repr=False)
class TaskApproveCompletionArgs:
    task_id: str
    confirm: str | None = None
    """The word `needs.confirmation` names (`unproven`), typed by the person, when the change is
    not proved by named tests or weakens them; refused with `confirmationRequired` without it."""
    keep: list[str] | None = None
    """The ids of the hunks the person kept (from `autocode.task.preview`); the others are left
    out of the apply. Default: every hunk. An id the change no longer has is refused
    (`hunksChanged`, nothing written)."""
    workspace: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class TaskPreviewArgs:
    task_id: str
    documents: dict[str, str] | None = None
    """The texts the editor holds now, by workspace-relative path or `file://` URI (unsaved edits
    included). A touched file not given here is read from the documents the client synchronises,
    else from disk."""
    workspace: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class TaskAskArgs:
    task_id: str
    question_id: str | None = None
    """Which open question; default: the first one still open."""
    workspace: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class TaskAnswerArgs:
    task_id: str
    question_id: str
    text: str = ""
    """The answer; may be empty with `how` `acceptedDefault` or `delegated`."""
    how: Literal["typed", "chosen", "acceptedDefault", "delegated"] | None = None
    """How the person answered. Only `typed` and `chosen` are the person's own answer and may be
    learned. Missing: a `text` equal to the question's `default` is `acceptedDefault`, else `typed`."""
    workspace: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class TaskResolveConflictsArgs:
    task_id: str
    choices: dict[str, Literal["mine", "theirs", "markers"]]
    """For each conflicted path: keep `mine` (the workspace file as it is), take `theirs` (the
    task's version) or write git-style conflict `markers` into the workspace file."""
    workspace: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class TaskApprovePlanArgs:
    task_id: str
    revision: int
    """The plan revision the person reviewed; a newer plan fails with `planRevisionMismatch`."""
    workspace: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class TaskRejectPlanArgs:
    task_id: str
    feedback: str
    workspace: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class MemorySaveArgs:
    content: str
    workspace: str | None = None
    category: str | None = None
    scope: Literal["project", "global"] | None = None
    """Default: `project` when the session has a repository, else `global`."""
    shared: bool = False
    """With `agent`: `true` saves a team memory, `false` a memory of that agent only."""
    agent: str | None = None
    """The agent whose memory this is. Default: none, a person saving for the team."""


@dataclass(kw_only=True, eq=False, repr=False)
class MemorySearchArgs:
    query: str
    workspace: str | None = None
    scope: Literal["all", "project", "global"] = "all"
    owner: Literal["all", "self", "team"] = "all"
    limit: int = 10
    agent: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class MemoryListArgs:
    workspace: str | None = None
    scope: Literal["all", "project", "global"] = "all"
    owner: Literal["all", "self", "team"] = "all"
    agent: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class MemoryDeleteArgs:
    id: str
    workspace: str | None = None
    agent: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class MemoryRecallArgs:
    brief: str
    workspace: str | None = None
    agent: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class MemoryPlanPromotionArgs:
    workspace: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class MemoryApplyPromotionArgs:
    ids: list[str]
    """Ids of memories from a plan returned by `autocode.memory.planPromotion`."""
    workspace: str | None = None


# --------------------------------------------------------------------------- command results


@dataclass(kw_only=True, eq=False, repr=False)
class MemoryStoresInfo:
    open: int
    """Memory services this server process holds open now (one per distinct store configuration)."""
    opened: int
    """Memory services opened since the process started; repeated memory commands on one
    configuration reuse its service, so this grows only with new configurations."""


@dataclass(kw_only=True, eq=False, repr=False)
class ProtocolInfo:
    protocol_version: str
    server_version: str
    features: list[str]
    commands: list[str]
    client_opted_in: bool
    """Whether this session receives the `autocode/*` notifications and requests."""
    workspaces: list[str]
    """The session's workspace folders as paths (empty: no repository in context)."""
    memory_stores: MemoryStoresInfo
    """The server process's memory services (shared by every session of the process)."""


@dataclass(kw_only=True, eq=False, repr=False)
class DoctorResult:
    report: dict[str, Any]
    """The engine's doctor report (the shape of `autocode doctor --json`)."""
    text: str
    """The same report as readable text; the server also logs it."""


@dataclass(kw_only=True, eq=False, repr=False)
class SessionConfigureArgs:
    """The model settings an editor holds for its person, for this session's tasks and checks."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    engine: str | None = None
    """Which engine runs the implementer, where this server knows the `engine` setting."""
    api_key_env: str | None = None
    """The variable the key is read from. Default: the `api_key_env` setting, else the
    provider's usual one (OPENAI_API_KEY, ANTHROPIC_API_KEY, AZURE_OPENAI_API_KEY)."""
    api_key: str | None = None
    """The provider's key, kept in the server process's memory only (never logged, never
    written); an empty string forgets it. Left out: the key given before stays."""


@dataclass(kw_only=True, eq=False, repr=False)
class SessionSettings:
    """What this session's tasks and checks get from the editor."""

    settings: dict[str, str]
    """The values given, as the flag layer of every task this session starts."""
    ignored: list[str]
    """Names this server does not know as settings (an older engine), so not used."""
    api_key_env: str | None
    api_key_set: bool
    """Whether a key from the editor is held (its value is never sent back)."""


@dataclass(kw_only=True, eq=False, repr=False)
class ProviderCheck:
    """`autocode doctor --check-provider` for the session: one tiny request to the implementer's endpoint."""

    check: dict[str, Any]
    """The endpoint, model, family, whether the key variable is set (never its value), tool support, the result."""
    text: str
    """The same as readable lines."""


@dataclass(kw_only=True, eq=False, repr=False)
class TaskTranscript:
    """The model's work in a task as a Markdown page (the agent loops' transcripts, readable)."""

    path: str
    """transcript.md in the run folder, written by this call: an editor can open it."""
    markdown: str


@dataclass(kw_only=True, eq=False, repr=False)
class VerifyResult:
    change: str
    """What was verified, in words (the work tree against HEAD, or a range of commits)."""
    files: list[str]
    evidence: str
    """The folder holding `proof.json`, `tests.json` and the test output."""
    proof: Proof
    """The verdict; `proof.verified` is true only for `verified`."""


@dataclass(kw_only=True, eq=False, repr=False)
class ForgetResult:
    removed: bool
    path: str


@dataclass(kw_only=True, eq=False, repr=False)
class TrustResult:
    """What the repository's files ask for, in words, and whether its person trusted exactly that."""

    workspace: str
    status: str
    """`nothing-asked`, `trusted`, `not-trusted` or `changed` (trusted before, with other values)."""
    trusted: bool
    """True when the repository's destination values apply (trusted, or it sets none)."""
    says: list[str]
    """One sentence per destination, for the editor's one prompt ("send the variable X to URL")."""
    digest: str
    """Pass it back with `confirm: true` to trust exactly these values."""
    asks: list[dict[str, Any]]
    """Each value: `name`, `value` (passwords masked), `origin`, `source`."""
    recorded: bool = False
    """True when this call recorded (or, with `revoke`, removed) a trust record."""


@dataclass(kw_only=True, eq=False, repr=False)
class PrepResult:
    """A checked prep copy; it stays on disk (`copy`) for inspection and for tasks."""

    id: str
    workspace: str | None
    copy: str
    head: str | None
    inputs: list[dict[str, Any]]
    """The declared inputs, each verified in the workspace and in the copy."""
    counts: dict[str, Any]
    nested_components: list[Any]
    handoff: dict[str, Any] | None


@dataclass(kw_only=True, eq=False, repr=False)
class OpenedDocument:
    """A file the server wrote for the person to read or fill in, and whether it asked the
    editor to open it (`window/showDocument`); otherwise its path was shown in a message."""

    path: str
    uri: str
    shown: bool


# --------------------------------------------------------------------------- custom methods


@dataclass(kw_only=True, eq=False, repr=False)
class TaskDidChangeParams:
    task: TaskSnapshot
    revision: int
    """Equal to `task.revision`; a client drops a notification older than the last it saw."""


@dataclass(kw_only=True, eq=False, repr=False)
class AskQuestionParams:
    task_id: str
    revision: int
    question: Question


@dataclass(kw_only=True, eq=False, repr=False)
class AskQuestionResult:
    answer: str | None = None
    """`null` leaves the question open (it can be answered later with `autocode.task.answer`),
    unless `how` is `acceptedDefault` or `delegated`."""
    how: Literal["typed", "chosen", "acceptedDefault", "delegated"] | None = None
    """As in `autocode.task.answer`."""


@dataclass(kw_only=True, eq=False, repr=False)
class ReviewPlanParams:
    task_id: str
    revision: int
    plan_revision: int
    plan: str
    """The plan as Markdown."""
    plan_uri: str | None


@dataclass(kw_only=True, eq=False, repr=False)
class ReviewPlanResult:
    decision: Literal["approve", "reject", "later"]
    feedback: str | None = None
    """Required when `decision` is `reject`."""


@dataclass(kw_only=True, eq=False, repr=False)
class SaveDocumentsParams:
    task_id: str
    uris: list[str]
    """Documents the change just went into through `workspace/applyEdit` that held no unsaved
    edits before it: save each one as it is now."""


@dataclass(kw_only=True, eq=False, repr=False)
class SaveDocumentsResult:
    saved: list[str]
    """The URIs the editor saved. The server reads the disk back; a file not saved is never
    written behind its open buffer: the task waits for the person's save."""


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class CommandSpec:
    name: str
    args: type[Any]
    result: type[Any]
    summary: str
    feature: str
    errors: tuple[str, ...] = ()
    example: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class MethodSpec:
    name: str
    direction: Literal["notification", "request"]
    params: type[Any]
    result: type[Any] | None
    summary: str
    capability: str
    example: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ErrorKind:
    kind: str
    code: int
    meaning: str
    what_to_do: str


_TASK_ERRORS = ("noRepository", "taskNotFound")

COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("autocode.protocol.info", NoArgs, ProtocolInfo,
                "Protocol version, server version, features and this session's opt-in state.",
                "core"),
    CommandSpec("autocode.doctor", WorkspaceArgs, DoctorResult,
                "Every setting with its origin, the learned record's health, memory and environment. "
                "The text is also written to the log (window/logMessage).",
                "doctor", ("noRepository",)),
    CommandSpec("autocode.verify", VerifyArgs, VerifyResult,
                "Prove a change AutoCode did not make (the work tree against HEAD, a commit range or a "
                "branch) with the project's tests in a fresh copy, never in the work tree: the same "
                "verdict as a task's (`verified` only when a named test failed before the change and "
                "passes with it, and nothing regressed).",
                "verify", ("noRepository",), {"workspace": "file:///path/to/project"}),
    CommandSpec("autocode.project.forget", ForgetArgs, ForgetResult,
                "Remove the workspace's learned record (.autocode/project.json) and nothing else.",
                "forget", ("confirmationRequired", "noRepository"),
                {"workspace": "file:///path/to/project", "confirm": True}),
    CommandSpec("autocode.project.trust", TrustArgs, TrustResult,
                "What the workspace's settings files ask for (endpoints, key variables, memory "
                "stores), in words, and the person's trust in exactly those values. Without "
                "`confirm` nothing is recorded; show `says` to the person and, on their yes, call "
                "again with `confirm: true` and the `digest`. `revoke: true` forgets the trust.",
                "trust", ("trustChanged", "noRepository"),
                {"workspace": "file:///path/to/project", "confirm": True, "digest": "sha256:…"}),
    CommandSpec("autocode.prep.run", PrepRunArgs, PrepResult,
                "Make a checked prep copy of the workspace with its declared public inputs. "
                "Reports $/progress when the client supports it.",
                "prep", ("noRepository", "setupError")),
    CommandSpec("autocode.task.start", TaskStartArgs, TaskSnapshot,
                "Start a coding task. Returns the first snapshot; the task goes on in the server "
                "and asks for what it needs (see the custom methods and the plain-client flow).",
                "tasks", ("noRepository", "setupError", "trustRequired"),
                {"brief": "Add a --verbose flag to the CLI", "workspace": "file:///path/to/project"}),
    CommandSpec("autocode.task.answer", TaskAnswerArgs, TaskSnapshot,
                "Answer one open question of a task with the source lsp:<client name> and how it "
                "was answered (`how`). Only `typed` and `chosen` answers may be learned; an "
                "accepted default or a delegated answer is recorded as such and never learned.",
                "tasks", (*_TASK_ERRORS, "notAwaitingInput", "alreadyDecided"),
                {"taskId": "t-20260101-120000-a1b2c3", "questionId": "test-naming",
                 "text": "Describe the behaviour", "how": "typed"}),
    CommandSpec("autocode.task.approvePlan", TaskApprovePlanArgs, TaskSnapshot,
                "Approve the plan revision the person reviewed. The approval is recorded before "
                "anything else happens; approving it again answers `alreadyDecided`.",
                "tasks", (*_TASK_ERRORS, "notAwaitingInput", "planRevisionMismatch", "alreadyDecided")),
    CommandSpec("autocode.task.rejectPlan", TaskRejectPlanArgs, TaskSnapshot,
                "Send the plan back with feedback; the task plans again.",
                "tasks", (*_TASK_ERRORS, "notAwaitingInput", "alreadyDecided")),
    CommandSpec("autocode.task.approveCompletion", TaskApproveCompletionArgs, TaskSnapshot,
                "Accept the result and apply it: a three-way merge per file (base: the "
                "file as the task's copy started from it; mine: the workspace now; theirs: the "
                "task's result). Files the client has open (synchronised) go through "
                "`workspace/applyEdit` when it supports that, so their unsaved edits and undo "
                "take part; the others are written by the server. Overlapping edits, and files deleted on one side, make the "
                "task wait with `needs.kind` `resolve_conflicts` (nothing written). With `keep` only "
                "those hunks of `autocode.task.preview` are applied (`result.partial`; a partial apply is "
                "never `verified`). Open documents that held no unsaved edits are saved after the edit "
                "(`autocode/task/saveDocuments`; never written by the server behind the buffer); one the "
                "editor did not save, or that held unsaved edits (kept, merged), makes the task wait "
                "with `needs.kind` `save_files` until it is saved. "
                "The task is COMPLETED only once every file was read back from disk with the change; "
                "`result.apply` says what was written. A change whose "
                "`needs.proof.status` is not `verified` (or that weakens the tests) needs `confirm` "
                "set to `needs.confirmation`, typed by the person.",
                "tasks", (*_TASK_ERRORS, "notAwaitingInput", "alreadyDecided", "confirmationRequired")),
    CommandSpec("autocode.task.resolveConflicts", TaskResolveConflictsArgs, TaskSnapshot,
                "Choose, for each conflicted file, the person's version, the task's version or "
                "conflict markers to resolve in the editor; then the whole change is applied and "
                "the task completes.",
                "tasks", (*_TASK_ERRORS, "notAwaitingInput", "alreadyDecided"),
                {"taskId": "t-20260101-120000-a1b2c3", "choices": {"greet.py": "markers"}}),
    CommandSpec("autocode.task.cancel", TaskRefArgs, TaskSnapshot,
                "Cancel a task. Its run folder stays for inspection.",
                "tasks", _TASK_ERRORS),
    CommandSpec("autocode.task.resume", TaskRefArgs, TaskSnapshot,
                "Continue a task whose server stopped while it was working (a paused or ended "
                "task is returned as it is).", "tasks", _TASK_ERRORS),
    CommandSpec("autocode.task.retryVerification", TaskRefArgs, TaskSnapshot,
                "Run the proof again on the task's existing change, after the person fixed the "
                "environment (a missing test runner, a service) or the test command (read again "
                "from the settings). For a task that failed while verifying, one waiting for the "
                "completion approval, or one whose verifying step was interrupted. The retry is "
                "recorded with the exact test command it ran; the change itself is not touched.",
                "tasks", (*_TASK_ERRORS, "notAwaitingInput", "copyGone"),
                {"taskId": "t-20260101-120000-a1b2c3"}),
    CommandSpec("autocode.task.preview", TaskPreviewArgs, TaskPreview,
                "What applying would do to each touched file, before anything is written: the "
                "three-way merged result (`git merge-file`) against the person's current text "
                "(unsaved edits included), and the hunks between the two, each with a stable id, "
                "its lines on both sides and whether it overlaps the person's own edits. Pass the "
                "ids the person keeps to `autocode.task.approveCompletion` as `keep`.",
                "tasks", (*_TASK_ERRORS, "notAwaitingInput"),
                {"taskId": "t-20260101-120000-a1b2c3", "documents": {"greet.py": "def greet():\n"}}),
    CommandSpec("autocode.task.get", TaskRefArgs, TaskSnapshot,
                "The current snapshot of one task.", "tasks", _TASK_ERRORS,
                {"taskId": "t-20260101-120000-a1b2c3"}),
    CommandSpec("autocode.task.list", WorkspaceArgs, TaskList,
                "Every task of the workspace (all folders of the session when no workspace is "
                "given), newest first, including those an earlier server left waiting.",
                "tasks", ("noRepository",)),
    CommandSpec("autocode.task.transcript", TaskRefArgs, TaskTranscript,
                "The model's work in a task as Markdown: each loop's requests, replies (reasoning "
                "folded), tool calls and results, notices about the endpoint and how it ended; "
                "also written to transcript.md in the run folder (`path`).",
                "tasks", _TASK_ERRORS, {"taskId": "t-20260101-120000-a1b2c3"}),
    CommandSpec("autocode.memory.save", MemorySaveArgs, MemorySaveResult,
                "Save a durable memory. Content tied to one task, run or commit is refused "
                "(`memoryRefused`); a duplicate or reusable know-how (saved as a skill instead) "
                "answers `saved: false`. A save close to an earlier memory but not the same "
                "fact is saved and names it in `similarTo`.",
                "memory", ("memoryRefused", "noRepository"),
                {"content": "This repository's tests need TEST_DATABASE_URL set", "scope": "project"}),
    CommandSpec("autocode.memory.search", MemorySearchArgs, MemorySearchResult,
                "Memories visible here (this repository plus global, own plus team), best first.",
                "memory", ("noRepository",), {"query": "database tests", "limit": 5}),
    CommandSpec("autocode.memory.delete", MemoryDeleteArgs, MemoryDeleteResult,
                "Delete one memory by id.", "memory", ("memoryNotFound",)),
    CommandSpec("autocode.memory.list", MemoryListArgs, MemoryList,
                "Memories visible here, newest first.", "memory", ("noRepository",)),
    CommandSpec("autocode.memory.recall", MemoryRecallArgs, RecallReceipt,
                "What a task with this brief would be given: up to 8 project and 8 global memories.",
                "memory"),
    CommandSpec("autocode.memory.planPromotion", MemoryPlanPromotionArgs, PromotionPlan,
                "Propose team memories to turn into skills. Writes nothing.", "memory"),
    CommandSpec("autocode.memory.applyPromotion", MemoryApplyPromotionArgs, PromotionApplied,
                "Turn the chosen candidates into skills and remove their memories.",
                "memory", ("memoryNotFound",)),
    CommandSpec("autocode.task.ask", TaskAskArgs, TaskSnapshot,
                "Ask the person one open question through `window/showMessageRequest`: answer "
                "in a file (answers.md in the run folder), accept the proposed default (not "
                "remembered), let AutoCode decide, or pick one of the question's choices. "
                "Returns at once; the answer is recorded when the person acts.",
                "actions", (*_TASK_ERRORS, "notAwaitingInput")),
    CommandSpec("autocode.task.review", TaskRefArgs, OpenedDocument,
                "Write what the task waits on as a file in its run folder (plan.md for a plan, "
                "changes.diff for a verified change) and open it.",
                "actions", (*_TASK_ERRORS, "notAwaitingInput")),
    CommandSpec("autocode.task.requestChanges", TaskRefArgs, OpenedDocument,
                "Open feedback.md in the run folder; when the person saves it with text under "
                "the heading, the plan goes back with that feedback.",
                "actions", (*_TASK_ERRORS, "notAwaitingInput")),
    CommandSpec("autocode.task.compose", WorkspaceArgs, OpenedDocument,
                "Open .autocode/runs/new-task.md; saving it with a brief starts a task.",
                "actions", ("noRepository",)),
    CommandSpec("autocode.doctor.open", WorkspaceArgs, OpenedDocument,
                "Write the doctor report to .autocode/runs/doctor.md and open it.",
                "actions", ("noRepository",)),
    CommandSpec("autocode.memory.composeSearch", WorkspaceArgs, OpenedDocument,
                "Open .autocode/runs/memory-search.md; saving it with a query writes the results "
                "to memory-results.md next to it and opens that.",
                "actions", ("noRepository",)),
    CommandSpec("autocode.session.configure", SessionConfigureArgs, SessionSettings,
                "Give this session's tasks and checks the editor's model settings (provider, "
                "model, base URL, engine) as their flag layer, and the provider's key, which the "
                "server keeps in its memory only. Over a network transport a base URL or a key "
                "needs --allow-client-overrides (`clientOverrideRefused`).",
                "session", ("clientOverrideRefused",),
                {"provider": "openai", "model": "gpt-4.1", "baseUrl": "http://127.0.0.1:8000/v1"}),
    CommandSpec("autocode.provider.check", WorkspaceArgs, ProviderCheck,
                "Send one tiny request to the implementer's endpoint as a task of this session "
                "would (the session's settings included) and say what it showed: the endpoint, "
                "the model, whether the key variable is set, whether it takes tools.",
                "session", ("noRepository",)),
)

METHODS: tuple[MethodSpec, ...] = (
    MethodSpec("autocode/task/didChange", "notification", TaskDidChangeParams, None,
               "Sent after every change of a task in this session's folders, with the full "
               "snapshot: changes made through this session or another session of the same "
               "server at once, changes made by another process (another server, the CLI) "
               "as they land on disk (inotify; within about a second where the server has to "
               "look instead). Revisions only increase.", "experimental.autocode"),
    MethodSpec("autocode/task/askQuestion", "request", AskQuestionParams, AskQuestionResult,
               "Asks the person one question of a task. The reply says how it was answered "
               "(`how`, as in `autocode.task.answer`; without it a text equal to the default is "
               "an accepted default); the source is lsp:<client name>.", "experimental.autocode",
               {"taskId": "t-1", "revision": 3,
                "question": {"id": "q1", "text": "Which test naming style?", "category": "other",
                             "convention": "test-naming", "default": "Describe the behaviour",
                             "choices": ["Describe the behaviour"]}}),
    MethodSpec("autocode/task/saveDocuments", "request", SaveDocumentsParams, SaveDocumentsResult,
               "After an apply through `workspace/applyEdit`: asks the editor to save the documents "
               "that held no unsaved edits, so an applied change is on disk (COMPLETED is said only "
               "once the server read every file back from disk). A document that held unsaved "
               "edits is never saved for the person: it keeps them, merged, and the task waits "
               "(`needs.kind` `save_files`) until they save it.",
               "experimental.autocode", {"taskId": "t-1", "uris": ["file:///path/to/project/greet.py"]}),
    MethodSpec("autocode/task/reviewPlan", "request", ReviewPlanParams, ReviewPlanResult,
               "Shows the plan for approval. `approve` approves exactly `planRevision`; "
               "`later` leaves it waiting for `autocode.task.approvePlan`.",
               "experimental.autocode"),
)

ERROR_KINDS: tuple[ErrorKind, ...] = (
    ErrorKind("invalidArguments", INVALID_PARAMS, "An argument is missing, unknown or of the wrong type.",
              "Fix the argument named in the message."),
    ErrorKind("noRepository", REQUEST_FAILED,
              "The command needs a repository and the session has no workspace folder "
              "(also: a memory with `scope: project` there).",
              "Open a folder or pass `workspace`."),
    ErrorKind("confirmationRequired", REQUEST_FAILED,
              "The command removes data, or applies a change nothing proves (`data.confirmation` "
              "names the word to confirm with).",
              "Ask the person, then call again with `confirm` (`true`, or the word `data.confirmation` names)."),
    ErrorKind("taskNotFound", REQUEST_FAILED, "No task with that id in the workspace.",
              "List tasks with `autocode.task.list`."),
    ErrorKind("notAwaitingInput", REQUEST_FAILED, "The task is not waiting for that input now.",
              "Fetch the snapshot (`autocode.task.get`) and act on its `needs`."),
    ErrorKind("alreadyDecided", REQUEST_FAILED,
              "That decision was already taken (a duplicate or late answer or approval); the "
              "message says when (\"already approved at ...\"), `data.decidedAt` and `data.state` "
              "say when and where the task is now.",
              "Fetch the snapshot (`autocode.task.get`) and act on its `needs`, if any."),
    ErrorKind("planRevisionMismatch", REQUEST_FAILED, "The plan changed since it was reviewed.",
              "Review the current plan and approve its revision."),
    ErrorKind("memoryRefused", REQUEST_FAILED,
              "The memory was not saved: it is tied to one task (a task key, PR or issue number, "
              "commit, column move, \"this task\") or holds a credential. `data.reason` is one of "
              "task_key, pr_or_issue, commit_sha, column_move, this_task, credential; "
              "`data.belongs` says where it belongs; `data.suggestion` may hold a durable rewording.",
              "Save the durable fact instead, or put the note in the task."),
    ErrorKind("memoryNotFound", REQUEST_FAILED, "No memory with that id is visible here.",
              "Search or list memories for the id."),
    ErrorKind("memoryStoreUnavailable", REQUEST_FAILED, "The memory store cannot be reached.",
              "See the message and `autocode.doctor`'s memory section."),
    ErrorKind("setupError", REQUEST_FAILED, "The workspace or its declared inputs are not usable. "
              "Prep reports the finer kinds below.",
              "Follow the remedy in the message; the prep copy stays for inspection."),
    ErrorKind("manifestInvalid", REQUEST_FAILED, "The task's input manifest is malformed or names "
              "a path it may not (outside the workspace, duplicated, not a file).",
              "Fix the manifest entry the message names and run prep again."),
    ErrorKind("inputIgnored", REQUEST_FAILED, "A declared input file is ignored by git, so it "
              "never enters a prep copy.",
              "Move only that file to a path git does not ignore and update the manifest."),
    ErrorKind("preflightFailed", REQUEST_FAILED, "A declared input cannot be opened or changed "
              "while it was checked.", "Make it readable and run prep again."),
    ErrorKind("aliasToIgnored", REQUEST_FAILED, "A file in the copy is a link to a path git "
              "ignores, which would leak ignored content into the copy.",
              "Remove the link or point it at a tracked file."),
    ErrorKind("changedDuringCopy", REQUEST_FAILED, "A file changed while the prep copy was made "
              "(`data.path`).", "Stop whatever writes to the workspace and run prep again."),
    ErrorKind("unreadableFile", REQUEST_FAILED, "A file of the workspace cannot be read "
              "(`data.path`).", "Make it readable, or have git ignore it."),
    ErrorKind("copyFailed", REQUEST_FAILED, "The second copying process of a large prep failed; "
              "nothing of that copy was kept.",
              "Run prep again; check free disk space if it keeps failing."),
    ErrorKind("workspaceInvalid", REQUEST_FAILED, "The folder given as the workspace cannot be "
              "one: it does not exist, is not a folder, is inside `.git`, is not in a git work tree "
              "(none, or a bare repository), is a sub-folder where prep needs the top folder, or "
              "(project memories) the repository has no commit and no origin to identify it by.",
              "Pass the top folder of a normal git checkout, as the message says."),
    ErrorKind("destinationUnsafe", REQUEST_FAILED, "The prep copy's destination under "
              "`.autocode/prep` is not safe to write (something else created or linked it).",
              "Remove old copies (`autocode prep prune`) and run prep again."),
    ErrorKind("autocodeFolderUnsafe", REQUEST_FAILED, "The workspace's `.autocode` (or a folder "
              "in it) is a symbolic link or not a folder; AutoCode refuses to write through it.",
              "Replace it with a plain folder (move its content), then run the command again."),
    ErrorKind("taskDamaged", REQUEST_FAILED, "A task's saved files cannot be read; AutoCode never "
              "writes them partially, so they were changed by hand.",
              "Restore the files or start a new task."),
    ErrorKind("emptyChange", REQUEST_FAILED, "The implementer's change changes no file (an empty "
              "diff, or one that leaves every file's content as it was); such a task never completes.",
              "Reword the brief or the plan and start again."),
    ErrorKind("patchDoesNotApply", REQUEST_FAILED, "The implementer's change does not apply to "
              "the prep copy.", "Start again; a model that edits files directly avoids this."),
    ErrorKind("noTestCommand", REQUEST_FAILED, "The task needs tests to pass and no test command "
              "is set or detected.", "Set `test_command` in the project's settings."),
    ErrorKind("sandboxUnavailable", REQUEST_FAILED, "A task runs the project's tests and commands in a "
              "sandbox, and none can be made on this machine (no bubblewrap, no user namespaces, "
              "not Linux); `autocode doctor` says why.",
              "Install bubblewrap, or have the person set `sandbox = \"off\"` in their user config or "
              "pass `--sandbox off`."),
    ErrorKind("testsFailed", REQUEST_FAILED, "A test of the change failed, or the tests did not finish; "
              "the message names the failing tests.",
              "Read the test output in the task's evidence; request changes or start again."),
    ErrorKind("testsRegressed", REQUEST_FAILED, "A test that passed before the change no longer passes "
              "(failed, skipped or gone); the message names each one.",
              "Read the test output in the task's evidence; start again with a change that keeps them passing."),
    ErrorKind("copyGone", REQUEST_FAILED, "The task's prep copy is gone (released when the task "
              "ended, or removed by hand), so its change cannot be proved again.",
              "Start the task again."),
    ErrorKind("hunksChanged", REQUEST_FAILED, "A hunk id given in `keep` is not in the change as it "
              "merges now (the file changed since the preview); nothing was written.",
              "Call `autocode.task.preview` again and choose from its hunks."),
    ErrorKind("budgetExhausted", REQUEST_FAILED, "The implementer stopped at a budget (turns, "
              "tokens or time); what it changed so far is kept in the evidence.",
              "Raise the budget the message names and start again."),
    ErrorKind("agentLoop", REQUEST_FAILED, "The model repeated the same failing tool call after "
              "being told it fails; what it changed so far is kept in the evidence.",
              "Start again with a brief that names the file and the change, or use another model."),
    ErrorKind("skillConflict", REQUEST_FAILED, "A skill memory with that name already exists with "
              "different content.", "Pick another name or delete the old skill first."),
    ErrorKind("fileSystemFault", REQUEST_FAILED, "The disk or file system failed (an I/O error, a "
              "name too long, ...); nothing half-written was left behind.",
              "Check the disk and the file system and run the command again."),
    ErrorKind("noSpace", REQUEST_FAILED, "The device or the disk quota is full; nothing "
              "half-written was left behind.",
              "Free some space (`autocode prep prune` removes old prep copies) and run it again."),
    ErrorKind("readOnly", REQUEST_FAILED, "The workspace's file system is read-only.",
              "Remount it read-write, or work in a writable clone."),
    ErrorKind("permissionDenied", REQUEST_FAILED, "The file system refused a write (`data.path`).",
              "Give your user write access, or work in a clone you own."),
    ErrorKind("tooDeep", REQUEST_FAILED, "An input is nested too deeply to read.",
              "Flatten it and run the command again."),
    ErrorKind("settingsError", REQUEST_FAILED, "A settings file cannot be read.",
              "Fix the file the message names."),
    ErrorKind("providerError", REQUEST_FAILED, "The model provider is misconfigured or failed.",
              "See the message; `autocode.doctor` shows the provider settings."),
    ErrorKind("gitError", REQUEST_FAILED, "git failed or is older than the supported version.",
              "See the message."),
    ErrorKind("refused", REQUEST_FAILED, "The operation is refused by policy.", "See the message."),
    ErrorKind("trustRequired", REQUEST_FAILED, "The workspace's settings files name destinations "
              "(endpoints, key variables, memory stores) its person has not trusted; nothing was "
              "started.", "Show `data.says` to the person; on their yes call `autocode.project.trust` "
              "with `confirm: true` and `data.digest`, then retry."),
    ErrorKind("trustChanged", REQUEST_FAILED, "The settings files changed since the person was "
              "shown them; nothing was trusted.", "Show the new `data.says` and ask again."),
    ErrorKind("notAvailable", REQUEST_FAILED, "This installation lacks the engine part.",
              "Check `features` in `autocode.protocol.info`; update AutoCode."),
    ErrorKind("taskChoiceNeeded", REQUEST_FAILED,
              "The command was sent without a task id and more than one task (or none) fits.",
              "Pick one from `data.tasks` (id, brief, what it waits for) and send the command "
              "again with its `taskId`, or use the code actions, which carry the ids."),
    ErrorKind("cancelled", REQUEST_FAILED, "A request to the model provider was cancelled because "
              "the task was cancelled.", "Start the task again if you still want it."),
    ErrorKind("engineMissing", REQUEST_FAILED, "The chosen engine's program (an agent CLI) is not on "
              "PATH or could not be started; nothing was started.",
              "Install it as the message says (docs/engines.md), or unset `engine`."),
    ErrorKind("engineVersion", REQUEST_FAILED, "The engine's `--version` names no version, or one "
              "AutoCode does not read (a task's error).", "Install a version the message names."),
    ErrorKind("engineLogin", REQUEST_FAILED, "The engine has no key it can use (a task's error).",
              "Set the variable and name it with `engine_api_key_env` in the user config, then resume."),
    ErrorKind("engineIdle", REQUEST_FAILED, "The engine printed nothing for `engine_idle_timeout` "
              "seconds, or ran past `time_budget`, and was stopped with its children (a task's error).",
              "Check its endpoint or raise the limit, then resume."),
    ErrorKind("engineCrashed", REQUEST_FAILED, "The engine ended with an error (a task's error); its "
              "output is in the run folder's `engine/output.jsonl`.", "Fix what it names, then resume."),
    ErrorKind("engineNetwork", REQUEST_FAILED, "The engine's endpoint (the only host and port its "
              "sandbox may reach) is not an http:// or https:// URL with a host; the CLI was not started.",
              "Set `engine_base_url` in the user config to the endpoint's URL, then resume."),
    ErrorKind("engineRefused", REQUEST_FAILED, "An engine was named as a provider or a route, or for "
              "a role other than the implementer; only the person's `engine` setting chooses one.",
              "Set `engine` in the user config or pass it as a flag."),
)

REMOTE_ERROR_KINDS: tuple[ErrorKind, ...] = (
    ErrorKind("workspaceOutsideSession", INVALID_PARAMS,
              "The `workspace` argument is not one of the session's workspace folders nor inside "
              "one (symbolic links resolved).",
              "Add the folder to the editor's workspace, or leave `workspace` out."),
    ErrorKind("manifestOutsideWorkspace", INVALID_PARAMS,
              "The `manifest` argument is not a file inside the task's workspace nor inside a "
              "folder the server was started with `--manifest-folder` (symbolic links resolved). "
              "Nothing outside was looked at.",
              "Put the manifest in the workspace, or restart the server with `--manifest-folder`."),
    ErrorKind("clientOverrideRefused", INVALID_PARAMS,
              "A network client named a command or endpoint (`testCommand`, a provider base URL; "
              "`data.field` says which) and the server was started without "
              "`--allow-client-overrides`.",
              "Set it in the project's settings, or restart the server with the flag."),
    ErrorKind("unauthorized", REQUEST_FAILED,
              "`initialize` came without the listener's token, or with a wrong one. The "
              "connection is closed after this answer.",
              "Read the token file the server printed and pass it in "
              "`initializationOptions.autocode.token`."),
    ErrorKind("serverNotInitialized", -32002,
              "A request came before a successful `initialize`. Over a listening transport the "
              "connection is closed after this answer.",
              "Send `initialize` first."),
)
"""Errors of the remote face (docs/security.md): confinement, client overrides, the lifecycle."""


# --------------------------------------------------------------------------- the wire converter


def _strict(kind: type[Any] | tuple[type[Any], ...], label: str) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _: Any) -> Any:
        # bool is an int in Python; a JSON `true` is not a number on the wire.
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise TypeError(f"expected {label}, got a boolean")
        if not isinstance(value, kind):
            raise TypeError(f"expected {label}, got {type(value).__name__}")
        return value

    return hook


def is_pydantic(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, pydantic.BaseModel)


def is_result(tp: Any) -> bool:
    """An engine result dataclass with a wire form (`autocode.wire.Wire`, e.g. the memory answers)."""
    return isinstance(tp, type) and dataclasses.is_dataclass(tp) and hasattr(tp, "wire")


def is_shape(tp: Any) -> bool:
    """An argument or result dataclass of the protocol itself (the converter writes its functions)."""
    return isinstance(tp, type) and dataclasses.is_dataclass(tp) and not is_result(tp)


def is_model(tp: Any) -> bool:
    """A shape of the protocol: a dataclass (this module's or an engine result) or an engine pydantic model."""
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp) or is_pydantic(tp))


@dataclass(frozen=True)
class ModelField:
    """One field of a shape, as the wire, the document and the schema see it."""

    name: str
    wire: str
    tp: Any
    required: bool
    default: Any
    doc: str
    union: str | None = None
    """The name of a union told apart by `kind` (the field's title), when it is one."""


def model_fields(cls: type[Any]) -> list[ModelField]:
    if dataclasses.is_dataclass(cls):
        # This module's shapes and the engine's result dataclasses alike; a field the engine
        # keeps off the wire (`autocode.wire.INTERNAL`) is left out.
        hints = typing.get_type_hints(cls)
        docs = _field_docs(cls)
        out = []
        for f in wire_fields(cls):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            default = None
            if not required:
                default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            out.append(ModelField(f.name, camel(f.name.rstrip("_")), hints[f.name], required, default,
                                  docs.get(f.name, "")))
        return out
    found = []
    docs = _model_docs(cls)
    for name, f in cls.model_fields.items():
        # The engine's results only travel from the server to a client, always dumped whole
        # (`WireModel.wire()`): every field is on the wire, defaults included, so each is required.
        found.append(ModelField(name, f.alias or name, f.annotation, True, None,
                                " ".join((f.description or docs.get(name, "")).split()),
                                f.title if f.discriminator else None))
    return found


def _model_docs(cls: type[Any]) -> dict[str, str]:
    """A pydantic model's attribute docstrings, its bases' included (read from the source here
    rather than by pydantic at import, which cost the engine's task models about a third of
    their import time)."""
    docs: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if issubclass(base, pydantic.BaseModel) and base.__module__.partition(".")[0] != "pydantic":
            docs.update(_field_docs(base))
    return docs


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(bool, _strict(bool, "true or false"))
    conv.register_structure_hook(int, _strict(int, "an integer"))
    conv.register_structure_hook(float, _strict((int, float), "a number"))

    def renames(cl: type[Any]) -> dict[str, Any]:
        return {f.name: override(rename=camel(f.name.rstrip("_"))) for f in dataclasses.fields(cl)}

    def structure_factory(cl: type[Any]) -> Any:
        return make_dict_structure_fn(cl, conv, _cattrs_forbid_extra_keys=True, **renames(cl))

    def unstructure_factory(cl: type[Any]) -> Any:
        return make_dict_unstructure_fn(cl, conv, **renames(cl))

    def list_factory(tp: Any) -> Any:
        (item,) = typing.get_args(tp) or (Any,)

        def hook(value: Any, _: Any) -> list[Any]:
            if not isinstance(value, list):
                raise TypeError(f"expected a list, got {type(value).__name__}")
            inner = conv.get_structure_hook(item)
            out = []
            for index, element in enumerate(value):
                try:
                    out.append(inner(element, item))
                except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
                    raise TypeError(
                        f"expected a list of {_type_text(item)}; item {index} is not one"
                    ) from exc
            return out

        return hook

    def is_list(tp: Any) -> bool:
        return typing.get_origin(tp) is list

    def structure_model(value: Any, tp: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError(f"expected a JSON object, got {type(value).__name__}")
        return tp.model_validate(value)

    conv.register_structure_hook_factory(is_list, list_factory)
    # The protocol's own dataclasses: camelCase names, unknown keys refused.
    conv.register_structure_hook_factory(is_shape, structure_factory)
    conv.register_unstructure_hook_factory(is_shape, unstructure_factory)
    # The engine's typed results (pydantic): their own camelCase dump and validation.
    conv.register_structure_hook_func(is_pydantic, structure_model)
    conv.register_unstructure_hook_func(
        is_pydantic, lambda value: value.model_dump(mode="json", by_alias=True)
    )
    # The engine's result dataclasses (the memory answers): their own camelCase `wire()`.
    conv.register_unstructure_hook_func(is_result, lambda value: value.wire())
    return conv


converter = _make_converter()


class InvalidArguments(ValueError):
    """Arguments that do not match a command's shape; the message names each problem."""


def parse_arguments(spec: CommandSpec, arguments: Sequence[Any]) -> Any:
    """The command's typed arguments from `workspace/executeCommand`'s `arguments` list.

    A command takes one object; no argument at all means `{}`.
    """
    if len(arguments) > 1:
        raise InvalidArguments(
            f"{spec.name} takes one object argument, got {len(arguments)} arguments"
        )
    raw = arguments[0] if arguments else {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidArguments(
            f"{spec.name} takes one JSON object as its argument, got {type(raw).__name__}"
        )
    try:
        limits.check(spec.name, raw)
    except limits.TooLarge as exc:
        raise InvalidArguments(str(exc)) from None
    return structure(raw, spec.args, what=spec.name)


def structure(raw: Any, cls: type[T], *, what: str) -> T:
    try:
        return converter.structure(raw, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
        if isinstance(exc, cattrs.BaseValidationError):
            problems = [
                _wire_path(p)
                for p in cattrs.transform_error(exc, path="", format_exception=_describe)
            ]
        else:
            problems = [str(exc)]
        raise InvalidArguments(
            f"invalid arguments for {what}: " + "; ".join(problems)
            + " (the shapes are in docs/protocol.md)"
        ) from exc


def _describe(exc: BaseException, tp: Any) -> str:
    if isinstance(exc, KeyError):
        return "is required"
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        names = ", ".join(sorted(exc.extra_fields))
        return f"has unknown field(s): {names}"
    if typing.get_origin(tp) is Literal:
        return "must be one of " + ", ".join(f'"{a}"' for a in typing.get_args(tp))
    if isinstance(exc, TypeError) and str(exc).startswith("expected "):
        return str(exc)
    if isinstance(exc, AttributeError | TypeError) and tp is not None and is_shape(tp):
        return "expected a JSON object"
    return f"is not valid ({_type_text(tp) if tp is not None else exc})"


def _wire_path(problem: str) -> str:
    # cattrs reports Python field names; the person reading it wrote camelCase.
    if " @ " not in problem:
        return problem
    text, path = problem.rsplit(" @ ", 1)
    parts = [camel(p) if p and not p.startswith("[") else p for p in path.split(".")]
    where = ".".join(p for p in parts if p)
    return f"`{where}` {text}" if where else f"the argument object {text}"


def to_wire(value: Any) -> Any:
    """JSON-ready data for a model (every field present, camelCase keys)."""
    return converter.unstructure(value)


COMMANDS_BY_NAME: dict[str, CommandSpec] = {c.name: c for c in COMMANDS}


# --------------------------------------------------------------------------- docs/protocol.md


def _type_text(tp: Any) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is type(None):
        return "null"
    if tp is Any:
        return "any"
    if origin is Literal:
        return " | ".join("null" if a is None else f'"{a}"' for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_text(a) for a in args)
    if origin is list:
        inner = _type_text(args[0])
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if origin is dict:
        return "object"
    if is_model(tp):
        return str(tp.__name__)
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(tp, str(tp))


def _field_docs(cls: type[Any]) -> dict[str, str]:
    """Attribute docstrings (the string literal after a field) from the class source."""
    return _module_field_docs(cls.__module__).get(cls.__qualname__, {})


@functools.cache
def _module_field_docs(module: str) -> dict[str, dict[str, str]]:
    """Every class's attribute docstrings in one module, by qualified name. The module is parsed
    once: `inspect.getsource` on a class parses its whole module again for each class asked."""
    tree = ast.parse(inspect.getsource(sys.modules[module]))
    found: dict[str, dict[str, str]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = prefix + node.name
                found[name] = _attribute_docs(node.body)
                visit(node.body, name + ".")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(node.body, f"{prefix}{node.name}.<locals>.")

    visit(tree.body, "")
    return found


def _attribute_docs(body: list[ast.stmt]) -> dict[str, str]:
    docs: dict[str, str] = {}
    for node, nxt in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _shape(cls: type[Any], seen: set[type[Any]], out: list[str]) -> None:
    if cls in seen:
        return
    seen.add(cls)
    doc = " ".join((cls.__doc__ or "").split())
    out.append(f"#### `{cls.__name__}`\n")
    if doc and not doc.startswith(cls.__name__ + "("):
        out.append(doc + "\n")
    fields = model_fields(cls)
    if not fields:
        out.append("`{}` (no fields)\n")
        return
    out.append("| field | type | required | notes |")
    out.append("| --- | --- | --- | --- |")
    nested: list[type[Any]] = []
    unions: list[tuple[str, list[type[Any]]]] = []
    for f in fields:
        default = "" if f.required else f"default `{_json(f.default)}`. "
        text = f.union or _type_text(f.tp)
        out.append(
            f"| `{f.wire}` | `{text.replace('|', chr(92) + '|')}` "
            f"| {'yes' if f.required else 'no'} "
            f"| {default}{f.doc} |".replace("  |", " |")
        )
        if f.union:
            unions.append((f.union, _models_in(f.tp)))
        else:
            nested.extend(_models_in(f.tp))
    out.append("")
    for name, variants in unions:
        out.append(f"#### `{name}`\n")
        out.append("One of " + ", ".join(f"`{v.__name__}`" for v in variants) + ", told apart by `kind`.\n")
        for v in variants:
            _shape(v, seen, out)
    for n in nested:
        _shape(n, seen, out)


def _models_in(tp: Any) -> list[type[Any]]:
    if is_model(tp):
        return [tp]
    found: list[type[Any]] = []
    for a in typing.get_args(tp):
        found.extend(_models_in(a))
    return found


def _json(value: Any) -> str:
    return json.dumps(value)


def _remote_section() -> list[str]:
    """"Remote containers" in docs/protocol.md: how a client proves it may drive a listener."""
    return [
        "## Remote containers",
        "",
        "A listening server runs commands as the person who started it, so every listener "
        "asks for proof (docs/security.md has the threat model):",
        "",
        "- `--socket PATH` (recommended into a container: bind-mount the folder) makes a unix "
        "socket 0600 in a 0700 folder of its owner and refuses peers of another uid "
        "(`SO_PEERCRED`). `--tcp HOST:PORT` and `--ws HOST:PORT` bind loopback only unless "
        "`--allow-remote` is given (and then a token is required).",
        "- Each start makes a random token and writes it to a file only its owner can read "
        "(`$XDG_RUNTIME_DIR/autocode/`, else `~/.local/state/autocode/run/`); "
        "`--token-file FILE` uses a token you keep instead. The listening line on stderr names "
        "the file, never the token: "
        "`autocode-lsp: listening on tcp 127.0.0.1:PORT (token file: PATH)`. "
        "`--no-token` is accepted only on loopback or a unix socket, with a warning.",
        "- Over TCP and the unix socket the client sends the token in `initialize`: "
        '`initializationOptions: {"autocode": {"token": "..."}}`. Over WebSocket it goes in '
        "the handshake header `X-AutoCode-Token` (a web page cannot set that header); the "
        "handshake is also refused (403) for an `Origin` not given with `--allow-origin` and "
        "for a `Host` that is neither a loopback name nor the bound address, and messages "
        "over 16 MiB close the connection (1009).",
        "- No token, a wrong one, or any request before a successful `initialize` gets one "
        "error (`unauthorized`, `serverNotInitialized`) and the connection is closed; nothing "
        "else the client sent is handled. Over stdio a request before `initialize` gets "
        "`-32002` and the session goes on, as the LSP specification says.",
        "- A broken frame (a missing, non-numeric, negative or lying `Content-Length`, a body "
        "that is not a JSON object) closes that connection with one log line; over stdio the "
        "process exits with status 1 so the editor restarts it. A frame must arrive whole within "
        "30 seconds of its first header line (the variable `AUTOCODE_LSP_FRAME_TIMEOUT_S`): a "
        "`Content-Length` longer than what the peer sends is found that way; between frames a "
        "client may stay quiet as long as it likes.",
        "- Before the token: a new connection must send its `initialize` within 5 seconds "
        "(`--auth-timeout`), that first message may be at most 32 KiB, and at most 64 "
        "connections of a listener wait for theirs at once (`--max-unauthenticated`, never "
        "over a quarter of the open-file limit): a newer one drops the oldest that has sent "
        "nothing. Loopback connections of the server's own user never count among them, so a "
        "flood from another account cannot keep the owner out. A WebSocket handshake has the "
        "same deadline and at most 32 header lines of 8 KiB; a header given twice is a 400. The "
        "log file rotates at 8 MiB (one old file is kept) and each kind of line is "
        "rate-limited, with the number left out said on the next one.",
        "- Every `workspace` argument must be a session folder or inside one "
        "(`workspaceOutsideSession`), checked before any task is read (a command without "
        "`taskId` lists only the tasks of the session's folders). A `manifest` must be a file "
        "inside the workspace or a folder given with `--manifest-folder` "
        "(`manifestOutsideWorkspace`); nothing outside is looked at. A network client may not "
        "name a command (`testCommand`) unless the server was started with `--allow-client-overrides` "
        "(`clientOverrideRefused`); over stdio it may.",
        "",
    ]


def render_markdown() -> str:
    """The text of docs/protocol.md."""
    out: list[str] = [
        "# AutoCode language server protocol",
        "",
        "<!-- Generated from server/autocode_lsp/protocol/ by `scripts/gen_protocol_types.py` "
        "(or `python -m autocode_lsp --print-protocol-doc`). Do not edit by hand. -->",
        "",
        f"Protocol version **{PROTOCOL_VERSION}**. Start the server with `autocode-lsp` "
        "(stdio, the default), `autocode-lsp --tcp 127.0.0.1:PORT` or "
        "`autocode-lsp --ws 127.0.0.1:PORT`. Over TCP and WebSocket the server keeps "
        "listening after a client disconnects, so a client can reconnect and pick up its "
        "tasks (tasks live on disk, not in the server).",
        "",
        "## Two kinds of client",
        "",
        "Every capability works through standard LSP messages, so any client can drive "
        "AutoCode without typing JSON or copying ids:",
        "",
        "- **Code actions** (`textDocument/codeAction`, kinds `source.autocode.*`) on any file of "
        "a workspace offer what its tasks wait for now (answer a question, review, approve or "
        "request changes to a plan, review or apply a change, cancel) plus start a task, "
        "doctor and memory search. Each is bound to a command with its ids filled in.",
        "- **Documents as files** in `.autocode/runs/`: `<task>/plan.md`, `<task>/changes.diff`, "
        "`doctor.md`, opened with `window/showDocument` when the client supports it (otherwise "
        "their path is given in `window/showMessage`). Code lenses on `plan.md` and "
        "`changes.diff` carry Approve, Request changes, Apply and Cancel.",
        "- **Forms for free text**: `<task>/answers.md` (the open questions), `<task>/feedback.md` "
        "(plan feedback), `new-task.md` (a brief) and `memory-search.md` (a query). The person "
        "writes under a heading and saves; the server takes what was written when it gets "
        "`textDocument/didSave` or sees the file change on disk. An empty field is no answer.",
        "- A question arrives as `window/showMessageRequest` offering: the question's own "
        "choices (recorded as chosen), \"Answer in a file…\" (opens `answers.md`), \"Accept the "
        "proposed default (not remembered)\" and \"Let AutoCode decide\". A prompt that was "
        "dismissed, answered with an error or not answered within 15 minutes (the variable "
        "`AUTOCODE_LSP_PROMPT_TIMEOUT_S`; the same holds for `autocode/task/askQuestion` and "
        "`autocode/task/reviewPlan`) is asked again at the next interaction (the next code "
        "action request or command); nothing is recorded meanwhile.",
        "- **Diagnostics** mark what a task waits for on the document the person decides on: "
        "`plan.md` and `changes.diff` (\"waiting for your approval\"), `answers.md` (\"waiting "
        "for your answer\"); source `AutoCode`, code `waitingForApproval` or `waitingForAnswer`, "
        "`data` `{taskId, verbs}`. A client that declared `textDocument.diagnostic` pulls them "
        "(`textDocument/diagnostic`, `workspace/diagnostic`; `workspace/diagnostic/refresh` when a "
        "task changes, if it declared `refreshSupport`); one that declared only "
        "`textDocument.publishDiagnostics` gets them pushed, and an empty list when the need "
        "passes. A code action request carrying such a diagnostic gets the decisions as "
        "`quickfix` actions that carry it (none marked preferred).",
        "- `workspace/codeLens/refresh` is sent when a task's need changes, only to a client that "
        "declared `workspace.codeLens.refreshSupport`.",
        "- Messages name the code action to run (\"run the code action 'AutoCode: approve plan "
        "r1 of …'\"), not a command id. A task another session started in the session's folders "
        "(in this process or another) is announced once with `window/showMessage`.",
        "- Every request gets a reply: `workspace/executeCommand` params LSP would not send "
        "(`arguments` that is no list, a `command` that is no string) fail with `-32602` saying "
        "what to send.",
        "- A task command sent without `taskId` acts on the one open task that fits it (a plan "
        "approval on that task's current revision); otherwise it fails with "
        "`taskChoiceNeeded` and `data.tasks` lists the candidates.",
        "- Long work reports `$/progress` when the client set `window.workDoneProgress`; other "
        "clients get each step as a `window/logMessage` line. A command that works longer than "
        "8 seconds (the variable `AUTOCODE_LSP_REPLY_WITHIN_S`) answers with the task as it "
        "stands and the outcome follows as a message or notification, so no request outlives "
        "a client's timeout. Cancelling the progress cancels the task.",
        "",
        "A client that opts in with `capabilities.experimental.autocode` set to an object "
        '(for example `{"protocolVersion": "1.0"}`) gets instead the custom methods below: '
        "`autocode/task/didChange` after every change, and the requests "
        "`autocode/task/askQuestion` and `autocode/task/reviewPlan`. It then receives neither "
        "the showMessageRequest questions nor the showDocument plans. Each of the three can be "
        "declined on its own with `false` in that object (for example "
        '`{"protocolVersion": "1.0", "askQuestion": false}` keeps `didChange` and `reviewPlan` '
        "and brings questions as plain messages). A client that does not opt in never receives "
        "an `autocode/*` message.",
        "",
        "The server answers `initialize` with `capabilities.experimental.autocode` = "
        "`{protocolVersion, serverVersion, features}` (the same as `autocode.protocol.info`).",
        "",
        "Answers and approvals that arrive through the server are recorded with the source "
        "`lsp:<clientInfo.name>` (a client without `clientInfo` is named by its connection: "
        "`<program> over stdio` for the program that started the server, else `tcp HOST:PORT "
        "client` and the like); an answer also records how it was given (`typed`, `chosen`, "
        "`acceptedDefault`, `delegated`), and only typed or chosen answers may be learned. "
        "Nothing the server decides by itself is recorded as a person's.",
        "",
        "## Workspace",
        "",
        "A command's own `workspace` argument (a path or a `file://` URI) wins; otherwise the "
        "session's only workspace folder, else the only git repository among its folders "
        "(folders that are not repositories are left out of task commands, with a log line). "
        "With several repositories, task commands that name a task find it in any of them, and "
        "other commands need `workspace` (the code actions fill it in). A session without a "
        "folder has no repository in context: memory commands see and save global memories "
        "only, and task, prep, doctor and forget commands fail with `noRepository`.",
        "",
        "### Paths across a container boundary",
        "",
        "When the editor and the server name the same folder differently (a bind mount into a "
        "container), start the server with `--path-map CLIENT_PREFIX=SERVER_PREFIX` "
        "(repeatable) or send `initializationOptions.autocode.pathMap` (a list of such strings "
        "or an object `{client: server}`). Every path and `file://` URI that comes in "
        "(workspace folders, `workspace` arguments, documents) is translated to the server's "
        "name and every one that goes out (results, notifications, messages, documents to "
        "open, edits, errors) to the editor's. A path outside every prefix fails with `-32602` "
        "naming both sides. The server log's first lines show the map. The editor's prefix may "
        "be a Windows path (`C:\\Users\\ana\\app`, `C:/Users/ana/app`) or a `file://` URI "
        "(`file:///c%3A/Users/ana/app`); drive letters and case compare as on Windows. Open "
        "documents are looked up under the editor's URI, so a change to one goes through "
        "`workspace/applyEdit`; URIs that go out are percent-encoded, and the documents the "
        "server writes for the person (doctor, plan, forms) name the editor's paths.",
        "",
        *_remote_section(),
        "## Argument limits",
        "",
        f"Every argument has a bound, checked before anything else; a bigger one fails with "
        f"`{INVALID_PARAMS}` naming the field and its size (never its value). Sizes count "
        "characters; lists and objects count entries.",
        "",
        *limits.markdown_rows(),
        "",
        "## Errors",
        "",
        f"Bad arguments fail with JSON-RPC `{INVALID_PARAMS}` and a message naming the argument. "
        f"Domain errors fail with `{REQUEST_FAILED}` (RequestFailed) and `error.data` = "
        "`{kind, message, ...}`; `kind` is stable, the message may change. The engine may "
        "report kinds beyond this table; a client should show the message of any kind.",
        "",
        "| kind | code | meaning | what to do |",
        "| --- | --- | --- | --- |",
    ]
    for e in ERROR_KINDS + REMOTE_ERROR_KINDS:
        out.append(f"| `{e.kind}` | {e.code} | {e.meaning} | {e.what_to_do} |")
    out += [
        "",
        f"Features (listed in `features`): {', '.join(f'`{f}`' for f in FEATURES)}.",
        "",
        "## Commands",
        "",
        "Each command takes one JSON object as its only argument "
        "(`arguments: [{...}]`; no argument means `{}`) and returns one JSON object. "
        "Unknown fields are errors.",
        "",
    ]
    seen: set[type[Any]] = set()
    for c in COMMANDS:
        out.append(f"### `{c.name}`\n")
        out.append(c.summary + "\n")
        out.append(f"- arguments: `{c.args.__name__}`; result: `{c.result.__name__}`")
        if c.errors:
            out.append("- errors: " + ", ".join(f"`{k}`" for k in c.errors))
        out.append("")
        if c.example is not None:
            out.append("```json")
            out.append(json.dumps({"command": c.name, "arguments": [c.example]}, indent=2))
            out.append("```\n")
    out += ["## Custom methods (opted-in clients only)", ""]
    for m in METHODS:
        out.append(f"### `{m.name}` ({m.direction}, server to client)\n")
        out.append(m.summary + "\n")
        out.append(f"- enabled by: `{m.capability}`")
        out.append(f"- params: `{m.params.__name__}`"
                   + (f"; result: `{m.result.__name__}`" if m.result else ""))
        out.append("")
        if m.example is not None:
            out.append("```json")
            out.append(json.dumps(m.example, indent=2))
            out.append("```\n")
    out += ["## Shapes", ""]
    models: list[type[Any]] = []
    for c in COMMANDS:
        models += [c.args, c.result]
    for m in METHODS:
        models += [m.params] + ([m.result] if m.result else [])
    for cls in models:
        _shape(cls, seen, out)
    return "\n".join(out).rstrip() + "\n"
