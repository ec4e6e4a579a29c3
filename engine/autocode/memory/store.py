"""The one interface both memory stores implement, and the SQL they share.

Rows keep `''` rather than NULL for "no owner" (a team memory) and "no
repository" (a global memory), so a bucket is plain equality on
(owner, repo_key) in either database. The service turns them back into None.

Kept whole: it is the contract both stores implement; the shared SQL and row
types sit beside the interface, so a new store is written against this one
file.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from autocode.memory.model import Memory, Skill

MEMORY_COLUMNS = (
    "id, content, category, scope, repo_key, owner, created_at, updated_at, run_id, embedding_model"
)
SKILL_COLUMNS = (
    "id, name, owner, description, category, content, scope, repo_key, origin, source_memory_id, created_at"
)


def now_text() -> str:
    """UTC time as fixed-width ISO 8601 text, so text order is time order in both stores."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def bucket_tag(owner: str, repo_key: str) -> str:
    """The word the full-text indexes add to each memory so a query can stay inside one bucket."""
    return "b" + hashlib.md5(f"{owner}|{repo_key}".encode(), usedforsecurity=False).hexdigest()


def bucket_id(owner: str, repo_key: str) -> int:
    """A bucket as a 60-bit number (PostgreSQL's postings key); the same digest as `bucket_tag`."""
    return int(hashlib.md5(f"{owner}|{repo_key}".encode(), usedforsecurity=False).hexdigest()[:15], 16)


@dataclass(frozen=True)
class Candidate:
    """A memory the duplicate check compares a new one with (`cosine` when found by meaning)."""

    id: str
    seq: int
    content: str
    terms: str
    embedding: bytes | None = None
    embedding_model: str | None = None
    cosine: float | None = None


CANDIDATE_COLUMNS = "id, seq, content, terms, embedding, embedding_model"


def candidate_from_row(row: Sequence[Any], cosine: float | None = None) -> Candidate:
    blob = row[4]
    return Candidate(row[0], int(row[1]), row[2], row[3], bytes(blob) if blob is not None else None, row[5], cosine)


@dataclass(frozen=True)
class Scored:
    """One ranked memory: its id, its sequence number (the tie-break) and its score."""

    id: str
    seq: int
    score: float
    memory: Memory | None = None
    """The memory itself, when the ranking query read it anyway."""


@dataclass(frozen=True)
class SaveChecks:
    """What a save's duplicate checks read: an exact duplicate, the bucket's highest sequence
    number when read (lock-free checks only), its best keyword matches and its closest memory
    by meaning."""

    exact: str | None
    seen: int
    keyword: list[Candidate]
    nearest: Candidate | None


def excerpt(text: str, size: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"


def eviction_detail(owner: str, repo_key: str, cap: int, content: str) -> str:
    return f"evicted the oldest memory of agent {owner!r} in {repo_key or 'global'} (cap {cap}): {excerpt(content)}"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(6)}"


def memory_from_row(row: Sequence[Any]) -> Memory:
    return Memory(
        id=row[0],
        content=row[1],
        category=row[2],
        scope=row[3],
        repo_key=row[4] or None,
        owner=row[5] or None,
        created_at=row[6],
        updated_at=row[7],
        run_id=row[8],
        embedding_model=row[9],
    )


def skill_from_row(row: Sequence[Any]) -> Skill:
    return Skill(
        id=row[0],
        name=row[1],
        owner=row[2] or None,
        description=row[3],
        category=row[4],
        content=row[5],
        scope=row[6],
        repo_key=row[7] or None,
        origin=row[8],
        source_memory_id=row[9],
        created_at=row[10],
    )


@dataclass(frozen=True)
class Visibility:
    """Which rows a caller may see: owners (agent and/or '' for team) and repo keys ('' = global)."""

    owners: tuple[str, ...]
    repo_keys: tuple[str, ...]

    def where(self, alias: str = "") -> tuple[str, list[Any]]:
        prefix = f"{alias}." if alias else ""
        if not self.owners or not self.repo_keys:
            return "1 = 0", []
        owners = ", ".join("?" for _ in self.owners)
        repos = ", ".join("?" for _ in self.repo_keys)
        return (
            f"{prefix}owner IN ({owners}) AND {prefix}repo_key IN ({repos})",
            [*self.owners, *self.repo_keys],
        )


@dataclass(frozen=True)
class NewMemory:
    id: str
    content: str
    norm_hash: str
    terms: str
    category: str | None
    scope: str
    repo_key: str
    owner: str
    created_at: str
    run_id: str | None
    embedding: bytes | None
    embedding_model: str | None


@dataclass(frozen=True)
class NewSkill:
    id: str
    name: str
    owner: str
    description: str
    category: str | None
    content: str
    norm_hash: str
    scope: str
    repo_key: str
    origin: str
    source_memory_id: str | None
    created_at: str


def _save_checks(
    reader: Writer | Store, owner: str, repo_key: str, norm_hash: str, query_terms: Sequence[str],
    vector: Sequence[float] | None, model: str | None, limit: int, seen: Callable[[], int],
) -> SaveChecks:
    """The exact check, then (when it finds nothing) `seen`, the closest by meaning and the keyword matches."""
    exact = reader.find_exact(owner, repo_key, norm_hash)
    if exact is not None:
        return SaveChecks(exact, 0, [], None)
    high = seen()
    nearest = reader.nearest_memory(owner, repo_key, vector, model) if vector is not None and model else None
    return SaveChecks(None, high, reader.keyword_matches(owner, repo_key, query_terms, limit), nearest)


class Writer(abc.ABC):
    """Operations inside one write transaction (the store holds the lock until it ends)."""

    @abc.abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abc.abstractmethod
    def rowcount(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    @abc.abstractmethod
    def added_since(self, owner: str, repo_key: str, seq: int, limit: int) -> list[Candidate]:
        """The bucket's memories with a sequence number above `seq`, oldest first (at most `limit`)."""

    @abc.abstractmethod
    def keyword_matches(self, owner: str, repo_key: str, query_terms: Sequence[str], limit: int) -> list[Candidate]:
        """The bucket's best keyword matches, as the search ranks them (bounded, see ranking.WINDOW)."""

    @abc.abstractmethod
    def nearest_memory(self, owner: str, repo_key: str, vector: Sequence[float], model: str) -> Candidate | None:
        """The bucket's closest memory embedded by `model`, with its cosine."""

    @abc.abstractmethod
    def insert_memory(self, row: NewMemory) -> None: ...

    def save_checks(
        self, owner: str, repo_key: str, norm_hash: str, query_terms: Sequence[str],
        vector: Sequence[float] | None, model: str | None, limit: int,
    ) -> SaveChecks:
        """A save's duplicate checks under the lock (a store may send them in one round trip)."""
        return _save_checks(self, owner, repo_key, norm_hash, query_terms, vector, model, limit, lambda: 0)

    def find_exact(self, owner: str, repo_key: str, norm_hash: str) -> str | None:
        rows = self.execute(
            "SELECT id FROM memories WHERE owner = ? AND repo_key = ? AND norm_hash = ? ORDER BY seq LIMIT 1",
            (owner, repo_key, norm_hash),
        )
        return rows[0][0] if rows else None

    def bucket_overflow(self, owner: str, repo_key: str, cap: int) -> list[Memory]:
        """The oldest memories of a bucket beyond its cap, oldest first."""
        count = self.execute(
            "SELECT count(*) FROM memories WHERE owner = ? AND repo_key = ?", (owner, repo_key)
        )[0][0]
        excess = int(count) - cap
        if excess <= 0:
            return []
        rows = self.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE owner = ? AND repo_key = ? "
            "ORDER BY created_at, seq LIMIT ?",
            (owner, repo_key, excess),
        )
        return [memory_from_row(r) for r in rows]

    def delete_memory(self, memory_id: str) -> int:
        return self.rowcount("DELETE FROM memories WHERE id = ?", (memory_id,))

    def add_lesson(
        self, lesson_id: str, content: str, category: str | None, owner: str, run_id: str, repo_key: str
    ) -> None:
        self.execute(
            "INSERT INTO reflection_lessons (id, content, category, owner, run_id, repo_key, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (lesson_id, content, category, owner, run_id, repo_key, now_text()),
        )

    def set_lesson_status(self, lesson_id: str, status: str, memory_id: str | None = None) -> None:
        self.execute(
            "UPDATE reflection_lessons SET status = ?, memory_id = coalesce(?, memory_id) WHERE id = ?",
            (status, memory_id, lesson_id),
        )

    def log_event(self, kind: str, memory_id: str | None, owner: str, repo_key: str, detail: str) -> None:
        self.execute(
            "INSERT INTO memory_events (at, kind, memory_id, owner, repo_key, detail) VALUES (?, ?, ?, ?, ?, ?)",
            (now_text(), kind, memory_id, owner, repo_key, detail),
        )

    def find_skill(self, owner: str, repo_key: str, name: str) -> tuple[str, str] | None:
        rows = self.execute(
            "SELECT id, norm_hash FROM skills WHERE owner = ? AND repo_key = ? AND name = ?",
            (owner, repo_key, name),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def find_skill_by_hash(self, owner: str, repo_key: str, norm_hash: str) -> str | None:
        rows = self.execute(
            "SELECT name FROM skills WHERE owner = ? AND repo_key = ? AND norm_hash = ?",
            (owner, repo_key, norm_hash),
        )
        return rows[0][0] if rows else None

    def insert_skill(self, row: NewSkill) -> None:
        self.execute(
            "INSERT INTO skills (id, name, owner, description, category, content, norm_hash, scope, "
            "repo_key, origin, source_memory_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id, row.name, row.owner, row.description, row.category, row.content,
                row.norm_hash, row.scope, row.repo_key, row.origin, row.source_memory_id, row.created_at,
            ),
        )


class Store(abc.ABC):
    """A memory store. Reads run on their own; writes go through `write()` (one transaction)."""

    kind: str = "store"
    CHECKS_UNDER_LOCK = False
    """Whether a save checks for duplicates while it holds its bucket's lock (True), or checks
    first without it and, under the lock, only compares with what other writers added meanwhile.
    PostgreSQL checks in the database, through its indexes, so the lock serialises whole saves to
    one bucket: savers that would each compete with searches for the CPU wait their turn. SQLite's
    lock is the whole database's, and a process's first check may fill its caches of a bucket
    first, which must not keep every other writer waiting."""

    @property
    @abc.abstractmethod
    def location(self) -> str:
        """Where the store is, with no secret in it."""

    @property
    def vector_support(self) -> str:
        return "embeddings compared in the process"

    @abc.abstractmethod
    def close(self) -> None: ...

    @abc.abstractmethod
    def schema_version(self) -> int: ...

    @abc.abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abc.abstractmethod
    @contextlib.contextmanager
    def write(self, lock_key: str = "") -> Iterator[Writer]:
        """One write transaction; `lock_key` serialises writers to one bucket."""
        yield  # type: ignore[misc]

    @abc.abstractmethod
    def rank(
        self,
        buckets: Sequence[tuple[str, str]],
        query_terms: Sequence[str],
        vector: Sequence[float] | None,
        model: str | None,
        mode: str,
        limit: int,
        keyword_weight: float,
        floor: float | None,
    ) -> list[Scored]:
        """The best `limit` memories of `buckets` by `mode` (see ranking.MODES), ranked in the database."""

    @abc.abstractmethod
    def bucket_high_seq(self, owner: str, repo_key: str) -> int:
        """The highest sequence number in a bucket (0 when empty): what a save's checks have seen."""

    @abc.abstractmethod
    def keyword_matches(self, owner: str, repo_key: str, query_terms: Sequence[str], limit: int) -> list[Candidate]:
        """As Writer.keyword_matches, read without any lock."""

    @abc.abstractmethod
    def nearest_memory(self, owner: str, repo_key: str, vector: Sequence[float], model: str) -> Candidate | None:
        """As Writer.nearest_memory, read without any lock."""

    def save_checks(
        self, owner: str, repo_key: str, norm_hash: str, query_terms: Sequence[str],
        vector: Sequence[float] | None, model: str | None, limit: int,
    ) -> SaveChecks:
        """A save's lock-free duplicate checks (a store may send them in one round trip)."""
        return _save_checks(
            self, owner, repo_key, norm_hash, query_terms, vector, model, limit,
            lambda: self.bucket_high_seq(owner, repo_key),
        )

    def search_state(self, buckets: Sequence[tuple[str, str]], model: str | None, limit: int) -> tuple[bool, list[str]]:
        """Whether `buckets` hold any memory, and (with a model) ids of theirs not embedded by it."""
        if not self.has_memories(buckets):
            return False, []
        return True, self.missing_embeddings(buckets, model, limit) if model else []

    def rank_with_state(
        self,
        buckets: Sequence[tuple[str, str]],
        query_terms: Sequence[str],
        vector: Sequence[float],
        model: str,
        mode: str,
        limit: int,
        keyword_weight: float,
        floor: float | None,
        missing_limit: int,
    ) -> tuple[bool, list[str], list[Scored]]:
        """`search_state` and `rank` together (a store may send both in one round trip). The
        ranking counts only when the buckets hold memories and none lacks an embedding of `model`."""
        present, missing = self.search_state(buckets, model, missing_limit)
        if not present or missing:
            return present, missing, []
        return True, [], self.rank(buckets, query_terms, vector, model, mode, limit, keyword_weight, floor)

    @abc.abstractmethod
    def missing_embeddings(self, buckets: Sequence[tuple[str, str]], model: str, limit: int) -> list[str]:
        """Ids of memories in `buckets` with no embedding made by `model` (at most `limit`)."""

    @abc.abstractmethod
    def index_state(self) -> dict[str, Any]:
        """How far the search indexes are built, for doctor."""

    @abc.abstractmethod
    def set_embeddings(self, items: Sequence[tuple[str, Sequence[float]]], model: str) -> None:
        """Store embeddings made by `model` for memories that had none (or another model's)."""

    # Shared reads.

    def get_memories(self, ids: Sequence[str]) -> dict[str, Memory]:
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        rows = self.query(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks})", list(ids))
        return {r[0]: memory_from_row(r) for r in rows}

    def find_exact(self, owner: str, repo_key: str, norm_hash: str) -> str | None:
        """The memory of a bucket with this normalised text, if any (a read, no lock)."""
        rows = self.query(
            "SELECT id FROM memories WHERE owner = ? AND repo_key = ? AND norm_hash = ? ORDER BY seq LIMIT 1",
            (owner, repo_key, norm_hash),
        )
        return rows[0][0] if rows else None

    def pending_lessons(self) -> list[tuple[str, str, str | None, str, str | None, str]]:
        """(id, content, category, owner, run_id, repo_key) of lessons waiting for reflection, oldest first."""
        rows = self.query(
            "SELECT id, content, category, owner, run_id, repo_key FROM reflection_lessons "
            "WHERE status = 'pending' ORDER BY seq"
        )
        return [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]

    def has_memories(self, buckets: Sequence[tuple[str, str]]) -> bool:
        """Whether any of `buckets` holds a memory (one indexed look per bucket)."""
        return any(
            self.query("SELECT 1 FROM memories WHERE owner = ? AND repo_key = ? LIMIT 1", bucket)
            for bucket in buckets
        )

    def list_memories(self, visible: Visibility, limit: int | None = None) -> list[Memory]:
        """Visible memories, newest first. With a limit, each bucket is read through its index and merged."""
        if limit is None:
            where, params = visible.where()
            sql = f"SELECT {MEMORY_COLUMNS}, seq FROM memories WHERE {where} ORDER BY created_at DESC, seq DESC"
            return [memory_from_row(r) for r in self.query(sql, params)]
        rows: list[tuple[Any, ...]] = []
        for owner in visible.owners:
            for repo_key in visible.repo_keys:
                rows += self.query(
                    f"SELECT {MEMORY_COLUMNS}, seq FROM memories WHERE owner = ? AND repo_key = ? "
                    "ORDER BY created_at DESC, seq DESC LIMIT ?",
                    (owner, repo_key, limit),
                )
        rows.sort(key=lambda r: (r[6], r[10]), reverse=True)
        return [memory_from_row(r) for r in rows[:limit]]

    def list_skills(self, visible: Visibility) -> list[Skill]:
        where, params = visible.where()
        rows = self.query(
            f"SELECT {SKILL_COLUMNS} FROM skills WHERE {where} ORDER BY name, owner", params
        )
        return [skill_from_row(r) for r in rows]

    def count_memories(self) -> int:
        return int(self.query("SELECT count(*) FROM memories")[0][0])

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT at, kind, memory_id, owner, repo_key, detail FROM memory_events"
        params: list[Any] = []
        if kind:
            sql += " WHERE kind = ?"
            params.append(kind)
        rows = self.query(sql + " ORDER BY seq", params)
        return [
            {"at": r[0], "kind": r[1], "memory_id": r[2], "owner": r[3] or None, "repository": r[4] or None, "detail": r[5]}
            for r in rows
        ]
