"""The team store: PostgreSQL through psycopg 3, with pgvector when the server has it.

Keyword search uses full-text search over the same terms SQLite indexes, so
both stores match the same memories. When pgvector is available, cosine
scores are computed by the server; otherwise embeddings are compared in the
process. A connection lost to a server restart is replaced once, transparently.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from autocode.memory.embeddings import dot, pack, unpack
from autocode.memory.model import StoreUnavailable
from autocode.memory.store import NewMemory, Store, Writer, bucket_tag

T = TypeVar("T")

RECONNECT_SECONDS = 10.0

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE memories (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                content TEXT NOT NULL,
                norm_hash TEXT NOT NULL,
                terms TEXT NOT NULL,
                tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED,
                category TEXT,
                scope TEXT NOT NULL CHECK (scope IN ('project', 'global')),
                repo_key TEXT NOT NULL DEFAULT '',
                owner TEXT NOT NULL DEFAULT '',
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                run_id TEXT,
                embedding BYTEA,
                embedding_model TEXT,
                CHECK ((scope = 'global') = (repo_key = ''))
            )""",
            "CREATE INDEX memories_bucket ON memories (owner, repo_key, created_at)",
            "CREATE INDEX memories_hash ON memories (norm_hash)",
            "CREATE INDEX memories_repo ON memories (repo_key, owner)",
            "CREATE INDEX memories_tsv ON memories USING gin (tsv)",
            """CREATE TABLE skills (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
            "CREATE TABLE memory_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
            "INSERT INTO memory_meta (key, value) VALUES ('generation', 0)",
        ],
    ),
    (
        4,
        [
            # The full-text vector also holds each memory's bucket tag (see store.bucket_tag).
            "DROP INDEX memories_tsv",
            "ALTER TABLE memories DROP COLUMN tsv",
            "ALTER TABLE memories ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS "
            "(to_tsvector('simple', terms || ' b' || md5(owner || '|' || repo_key))) STORED",
            "CREATE INDEX memories_tsv ON memories USING gin (tsv)",
        ],
    ),
]
LATEST = MIGRATIONS[-1][0]
_MIGRATION_LOCK = 0x6D656D6F  # any constant shared by every autocode process


def redact_url(url: str) -> str:
    """The database URL with any password removed, for doctor and error messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://(unparseable URL)"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, "", ""))


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


def tsquery(query_terms: Sequence[str]) -> str:
    unique = list(dict.fromkeys(t for t in query_terms if t))
    return " | ".join("'" + t.replace("'", "''").replace("\\", "") + "'" for t in unique)


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


class _PgWriter(Writer):
    def __init__(self, conn: Any, has_vector: bool) -> None:
        self.conn = conn
        self.has_vector = has_vector

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(_pg(sql), tuple(params))
        return cur.fetchall() if cur.description else []

    def rowcount(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self.conn.execute(_pg(sql), tuple(params)).rowcount)

    def keyword_candidates(
        self, owner: str, repo_key: str, query_terms: Sequence[str], limit: int
    ) -> list[tuple[str, str]]:
        query = tsquery(query_terms)
        if not query:
            return []
        query = f"'{bucket_tag(owner, repo_key)}' & ({query})"
        rows = self.execute(
            "SELECT id, terms FROM memories WHERE tsv @@ to_tsquery('simple', ?) AND owner = ? AND repo_key = ? "
            "ORDER BY ts_rank(tsv, to_tsquery('simple', ?)) DESC LIMIT ?",
            (query, owner, repo_key, query, limit),
        )
        return [(r[0], r[1]) for r in rows]

    def nearest_in_bucket(
        self, owner: str, repo_key: str, vector: Sequence[float], model: str
    ) -> tuple[str, float] | None:
        if self.has_vector:
            rows = self.execute(
                "SELECT id, 1 - (vec <=> ?::vector) FROM memories WHERE owner = ? AND repo_key = ? "
                "AND embedding_model = ? AND vec IS NOT NULL ORDER BY vec <=> ?::vector LIMIT 1",
                (vector_literal(vector), owner, repo_key, model, vector_literal(vector)),
            )
            return (rows[0][0], float(rows[0][1])) if rows else None
        best: tuple[str, float] | None = None
        for memory_id, blob in self.execute(
            "SELECT id, embedding FROM memories WHERE owner = ? AND repo_key = ? AND embedding_model = ?",
            (owner, repo_key, model),
        ):
            score = dot(vector, unpack(bytes(blob)))
            if best is None or score > best[1]:
                best = (memory_id, score)
        return best

    def insert_memory(self, row: NewMemory) -> None:
        columns = (
            "id, content, norm_hash, terms, category, scope, repo_key, owner, created_at, updated_at, "
            "run_id, embedding, embedding_model"
        )
        values = [
            row.id, row.content, row.norm_hash, row.terms, row.category, row.scope, row.repo_key,
            row.owner, row.created_at, row.created_at, row.run_id, row.embedding, row.embedding_model,
        ]
        marks = ", ".join("?" for _ in values)
        if self.has_vector and row.embedding is not None:
            columns += ", vec"
            marks += ", ?::vector"
            values.append(vector_literal(unpack(row.embedding)))
        self.execute(f"INSERT INTO memories ({columns}) VALUES ({marks})", values)


class PostgresStore(Store):
    kind = "postgresql"

    def __init__(self, url: str, *, migrate_to: int | None = None, connect_timeout: float = 5.0) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreUnavailable(
                "database_url is set but psycopg is not installed: pip install 'autocode-lsp[pg]'"
            ) from exc
        self._psycopg = psycopg
        self.url = url
        self.connect_timeout = connect_timeout
        self._lock = threading.RLock()
        self._conn: Any = None
        self.has_vector = False
        self.reconnect_seconds = RECONNECT_SECONDS
        self._migrate(LATEST if migrate_to is None else migrate_to)
        self._generation_table = self.schema_version() >= 3

    def generation(self) -> int:
        if not self._generation_table:
            return -1
        return int(self.query("SELECT value FROM memory_meta WHERE key = 'generation'")[0][0])

    @property
    def location(self) -> str:
        return redact_url(self.url)

    @property
    def vector_support(self) -> str:
        return "pgvector on the server" if self.has_vector else "no pgvector on the server: embeddings compared in the process"

    def _connect(self, retry_for: float = 0.0) -> Any:
        """A new connection; after a lost one, keep trying for `retry_for` seconds (a restarting server)."""
        deadline = time.monotonic() + retry_for
        while True:
            try:
                return self._psycopg.connect(
                    self.url, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
                )
            except self._psycopg.OperationalError as exc:
                if time.monotonic() >= deadline:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                    raise StoreUnavailable(
                        f"cannot reach the memory database at {self.location}: {first}; "
                        "check database_url and that the server is running"
                    ) from exc
                time.sleep(0.2)

    def _connection(self, retry_for: float = 0.0) -> Any:
        if self._conn is None or self._conn.closed:
            self._conn = self._connect(retry_for)
        return self._conn

    def _retrying(self, action: Callable[[Any], T]) -> T:
        """Run `action(conn)`; when the connection died (a server restart), reconnect and run it once more."""
        with self._lock:
            try:
                return action(self._connection())
            except (self._psycopg.OperationalError, self._psycopg.InterfaceError) as exc:
                if self._conn is not None and not self._conn.closed and not self._conn.broken:
                    raise StoreUnavailable(f"the memory database at {self.location} failed: {exc}") from exc
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None
            return action(self._connection(self.reconnect_seconds))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None

    def _migrate(self, target: int) -> None:
        def run(conn: Any) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
                current = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]
                if current > LATEST:
                    raise StoreUnavailable(
                        f"the memory database at {self.location} has schema version {current}, newer than "
                        f"this autocode understands ({LATEST}); upgrade autocode"
                    )
                for version, statements in MIGRATIONS:
                    if current < version <= target:
                        for statement in statements:
                            conn.execute(statement)
                        conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            self.has_vector = self._ensure_vector(conn)

        try:
            self._retrying(run)
        except self._psycopg.Error as exc:
            raise StoreUnavailable(f"cannot prepare the memory database at {self.location}: {exc}") from exc

    def _ensure_vector(self, conn: Any) -> bool:
        available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if not available:
            return False
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute("ALTER TABLE memories ADD COLUMN IF NOT EXISTS vec vector")
        except self._psycopg.errors.InsufficientPrivilege:
            return False
        return True

    def schema_version(self) -> int:
        return int(self.query("SELECT coalesce(max(version), 0) FROM schema_migrations")[0][0])

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        def run(conn: Any) -> list[tuple[Any, ...]]:
            cur = conn.execute(_pg(sql), tuple(params))
            return list(cur.fetchall()) if cur.description else []

        try:
            return self._retrying(run)
        except self._psycopg.Error as exc:
            raise StoreUnavailable(f"the memory database at {self.location} failed: {exc}") from exc

    @contextlib.contextmanager
    def write(self, lock_key: str = "", bump: bool = True) -> Iterator[Writer]:
        with self._lock:
            conn = self._retrying(lambda c: (c.execute("SELECT 1"), c)[1])
            try:
                with conn.transaction():
                    if lock_key:
                        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock_key,))
                    yield _PgWriter(conn, self.has_vector)
                    if self._generation_table and bump:
                        conn.execute("UPDATE memory_meta SET value = value + 1 WHERE key = 'generation'")
            except self._psycopg.Error as exc:
                if conn.broken:
                    self._conn = None
                raise StoreUnavailable(f"the memory database at {self.location} failed: {exc}") from exc

    def set_embeddings(self, items: Sequence[tuple[str, Sequence[float]]], model: str) -> None:
        if not items:
            return
        # Vectors do not change which memories exist or their terms: cached pools stay valid.
        with self.write(bump=False) as w:
            for memory_id, vector in items:
                if self.has_vector:
                    w.execute(
                        "UPDATE memories SET embedding = ?, embedding_model = ?, vec = ?::vector WHERE id = ?",
                        (pack(vector), model, vector_literal(vector), memory_id),
                    )
                else:
                    w.execute(
                        "UPDATE memories SET embedding = ?, embedding_model = ? WHERE id = ?",
                        (pack(vector), model, memory_id),
                    )
