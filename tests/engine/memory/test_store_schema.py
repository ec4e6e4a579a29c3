"""Both stores' schemas come from one declaration (`autocode.memory.schema`) and are what they were.

`fixtures/memory-stores/schema.json` is the schema of a fresh store of each kind as
the code before the declaration wrote it (by hand-written DDL), read back from
`sqlite_master` and from `information_schema` and `pg_indexes` (tests/support/schema_shape.py).
A fresh store made now must read back the same, and an upgraded release store must too.
When a new migration changes the schema on purpose, rewrite the fixture with
`python tests/engine/memory/test_store_schema.py --write` and review its diff.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from autocode.memory import open_memory, schema

ROOT = Path(__file__).resolve().parents[3]
STORES = ROOT / "fixtures" / "memory-stores"
FIXTURE = STORES / "schema.json"


def _expected(kind: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))[kind]
    return data


def _json(value: dict[str, Any]) -> dict[str, Any]:
    """Tuples become lists, as in the fixture."""
    data: dict[str, Any] = json.loads(json.dumps(value))
    return data


def _sqlite_fresh(tmp_path: Path) -> Path:
    path = tmp_path / "memory.sqlite3"
    open_memory(memory_path=path, embedding_provider="none").close()
    return path


def _pg_fresh(url: str) -> str:
    open_memory(database_url=url, embedding_provider="none").close()
    return url


def test_a_fresh_sqlite_store_has_the_schema_the_hand_written_ddl_made(tmp_path: Path) -> None:
    from support.schema_shape import sqlite_shape

    assert _json(sqlite_shape(_sqlite_fresh(tmp_path))) == _expected("sqlite")


def test_an_upgraded_release_sqlite_store_has_the_same_schema_as_a_fresh_one(tmp_path: Path) -> None:
    from support.schema_shape import sqlite_shape

    path = tmp_path / "release.sqlite3"
    shutil.copy(STORES / "release-v4.sqlite3", path)
    open_memory(memory_path=path, embedding_provider="none").close()
    assert _json(sqlite_shape(path)) == _expected("sqlite")


@pytest.mark.pg
def test_a_fresh_postgresql_store_has_the_schema_the_hand_written_ddl_made(pg_url: str) -> None:
    from support.schema_shape import pg_shape

    assert _json(pg_shape(_pg_fresh(pg_url))) == _expected("postgresql")


@pytest.mark.pg
def test_an_upgraded_release_postgresql_store_has_the_same_columns_and_indexes(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    import psycopg

    from support.schema_shape import pg_shape

    url = str(request.getfixturevalue("pg_url"))
    dump = (STORES / "release-v4-postgresql.sql").read_text(encoding="utf-8")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("\n".join(line for line in dump.splitlines() if not line.startswith("\\")).encode())  # type: ignore[call-overload]
    open_memory(database_url=url, embedding_provider="none").close()
    got, want = _json(pg_shape(url)), _expected("postgresql")

    def unordered(columns: list[list[Any]]) -> list[list[Any]]:
        # A column the upgrade added sits later than in a fresh store (ordinal_position is the third field).
        return sorted(c[:2] + c[3:] for c in columns)

    assert unordered(got["columns"]) == unordered(want["columns"])
    assert got["indexes"] == want["indexes"]
    assert got["tables"] == want["tables"]
    assert got["storage"] == want["storage"]
    assert sorted(got["constraints"]) == sorted(want["constraints"])


def _columns_sqlite(path: Path) -> dict[str, list[str]]:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return {
            table: [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    finally:
        conn.close()


def test_the_declaration_names_every_column_and_index_of_a_fresh_sqlite_store(tmp_path: Path) -> None:
    import sqlite3

    path = _sqlite_fresh(tmp_path)
    actual = _columns_sqlite(path)
    for table, columns in schema.latest_tables(schema.SQLITE).items():
        assert actual[table] == columns, table
    conn = sqlite3.connect(path)
    try:
        indexes = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"))
    finally:
        conn.close()
    assert indexes == schema.latest_indexes(schema.SQLITE)
    # Every other table is an FTS5 table or one of its shadow tables, SQLite's own extras.
    extras = set(actual) - set(schema.latest_tables(schema.SQLITE)) - {"sqlite_sequence"}
    assert extras and all(name.startswith("memory_fts") for name in extras)


@pytest.mark.pg
def test_the_declaration_names_every_column_and_index_of_a_fresh_postgresql_store(pg_url: str) -> None:
    import psycopg

    _pg_fresh(pg_url)
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
        ).fetchall()
        indexes = dict(conn.execute(
            "SELECT i.indexname, i.tablename FROM pg_indexes i WHERE i.schemaname = 'public' AND NOT EXISTS "
            "(SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)"
        ).fetchall())
    actual: dict[str, list[str]] = {}
    for table, column in rows:
        actual.setdefault(table, []).append(column)
    actual["memories"] = [c for c in actual["memories"] if c != "vec"]  # pgvector's column, added beside
    assert actual == schema.latest_tables(schema.POSTGRESQL)
    # The keyword window's index is over an expression (ranking.impact_sql): made beside the
    # migrations, as pgvector's are (pg_store.IMPACT_INDEX).
    assert indexes == {**schema.latest_indexes(schema.POSTGRESQL), "memory_terms_impact": "memory_terms"}


def test_one_declaration_renders_each_dialects_types_and_keys() -> None:
    memories_sqlite = schema.table(schema.SQLITE, "memories")
    memories_pg = schema.table(schema.POSTGRESQL, "memories")
    assert "seq INTEGER PRIMARY KEY AUTOINCREMENT," in memories_sqlite
    assert "seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY," in memories_pg
    assert "embedding BLOB" in memories_sqlite and "embedding BYTEA" in memories_pg
    # Store-only columns: the tsvector is PostgreSQL's, and neither store has `bucket` at version 1.
    assert "tsv" in memories_pg and "tsv" not in memories_sqlite and "bucket" not in memories_sqlite
    assert schema.add_column(schema.SQLITE, "memories", "bucket") == (
        "ALTER TABLE memories ADD COLUMN bucket TEXT NOT NULL DEFAULT ''"
    )
    assert "PRIMARY KEY (bucket, term, seq) INCLUDE (tf, dl)" in schema.table(schema.POSTGRESQL, "memory_terms")
    assert schema.index(schema.POSTGRESQL, "memories_tsv") == "CREATE INDEX memories_tsv ON memories USING gin (tsv)"
    with pytest.raises(KeyError):
        schema.table(schema.SQLITE, "memory_terms")
    with pytest.raises(KeyError):
        schema.index(schema.SQLITE, "memories_tsv")


def _write() -> None:  # pragma: no cover - run by hand when a migration changes the schema on purpose
    import tempfile

    sys.path.insert(0, str(ROOT / "tests"))
    from support.pgserver import PgServer
    from support.schema_shape import pg_shape, sqlite_shape

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        out["sqlite"] = sqlite_shape(_sqlite_fresh(Path(folder)))
    server = PgServer()
    server.start()
    try:
        out["postgresql"] = pg_shape(_pg_fresh(server.url(server.create_database())))
    finally:
        server.destroy()
    FIXTURE.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/engine/memory/test_store_schema.py --write")
    _write()
