"""The default store: one SQLite file (WAL, busy timeout, FTS5 over the memories' terms).

Writers take the database lock up front (BEGIN IMMEDIATE), so several
processes saving at once queue instead of racing past each other's
duplicate check. Embeddings are compared in the process.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from autocode.memory.embeddings import dot, pack, unpack
from autocode.memory.model import StoreUnavailable
from autocode.memory.store import NewMemory, Store, Writer, bucket_tag

BUSY_TIMEOUT_MS = 30_000

# Each entry is one schema version; a database records the highest it has.
MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE memories (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                content TEXT NOT NULL,
                norm_hash TEXT NOT NULL,
                terms TEXT NOT NULL,
                category TEXT,
                scope TEXT NOT NULL CHECK (scope IN ('project', 'global')),
                repo_key TEXT NOT NULL DEFAULT '',
                owner TEXT NOT NULL DEFAULT '',
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                run_id TEXT,
                embedding BLOB,
                embedding_model TEXT,
                CHECK ((scope = 'global') = (repo_key = ''))
            )""",
            "CREATE INDEX memories_bucket ON memories (owner, repo_key, created_at)",
            "CREATE INDEX memories_hash ON memories (norm_hash)",
            "CREATE INDEX memories_repo ON memories (repo_key, owner)",
            """CREATE VIRTUAL TABLE memories_fts USING fts5 (
                terms, content='memories', content_rowid='seq', tokenize="unicode61 tokenchars '.+#_'"
            )""",
            """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
                INSERT INTO memories_fts (rowid, terms) VALUES (new.seq, new.terms);
            END""",
            """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
                INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.seq, old.terms);
            END""",
            """CREATE TABLE skills (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                owner TEXT NOT NULL DEFAULT '',
                description TEXT NOT NULL,
                category TEXT,
                content TEXT NOT NULL,
                norm_hash TEXT NOT NULL,
                scope TEXT NOT NULL,
                repo_key TEXT NOT NULL DEFAULT '',
                origin TEXT NOT NULL,
                source_memory_id TEXT,
                created_at TEXT NOT NULL,
                UNIQUE (owner, repo_key, name)
            )""",
            """CREATE TABLE memory_events (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                at TEXT NOT NULL,
                kind TEXT NOT NULL,
                memory_id TEXT,
                owner TEXT NOT NULL DEFAULT '',
                repo_key TEXT NOT NULL DEFAULT '',
                detail TEXT NOT NULL
            )""",
        ],
    ),
    (
        2,
        [
            """CREATE TABLE reflection_lessons (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                content TEXT NOT NULL,
                category TEXT,
                owner TEXT NOT NULL DEFAULT '',
                run_id TEXT,
                repo_key TEXT NOT NULL DEFAULT '',
                created_at TEXT NOT NULL,
                status TEXT NOT NULL DEFAULT 'pending',
                memory_id TEXT
            )""",
            "CREATE INDEX reflection_status ON reflection_lessons (status, seq)",
        ],
    ),
    (
        3,
        [
            "CREATE TABLE memory_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
            "INSERT INTO memory_meta (key, value) VALUES ('generation', 0)",
        ],
    ),
    (
        4,
        [
            # The full-text index also holds each memory's bucket tag, so a duplicate lookup
            # matches inside one bucket instead of across every memory of every team.
            "DROP TRIGGER memories_ai",
            "DROP TRIGGER memories_ad",
            "DROP TABLE memories_fts",
            "ALTER TABLE memories ADD COLUMN bucket TEXT NOT NULL DEFAULT ''",
            """CREATE VIRTUAL TABLE memories_fts USING fts5 (
                terms, tokenize="unicode61 tokenchars '.+#_'"
            )""",
            """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
                INSERT INTO memories_fts (rowid, terms) VALUES (new.seq, new.terms || ' ' || new.bucket);
            END""",
            """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
                DELETE FROM memories_fts WHERE rowid = old.seq;
            END""",
        ],
    ),
]
LATEST = MIGRATIONS[-1][0]


def fts_query(query_terms: Sequence[str]) -> str:
    """An FTS5 OR-query of the terms, each quoted so no term is read as syntax."""
    unique = list(dict.fromkeys(t for t in query_terms if t))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)


class _SqliteWriter(Writer):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def rowcount(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, tuple(params)).rowcount

    def keyword_candidates(
        self, owner: str, repo_key: str, query_terms: Sequence[str], limit: int
    ) -> list[tuple[str, str]]:
        match = fts_query(query_terms)
        if not match:
            return []
        rows = self.conn.execute(
            "SELECT m.id, m.terms FROM memories_fts f JOIN memories m ON m.seq = f.rowid "
            "WHERE memories_fts MATCH ? AND m.owner = ? AND m.repo_key = ? ORDER BY bm25(memories_fts) LIMIT ?",
            (f'"{bucket_tag(owner, repo_key)}" AND ({match})', owner, repo_key, limit),
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def nearest_in_bucket(
        self, owner: str, repo_key: str, vector: Sequence[float], model: str
    ) -> tuple[str, float] | None:
        best: tuple[str, float] | None = None
        for memory_id, blob in self.conn.execute(
            "SELECT id, embedding FROM memories WHERE owner = ? AND repo_key = ? AND embedding_model = ?",
            (owner, repo_key, model),
        ):
            score = dot(vector, unpack(blob))
            if best is None or score > best[1]:
                best = (memory_id, score)
        return best

    def insert_memory(self, row: NewMemory) -> None:
        self.conn.execute(
            "INSERT INTO memories (id, content, norm_hash, terms, category, scope, repo_key, owner, "
            "created_at, updated_at, run_id, embedding, embedding_model, bucket) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id, row.content, row.norm_hash, row.terms, row.category, row.scope, row.repo_key,
                row.owner, row.created_at, row.created_at, row.run_id, row.embedding, row.embedding_model,
                bucket_tag(row.owner, row.repo_key),
            ),
        )


class SqliteStore(Store):
    kind = "sqlite"

    def __init__(self, path: Path, *, migrate_to: int | None = None) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # Created 0600 before SQLite opens it: its -wal and -shm files copy these modes.
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            self.conn = sqlite3.connect(
                str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailable(
                f"cannot open the memory database {self.path}: {exc}; check the folder is writable "
                "or set memory_path to another file"
            ) from exc
        self._migrate(LATEST if migrate_to is None else migrate_to)
        self._generation_table = self.schema_version() >= 3

    @property
    def location(self) -> str:
        return str(self.path)

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def _migrate(self, target: int) -> None:
        with self._lock:
            try:
                # An up-to-date database is opened without taking the write lock.
                exists = self.conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
                ).fetchone()
                if exists:
                    current = self.conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]
                    if current == target:
                        return
            except sqlite3.Error as exc:
                raise StoreUnavailable(
                    f"cannot read the memory database {self.path}: {exc}; check the file, "
                    "or set memory_path to another file"
                ) from exc
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    self.conn.execute(
                        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
                    )
                    current = self.conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]
                    if current > LATEST:
                        raise StoreUnavailable(
                            f"the memory database {self.path} has schema version {current}, newer than this "
                            f"autocode understands ({LATEST}); upgrade autocode"
                        )
                    for version, statements in MIGRATIONS:
                        if current < version <= target:
                            for statement in statements:
                                self.conn.execute(statement)
                            if version == 4:
                                self._fill_bucket_tags()
                            self.conn.execute(
                                "INSERT INTO schema_migrations (version, applied_at) VALUES (?, datetime('now'))",
                                (version,),
                            )
                    self.conn.execute("COMMIT")
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc

    def _fill_bucket_tags(self) -> None:
        rows = self.conn.execute("SELECT seq, owner, repo_key, terms FROM memories").fetchall()
        for seq, owner, repo_key, terms in rows:
            tag = bucket_tag(owner, repo_key)
            self.conn.execute("UPDATE memories SET bucket = ? WHERE seq = ?", (tag, seq))
            self.conn.execute("INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)", (seq, f"{terms} {tag}"))

    def schema_version(self) -> int:
        return int(self.query("SELECT coalesce(max(version), 0) FROM schema_migrations")[0][0])

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self.conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc

    def _failure(self, exc: sqlite3.Error) -> StoreUnavailable:
        if "locked" in str(exc) or "busy" in str(exc):
            return StoreUnavailable(
                f"the memory database {self.path} stayed locked for {BUSY_TIMEOUT_MS // 1000} s by another "
                "process; nothing was written. Try again when the other autocode command has finished"
            )
        return StoreUnavailable(f"the memory database {self.path} failed: {exc}; nothing was written")

    @contextlib.contextmanager
    def write(self, lock_key: str = "", bump: bool = True) -> Iterator[Writer]:
        with self._lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc
            try:
                yield _SqliteWriter(self.conn)
                if self._generation_table and bump:
                    self.conn.execute("UPDATE memory_meta SET value = value + 1 WHERE key = 'generation'")
                self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise self._failure(exc) from exc
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    def generation(self) -> int:
        if not self._generation_table:
            return -1
        return int(self.query("SELECT value FROM memory_meta WHERE key = 'generation'")[0][0])

    def set_embeddings(self, items: Sequence[tuple[str, Sequence[float]]], model: str) -> None:
        if not items:
            return
        # Vectors do not change which memories exist or their terms: cached pools stay valid.
        with self.write(bump=False) as w:
            for memory_id, vector in items:
                w.execute(
                    "UPDATE memories SET embedding = ?, embedding_model = ? WHERE id = ?",
                    (pack(vector), model, memory_id),
                )
