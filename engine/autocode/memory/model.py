"""Plain data of the memory part: what a memory is, who is asking, and what each call answers.

Every result that crosses into the CLI or the language server has `to_dict()`
with stable keys. Nothing here touches a store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from autocode.errors import AutoCodeError, NoRepository

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
class Refusal:
    """Why content is not a memory, where it belongs instead, and a durable version when there is one."""

    kind: str
    reason: str
    belongs: str
    suggestion: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "reason": self.reason,
            "belongs": self.belongs,
            "suggestion": self.suggestion,
        }


@dataclass(frozen=True)
class Eviction:
    id: str
    owner: str | None
    repo_key: str | None
    created_at: str
    excerpt: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "owner": self.owner,
            "repository": self.repo_key,
            "created_at": self.created_at,
            "excerpt": self.excerpt,
        }


@dataclass(frozen=True)
class SaveResult:
    saved: bool
    id: str | None = None
    duplicate_of: str | None = None
    duplicate_method: str | None = None
    skill: str | None = None
    refused: Refusal | None = None
    evicted: list[Eviction] = field(default_factory=list)
    scope: str | None = None
    repository: str | None = None
    # Saved beside a close memory that was not a duplicate (docs/memory.md).
    similar_to: str | None = None

    def to_dict(self) -> dict[str, Any]:
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
class SearchResult:
    query: str
    method: str
    hits: list[Hit]

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "method": self.method, "hits": [h.to_dict() for h in self.hits]}


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
class PromotionCandidate:
    memory_id: str
    name: str
    description: str
    category: str | None
    content: str
    agents: list[str]
    scope: str
    repository: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory_id,
            "name": self.name,
            "description": self.description,
            "category": self.category,
            "content": self.content,
            "agents": list(self.agents),
            "scope": self.scope,
            "repository": self.repository,
        }


@dataclass(frozen=True)
class PromotionPlan:
    candidates: list[PromotionCandidate]
    scanned: int

    def to_dict(self) -> dict[str, Any]:
        return {"scanned": self.scanned, "candidates": [c.to_dict() for c in self.candidates]}


@dataclass(frozen=True)
class PromotionResult:
    skills: list[Skill]
    removed: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"skills": [s.to_dict() for s in self.skills], "removed": list(self.removed)}


@dataclass(frozen=True)
class ReflectionProposal:
    id: str
    content: str
    category: str | None
    source_run: str | None
    source_repository: str | None
    verdict: str
    refused: Refusal | None = None
    duplicate_of: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "category": self.category,
            "scope": "global",
            "source_run": self.source_run,
            "source_repository": self.source_repository,
            "verdict": self.verdict,
            "refused": self.refused.to_dict() if self.refused else None,
            "duplicate_of": self.duplicate_of,
        }


@dataclass(frozen=True)
class ReflectionResult:
    proposals: list[ReflectionProposal]
    applied: list[SaveResult]

    def to_dict(self) -> dict[str, Any]:
        return {
            "proposals": [p.to_dict() for p in self.proposals],
            "applied": [a.to_dict() for a in self.applied],
        }
