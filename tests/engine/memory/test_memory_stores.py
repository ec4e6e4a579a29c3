"""Store behaviour: concurrent SQLite writers, migrations, the default location, PostgreSQL restarts, doctor."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autocode.memory import MemoryContext, StoreUnavailable, doctor_section, open_memory
from autocode.memory.pg_store import PostgresStore
from autocode.memory.sqlite_store import SqliteStore
from support.pgserver import PgServer

WRITER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from autocode.memory import MemoryContext, open_memory
    path, worker = Path(sys.argv[1]), int(sys.argv[2])
    results = []
    with open_memory(memory_path=path, embedding_provider="none", memory_max_count=1000) as memory:
        ctx = MemoryContext(f"agent{worker}", None)
        for n in range(25):
            r = memory.save(ctx, f"worker {worker} fact {n}: table t{worker}x{n} is append-only")
            results.append(r.saved)
        shared = memory.save(MemoryContext(None, None), "The shared build cache lives on the NFS mount")
        results.append(shared.saved)
    print(json.dumps(results))
    """
)


def test_four_processes_save_into_one_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    SqliteStore(path).close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(w)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for w in range(4)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        outputs.append(json.loads(out))
    assert all(all(r[:25]) for r in outputs)
    assert sum(r[25] for r in outputs) == 1, "the same team fact from four writers is saved once"
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 101
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT sum(doc) FROM memory_fts_terms WHERE term LIKE '%!_append' ESCAPE '!'").fetchone()[0] == 100
    conn.close()


def test_default_store_is_in_the_user_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    info = doctor_section(embedding_provider="none")
    assert info["store"] == "sqlite" and info["status"].startswith("not created yet")
    assert not (tmp_path / "data").exists(), "doctor creates nothing"
    with open_memory(embedding_provider="none") as memory:
        memory.save(MemoryContext(None, None), "Deploys freeze on Fridays after noon")
    assert (tmp_path / "data" / "autocode" / "memory.sqlite3").is_file()
    info = doctor_section(embedding_provider="none")
    assert info["ok"] and info["memories"] == 1 and info["schema_version"] == 5
    assert info["search_mode"] == "keyword" and "embedding_provider is none" in info["why"]


def test_unusable_sqlite_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    with pytest.raises(StoreUnavailable, match="memory_path"):
        open_memory(memory_path=blocker / "memory.sqlite3", embedding_provider="none")
    assert blocker.read_text(encoding="utf-8") == "not a folder"


def _open_at(kind: str, where: str, migrate_to: int | None = None) -> SqliteStore | PostgresStore:
    if kind == "sqlite":
        return SqliteStore(Path(where), migrate_to=migrate_to)
    return PostgresStore(where, migrate_to=migrate_to)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_migrations_upgrade_in_place_and_refuse_newer_schemas(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    where = str(tmp_path / "m.sqlite3") if kind == "sqlite" else request.getfixturevalue("pg_url")
    old = _open_at(kind, where, migrate_to=1)
    assert old.schema_version() == 1
    with old.write() as w:
        w.execute(
            "INSERT INTO memories (id, content, norm_hash, terms, scope, created_at, updated_at) "
            "VALUES ('mem_old', 'Kept across upgrades', 'h', 'kept upgrad', 'global', 't', 't')"
        )
    old.close()
    store = _open_at(kind, where)
    assert store.schema_version() == (5 if kind == "sqlite" else 6)
    assert store.index_state()["state"] == "ready"
    assert store.query("SELECT content FROM memories") == [("Kept across upgrades",)]
    assert store.query("SELECT count(*) FROM reflection_lessons") == [(0,)]
    with store.write() as w:
        w.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (99, '2099-01-01')")
    store.close()
    with pytest.raises(StoreUnavailable, match="newer than this autocode"):
        _open_at(kind, where)


@pytest.mark.pg
def test_postgresql_restart_mid_session_loses_nothing(pg_server: PgServer, pg_url: str) -> None:
    memory = open_memory(database_url=pg_url, embedding_provider="static")
    try:
        assert memory.store.vector_support == "pgvector on the server"
        ctx = MemoryContext("implementer", None)
        before = [memory.save(ctx, text) for text in (
            "The search service is Elasticsearch 8 behind a proxy",
            "Nightly jobs run in the Europe/Berlin time zone",
        )]
        pg_server.stop()
        down = memory.store
        assert isinstance(down, PostgresStore)
        down.reconnect_seconds = 0.5
        with pytest.raises(StoreUnavailable, match="check database_url and that the server is running"):
            memory.list(ctx)
        pg_server.start()
        down.reconnect_seconds = 10
        after = memory.save(ctx, "Feature flags are read once at start-up")
        assert after.saved
        contents = {m.content for m in memory.list(ctx)}
        assert contents == {
            "The search service is Elasticsearch 8 behind a proxy",
            "Nightly jobs run in the Europe/Berlin time zone",
            "Feature flags are read once at start-up",
        }
        assert all(r.saved for r in before)
        pg_server.stop()
        pg_server.start()
        hits = memory.search(ctx, "which time zone do nightly jobs use").hits
        assert hits[0].memory.content == "Nightly jobs run in the Europe/Berlin time zone"
    finally:
        memory.close()


@pytest.mark.pg
def test_postgresql_location_never_shows_the_password(pg_url: str) -> None:
    secret = "pw" + "-" + "s3cr3t"
    url = pg_url.replace("postgres@", f"postgres:{secret}@")
    info = doctor_section(database_url=url, embedding_provider="none")
    assert info["ok"], info
    assert secret not in json.dumps(info)
    assert info["store"] == "postgresql" and info["location"].startswith("postgresql://postgres@127.0.0.1:")
    with open_memory(database_url=url, embedding_provider="none") as memory:
        assert secret not in memory.store.location


def test_unreachable_postgresql_is_a_clear_error() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://postgres@127.0.0.1:{port}/none"
    with pytest.raises(StoreUnavailable, match="cannot reach the memory database"):
        open_memory(database_url=url, embedding_provider="none")
    info = doctor_section(database_url=url, embedding_provider="none")
    assert info["ok"] is False and "cannot reach" in info["status"]


def test_doctor_section_for_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from autocode.doctor import DoctorContext
    from autocode.doctor import memory_section as section
    from autocode.settings import resolve_settings
    from support import make_repo

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    repo = make_repo(tmp_path / "repo", {".autocode/config.toml": 'embedding_provider = "none"\n'})
    snapshot = resolve_settings(repo)
    built = section()
    data = built.build(DoctorContext(workspace=repo, flags=None, package=None, snapshot=snapshot, root=repo))
    assert data["store"] == "sqlite" and data["search_mode"] == "keyword"
    assert data["location"] == str(tmp_path / "data" / "autocode" / "memory.sqlite3")
    assert built.render is not None
    text = "\n".join(built.render(data))
    assert "search: keyword" in text and "embedding_provider is none" in text


def test_duplicate_lookup_stays_inside_the_bucket_after_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    old = SqliteStore(path, migrate_to=3)
    with old.write() as w:
        w.execute(
            "INSERT INTO memories (id, content, norm_hash, terms, scope, owner, created_at, updated_at) "
            "VALUES ('mem_old', 'Workers restart after deploys', 'h', 'worker restart deploy', 'global', 'planner', 't', 't')"
        )
    old.close()
    with open_memory(memory_path=path, embedding_provider="none") as memory:
        again = memory.save(MemoryContext("planner", None), "Workers restart after each deploy")
        assert again.duplicate_of == "mem_old" and again.duplicate_method == "terms"
        other = memory.save(MemoryContext("reviewer", None), "Workers restart after each deploy")
        assert other.saved


def test_a_file_that_is_not_a_database_is_reported_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    path.write_bytes(b"not a database, " * 200)
    before = path.read_bytes()
    with pytest.raises(StoreUnavailable, match="memory_path"):
        open_memory(memory_path=path, embedding_provider="none")
    assert path.read_bytes() == before


def test_a_writer_holding_the_lock_too_long_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import autocode.memory.sqlite_store as sqlite_store

    path = tmp_path / "memory.sqlite3"
    with open_memory(memory_path=path, embedding_provider="none") as memory:
        memory.save(MemoryContext(None, None), "Backups run at 01:00 UTC")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 200)
        with open_memory(memory_path=path, embedding_provider="none") as memory:
            with pytest.raises(StoreUnavailable, match="stayed locked"):
                memory.save(MemoryContext(None, None), "Restores are tested monthly")
            assert [m.content for m in memory.list(MemoryContext(None, None))] == ["Backups run at 01:00 UTC"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
