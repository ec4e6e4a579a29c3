"""The memory stores' schema, declared once and rendered into SQLite's or PostgreSQL's DDL.

Each table lists its columns with a neutral type (`TYPES` says what each becomes in
each dialect), its keys and checks, and the schema version that added it; an index
names its table and columns. A column or index that only one store has (PostgreSQL's
tsvector column and its GIN index, the postings tables) says so with `only`, and one a
later version removed says so with `until`. Each store's migrations render the
statements of the version they apply from here (`table`, `index`, `add_column`), so a
fresh store and an upgraded one get the same text. Store-only extras that are not
plain tables and indexes (FTS5 virtual tables, triggers, functions, pgvector's column
and its per-model HNSW indexes, the postings' index over their impact) stay beside their
store's migrations.
"""

from __future__ import annotations

from typing import Any, Literal

Dialect = Literal["sqlite", "postgresql"]
SQLITE: Dialect = "sqlite"
POSTGRESQL: Dialect = "postgresql"

TYPES: dict[str, dict[Dialect, str]] = {
    # A row number the database assigns, never reused.
    "serial": {SQLITE: "INTEGER PRIMARY KEY AUTOINCREMENT", POSTGRESQL: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"},
    "text": {SQLITE: "TEXT", POSTGRESQL: "TEXT"},
    "int": {SQLITE: "INTEGER", POSTGRESQL: "INTEGER"},
    "bigint": {SQLITE: "INTEGER", POSTGRESQL: "BIGINT"},
    "bytes": {SQLITE: "BLOB", POSTGRESQL: "BYTEA"},
    "timestamp": {SQLITE: "TEXT", POSTGRESQL: "TIMESTAMPTZ"},
}


class Column:
    """One column: `type` is a key of TYPES, or the dialect's own type text for a column only one
    store has; `default` is SQL text, or a dict when it differs by dialect (a missing dialect: none);
    `until` is the version that dropped it (migrations before that one create it).

    Plain classes with slots rather than dataclasses: the CLI's memory commands import this module,
    and three dataclasses cost more to create than all of the rendering."""

    __slots__ = ("check", "default", "name", "null", "only", "primary", "since", "type", "unique", "until")

    def __init__(
        self, name: str, type: str, *, null: bool = True, primary: bool = False, unique: bool = False,
        default: str | dict[Dialect, str] | None = None, check: str | None = None, only: Dialect | None = None,
        since: int = 1, until: int | None = None,
    ) -> None:
        self.name, self.type, self.null, self.primary, self.unique = name, type, null, primary, unique
        self.default, self.check, self.only, self.since, self.until = default, check, only, since, until

    def render(self, dialect: Dialect) -> str:
        parts = [self.name, TYPES[self.type][dialect] if self.type in TYPES else self.type]
        if self.primary:
            parts.append("PRIMARY KEY")
        if not self.null:
            parts.append("NOT NULL")
        if self.unique:
            parts.append("UNIQUE")
        default = self.default.get(dialect) if isinstance(self.default, dict) else self.default
        if default is not None:
            parts.append(f"DEFAULT {default}")
        if self.check:
            parts.append(f"CHECK ({self.check})")
        return " ".join(parts)


class Table:
    """A table: `key` is a primary key of several columns, `key_include` the columns PostgreSQL
    keeps in that key's index too (a covering index; SQLite has none)."""

    __slots__ = ("checks", "columns", "key", "key_include", "name", "only", "since", "unique")

    def __init__(
        self, name: str, columns: tuple[Column, ...], *, since: int, unique: tuple[tuple[str, ...], ...] = (),
        checks: tuple[str, ...] = (), key: tuple[str, ...] = (), key_include: tuple[str, ...] = (),
        only: Dialect | None = None,
    ) -> None:
        self.name, self.columns, self.since, self.unique, self.checks = name, columns, since, unique, checks
        self.key, self.key_include, self.only = key, key_include, only

    def column(self, name: str, dialect: Dialect) -> Column:
        for col in self.columns:
            if col.name == name and col.only in (None, dialect):
                return col
        raise KeyError(f"{self.name} has no column {name} in {dialect}")


class Index:
    __slots__ = ("columns", "name", "only", "since", "table", "until", "using")

    def __init__(
        self, name: str, table: str, columns: str, *, since: int, using: str | None = None,
        only: Dialect | None = None, until: int | None = None,
    ) -> None:
        self.name, self.table, self.columns, self.since = name, table, columns, since
        self.using, self.only, self.until = using, only, until


def _col(name: str, type_: str = "text", **kw: Any) -> Column:
    return Column(name, type_, **kw)


def _required(name: str, type_: str = "text", **kw: Any) -> Column:
    return Column(name, type_, null=False, **kw)


def _bucket_part(name: str) -> Column:
    """owner / repo_key: '' (not NULL) for a team memory or a global one, so they can be keyed on."""
    return _required(name, default="''")


TABLES: tuple[Table, ...] = (
    Table("schema_migrations", (
        _col("version", "int", primary=True),
        _required("applied_at", "timestamp", default={POSTGRESQL: "now()"}),
    ), since=1),
    Table("memories", (
        _col("seq", "serial"),
        _required("id", unique=True),
        _required("content"),
        _required("norm_hash"),
        _required("terms"),
        _col("tsv", "TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED", only=POSTGRESQL, until=5),
        _col("category"),
        _required("scope", check="scope IN ('project', 'global')"),
        _bucket_part("repo_key"),
        _bucket_part("owner"),
        _required("created_at"),
        _required("updated_at"),
        _col("run_id"),
        _col("embedding", "bytes"),
        _col("embedding_model"),
        # The bucket (owner and repository) as a tag in SQLite (version 4) and a number in PostgreSQL (5).
        _required("bucket", default="''", only=SQLITE, since=4),
        _col("bucket", "bigint", only=POSTGRESQL, since=5),
    ), since=1, checks=("(scope = 'global') = (repo_key = '')",)),
    Table("skills", (
        _col("seq", "serial"),
        _required("id", unique=True),
        _required("name"),
        _bucket_part("owner"),
        _required("description"),
        _col("category"),
        _required("content"),
        _required("norm_hash"),
        _required("scope"),
        _bucket_part("repo_key"),
        _required("origin"),
        _col("source_memory_id"),
        _required("created_at"),
    ), since=1, unique=(("owner", "repo_key", "name"),)),
    Table("memory_events", (
        _col("seq", "serial"),
        _required("at"),
        _required("kind"),
        _col("memory_id"),
        _bucket_part("owner"),
        _bucket_part("repo_key"),
        _required("detail"),
    ), since=1),
    Table("reflection_lessons", (
        _col("seq", "serial"),
        _required("id", unique=True),
        _required("content"),
        _col("category"),
        _bucket_part("owner"),
        _col("run_id"),
        _bucket_part("repo_key"),
        _required("created_at"),
        _required("status", default="'pending'"),
        _col("memory_id"),
    ), since=2),
    Table("memory_meta", (
        _col("key", primary=True),
        _required("value", "bigint"),
    ), since=3),
    # SQLite: what the in-process vector cache follows (rows added or removed, by bucket).
    Table("memory_changes", (
        _col("seq", "serial"),
        _required("memory_seq", "int"),
        _required("bucket"),
        _required("op", check="op IN ('add', 'del')"),
    ), since=5, only=SQLITE),
    # PostgreSQL: BM25's statistics and postings, kept by statement triggers.
    Table("memory_buckets", (
        _col("bucket", "bigint", primary=True),
        _required("rows", "bigint", default="0"),
        _required("tokens", "bigint", default="0"),
    ), since=5, only=POSTGRESQL),
    Table("memory_term_df", (
        _required("term"),
        _required("bucket", "bigint"),
        _required("df", "bigint"),
    ), since=5, only=POSTGRESQL, key=("term", "bucket")),
    Table("memory_terms", (
        _required("bucket", "bigint"),
        _required("term"),
        _required("seq", "bigint"),
        _required("tf", "int"),
        _required("dl", "int"),
    ), since=5, only=POSTGRESQL, key=("bucket", "term", "seq"), key_include=("tf", "dl")),
)

INDEXES: tuple[Index, ...] = (
    Index("memories_bucket", "memories", "owner, repo_key, created_at", since=1),
    Index("memories_hash", "memories", "norm_hash", since=1),
    Index("memories_repo", "memories", "repo_key, owner", since=1),
    Index("memories_tsv", "memories", "tsv", since=1, using="gin", only=POSTGRESQL, until=5),
    Index("reflection_status", "reflection_lessons", "status, seq", since=2),
    Index("memories_by_bucket", "memories", "bucket, seq", since=5),
)

_TABLES = {t.name: t for t in TABLES}
_INDEXES = {i.name: i for i in INDEXES}


def _present(only: Dialect | None, since: int, until: int | None, dialect: Dialect, version: int) -> bool:
    return only in (None, dialect) and since <= version and (until is None or version < until)


def table(dialect: Dialect, name: str, version: int | None = None, *, if_not_exists: bool = False) -> str:
    """CREATE TABLE for the table as the migration to `version` (default: the one that added it) creates it."""
    decl = _TABLES[name]
    if decl.only not in (None, dialect):
        raise KeyError(f"{dialect} has no table {name}")
    at = decl.since if version is None else version
    lines = [c.render(dialect) for c in decl.columns if _present(c.only, c.since, c.until, dialect, at)]
    if decl.key:
        include = f" INCLUDE ({', '.join(decl.key_include)})" if decl.key_include and dialect == POSTGRESQL else ""
        lines.append(f"PRIMARY KEY ({', '.join(decl.key)}){include}")
    lines += [f"UNIQUE ({', '.join(cols)})" for cols in decl.unique]
    lines += [f"CHECK ({check})" for check in decl.checks]
    head = "CREATE TABLE IF NOT EXISTS" if if_not_exists else "CREATE TABLE"
    body = ",\n    ".join(lines)
    return f"{head} {name} (\n    {body}\n)"


def index(dialect: Dialect, name: str) -> str:
    decl = _INDEXES[name]
    if decl.only not in (None, dialect):
        raise KeyError(f"{dialect} has no index {name}")
    using = f"USING {decl.using} " if decl.using else ""
    return f"CREATE INDEX {name} ON {decl.table} {using}({decl.columns})"


def add_column(dialect: Dialect, table_name: str, column: str, *, if_not_exists: bool = False) -> str:
    """ALTER TABLE ... ADD COLUMN for a column a later version added."""
    col = _TABLES[table_name].column(column, dialect)
    guard = "IF NOT EXISTS " if if_not_exists else ""
    return f"ALTER TABLE {table_name} ADD COLUMN {guard}{col.render(dialect)}"


def latest_tables(dialect: Dialect) -> dict[str, list[str]]:
    """Table -> column names of the newest schema in `dialect` (what a fresh store has, before extras)."""
    newest = 1_000_000
    return {
        t.name: [c.name for c in t.columns if _present(c.only, c.since, c.until, dialect, newest)]
        for t in TABLES
        if t.only in (None, dialect)
    }


def latest_indexes(dialect: Dialect) -> dict[str, str]:
    """Index name -> table of the newest schema's declared indexes in `dialect`."""
    return {i.name: i.table for i in INDEXES if _present(i.only, i.since, i.until, dialect, 1_000_000)}
