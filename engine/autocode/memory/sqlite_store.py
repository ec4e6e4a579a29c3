"""The default store: one SQLite file (WAL, busy timeout, FTS5 over the memories' terms).

Writers take the database lock up front (BEGIN IMMEDIATE), so several
processes saving at once queue instead of racing past each other's
duplicate check; searches read on a second connection, so a write in
progress never holds them up. Keywords are ranked by FTS5's `bm25()`.
Embeddings are compared in the process against a per-bucket matrix that the
`memory_changes` log keeps current (see ranking.VectorCache).

Kept whole: one backend is one module (its migrations, writer and ranking
queries), as `pg_store` is; `store.py` is the interface the rest of the engine
sees.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from autocode.memory import ranking, schema
from autocode.memory.embeddings import pack
from autocode.memory.model import StoreUnavailable
from autocode.memory.schema import SQLITE
from autocode.memory.store import (
    CANDIDATE_COLUMNS,
    MEMORY_COLUMNS,
    Candidate,
    NewMemory,
    Scored,
    Store,
    Writer,
    bucket_tag,
    candidate_from_row,
    memory_from_row,
)
from autocode.private import private_folder

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000

# Each entry is one schema version; a database records the highest it has. Tables and indexes
# are rendered from the one declaration in `memory.schema`; the FTS5 tables and triggers are SQLite's own.
MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            schema.table(SQLITE, "memories"),
            schema.index(SQLITE, "memories_bucket"),
            schema.index(SQLITE, "memories_hash"),
            schema.index(SQLITE, "memories_repo"),
            """CREATE VIRTUAL TABLE memories_fts USING fts5 (
                terms, content='memories', content_rowid='seq', tokenize="unicode61 tokenchars '.+#_'"
            )""",
            """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
                INSERT INTO memories_fts (rowid, terms) VALUES (new.seq, new.terms);
            END""",
            """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
                INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.seq, old.terms);
            END""",
            schema.table(SQLITE, "skills"),
            schema.table(SQLITE, "memory_events"),
        ],
    ),
    (
        2,
        [
            schema.table(SQLITE, "reflection_lessons"),
            schema.index(SQLITE, "reflection_status"),
        ],
    ),
    (
        3,
        [
            schema.table(SQLITE, "memory_meta"),
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
            schema.add_column(SQLITE, "memories", "bucket"),
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
PLAIN_LATEST = MIGRATIONS[-1][0]

# Version 5 moves ranking into the database: FTS5 with the bucket tag in a column of its own
# (weight 0 in bm25), a change log the vector cache follows, and an index by bucket. Its
# set-up is one transaction; copying existing rows into the new full-text index runs in
# batches that each commit with the position reached, so a killed upgrade resumes there.
INDEXED = 5
LATEST = INDEXED
MIGRATION_BATCH = 2000
KEEP_CHANGES = 100_000
TOKENS = "(length({row}.terms) - length(replace({row}.terms, ' ', '')) + ({row}.terms <> ''))"
"""FTS5's token count of a row: its space-separated terms."""
PREFIXED = (
    "CASE WHEN {row}.terms = '' THEN '' ELSE 'k' || substr({row}.bucket, 2, 12) || '_' || "
    "replace({row}.terms, ' ', ' k' || substr({row}.bucket, 2, 12) || '_') END"
)
"""What the full-text index holds for a row: each term prefixed by its bucket (see `bucket_term`)."""
INDEX_SETUP = [
    """CREATE VIRTUAL TABLE memory_fts USING fts5 (
        terms, tokenize="unicode61 tokenchars '.+#_'"
    )""",
    schema.table(SQLITE, "memory_changes"),
    "DROP TRIGGER IF EXISTS memories_ai",
    "DROP TRIGGER IF EXISTS memories_ad",
    # fts_rows and fts_tokens are FTS5's own row count and token total (each row's terms plus
    # its bucket tag), kept here so a row's BM25 can be computed without a MATCH.
    "CREATE VIRTUAL TABLE memory_fts_terms USING fts5vocab (memory_fts, 'row')",
    "INSERT OR REPLACE INTO memory_meta (key, value) VALUES ('fts_rows', 0), ('fts_tokens', 0)",
    f"""CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memory_fts (rowid, terms) VALUES (new.seq, {PREFIXED.format(row="new")});
        INSERT INTO memory_changes (memory_seq, bucket, op) VALUES (new.seq, new.bucket, 'add');
        UPDATE memory_meta SET value = value + 1 WHERE key = 'fts_rows';
        UPDATE memory_meta SET value = value + {TOKENS.format(row="new")} WHERE key = 'fts_tokens';
    END""",
    f"""CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        UPDATE memory_meta SET value = value - 1
            WHERE key = 'fts_rows' AND EXISTS (SELECT 1 FROM memory_fts WHERE rowid = old.seq);
        UPDATE memory_meta SET value = value - {TOKENS.format(row="old")}
            WHERE key = 'fts_tokens' AND EXISTS (SELECT 1 FROM memory_fts WHERE rowid = old.seq);
        DELETE FROM memory_fts WHERE rowid = old.seq;
        INSERT INTO memory_changes (memory_seq, bucket, op) VALUES (old.seq, old.bucket, 'del');
    END""",
    """CREATE TRIGGER memories_au AFTER UPDATE OF embedding, embedding_model ON memories BEGIN
        INSERT INTO memory_changes (memory_seq, bucket, op) VALUES (new.seq, new.bucket, 'add');
    END""",
    schema.index(SQLITE, "memories_by_bucket"),
    "INSERT OR REPLACE INTO memory_meta (key, value) VALUES ('index_next', 1)",
    "INSERT OR REPLACE INTO memory_meta (key, value) SELECT 'index_last', coalesce(max(seq), 0) FROM memories",
]


def _progress(done: int, total: int) -> None:
    """Called after each committed batch of the upgrade (tests replace it to kill the process there)."""


def fts_query(query_terms: Sequence[str]) -> str:
    """An FTS5 OR-query of the terms, each quoted so no term is read as syntax."""
    unique = list(dict.fromkeys(t for t in query_terms if t))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)


def bucket_term(tag: str, term: str) -> str:
    """A term as the full-text index holds it: inside its bucket, so a match never leaves the bucket
    and each bucket has its own document frequencies."""
    return f"k{tag[1:13]}_{term}"


def fts_match(tags: Sequence[str], query_terms: Sequence[str]) -> str | None:
    """Rows of the tagged buckets having any of the terms (None when the query has no term)."""
    unique = list(dict.fromkeys(t for t in query_terms if t))
    if not unique or not tags:
        return None
    return fts_query([bucket_term(tag, t) for tag in tags for t in unique])


BM25 = "bm25(memory_fts)"


@dataclass
class Windows:
    """What one keyword ranking read: each (bucket, term)'s IDF, its window's rows and whether the
    window was cut (False when it holds every row with the term), and the average row length."""

    weights: dict[tuple[str, str], float] = field(default_factory=dict)
    rows: dict[tuple[str, str], tuple[set[int], bool]] = field(default_factory=dict)
    average: float = 1.0


def keyword_top(
    fetch: ranking.Fetch,
    cache: ranking.VectorCache,
    tags: Sequence[str],
    query_terms: Sequence[str],
    depth: int,
    seen: Windows | None = None,
) -> list[tuple[int, float]]:
    """(seq, BM25) of the best `depth` rows of the tagged buckets, best first, newer first on ties.

    Each (bucket, term) is matched on its own, and its window is its ranking.WINDOW rows of highest
    impact (ranking.impact, the newer first on ties); a row's score is the sum of FTS5's bm25 shares
    of the terms whose window holds it, so it is the full BM25 wherever no window cut a term off.
    FTS5 gives the row ids (its index alone); each row's token count and repeated terms come from
    `cache`, which reads a row the first time a term's rows are ranked (bm25(), or reading the
    rows' terms on every search, costs a lookup per row and term), and a window read lately comes
    from `cache` too, kept current from the change log (ranking.TermWindows). So the first search
    of a term in a process reads every row holding it, and later ones none. `seen`, when given, is
    filled with what was read.
    """
    unique = sorted(set(t for t in query_terms if t))
    with cache.lock:
        cache.sync(fetch)
        known = cache.terms
        found: list[tuple[str, str, list[int]]] = []
        for tag in tags:
            for term in unique:
                seqs = cache.windows.get(tag, term)
                if seqs is None:
                    rows = fetch("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (fts_query([bucket_term(tag, term)]),))
                    if not rows:
                        continue
                    seqs = sorted(int(r[0]) for r in rows)
                    if len(seqs) > ranking.WINDOW:
                        gone = known.learn(fetch, [seqs])
                        seqs = ranking.strongest(term, [s for s in seqs if s not in gone], known)
                    cache.windows.put(tag, term, seqs)
                found.append((tag, term, seqs))  # oldest first
        if not found:
            return []
        weights, average = _term_weights(fetch, {(tag, term): len(seqs) for tag, term, seqs in found})
        if seen is not None:
            seen.weights, seen.average = weights, average
            seen.rows = {(tag, term): (set(seqs), len(seqs) >= ranking.WINDOW) for tag, term, seqs in found}
        gone = known.learn(fetch, [seqs for _, _, seqs in found])
        windows = [
            ([s for s in seqs if s not in gone] if gone else seqs, weights[(tag, term)], known.lengths,
             known.repeats.get(term, {}))
            for tag, term, seqs in found
        ]
        return ranking.window_scores(windows, average, depth)


def _term_weights(fetch: ranking.Fetch, rows_having: dict[tuple[str, str], int]) -> tuple[dict[tuple[str, str], float], float]:
    """Each (bucket, term)'s IDF and the average row length, from FTS5's statistics.

    `rows_having` holds how many rows each term's window found: fewer than the window is every
    row of the bucket holding the term; a full window asks FTS5's vocabulary for the count.
    """
    full = sorted(bucket_term(tag, term) for (tag, term), n in rows_having.items() if n >= ranking.WINDOW)
    having: dict[str, int] = {}
    if full:
        having = dict(fetch(f"SELECT term, doc FROM memory_fts_terms WHERE term IN ({', '.join('?' * len(full))})", full))
    meta: dict[str, int] = dict(fetch("SELECT key, value FROM memory_meta WHERE key IN ('fts_rows', 'fts_tokens')", ()))
    count, total = float(meta.get("fts_rows", 0)), float(meta.get("fts_tokens", 0))
    average = total / count if count else 1.0
    weights = {
        (tag, term): ranking.idf(count, float(having.get(bucket_term(tag, term), 0) if n >= ranking.WINDOW else n))
        for (tag, term), n in rows_having.items()
    }
    return weights, average


def _bm25_from_windows(
    fetch: ranking.Fetch,
    known: ranking.RowTerms,
    seqs: Sequence[int],
    owner: dict[int, str],
    query_terms: Sequence[str],
    seen: Windows,
) -> dict[int, float]:
    """The full BM25 of rows no keyword window ranked (the rows found by meaning), as FTS5's bm25() gives it.

    A row's count of a term is known without reading it when the term's window holds the row, or
    the window was not cut; other rows are read (and learnt).
    """
    unique = sorted(set(t for t in query_terms if t))
    k1, b, average = ranking.K1, ranking.B, seen.average
    out: dict[int, float] = {}
    unread: list[int] = []
    for seq in seqs:
        tag, length = owner.get(seq), known.lengths.get(seq)
        if tag is None or length is None:
            unread.append(seq)
            continue
        score = 0.0
        for term in unique:
            weight = seen.weights.get((tag, term))
            if weight is None:
                continue  # no row of the bucket holds the term
            rows, cut = seen.rows[(tag, term)]
            if seq in rows:
                tf = known.repeats.get(term, {}).get(seq, 1)
            elif cut:
                break  # outside a cut window: whether it holds the term is not known here
            else:
                continue
            score += weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
        else:
            out[seq] = score
            continue
        unread.append(seq)
    if unread:
        found = fetch(f"SELECT seq, terms, bucket FROM memories WHERE seq IN ({', '.join('?' * len(unread))})", unread)
        known.load([(seq, terms) for seq, terms, _ in found if seq not in known.lengths])
        for seq, terms, tag in found:
            words = terms.split()
            weights = {t: seen.weights[(tag, t)] for t in unique if (tag, t) in seen.weights}
            out[int(seq)] = ranking.bm25_row(words, len(words), average, weights)
    return out


def _keyword_matches(
    fetch: ranking.Fetch, cache: ranking.VectorCache, owner: str, repo_key: str, query_terms: Sequence[str], limit: int
) -> list[Candidate]:
    top = keyword_top(fetch, cache, [bucket_tag(owner, repo_key)], query_terms, limit)
    if not top:
        return []
    marks = ", ".join("?" for _ in top)
    rows = {int(r[1]): r for r in fetch(f"SELECT {CANDIDATE_COLUMNS} FROM memories WHERE seq IN ({marks})", [s for s, _ in top])}
    return [candidate_from_row(rows[s]) for s, _ in top if s in rows]


def _nearest_memory(
    fetch: ranking.Fetch, cache: ranking.VectorCache, owner: str, repo_key: str, vector: Sequence[float], model: str
) -> Candidate | None:
    tag = bucket_tag(owner, repo_key)
    with cache.lock:
        cache.sync(fetch)
        vectors = cache.bucket(fetch, tag, model)
        found = vectors.nearest(vector, 1)
        if not found or found[0][0] in vectors.missing:
            return None
    rows = fetch(f"SELECT {CANDIDATE_COLUMNS} FROM memories WHERE seq = ?", (found[0][0],))
    return candidate_from_row(rows[0], found[0][1]) if rows else None


class _SqliteWriter(Writer):
    def __init__(self, conn: sqlite3.Connection, store: SqliteStore) -> None:
        self.conn = conn
        self.store = store

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def rowcount(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, tuple(params)).rowcount

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def added_since(self, owner: str, repo_key: str, seq: int, limit: int) -> list[Candidate]:
        rows = self._fetch(
            f"SELECT {CANDIDATE_COLUMNS} FROM memories WHERE bucket = ? AND seq > ? ORDER BY seq LIMIT ?",
            (bucket_tag(owner, repo_key), seq, limit),
        )
        return [candidate_from_row(r) for r in rows]

    def keyword_matches(self, owner: str, repo_key: str, query_terms: Sequence[str], limit: int) -> list[Candidate]:
        return _keyword_matches(self._fetch, self.store.vectors, owner, repo_key, query_terms, limit)

    def nearest_memory(self, owner: str, repo_key: str, vector: Sequence[float], model: str) -> Candidate | None:
        return _nearest_memory(self._fetch, self.store.vectors, owner, repo_key, vector, model)

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


def storage_cause(path: Path) -> str | None:
    """Why the store's file cannot be written, when the disk says: read-only, full or not ours.

    SQLite reports all of these as "disk I/O error" or "unable to open database file"; a person
    needs the cause and its fix instead.
    """
    folder = path.parent
    statvfs = getattr(os, "statvfs", None)  # not on Windows
    if statvfs is None:
        return None
    try:
        info = statvfs(folder)
    except OSError:
        return None
    if info.f_flag & os.ST_RDONLY:
        return (f"its file system ({folder}) is read-only; remount it read-write, or set "
                "memory_path to a file on a writable disk")
    free = (info.f_bfree if os.geteuid() == 0 else info.f_bavail) * info.f_frsize
    if free < 1024 * 1024 or info.f_ffree == 0:  # a WAL database needs room for its pages
        return (f"the disk holding {folder} is full ({free} bytes free); free some space, or set "
                "memory_path to a file on another disk")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return (f"this user may not write {path if path.exists() else folder}; give it write "
                "access, or set memory_path to a file of your own")
    return None


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes, for a store on a read-only disk. A WAL database there
    has no `-shm` file to share, so SQLite is told the file cannot change (`immutable`)."""
    uri = path.resolve().as_uri()
    for options in ("mode=ro", "mode=ro&immutable=1"):
        conn = sqlite3.connect(f"{uri}?{options}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None, check_same_thread=False)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error:
            conn.close()
    raise sqlite3.OperationalError("unable to open database file read-only")


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


class SqliteStore(Store):
    kind = "sqlite"

    def __init__(self, path: Path, *, migrate_to: int | None = None, upgrade: bool = True) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._read_lock = threading.RLock()
        self.vectors = ranking.VectorCache()
        self.read_only: str | None = None
        """Why this store can only be read (a read-only or full disk), or None."""
        try:
            private_folder(self.path.parent)
            # Created 0600 before SQLite opens it: its -wal and -shm files copy these modes. Only
            # when it does not exist yet: closing a descriptor of a file drops every POSIX lock
            # this process holds on it, including those of another open connection to it.
            if not self.path.exists():
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            self.conn = _connect(self.path)
            self.reader = _connect(self.path)
        except (OSError, sqlite3.Error) as exc:
            cause = storage_cause(self.path)
            if cause is not None and self.path.is_file():  # what is stored can still be read
                self._open_read_only(cause)
                return
            raise StoreUnavailable(
                f"cannot open the memory database {self.path}: "
                + (cause or f"{exc}; check the folder is writable or set memory_path to another file")
            ) from exc
        if upgrade or self._readable_version() == 0:
            self._migrate(LATEST if migrate_to is None else migrate_to)  # an empty file is simply set up

    def _open_read_only(self, cause: str) -> None:
        """Serve searches and lists from a store that cannot be written (its disk is read-only or
        full, or it is not ours); writes say why not."""
        try:
            self.conn = _connect_read_only(self.path)
            self.reader = _connect_read_only(self.path)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open the memory database {self.path}: {cause}") from exc
        self.read_only = cause
        if self._readable_version() != LATEST:
            raise StoreUnavailable(
                f"the memory database {self.path} needs an upgrade and {cause}"
            )

    def _readable_version(self) -> int:
        try:
            return self._version()
        except sqlite3.Error as exc:
            raise StoreUnavailable(
                f"cannot read the memory database {self.path}: {exc}; check the file, "
                "or set memory_path to another file"
            ) from exc

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def vector_support(self) -> str:
        return "embeddings compared in the process, kept current from the change log"

    def close(self) -> None:
        with self._lock, self._read_lock:
            self.conn.close()
            self.reader.close()

    def _version(self) -> int:
        exists = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
        if not exists:
            return 0
        return int(self.conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0])

    def _migrate(self, target: int) -> None:
        with self._lock:
            try:
                # An up-to-date database is opened without taking the write lock.
                if self._version() == target:
                    return
            except sqlite3.Error as exc:
                raise StoreUnavailable(
                    f"cannot read the memory database {self.path}: {exc}; check the file, "
                    "or set memory_path to another file"
                ) from exc
            try:
                self._in_lock(lambda: self._plain_migrations(min(target, PLAIN_LATEST)))
                if target >= INDEXED:
                    self._in_lock(self._index_setup)
                    while (step := self._in_lock(self._index_batch)) is not None:
                        _progress(*step)
                    self._in_lock(self._index_finish)
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc

    def _in_lock(self, step: Callable[[], T]) -> T:
        """Run one migration step in its own write transaction (the store's lock)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            result = step()
            self.conn.execute("COMMIT")
            return result
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def _plain_migrations(self, target: int) -> None:
        self.conn.execute(
            schema.table(SQLITE, "schema_migrations", if_not_exists=True)
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
                self._record(version)

    def _record(self, version: int) -> None:
        self.conn.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, datetime('now'))", (version,)
        )

    def _meta(self, key: str) -> int | None:
        row = self.conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def _index_setup(self) -> None:
        if self._version() >= INDEXED or self._meta("index_last") is not None:
            return  # done, or set up by an earlier (perhaps killed) run: the batches resume
        for statement in INDEX_SETUP:
            self.conn.execute(statement)

    def _index_batch(self) -> tuple[int, int] | None:
        """Copy the next batch of existing rows into the new index: (rows done, rows in all), None when none is left."""
        start, last = self._meta("index_next"), self._meta("index_last")
        if start is None or last is None or start > last:
            return None
        end = min(start + MIGRATION_BATCH - 1, last)
        self.conn.execute(
            f"INSERT INTO memory_fts (rowid, terms) SELECT seq, {PREFIXED.format(row='memories')} FROM memories "
            "WHERE seq BETWEEN ? AND ?",
            (start, end),
        )
        rows, tokens = self.conn.execute(
            f"SELECT count(*), coalesce(sum({TOKENS.format(row='memories')}), 0) FROM memories WHERE seq BETWEEN ? AND ?",
            (start, end),
        ).fetchone()
        self.conn.execute("UPDATE memory_meta SET value = value + ? WHERE key = 'fts_rows'", (rows,))
        self.conn.execute("UPDATE memory_meta SET value = value + ? WHERE key = 'fts_tokens'", (tokens,))
        self.conn.execute("UPDATE memory_meta SET value = ? WHERE key = 'index_next'", (end + 1,))
        return end, last

    def _index_finish(self) -> None:
        if self._version() >= INDEXED:
            return
        self.conn.execute("DROP TABLE IF EXISTS memories_fts")
        self.conn.execute("DELETE FROM memory_meta WHERE key IN ('index_next', 'index_last', 'generation')")
        self._record(INDEXED)

    def _fill_bucket_tags(self) -> None:
        rows = self.conn.execute("SELECT seq, owner, repo_key, terms FROM memories").fetchall()
        for seq, owner, repo_key, terms in rows:
            tag = bucket_tag(owner, repo_key)
            self.conn.execute("UPDATE memories SET bucket = ? WHERE seq = ?", (tag, seq))
            self.conn.execute("INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)", (seq, f"{terms} {tag}"))

    def schema_version(self) -> int:
        return int(self.query("SELECT coalesce(max(version), 0) FROM schema_migrations")[0][0])

    def index_state(self) -> dict[str, Any]:
        version = self.schema_version()
        if version < INDEXED:
            meta = dict(self.query("SELECT key, value FROM memory_meta")) if version >= 3 else {}
            if "index_last" in meta:
                done = min(int(meta["index_next"]) - 1, int(meta["index_last"]))
                return {"state": "upgrading", "detail": f"full-text index {done} of {meta['index_last']} rows copied; "
                        "the next open resumes it"}
            return {"state": "upgrade pending", "detail": f"schema {version}: the next open builds the search index"}
        rows = self.query("SELECT count(*) FROM memory_fts")[0][0]
        low, high = self.query(
            "SELECT coalesce((SELECT min(seq) FROM memory_changes), 0), coalesce((SELECT max(seq) FROM memory_changes), 0)"
        )[0]
        return {
            "state": "ready",
            "detail": f"FTS5 bm25 over {rows} rows; change log {low}..{high}; vectors cached per bucket in each process",
        }

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._read_lock:
            try:
                return self.reader.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc

    def _failure(self, exc: sqlite3.Error) -> StoreUnavailable:
        cause = self.read_only or storage_cause(self.path)
        if cause is not None:
            return StoreUnavailable(
                f"the memory database {self.path} cannot be written: {cause}. Nothing was written; "
                "searching and listing memories still work"
            )
        if "locked" in str(exc) or "busy" in str(exc):
            return StoreUnavailable(
                f"the memory database {self.path} stayed locked for {BUSY_TIMEOUT_MS // 1000} s by another "
                "process; nothing was written. Try again when the other autocode command has finished"
            )
        return StoreUnavailable(f"the memory database {self.path} failed: {exc}; nothing was written")

    @contextlib.contextmanager
    def write(self, lock_key: str = "") -> Iterator[Writer]:
        if self.read_only is not None:
            raise StoreUnavailable(
                f"the memory database {self.path} cannot be written: {self.read_only}. Nothing was "
                "written; searching and listing memories still work"
            )
        with self._lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc
            try:
                yield _SqliteWriter(self.conn, self)
                if random.random() < 0.01:
                    # Keep the change log bounded; a cache that fell further behind reloads.
                    self.conn.execute(
                        "DELETE FROM memory_changes WHERE seq <= (SELECT max(seq) FROM memory_changes) - ?",
                        (KEEP_CHANGES,),
                    )
                self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise self._failure(exc) from exc
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    def set_embeddings(self, items: Sequence[tuple[str, Sequence[float]]], model: str) -> None:
        if not items:
            return
        with self.write() as w:
            for memory_id, vector in items:
                w.execute(
                    "UPDATE memories SET embedding = ?, embedding_model = ? WHERE id = ?",
                    (pack(vector), model, memory_id),
                )

    # Ranking.

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[ranking.Fetch]:
        """One read transaction on the reading connection: every query of a search sees one state."""
        with self._read_lock:
            try:
                self.reader.execute("BEGIN")
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc

            def fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                return self.reader.execute(sql, tuple(params)).fetchall()

            try:
                yield fetch
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc
            finally:
                if self.reader.in_transaction:
                    self.reader.execute("COMMIT")

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
        tags = [bucket_tag(o, r) for o, r in buckets]
        match = fts_match(tags, query_terms)
        with self._snapshot() as fetch:
            if mode in ("keyword", "recent") or vector is None or model is None:
                if match is None:
                    return []
                if mode != "recent":
                    return self._named(fetch, keyword_top(fetch, self.vectors, tags, query_terms, limit))
                rows = fetch(
                    f"SELECT rowid, -{BM25} FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                    (match, limit),
                )
                return self._named(fetch, [(int(s), float(k)) for s, k in rows])
            with self.vectors.lock:
                self.vectors.sync(fetch)
                pools = [self.vectors.bucket(fetch, tag, model) for tag in tags]
                keyword: dict[int, float] = {}
                seen = Windows()
                if match is not None:
                    keyword = dict(keyword_top(fetch, self.vectors, tags, query_terms, ranking.CANDIDATES, seen))
                best = max(keyword.values(), default=0.0)
                near: list[tuple[int, float]] = []
                for pool in pools:
                    near += pool.nearest(vector, ranking.CANDIDATES)
                near.sort(key=lambda r: (-r[1], -r[0]))
                cosine = dict(near[: ranking.CANDIDATES])
                for seq in keyword:
                    if seq not in cosine:
                        cosine[seq] = next((p.cosine_of(seq, vector) for p in pools if seq in p.rows), 0.0)
                others = [s for s in cosine if s not in keyword]
                if match is not None and others:
                    owner = {s: tag for tag, pool in zip(tags, pools, strict=True) for s in others if s in pool.rows}
                    keyword.update(_bm25_from_windows(fetch, self.vectors.terms, others, owner, query_terms, seen))
            top = ranking.combine(
                (("", seq, keyword.get(seq, 0.0), cos) for seq, cos in cosine.items()),
                best, mode, limit, keyword_weight, floor,
            )
            return self._named(fetch, [(seq, score) for _, seq, score in top])

    @staticmethod
    def _named(fetch: ranking.Fetch, ranked: list[tuple[int, float]]) -> list[Scored]:
        if not ranked:
            return []
        marks = ", ".join("?" for _ in ranked)
        rows = {int(r[-1]): r for r in fetch(
            f"SELECT {MEMORY_COLUMNS}, seq FROM memories WHERE seq IN ({marks})", [s for s, _ in ranked]
        )}
        return [Scored(rows[s][0], s, score, memory_from_row(rows[s])) for s, score in ranked if s in rows]

    def bucket_high_seq(self, owner: str, repo_key: str) -> int:
        rows = self.query("SELECT coalesce(max(seq), 0) FROM memories WHERE bucket = ?", (bucket_tag(owner, repo_key),))
        return int(rows[0][0])

    def keyword_matches(self, owner: str, repo_key: str, query_terms: Sequence[str], limit: int) -> list[Candidate]:
        with self._snapshot() as fetch:
            return _keyword_matches(fetch, self.vectors, owner, repo_key, query_terms, limit)

    def nearest_memory(self, owner: str, repo_key: str, vector: Sequence[float], model: str) -> Candidate | None:
        with self._snapshot() as fetch:
            return _nearest_memory(fetch, self.vectors, owner, repo_key, vector, model)

    def missing_embeddings(self, buckets: Sequence[tuple[str, str]], model: str, limit: int) -> list[str]:
        with self._snapshot() as fetch, self.vectors.lock:
            self.vectors.sync(fetch)
            seqs: list[int] = []
            for owner, repo_key in buckets:
                seqs += sorted(self.vectors.bucket(fetch, bucket_tag(owner, repo_key), model).missing)
            seqs = seqs[:limit]
            if not seqs:
                return []
            marks = ", ".join("?" for _ in seqs)
            return [r[0] for r in fetch(f"SELECT id FROM memories WHERE seq IN ({marks})", seqs)]
