"""Memory store backends are a registry keyed by the URL's scheme, and the engine owns the store pool.

A throwaway backend (`tests/throwaway/mem_store.py`: one module and one registry
entry) is picked by a workspace's `database_url`, used by memory save and
search through the engine's pool, and reported by doctor; an unknown scheme is
a clear `memoryStoreUnavailable` that opens nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode.memory import (
    MemoryContext,
    StoreUnavailable,
    backends,
    config_for,
    doctor_section,
    open_memory,
    pool,
)
from autocode.tasks import Source, TaskOptions, TaskRun
from support import make_repo, trust, write_files
from throwaway import mem_store


@pytest.fixture
def mem_backend() -> Iterator[backends.Backend]:
    backend = mem_store.register()
    yield backend
    backends.unregister(backend)


def _repo_with_store(tmp_path: Path, url: str) -> Path:
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    write_files(repo, {".autocode/config.toml": f'database_url = "{url}"\nembedding_provider = "none"\n'})
    return trust(repo)


def test_a_new_backend_is_one_module_and_one_entry(tmp_path: Path, mem_backend: backends.Backend) -> None:
    repo = _repo_with_store(tmp_path, "memory+mem://team")
    config = config_for(repo)
    assert config.url == "memory+mem://team" and backends.backend_for(config.url) is mem_backend
    ctx = MemoryContext("implementer", repo)
    with pool.lease_for(repo) as memory:
        assert memory.store.location.endswith("team.sqlite3")
        saved = memory.save(ctx, "The integration tests need Redis on port 6380")
        assert saved.saved
    with pool.lease_for(repo) as memory:  # the same open store: the pool keyed it by configuration
        hits = memory.search(ctx, "redis port").hits
    assert [h.memory.id for h in hits] == [saved.id]
    section = doctor_section(database_url="memory+mem://team")
    assert section["store"] == "mem" and section["location"] == "memory+mem://team (this process only)"
    assert section["status"] == "kept in this process until it exits"
    # Nothing of the store is in the repository or the user's data folder.
    assert not (repo / ".autocode" / "memory.sqlite3").exists()


def test_an_unknown_scheme_is_a_clear_error_that_opens_nothing(tmp_path: Path) -> None:
    repo = _repo_with_store(tmp_path, "memory+mem://other")  # not registered in this test
    with pytest.raises(StoreUnavailable, match=r"no memory store serves memory\+mem:// URLs"):
        open_memory(database_url="memory+mem://other")
    with pytest.raises(StoreUnavailable) as info, pool.lease_for(repo):
        pass
    assert info.value.kind == "memoryStoreUnavailable" and "sqlite" in info.value.message
    section = doctor_section(database_url="memory+mem://other")
    assert section["ok"] is False and "no memory store serves" in section["status"]


def test_built_in_backends_keep_their_urls_and_redaction(tmp_path: Path) -> None:
    assert backends.backend_for("postgresql://u:secret@127.0.0.1:5432/db").name == "postgresql"
    assert backends.backend_for("postgres://127.0.0.1/db").name == "postgresql"
    assert backends.backend_for("host=127.0.0.1 dbname=x").name == "postgresql"  # a libpq string
    assert "secret" not in backends.POSTGRESQL.location("postgresql://u:secret@127.0.0.1:5432/db")
    config = config_for(None)
    assert config.url.startswith("sqlite://") and config.url.endswith("memory.sqlite3")
    missing = f"sqlite://{tmp_path / 'not-made-yet.db'}"
    assert backends.SQLITE.identity(missing) is None  # no file yet: nothing to watch
    assert doctor_section(memory_path=str(tmp_path / "m.db"))["location"] == str(tmp_path / "m.db")


def test_the_pool_key_skips_test_detection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo_with_store(tmp_path, f"sqlite://{tmp_path / 'team.db'}")
    import autocode.detect

    def boom(*args: object) -> None:
        raise AssertionError("memory settings must not run test detection")

    monkeypatch.setattr(autocode.detect, "detect_tests", boom)
    assert config_for(repo).url == f"sqlite://{tmp_path / 'team.db'}"


def test_a_task_leases_one_store_for_all_its_recalls_and_saves(tmp_path: Path) -> None:
    from support.tasks import NAMING_ANSWER, build_sample

    repo, patch = build_sample("unittest", tmp_path / "textkit")
    write_files(repo, {".autocode/config.toml": f'memory_path = "{tmp_path / "task-memory.db"}"\n'})
    trust(repo)
    before = pool.stats()["opened"]
    run = TaskRun.start(repo, f"Add longest_word via {patch}", TaskOptions(scenario="save-memory"))
    cli = Source("cli", "tester")
    run.answer("test-naming", NAMING_ANSWER, cli)
    run.approve_plan(1, cli)
    snap = run.approve_completion(cli)
    assert snap.state == "COMPLETED"
    events = [json.loads(line) for line in (Path(snap.run_dir) / "events.jsonl").read_text().splitlines()]
    assert [e for e in events if e["event"] == "memory_saved"]
    second = TaskRun.start(repo, f"Add longest_word again via {patch}")
    assert second.snapshot().state
    # Two recalls and a role's save: one store opened, and kept for the next use.
    assert pool.stats()["opened"] - before == 1
    with pool.lease_for(repo) as memory:
        assert memory.store.location == str(tmp_path / "task-memory.db")
    assert pool.stats()["opened"] - before == 1
