"""Plain data of the memory part: what a memory is, who is asking, and what each call answers.

The answers of save, search and promotion planning (`SaveResult`, `SearchResult`,
`PromotionPlan` and what they hold) are the protocol's shapes: the language
server sends them as they are (the protocol module reuses these classes) and
`autocode memory ... --json` prints the same dump, camelCase only (`wire()`,
see `autocode.wire` for why they are dataclasses rather than pydantic models).
The records a store reads back (`Memory`, `Skill`) and the other answers keep
`to_dict()`. Nothing here touches a store.

Kept whole: these are the memory part's plain data (its errors, the records a
store reads back and every call's answer), read together when a face or a
store needs to know what it may receive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from autocode.errors import AutoCodeError, NoRepository
from autocode.wire import INTERNAL, Wire

Scope = Literal["project", "global"]
ScopeFilter = Literal["all", "project", "global"]
OwnerFilter = Literal["all", "self", "team"]

SCOPES: tuple[str, ...] = ("project", "global")
SCOPE_FILTERS: tuple[str, ...] = ("all", "project", "global")
OWNER_FILTERS: tuple[str, ...] = ("all", "self", "team")

# The task roles of this project; config may name more (see docs/memory.md).
DEFAULT_ROLES: tuple[str, ...] = ("requirements", "planner", "implementer", "investigator", "reviewer")

RECALL_PER_SECTION = 8


class MemoryStoreError(AutoCodeError):
    """Base of memory errors a person can act on."""

    kind = "memoryError"
    exit_code = 1


class MemoryNotFound(MemoryStoreError):
    kind = "memoryNotFound"
    exit_code = 4


class NoRepositoryInContext(NoRepository):
    """scope=project asked for where no repository is in context."""


class StoreUnavailable(MemoryStoreError):
    kind = "memoryStoreUnavailable"
    exit_code = 2


@dataclass(frozen=True)
class MemoryContext:
    """Who is asking: an agent (None = a person acting for the team), a repository or none, a run.

    `repository` is a folder inside the repository (its key is worked out from
    git), or a key already made by `repository_key` ("origin:..." / "root:...").
    """

    agent: str | None = None
    repository: Path | str | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class Memory:
    id: str
    content: str
    category: str | None
    scope: str
    repo_key: str | None
    owner: str | None
    created_at: str
    updated_at: str
    run_id: str | None = None
    embedding_model: str | None = None

    @property
    def shared(self) -> bool:
        return self.owner is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "category": self.category,
            "scope": self.scope,
            "repository": self.repo_key,
            "owner": self.owner,
            "shared": self.shared,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "run_id": self.run_id,
            "embedding_model": self.embedding_model,
        }


@dataclass(frozen=True)
class Skill:
    id: str
    name: str
    owner: str | None
    description: str
    category: str | None
    content: str
    scope: str
    repo_key: str | None
    origin: str
    source_memory_id: str | None
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "owner": self.owner,
            "description": self.description,
            "category": self.category,
            "content": self.content,
            "scope": self.scope,
            "repository": self.repo_key,
            "origin": self.origin,
            "source_memory_id": self.source_memory_id,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class Refusal(Wire):
    """Why content is not a memory, where it belongs instead, and a durable version when there is one."""

    kind: str
    """What made it task-bound: `task_key`, `credential`, `machine_path`, ..."""
    reason: str
    belongs: str
    """Where the note belongs instead."""
    suggestion: str | None = None
    """A durable version of the content that could be saved instead."""

    def to_dict(self) -> dict[str, Any]:
        return self.wire()


@dataclass(frozen=True)
class Eviction(Wire):
    """A memory removed because its agent's bucket went over the cap."""

    id: str
    owner: str | None
    repository: str | None
    created_at: str
    excerpt: str

    @property
    def repo_key(self) -> str | None:
        return self.repository

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "owner": self.owner,
            "repository": self.repository,
            "created_at": self.created_at,
            "excerpt": self.excerpt,
        }


@dataclass(frozen=True)
class SaveResult(Wire):
    """A refused save is the error `memoryRefused` on the wire (exit 3 in the CLI); these are all outcomes."""

    saved: bool
    id: str | None = None
    """The new memory's id when `saved`."""
    duplicate_of: str | None = None
    """Id of the memory that already says the same thing (then `saved` is false)."""
    duplicate_method: str | None = None
    """How the duplicate was found: `exact`, `terms` or `meaning`."""
    skill: str | None = None
    """Name of the skill made instead, when the content is reusable know-how."""
    refused: Refusal | None = None
    """Why the content was not saved (the server sends this as the `memoryRefused` error instead)."""
    evicted: list[Eviction] = field(default_factory=list)
    """Oldest memories removed because the agent's bucket went over its cap."""
    scope: str | None = None
    repository: str | None = None
    similar_to: str | None = None
    """Id of the closest memory when this one was saved beside it because they
    differ in a number, identifier, quoted token, negation or word (nothing is
    merged away unless it says the same thing)."""
    message: str = ""
    """What happened, in words a person can read."""

    def __post_init__(self) -> None:
        if not self.message:
            object.__setattr__(self, "message", self._describe())

    def _describe(self) -> str:
        if self.refused is not None:
            reason = self.refused.reason.rstrip(". ")
            text = f"not saved: {reason}. It belongs in {self.refused.belongs}." if self.refused.belongs else f"not saved: {reason}."
            return text + (f" A durable version: {self.refused.suggestion}" if self.refused.suggestion else "")
        if self.saved:
            text = f"saved {self.id} ({self.scope})"
            if self.similar_to:
                text += f"; close to memory {self.similar_to}, kept both since they differ in a detail"
            return text
        if self.duplicate_of:
            return f"not saved again: memory {self.duplicate_of} already says this"
        return f"saved as the skill {self.skill!r} instead: it is reusable know-how"

    def to_dict(self) -> dict[str, Any]:
        """The snake_case form a run's own records and `memory reflect` keep."""
        return {
            "saved": self.saved,
            "id": self.id,
            "duplicate_of": self.duplicate_of,
            "duplicate_method": self.duplicate_method,
            "similar_to": self.similar_to,
            "skill": self.skill,
            "refused": self.refused.to_dict() if self.refused else None,
            "evicted": [e.to_dict() for e in self.evicted],
            "scope": self.scope,
            "repository": self.repository,
        }


@dataclass(frozen=True)
class Hit:
    memory: Memory
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.memory.to_dict(), "score": round(self.score, 4)}


@dataclass(frozen=True)
class MemoryView(Wire):
    """One memory. `scope` is `project` or `global`; `shared` means a team memory (no owner)."""

    id: str
    content: str
    category: str | None
    scope: str
    repository: str | None
    """The portable repository key (never a path of this machine) of a project memory."""
    owner: str | None
    """The agent the memory belongs to; null for a team memory."""
    shared: bool
    created_at: str
    updated_at: str
    run_id: str | None
    score: float | None
    """Relevance for search and recall results; null elsewhere."""

    @classmethod
    def of(cls, memory: Memory, score: float | None = None) -> MemoryView:
        return cls(
            id=memory.id, content=memory.content, category=memory.category, scope=memory.scope,
            repository=memory.repo_key, owner=memory.owner, shared=memory.shared,
            created_at=memory.created_at, updated_at=memory.updated_at, run_id=memory.run_id,
            score=None if score is None else round(score, 4),
        )


@dataclass(frozen=True)
class SearchResult(Wire):
    """Memories found for a query, best first."""

    query: str
    method: str
    """How results were ranked: by meaning and keywords, or keywords and recency."""
    memories: list[MemoryView]
    hits: list[Hit] = field(default_factory=list, metadata=INTERNAL, repr=False, compare=False)
    """Each memory's whole record and exact score, for the engine's own callers (not on the wire)."""

    @classmethod
    def of(cls, query: str, method: str, hits: list[Hit]) -> SearchResult:
        return cls(query=query, method=method, memories=[MemoryView.of(h.memory, h.score) for h in hits], hits=list(hits))


@dataclass(frozen=True)
class MemoryList(Wire):
    """Memories in a listing, newest first."""

    memories: list[MemoryView]

    @classmethod
    def of(cls, memories: list[Memory]) -> MemoryList:
        return cls(memories=[MemoryView.of(m) for m in memories])


@dataclass(frozen=True)
class MemoryDeleteResult(Wire):
    """The memory a delete removed."""

    deleted: MemoryView

    @classmethod
    def of(cls, memory: Memory) -> MemoryDeleteResult:
        return cls(deleted=MemoryView.of(memory))


@dataclass(frozen=True)
class SkillView(Wire):
    """One skill: know-how given to agents, made from a memory or written by a person."""

    id: str
    name: str
    owner: str | None
    """The agent the skill belongs to; null for a team skill."""
    description: str
    category: str | None
    content: str
    scope: str
    repository: str | None
    """The portable repository key of a project skill."""
    origin: str
    source_memory_id: str | None
    created_at: str

    @classmethod
    def of(cls, skill: Skill) -> SkillView:
        return cls(
            id=skill.id, name=skill.name, owner=skill.owner, description=skill.description,
            category=skill.category, content=skill.content, scope=skill.scope, repository=skill.repo_key,
            origin=skill.origin, source_memory_id=skill.source_memory_id, created_at=skill.created_at,
        )


@dataclass(frozen=True)
class SkillList(Wire):
    skills: list[SkillView]

    @classmethod
    def of(cls, skills: list[Skill]) -> SkillList:
        return cls(skills=[SkillView.of(s) for s in skills])


@dataclass(frozen=True)
class RecallView(Wire):
    """What a task would be given at its start for a brief, in two sections."""

    method: str
    reason: str
    repository: str | None
    project: list[MemoryView]
    global_: list[MemoryView]
    text: str
    """Both sections as Markdown, as a task would receive them."""


@dataclass(frozen=True)
class RecallReceipt:
    """What a run was given at its start: ids, scores and the ranking method, in two sections."""

    project: list[Hit]
    global_: list[Hit]
    method: str
    repository: str | None
    agent: str | None
    run_id: str | None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "reason": self.reason,
            "repository": self.repository,
            "agent": self.agent,
            "run_id": self.run_id,
            "project": [h.to_dict() for h in self.project],
            "global": [h.to_dict() for h in self.global_],
        }

    def receipt(self) -> dict[str, Any]:
        """The compact record a run keeps: ids, scores, method (no content)."""
        return {
            "method": self.method,
            "repository": self.repository,
            "project": [{"id": h.memory.id, "score": round(h.score, 4)} for h in self.project],
            "global": [{"id": h.memory.id, "score": round(h.score, 4)} for h in self.global_],
        }

    def view(self) -> RecallView:
        """The receipt as the wire and `--json` show it."""
        return RecallView(
            method=self.method, reason=self.reason, repository=self.repository,
            project=[MemoryView.of(h.memory, h.score) for h in self.project],
            global_=[MemoryView.of(h.memory, h.score) for h in self.global_], text=self.render(),
        )

    def render(self) -> str:
        """Markdown with one section per scope, for a provider's context or a person."""
        lines = ["## Project memories", ""]
        if self.repository is None:
            lines.append("_No repository in context: project memories are not available._")
        elif not self.project:
            lines.append("_None yet for this repository._")
        lines.extend(_render_hit(h) for h in self.project)
        lines += ["", "## Global memories", ""]
        if not self.global_:
            lines.append("_None yet._")
        lines.extend(_render_hit(h) for h in self.global_)
        return "\n".join(lines) + "\n"


def _render_hit(hit: Hit) -> str:
    who = "team" if hit.memory.owner is None else hit.memory.owner
    category = f" [{hit.memory.category}]" if hit.memory.category else ""
    text = " ".join(hit.memory.content.split())
    return f"- {text}{category} ({who}, {hit.memory.id})"


@dataclass(frozen=True)
class PromotionCandidate(Wire):
    """A team memory that could become a skill, and the skill it would be."""

    memory_id: str
    name: str
    description: str
    category: str | None
    content: str
    agents: list[str]
    """The roles the skill would be given to."""
    scope: str
    repository: str | None


@dataclass(frozen=True)
class PromotionPlan(Wire):
    """Team memories worth turning into skills (nothing is written until they are applied)."""

    scanned: int
    """Team memories looked at."""
    candidates: list[PromotionCandidate]


@dataclass(frozen=True)
class PromotionResult:
    skills: list[Skill]
    removed: list[str]

    def view(self) -> PromotionApplied:
        """The result as the wire and `--json` show it."""
        return PromotionApplied(skills=[SkillView.of(s) for s in self.skills], removed=list(self.removed))


@dataclass(frozen=True)
class PromotionApplied(Wire):
    """Skills made from team memories, and the memories that became them."""

    skills: list[SkillView]
    removed: list[str]
    """Ids of the memories that became skills (and are gone)."""


@dataclass(frozen=True)
class ReflectionProposal(Wire):
    """A lesson a run left, proposed as a global memory (saved only when a person approves it)."""

    id: str
    content: str
    category: str | None
    source_run: str | None
    source_repository: str | None
    verdict: str
    refused: Refusal | None = None
    duplicate_of: str | None = None
    scope: str = "global"
    """Always `global`: a lesson holds beyond the repository it came from."""


@dataclass(frozen=True)
class ReflectionResult(Wire):
    proposals: list[ReflectionProposal]
    applied: list[SaveResult]
