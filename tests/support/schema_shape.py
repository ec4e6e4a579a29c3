"""What a memory store's schema looks like, read back from the database, for comparing two stores.

`sqlite_shape` reads `sqlite_master` (tables, virtual tables and indexes, their SQL with
whitespace normalised) and each table's columns and indexes; `pg_shape` reads
`information_schema` (tables, columns), the constraints and `pg_indexes`. Triggers and
functions are left out: they are the stores' ranking code, not the declared schema.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any


def normalise_sql(sql: str) -> str:
    """One space between tokens and none just inside parentheses, so layout does not count."""
    text = " ".join(sql.split())
    text = re.sub(r"\(\s+", "(", text)
    return re.sub(r"\s+\)", ")", text)


def sqlite_shape(path: Path | str) -> dict[str, Any]:
    conn = sqlite3.connect(str(path))
    try:
        objects = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY type, name"
        ).fetchall()
        shape: dict[str, Any] = {
            "objects": [[kind, name, table, normalise_sql(sql) if sql else None] for kind, name, table, sql in objects],
            "columns": {},
            "indexes": {},
        }
        for kind, name, _table, _sql in objects:
            if kind != "table":
                continue
            shape["columns"][name] = [list(row) for row in conn.execute(f'PRAGMA table_xinfo("{name}")')]
            indexes = []
            for row in conn.execute(f'PRAGMA index_list("{name}")'):
                columns = [list(c) for c in conn.execute(f'PRAGMA index_xinfo("{row[1]}")')]
                indexes.append([*row, columns])
            shape["indexes"][name] = sorted(indexes, key=lambda r: str(r[1]))
        return shape
    finally:
        conn.close()


def pg_shape(url: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT table_name, table_type FROM information_schema.tables "
            "WHERE table_schema = 'public' ORDER BY table_name"
        ).fetchall()
        columns = conn.execute(
            "SELECT table_name, column_name, ordinal_position, data_type, udt_name, is_nullable, column_default, "
            "is_identity, identity_generation, is_generated, generation_expression "
            "FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
        ).fetchall()
        constraints = conn.execute(
            "SELECT c.conrelid::regclass::text, c.conname, c.contype, pg_get_constraintdef(c.oid) "
            "FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
            "WHERE n.nspname = 'public' AND c.conrelid <> 0 ORDER BY 1, 2"
        ).fetchall()
        indexes = conn.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2"
        ).fetchall()
        # Storage parameters (such as the postings table's autovacuum settings) are part of the schema too.
        storage = conn.execute(
            "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.reloptions IS NOT NULL ORDER BY 1"
        ).fetchall()
    return {
        "tables": [list(r) for r in tables],
        "storage": [[name, sorted(options)] for name, options in storage],
        "columns": [list(r) for r in columns],
        "constraints": [list(r) for r in constraints],
        "indexes": [list(r) for r in indexes],
    }
