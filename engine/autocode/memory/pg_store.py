"""The team store: PostgreSQL through psycopg 3, with pgvector when the server has it.

Ranking runs in the server, one query per search: BM25 (SQLite FTS5's
formula) from a postings table and term statistics that statement triggers
keep, and meaning through pgvector (an HNSW index per embedding model, or an
exact scan for small buckets), combined by the rule in `ranking`. No process
keeps an index of its own. Connections come from a small pool, so a search
never waits behind a save of the same process; a connection lost to a server
restart is replaced, transparently, once.

Kept whole: one backend is one module (its migrations, the SQL of its postings
triggers, its writer and its ranking queries), as `sqlite_store` is; the SQL
text is most of its length, and `store.py` is the interface the rest of the
engine sees.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from autocode.memory import ranking, schema
from autocode.memory.embeddings import dot, pack, unpack
from autocode.memory.model import StoreUnavailable
from autocode.memory.schema import POSTGRESQL
from autocode.memory.store import (
    CANDIDATE_COLUMNS,
    MEMORY_COLUMNS,
    Candidate,
    NewMemory,
    SaveChecks,
    Scored,
    Store,
    Writer,
    bucket_id,
    candidate_from_row,
    memory_from_row,
)

T = TypeVar("T")

RECONNECT_SECONDS = 10.0

# Tables and indexes are rendered from the one declaration in `memory.schema`; the tsvector
# column's later form, the functions and triggers are PostgreSQL's own.
MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            schema.table(POSTGRESQL, "memories"),
            schema.index(POSTGRESQL, "memories_bucket"),
            schema.index(POSTGRESQL, "memories_hash"),
            schema.index(POSTGRESQL, "memories_repo"),
            schema.index(POSTGRESQL, "memories_tsv"),
            schema.table(POSTGRESQL, "skills"),
            schema.table(POSTGRESQL, "memory_events"),
        ],
    ),
    (
        2,
        [
            schema.table(POSTGRESQL, "reflection_lessons"),
            schema.index(POSTGRESQL, "reflection_status"),
        ],
    ),
    (
        3,
        [
            schema.table(POSTGRESQL, "memory_meta"),
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
            schema.index(POSTGRESQL, "memories_tsv"),
        ],
    ),
]
PLAIN_LATEST = MIGRATIONS[-1][0]
INDEXED = 5
IMPACT = 6
"""Version 6: each term's postings also kept in the order of their impact (ranking.WINDOW)."""
LATEST = IMPACT
MIGRATION_BATCH = 5000
EXACT_ROWS = 10_000
"""Buckets up to this many rows are searched by meaning exactly; larger ones through HNSW."""
POOL_SIZE = 4
"""Connections one process keeps open at most (idle ones are reused): 25 editors' servers fit in
PostgreSQL's default max_connections of 100."""
POSTINGS_VACUUM_EVERY = 10_000
"""Postings inserted after which autovacuum visits the postings table (see INDEX_SETUP)."""
_MIGRATION_LOCK = 0x6D656D6F  # any constant shared by every autocode process
_BUCKET_SQL = "('x' || substr(md5(owner || '|' || repo_key), 1, 15))::bit(60)::bigint"

# Version 5: postings and term statistics kept by statement triggers (set-based, so a COPY of
# thousands of rows is one trigger call), the bucket as a number, and the tsvector column it
# replaces dropped. Existing rows are indexed afterwards in batches that each commit their
# position, so a killed upgrade resumes where it stopped.
INDEX_SETUP = [
    schema.add_column(POSTGRESQL, "memories", "bucket", if_not_exists=True),
    schema.table(POSTGRESQL, "memory_buckets"),
    schema.table(POSTGRESQL, "memory_term_df"),
    schema.table(POSTGRESQL, "memory_terms"),
    # A search reads each term's newest postings from the index alone only where the visibility
    # map marks their heap pages all-visible, which takes a vacuum. By default autovacuum visits a
    # table after inserts of a fifth of its size: millions of postings on a large store, so the
    # newest postings, the very ones every search reads, would each cost a heap visit (a search
    # +31 % on the million-row bucket). A vacuum of a few thousand new postings takes milliseconds.
    f"ALTER TABLE memory_terms SET (autovacuum_vacuum_insert_threshold = {POSTINGS_VACUUM_EVERY}, "
    "autovacuum_vacuum_insert_scale_factor = 0)",
    """CREATE FUNCTION memory_index_rows(seqs BIGINT[]) RETURNS void LANGUAGE sql AS $$
        INSERT INTO memory_buckets AS b (bucket, rows, tokens)
            SELECT bucket, count(*), sum(cardinality(string_to_array(terms, ' ')))
            FROM memories WHERE seq = ANY(seqs) AND bucket IS NOT NULL GROUP BY bucket ORDER BY bucket
            ON CONFLICT (bucket) DO UPDATE SET rows = b.rows + EXCLUDED.rows, tokens = b.tokens + EXCLUDED.tokens;
        INSERT INTO memory_terms (bucket, term, seq, tf, dl)
            SELECT m.bucket, t.term, m.seq, count(*), min(cardinality(string_to_array(m.terms, ' ')))
            FROM memories m CROSS JOIN LATERAL unnest(string_to_array(m.terms, ' ')) AS t(term)
            WHERE m.seq = ANY(seqs) AND m.bucket IS NOT NULL GROUP BY m.bucket, t.term, m.seq;
        INSERT INTO memory_term_df AS d (term, bucket, df)
            SELECT t.term, m.bucket, count(DISTINCT m.seq)
            FROM memories m CROSS JOIN LATERAL unnest(string_to_array(m.terms, ' ')) AS t(term)
            WHERE m.seq = ANY(seqs) AND m.bucket IS NOT NULL GROUP BY t.term, m.bucket ORDER BY t.term, m.bucket
            ON CONFLICT (term, bucket) DO UPDATE SET df = d.df + EXCLUDED.df;
    $$""",
    """CREATE FUNCTION memory_index_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM memory_index_rows(ARRAY(SELECT seq FROM added WHERE bucket IS NOT NULL));
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION memory_index_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE memory_buckets AS b SET rows = b.rows - r.n, tokens = b.tokens - r.tokens
            FROM (SELECT bucket, count(*) AS n, sum(cardinality(string_to_array(terms, ' '))) AS tokens
                  FROM removed WHERE bucket IS NOT NULL GROUP BY bucket) r
            WHERE b.bucket = r.bucket;
        DELETE FROM memory_terms p
            USING (SELECT DISTINCT o.bucket, o.seq, t.term FROM removed o
                   CROSS JOIN LATERAL unnest(string_to_array(o.terms, ' ')) AS t(term)
                   WHERE o.bucket IS NOT NULL) x
            WHERE p.bucket = x.bucket AND p.term = x.term AND p.seq = x.seq;
        UPDATE memory_term_df AS d SET df = d.df - r.n
            FROM (SELECT t.term, o.bucket, count(DISTINCT o.seq) AS n FROM removed o
                  CROSS JOIN LATERAL unnest(string_to_array(o.terms, ' ')) AS t(term)
                  WHERE o.bucket IS NOT NULL GROUP BY t.term, o.bucket) r
            WHERE d.term = r.term AND d.bucket = r.bucket;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER memories_index_added AFTER INSERT ON memories
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memory_index_added()""",
    """CREATE TRIGGER memories_index_removed AFTER DELETE ON memories
        REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memory_index_removed()""",
    "DROP INDEX IF EXISTS memories_tsv",
    "ALTER TABLE memories DROP COLUMN IF EXISTS tsv",
    schema.index(POSTGRESQL, "memories_by_bucket"),
    "INSERT INTO memory_meta (key, value) VALUES ('index_next', 1) ON CONFLICT (key) DO UPDATE SET value = 1",
    "INSERT INTO memory_meta (key, value) SELECT 'index_last', coalesce(max(seq), 0) FROM memories "
    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
]


# Version 6: the keyword window is each term's postings of highest impact (ranking.WINDOW), read from
# this index alone; one statement, so an upgrade killed while it builds leaves nothing behind and
# the next open builds it again.
IMPACT_INDEX = (
    f"CREATE INDEX IF NOT EXISTS memory_terms_impact ON memory_terms (bucket, term, {ranking.impact_sql()} DESC, "
    "seq DESC) INCLUDE (tf, dl)"
)


def _progress(done: int, total: int) -> None:
    """Called after each committed batch of the upgrade (tests replace it to kill the process there)."""


def _impact_built() -> None:
    """Called when version 6 has built its index, before that commits (tests kill the process there)."""


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


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{x:.9g}" for x in vector) + "]"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _model_suffix(model: str) -> str:
    return hashlib.md5(model.encode(), usedforsecurity=False).hexdigest()[:12]


# The pieces of the ranking query. `q` holds each (visible bucket, query term) found in the store
# with its IDF: rows N over the whole store, document frequency inside the bucket, as SQLite's
# bucket-prefixed FTS5 terms give. BM25 per posting follows FTS5:
# idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * D / avgdl)).
_STATS = f"""stats AS (
    SELECT coalesce(sum(rows), 0)::float8 AS n,
           CASE WHEN coalesce(sum(rows), 0) > 0 THEN sum(tokens)::float8 / sum(rows) ELSE 1 END AS avgdl
    FROM memory_buckets
), q AS MATERIALIZED (
    SELECT d.bucket, d.term,
           greatest(ln((s.n - d.df + 0.5::float8) / (d.df + 0.5::float8)), {ranking.IDF_FLOOR}::float8) AS idf
    FROM memory_term_df d CROSS JOIN stats s
    WHERE d.term = ANY(%(terms)s::text[]) AND d.bucket = ANY(%(buckets)s::bigint[]) AND d.df > 0
)"""
_POSTING = (
    # float8 constants throughout: a bare 0.75 is numeric, and numeric arithmetic made this the
    # most expensive part of a search.
    f"q.idf * p.tf * {ranking.K1 + 1}::float8 / (p.tf + {ranking.K1}::float8 * "
    f"({1 - ranking.B}::float8 + {ranking.B}::float8 * p.dl / s.avgdl))"
)
_WINDOW_POSTING = _POSTING.replace("p.", "x.")


_IMPACT_ORDER = ranking.impact_sql("p.")


def _keyword_top() -> str:
    """The keyword candidates: each query term's postings of highest impact (the newer first on
    ties), at most ranking.WINDOW per term and bucket, read from the impact index alone, so the
    cost of a search does not grow with the bucket. The window is read when the statement is
    written (as SQLite reads it per search), so a benchmark can rank one store with another window."""
    return f"""kw AS (
    SELECT x.seq, sum({_WINDOW_POSTING}) AS kw
    FROM q CROSS JOIN stats s CROSS JOIN LATERAL (
        SELECT p.seq, p.tf, p.dl FROM memory_terms p WHERE p.bucket = q.bucket AND p.term = q.term
        ORDER BY {_IMPACT_ORDER} DESC, p.seq DESC LIMIT {int(ranking.WINDOW)}) x
    GROUP BY x.seq ORDER BY kw DESC, x.seq DESC LIMIT %(depth)s
)"""


def _row_kw(words: str) -> str:
    """One row's exact BM25 from `words`, its terms as an array, counted as the triggers count its
    postings (tf the term's occurrences, dl all of them), where reading its postings would be an
    index probe per query term; a row that shares no word with the query (most of the rows found
    by meaning) scores 0 at once. The ranking passes the words split once, as the rows come out
    of the index: splitting the text again for the test and for the sum cost about a millisecond
    per search on the million-row bucket."""
    tf = f"cardinality(array_positions({words}, q.term))"
    posting = _POSTING.replace("p.tf", tf).replace("p.dl", f"cardinality({words})")
    return f"""(CASE WHEN {words} && %(terms)s::text[] THEN
    (SELECT coalesce(sum({posting}), 0) FROM q CROSS JOIN stats s WHERE q.bucket = m.bucket AND q.term = ANY({words}))
    ELSE 0::float8 END)"""


def _near(model: str, dims: int, limit: str, large: bool | None = None, columns: str = "seq") -> str:
    """`columns` of the rows closest in meaning: HNSW when the buckets are large, an exact scan when
    they are small.

    `large` None tests the buckets' size in the statement; True or False writes only that branch
    (the caller knows the size: the statement then has one plan whatever the buckets, which
    PostgreSQL keeps instead of planning each search)."""
    vec = f"vec::vector({dims})"
    where = f"bucket = ANY(%(buckets)s::bigint[]) AND embedding_model = {_literal(model)}"
    size = "(SELECT coalesce(sum(rows), 0) FROM memory_buckets WHERE bucket = ANY(%(buckets)s::bigint[]))"
    hnsw = f"""(SELECT {columns} FROM memories WHERE {where}{f" AND {size} > {EXACT_ROWS}" if large is None else ""}
        ORDER BY {vec} <=> %(vector)s::vector({dims}) LIMIT {limit})"""
    exact = f"""(SELECT {columns} FROM memories WHERE {where}{f" AND {size} <= {EXACT_ROWS}" if large is None else ""}
        ORDER BY -({vec} <#> %(vector)s::vector({dims})) DESC, seq DESC LIMIT {limit})"""
    return hnsw if large else exact if large is False else f"{hnsw}\n    UNION ALL\n    {exact}"


_M_COLUMNS = ", ".join("m." + c for c in MEMORY_COLUMNS.split(", "))
_C_COLUMNS = ", ".join("m." + c for c in CANDIDATE_COLUMNS.split(", "))
_EXACT = (
    "SELECT id FROM memories WHERE owner = %(owner)s AND repo_key = %(repo)s AND norm_hash = %(hash)s "
    "ORDER BY seq LIMIT 1"
)
_ADDED_SINCE = (
    f"SELECT {CANDIDATE_COLUMNS} FROM memories WHERE bucket = %(bucket)s AND seq > %(seq)s ORDER BY seq LIMIT %(limit)s"
)
Rows = Callable[[str, dict[str, Any]], list[tuple[Any, ...]]]


def _keyword_matches(
    rows: Rows, owner: str, repo_key: str, query_terms: Sequence[str], limit: int
) -> list[Candidate]:
    terms = sorted(set(t for t in query_terms if t))
    if not terms:
        return []
    params = {"terms": terms, "buckets": [bucket_id(owner, repo_key)], "depth": limit}
    found = rows(
        _inline_limits(
            f"WITH {_STATS}, {_keyword_top()} SELECT {', '.join('m.' + c for c in CANDIDATE_COLUMNS.split(', '))} "
            "FROM kw JOIN memories m ON m.seq = kw.seq ORDER BY kw.kw DESC, kw.seq DESC",
            params,
        ),
        params,
    )
    return [candidate_from_row(r) for r in found]


def _nearest_memory(
    rows: Rows, has_vector: bool, owner: str, repo_key: str, vector: Sequence[float], model: str
) -> Candidate | None:
    params: dict[str, Any] = {"buckets": [bucket_id(owner, repo_key)], "model": model}
    if has_vector:
        dims = len(vector)
        params["vector"] = vector_literal(vector)
        found = rows(
            f"SELECT {', '.join('m.' + c for c in CANDIDATE_COLUMNS.split(', '))}, "
            f"-(m.vec::vector({dims}) <#> %(vector)s::vector({dims})) FROM "
            f"({_near(model, dims, '1')}) n JOIN memories m ON m.seq = n.seq",
            params,
        )
        return candidate_from_row(found[0], float(found[0][6])) if found else None
    best: Candidate | None = None
    for row in rows(
        f"SELECT {CANDIDATE_COLUMNS} FROM memories WHERE bucket = ANY(%(buckets)s::bigint[]) "
        "AND embedding_model = %(model)s",
        params,
    ):
        score = dot(vector, unpack(bytes(row[4])))
        if best is None or best.cosine is None or score > best.cosine:
            best = candidate_from_row(row, score)
    return best


def _inline_limits(sql: str, params: dict[str, Any]) -> str:
    """`sql` with its LIMIT %(depth)s and %(limit)s written as numbers.

    psycopg prepares a statement after a few uses, and PostgreSQL then weighs a generic plan
    against re-planning each call: with the row counts unknown it guessed a tenth of the table
    for each LIMIT, so the generic plan of a search read the whole table (0.7 s) and every
    search was planned afresh instead (about a millisecond of server CPU). With the numbers in
    the text a generic plan is no longer a trap; the search itself is still planned for its
    buckets (see `rank_with_state`).
    """
    for name in ("depth", "limit"):
        if name in params:
            sql = sql.replace(f"LIMIT %({name})s", f"LIMIT {int(params[name])}")
    return sql


def _search_state_sql(model: str | None) -> str:
    """How many rows the buckets hold (their row counts, kept by the triggers: an empty bucket
    beside a million-row one is one index entry, not a scan) and which of their rows lack
    embeddings of `model` (through the model's partial index), in one statement."""
    missing = (
        f"ARRAY(SELECT id FROM memories WHERE bucket = ANY(%(buckets)s::bigint[]) "
        f"AND embedding_model IS DISTINCT FROM {_literal(model)} ORDER BY seq LIMIT %(missing)s)"
        if model else "ARRAY[]::text[]"
    )
    return f"SELECT (SELECT coalesce(sum(rows), 0) FROM memory_buckets WHERE bucket = ANY(%(buckets)s::bigint[])), {missing}"


def _plans(conn: Any, generic: bool) -> None:
    """Plan the connection's next statements once and keep the plan (`generic`), or plan them for
    each call's parameters (PostgreSQL's default). The setting is the session's and is sent only
    when it changes, so a process that searches one large bucket sends it once per connection."""
    if getattr(conn, "autocode_generic_plans", False) != generic:
        conn.execute("SET plan_cache_mode = force_generic_plan" if generic else "RESET plan_cache_mode")
        conn.autocode_generic_plans = generic


def _scored(rows: Sequence[tuple[Any, ...]]) -> list[Scored]:
    """Rows of the ranking query (seq, score, the memory's columns) as ranked memories."""
    return [Scored(r[2], int(r[0]), float(r[1]), memory_from_row(r[2:])) for r in rows]


class _Pool:
    """Connections of one process: at most `size` open at once (a caller waits for a free one),
    idle ones kept for reuse. A long-lived server process thus holds a bounded share of the
    database's max_connections however many requests arrive together."""

    def __init__(self, connect: Callable[[float], Any], size: int, wait: float = 30.0) -> None:
        self._connect = connect
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(size)
        self.size = size
        self.wait = wait

    def get(self, retry_for: float = 0.0) -> Any:
        if not self._slots.acquire(timeout=self.wait):
            raise StoreUnavailable(
                f"all {self.size} connections of this process to the memory database stayed busy for "
                f"{self.wait:.0f} s; nothing was done"
            )
        try:
            with self._lock:
                while self._idle:
                    conn = self._idle.pop()
                    if not conn.closed and not conn.broken:
                        return conn
            return self._connect(retry_for)
        except BaseException:
            self._slots.release()
            raise

    def put(self, conn: Any) -> None:
        usable = not conn.closed and not conn.broken and conn.info.transaction_status == 0  # idle
        try:
            with self._lock:
                if usable and len(self._idle) < self.size:
                    self._idle.append(conn)
                    return
            with contextlib.suppress(Exception):
                conn.close()
        finally:
            self._slots.release()

    def discard(self, conn: Any) -> None:
        """Give back a connection that is dead (closed here, never reused)."""
        with contextlib.suppress(Exception):
            conn.close()
        self._slots.release()

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()


class _PgWriter(Writer):
    def __init__(self, conn: Any, store: PostgresStore) -> None:
        self.conn = conn
        self.store = store
        self.has_vector = store.has_vector

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(_pg(sql), tuple(params))
        return cur.fetchall() if cur.description else []

    def rowcount(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self.conn.execute(_pg(sql), tuple(params)).rowcount)

    def _rows(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(sql, params).fetchall())

    def added_since(self, owner: str, repo_key: str, seq: int, limit: int) -> list[Candidate]:
        return [candidate_from_row(r) for r in self._rows(_ADDED_SINCE, {
            "bucket": bucket_id(owner, repo_key), "seq": seq, "limit": limit})]

    def keyword_matches(self, owner: str, repo_key: str, query_terms: Sequence[str], limit: int) -> list[Candidate]:
        return _keyword_matches(self._rows, owner, repo_key, query_terms, limit)

    def nearest_memory(self, owner: str, repo_key: str, vector: Sequence[float], model: str) -> Candidate | None:
        return _nearest_memory(self._rows, self.has_vector, owner, repo_key, vector, model)

    def save_checks(
        self, owner: str, repo_key: str, norm_hash: str, query_terms: Sequence[str],
        vector: Sequence[float] | None, model: str | None, limit: int,
    ) -> SaveChecks:
        """The exact, keyword and meaning checks in one round trip (see Store.CHECKS_UNDER_LOCK)."""
        if vector is not None and model:
            self.store.ensure_model(model, len(vector))
        bucket = bucket_id(owner, repo_key)
        conn = self.conn
        terms = sorted(set(t for t in query_terms if t))
        with conn.pipeline():
            exact = conn.execute(_EXACT, {"owner": owner, "repo": repo_key, "hash": norm_hash})
            # Planned once per connection: one bucket's keyword and meaning checks are the same
            # statements whatever its size. (For this transaction only: see _plans.)
            conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            keyword = None
            if terms:
                params = {"terms": terms, "buckets": [bucket], "depth": limit}
                keyword = conn.execute(_inline_limits(
                    f"WITH {_STATS}, {_keyword_top()} SELECT {_C_COLUMNS} FROM kw JOIN memories m ON m.seq = kw.seq "
                    "ORDER BY kw.kw DESC, kw.seq DESC", params), params)
            near = None
            if vector is not None and model and self.has_vector:
                dims = len(vector)
                near = conn.execute(
                    f"SELECT {_C_COLUMNS}, -(m.vec::vector({dims}) <#> %(vector)s::vector({dims})) FROM "
                    f"({_near(model, dims, '1')}) n JOIN memories m ON m.seq = n.seq",
                    {"buckets": [bucket], "vector": vector_literal(vector)},
                )
            found = exact.fetchone()
            if found:
                return SaveChecks(found[0], 0, [], None)
            candidates = [candidate_from_row(r) for r in keyword.fetchall()] if keyword is not None else []
            nearest: Candidate | None = None
            if near is not None:
                row = near.fetchone()
                nearest = candidate_from_row(row, float(row[6])) if row else None
        if near is None and vector is not None and model:
            nearest = _nearest_memory(self._rows, False, owner, repo_key, vector, model)
        return SaveChecks(None, 0, candidates, nearest)

    def insert_memory(self, row: NewMemory) -> None:
        columns = (
            "id, content, norm_hash, terms, category, scope, repo_key, owner, created_at, updated_at, "
            "run_id, embedding, embedding_model, bucket"
        )
        values = [
            row.id, row.content, row.norm_hash, row.terms, row.category, row.scope, row.repo_key,
            row.owner, row.created_at, row.created_at, row.run_id, row.embedding, row.embedding_model,
            bucket_id(row.owner, row.repo_key),
        ]
        marks = ", ".join("?" for _ in values)
        if self.has_vector and row.embedding is not None:
            columns += ", vec"
            marks += ", ?::vector"
            values.append(vector_literal(unpack(row.embedding)))
        self.execute(f"INSERT INTO memories ({columns}) VALUES ({marks})", values)


class PostgresStore(Store):
    kind = "postgresql"
    CHECKS_UNDER_LOCK = True

    def __init__(
        self, url: str, *, migrate_to: int | None = None, connect_timeout: float = 5.0, upgrade: bool = True
    ) -> None:
        try:
            # optional: psycopg comes with the [pg] extra, and only a PostgreSQL store needs it
            import psycopg
        except ImportError as exc:
            raise StoreUnavailable(
                "database_url is set but psycopg is not installed: pip install 'autocode-lsp[pg]'"
            ) from exc
        self._psycopg = psycopg
        self.url = url
        self.connect_timeout = connect_timeout
        self.pool = _Pool(self._connect, POOL_SIZE)
        self.has_vector = False
        self.reconnect_seconds = RECONNECT_SECONDS
        self._models: set[str] = set()
        self._large: dict[tuple[int, ...], bool] = {}  # bucket sets by size, as last searched (see _near)
        if upgrade or not self.query("SELECT to_regclass('schema_migrations') IS NOT NULL")[0][0]:
            self._migrate(LATEST if migrate_to is None else migrate_to)  # an empty database is simply set up
        else:
            self.has_vector = bool(self.query("SELECT 1 FROM pg_extension WHERE extname = 'vector'"))

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
                conn = self._psycopg.connect(
                    self.url, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
                )
                # Placeholders until pgvector loads in the session; then they set its search.
                conn.execute(f"SET hnsw.ef_search = {ranking.CANDIDATES}")
                # Every memory query reads a bounded number of rows through an index: starting
                # parallel workers (which the planner may pick for the exact-scan branch even when
                # that branch is switched off) costs more than such a query does.
                conn.execute("SET max_parallel_workers_per_gather = 0")
                conn.execute("SET hnsw.iterative_scan = relaxed_order")
                # The planner's cost of a search (its switched-off exact branch) is above
                # jit_above_cost, so a server built with LLVM would compile every search, which
                # takes longer than running it.
                conn.execute("SET jit = off")
                return conn
            except self._psycopg.OperationalError as exc:
                if time.monotonic() >= deadline:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                    raise StoreUnavailable(
                        f"cannot reach the memory database at {self.location}: {first}; "
                        "check database_url and that the server is running"
                    ) from exc
                time.sleep(0.2)

    def _retrying(self, action: Callable[[Any], T]) -> T:
        """Run `action(conn)` on a pooled connection; when it died (a server restart), reconnect and run it once more."""
        conn = self.pool.get()
        try:
            result = action(conn)
        except (self._psycopg.OperationalError, self._psycopg.InterfaceError) as exc:
            if not conn.closed and not conn.broken:
                self.pool.put(conn)
                raise StoreUnavailable(f"the memory database at {self.location} failed: {exc}") from exc
            self.pool.discard(conn)
            self.pool.clear()
        except BaseException:
            self.pool.put(conn)
            raise
        else:
            self.pool.put(conn)
            return result
        conn = self.pool.get(self.reconnect_seconds)
        try:
            return action(conn)
        finally:
            self.pool.put(conn)

    def close(self) -> None:
        self.pool.clear()

    def _migrate(self, target: int) -> None:
        def plain(conn: Any) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                conn.execute(
                    schema.table(POSTGRESQL, "schema_migrations", if_not_exists=True)
                )
                current = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]
                if current > LATEST:
                    raise StoreUnavailable(
                        f"the memory database at {self.location} has schema version {current}, newer than "
                        f"this autocode understands ({LATEST}); upgrade autocode"
                    )
                for version, statements in MIGRATIONS:
                    if current < version <= min(target, PLAIN_LATEST):
                        for statement in statements:
                            conn.execute(statement)
                        conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            self.has_vector = self._ensure_vector(conn)

        def version(conn: Any) -> int:
            return int(conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0])

        def meta(conn: Any, key: str) -> int | None:
            row = conn.execute("SELECT value FROM memory_meta WHERE key = %s", (key,)).fetchone()
            return None if row is None else int(row[0])

        def setup(conn: Any) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                if version(conn) >= INDEXED or meta(conn, "index_last") is not None:
                    return
                for statement in INDEX_SETUP:
                    conn.execute(statement)

        def batch(conn: Any) -> bool:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                start, last = meta(conn, "index_next"), meta(conn, "index_last")
                if start is None or last is None or start > last:
                    return False
                end = min(start + MIGRATION_BATCH - 1, last)
                conn.execute(
                    f"UPDATE memories SET bucket = {_BUCKET_SQL} WHERE seq BETWEEN %s AND %s AND bucket IS NULL",
                    (start, end),
                )
                conn.execute(
                    "SELECT memory_index_rows(ARRAY(SELECT seq FROM memories WHERE seq BETWEEN %s AND %s))",
                    (start, end),
                )
                conn.execute("UPDATE memory_meta SET value = %s WHERE key = 'index_next'", (end + 1,))
            _progress(end, last)
            return True

        def finish(conn: Any) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                if version(conn) >= INDEXED:
                    return
                conn.execute("DELETE FROM memory_meta WHERE key IN ('index_next', 'index_last', 'generation')")
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (INDEXED,))

        def impact(conn: Any) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                if version(conn) >= IMPACT:
                    return
                conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
                conn.execute(IMPACT_INDEX)
                _impact_built()
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (IMPACT,))

        try:
            self._retrying(plain)
            if target >= INDEXED:
                self._retrying(setup)
                while self._retrying(batch):
                    pass
                self._retrying(finish)
            if target >= IMPACT:
                self._retrying(impact)
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

    def model_indexes(self, model: str, dims: int | None) -> dict[str, str]:
        """Name -> definition (after `ON memories`) of the indexes one embedding model needs."""
        suffix = _model_suffix(model)
        wanted = {f"memories_stale_{suffix}": f"(bucket) WHERE embedding_model IS DISTINCT FROM {_literal(model)}"}
        if self.has_vector and dims:
            wanted[f"memories_hnsw_{suffix}"] = (
                f"USING hnsw ((vec::vector({dims})) vector_cosine_ops) WHERE embedding_model = {_literal(model)}"
            )
        return wanted

    def ensure_model(self, model: str, dims: int | None) -> None:
        """The indexes one embedding model needs: rows lacking its embeddings, and (pgvector) HNSW by cosine.

        Built once per store by whichever process needs them first; on a large table the HNSW
        build takes a while (doctor shows whether it is there).
        """
        key = f"{model}|{dims}"
        if key in self._models:
            return
        wanted = self.model_indexes(model, dims)

        def run(conn: Any) -> bool:
            have = {r[0] for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'memories' AND indexname = ANY(%s)", (list(wanted),)
            ).fetchall()}
            if have == set(wanted):
                return True
            # Never wait: a search goes on without the index while a writer or another builder holds the table.
            try:
                with conn.transaction():
                    if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (_MIGRATION_LOCK,)).fetchone()[0]:
                        return False
                    conn.execute("SET LOCAL lock_timeout = '200ms'")
                    conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
                    for name, body in wanted.items():
                        conn.execute(f"CREATE INDEX IF NOT EXISTS {name} ON memories {body}")
            except self._psycopg.errors.LockNotAvailable:
                return False
            return True

        try:
            done = self._retrying(run)
        except self._psycopg.Error as exc:
            raise StoreUnavailable(f"cannot index the memory database at {self.location}: {exc}") from exc
        if done:
            self._models.add(key)

    def schema_version(self) -> int:
        return int(self.query("SELECT coalesce(max(version), 0) FROM schema_migrations")[0][0])

    def index_state(self) -> dict[str, Any]:
        version = self.schema_version()
        if version < INDEXED:
            meta = dict(self.query("SELECT key, value FROM memory_meta")) if version >= 3 else {}
            if "index_last" in meta:
                done = min(int(meta["index_next"]) - 1, int(meta["index_last"]))
                return {"state": "upgrading", "detail": f"postings for {done} of {meta['index_last']} rows built; "
                        "the next open resumes it"}
            return {"state": "upgrade pending", "detail": f"schema {version}: the next open builds the search index"}
        if version < IMPACT:
            return {"state": "upgrade pending", "detail": f"schema {version}: the next open builds the keyword "
                    "window's index (postings by impact)"}
        rows = self.query("SELECT coalesce(sum(rows), 0) FROM memory_buckets")[0][0]
        indexes = self.query(
            "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE starts_with(c.relname, 'memories_hnsw_')"
        )
        hnsw = ", ".join(f"{name} {'ready' if valid else 'INVALID (rebuilt on next use)'}" for name, valid in indexes)
        return {
            "state": "ready",
            "detail": f"postings BM25 over {rows} rows; meaning: {hnsw or 'no HNSW index yet (exact scans)'}",
        }

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        def run(conn: Any) -> list[tuple[Any, ...]]:
            cur = conn.execute(_pg(sql), tuple(params))
            return list(cur.fetchall()) if cur.description else []

        try:
            return self._retrying(run)
        except self._psycopg.Error as exc:
            raise StoreUnavailable(f"the memory database at {self.location} failed: {exc}") from exc

    def _fetch(self, sql: str, params: dict[str, Any], generic: bool | None = None) -> list[tuple[Any, ...]]:
        """The rows of one statement; with `generic` True or False, planned so (see _plans)."""

        def run(conn: Any) -> list[tuple[Any, ...]]:
            if generic is not None:
                _plans(conn, generic)
            return list(conn.execute(sql, params).fetchall())

        try:
            return self._retrying(run)
        except self._psycopg.Error as exc:
            raise StoreUnavailable(f"the memory database at {self.location} failed: {exc}") from exc

    @contextlib.contextmanager
    def write(self, lock_key: str = "") -> Iterator[Writer]:
        psycopg = self._psycopg

        def begin(conn: Any) -> None:
            # The transaction and its lock in one round trip, which also finds a dropped connection.
            with conn.pipeline():
                conn.execute("BEGIN")
                if lock_key:
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock_key,))

        conn: Any = self.pool.get()
        try:
            try:
                begin(conn)
            except (psycopg.OperationalError, psycopg.InterfaceError):
                self.pool.discard(conn)
                self.pool.clear()
                conn = None
                conn = self.pool.get(self.reconnect_seconds)
                begin(conn)
            yield _PgWriter(conn, self)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn is not None and not conn.closed and not conn.broken and conn.info.transaction_status != 0:
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")
            if isinstance(exc, psycopg.Error):
                raise StoreUnavailable(f"the memory database at {self.location} failed: {exc}") from exc
            raise
        finally:
            if conn is not None:
                self.pool.put(conn)

    def set_embeddings(self, items: Sequence[tuple[str, Sequence[float]]], model: str) -> None:
        if not items:
            return
        with self.write() as w:
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

    def _rows(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        return self._fetch(sql, params)

    def bucket_high_seq(self, owner: str, repo_key: str) -> int:
        found = self._fetch(
            "SELECT coalesce(max(seq), 0) FROM memories WHERE bucket = %(bucket)s", {"bucket": bucket_id(owner, repo_key)}
        )
        return int(found[0][0])

    def keyword_matches(self, owner: str, repo_key: str, query_terms: Sequence[str], limit: int) -> list[Candidate]:
        return _keyword_matches(self._rows, owner, repo_key, query_terms, limit)

    def nearest_memory(self, owner: str, repo_key: str, vector: Sequence[float], model: str) -> Candidate | None:
        self.ensure_model(model, len(vector))
        return _nearest_memory(self._rows, self.has_vector, owner, repo_key, vector, model)

    def search_state(self, buckets: Sequence[tuple[str, str]], model: str | None, limit: int) -> tuple[bool, list[str]]:
        if model:
            self.ensure_model(model, None)
        ids = [bucket_id(o, r) for o, r in buckets]
        row = self._fetch(_search_state_sql(model), {"buckets": ids, "missing": limit})[0]
        self._large[tuple(sorted(ids))] = int(row[0]) > EXACT_ROWS
        return int(row[0]) > 0, list(row[1])

    def missing_embeddings(self, buckets: Sequence[tuple[str, str]], model: str, limit: int) -> list[str]:
        self.ensure_model(model, None)
        rows = self._fetch(
            f"SELECT id FROM memories WHERE bucket = ANY(%(buckets)s::bigint[]) "
            f"AND embedding_model IS DISTINCT FROM {_literal(model)} ORDER BY seq LIMIT %(limit)s",
            {"buckets": [bucket_id(o, r) for o, r in buckets], "limit": limit},
        )
        return [r[0] for r in rows]

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
        params: dict[str, Any] = {
            "terms": sorted(set(t for t in query_terms if t)),
            "buckets": [bucket_id(o, r) for o, r in buckets],
            "limit": limit,
            "depth": ranking.CANDIDATES,
        }
        if not params["buckets"]:
            return []
        if mode in ("keyword", "recent") or vector is None or model is None:
            if not params["terms"]:
                return []
            if mode == "recent":
                sql = f"""WITH {_STATS}, hits AS (
                    SELECT DISTINCT x.seq FROM q
                    CROSS JOIN LATERAL (SELECT p.seq FROM memory_terms p WHERE p.bucket = q.bucket AND p.term = q.term
                                        ORDER BY p.seq DESC LIMIT %(limit)s) x
                    ORDER BY x.seq DESC LIMIT %(limit)s)
                SELECT m.id, m.seq, {_row_kw("string_to_array(m.terms, ' ')")} FROM hits JOIN memories m ON m.seq = hits.seq ORDER BY m.seq DESC"""
            else:
                params["depth"] = limit
                sql = f"""WITH {_STATS}, {_keyword_top()}
                SELECT m.id, m.seq, kw.kw FROM kw JOIN memories m ON m.seq = kw.seq ORDER BY kw.kw DESC, m.seq DESC"""
            return [Scored(r[0], int(r[1]), float(r[2])) for r in self._fetch(_inline_limits(sql, params), params, False)]
        if not self.has_vector:
            return self._rank_in_process(params, vector, model, mode, limit, keyword_weight, floor)
        sql, params = self._ranking_sql(params, vector, model, mode, keyword_weight, floor)
        return _scored(self._fetch(sql, params, False))

    def _ranking_sql(
        self, params: dict[str, Any], vector: Sequence[float], model: str, mode: str,
        keyword_weight: float, floor: float | None, large: bool | None = None, state: bool = False,
    ) -> tuple[str, dict[str, Any]]:
        """The one query of a semantic or hybrid search (pgvector), and its parameters (`large`: see
        _near). With `state`, every row starts with the buckets' search state (_search_state_sql),
        and there is one row even when nothing ranks."""
        dims = len(vector)
        self.ensure_model(model, dims)
        params["vector"] = vector_literal(vector)
        params["weight"] = keyword_weight
        params["floor"] = floor
        score = (
            "c.cos" if mode == "semantic"
            else "(1 - %(weight)s) * c.cos + %(weight)s * c.kw / (SELECT CASE WHEN max(kw) > 0 THEN max(kw) ELSE 1 END FROM kw)"
        )
        keep = "TRUE" if floor is None else "(c.kw > 0 OR c.cos >= %(floor)s)"
        cos = (
            f"CASE WHEN m.embedding_model = {_literal(model)} AND m.vec IS NOT NULL "
            f"THEN -(m.vec::vector({dims}) <#> %(vector)s::vector({dims})) ELSE 0 END"
        )
        # The rows found by meaning come with the columns their score needs (the index scan has
        # read them); only the keyword rows among the candidates are read again.
        near = _near(model, dims, "%(depth)s", large, "id, seq, bucket, string_to_array(terms, ' ') AS words, embedding_model, vec")
        sql = f"""WITH {_STATS}, {_keyword_top()},
        near AS MATERIALIZED ({near}),
        c AS MATERIALIZED (
            SELECT m.id, m.seq, coalesce(k.kw, {_row_kw("m.words")}) AS kw, {cos} AS cos FROM near m LEFT JOIN kw k ON k.seq = m.seq
            UNION ALL
            SELECT m.id, m.seq, k.kw, {cos} AS cos FROM kw k JOIN memories m ON m.seq = k.seq
            WHERE NOT EXISTS (SELECT 1 FROM near n WHERE n.seq = k.seq)
        )
        , top AS (SELECT c.seq, {score} AS score FROM c WHERE {keep} ORDER BY score DESC, c.seq DESC LIMIT %(limit)s)"""
        ranked = f"SELECT top.seq, top.score, {_M_COLUMNS} FROM top JOIN memories m ON m.seq = top.seq"
        if state:
            sql += f""", st AS ({_search_state_sql(model)})
            SELECT st.*, r.* FROM st LEFT JOIN ({ranked}) r ON TRUE ORDER BY r.score DESC, r.seq DESC"""
        else:
            sql += f"\n        {ranked} ORDER BY top.score DESC, top.seq DESC"
        return _inline_limits(sql, params), params

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
        if not self.has_vector or not buckets:
            return super().rank_with_state(
                buckets, query_terms, vector, model, mode, limit, keyword_weight, floor, missing_limit
            )
        self.ensure_model(model, len(vector))
        ids = [bucket_id(o, r) for o, r in buckets]
        params: dict[str, Any] = {
            "terms": sorted(set(t for t in query_terms if t)), "buckets": ids, "limit": limit,
            "depth": ranking.CANDIDATES, "missing": missing_limit,
        }
        key = tuple(sorted(ids))
        large = self._large.get(key)

        # One statement: its rows start with the state, followed by the ranked memory (none when
        # nothing ranks). One message each way is less work on both sides than a pipeline of two.
        found = self._fetch(*self._ranking_sql(dict(params), vector, model, mode, keyword_weight, floor, large, True), bool(large))
        rows, missing = int(found[0][0]), list(found[0][1])
        scored = _scored([r[2:] for r in found if r[2] is not None])
        # The ranking is written for the buckets' size as this process last saw it (see _near). For
        # large buckets its generic plan is kept (PostgreSQL would plan each search again, about a
        # millisecond on a million rows); small ones are planned for the buckets at hand, as a
        # generic plan of the exact scan reads far more rows on many small buckets (search p50
        # 28 -> 52 ms and recall 26 -> 131 ms in bench_memory.py, 100,000 memories in 500 buckets).
        self._large[key] = rows > EXACT_ROWS
        if large and rows <= EXACT_ROWS and rows > 0 and not missing:
            # The buckets shrank below the exact size since: rank them exactly.
            scored = _scored(self._fetch(*self._ranking_sql(dict(params), vector, model, mode, keyword_weight, floor, False), False))
        return rows > 0, missing, scored

    def _rank_in_process(
        self, params: dict[str, Any], vector: Sequence[float], model: str, mode: str, limit: int,
        keyword_weight: float, floor: float | None,
    ) -> list[Scored]:
        """Without pgvector: keyword candidates from the server, their cosines computed here."""
        rows = self._fetch(
            f"WITH {_STATS}, {_keyword_top()} SELECT m.id, m.seq, kw.kw, m.embedding, m.embedding_model "
            "FROM kw JOIN memories m ON m.seq = kw.seq",
            params, False,
        ) if params["terms"] else []
        best = max((float(r[2]) for r in rows), default=0.0)
        scored = [
            (r[0], int(r[1]), float(r[2]), dot(vector, unpack(bytes(r[3]))) if r[3] is not None and r[4] == model else 0.0)
            for r in rows
        ]
        return [Scored(i, s, v) for i, s, v in ranking.combine(scored, best, mode, limit, keyword_weight, floor)]
