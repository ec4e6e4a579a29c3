"""Ranking in the database: both stores agree (with full keyword windows too), other processes'
writes are seen without a rebuild, large buckets are searched from a new process, and the
upgrades to schema 5 and (PostgreSQL) 6 complete after a kill."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from autocode.memory import MemoryContext, StoreUnavailable, open_memory, ranking, rules
from autocode.memory.store import NewMemory, bucket_tag, new_id, now_text

ROOT = Path(__file__).resolve().parents[3]
RELEASE = ROOT / "fixtures" / "memory-stores"
MODES = ("keyword", "recent", "semantic", "hybrid")
LATEST = {"sqlite": 5, "postgresql": 6}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _location(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    if kind == "sqlite":
        return {"memory_path": tmp_path / "memory.sqlite3"}
    return {"database_url": request.getfixturevalue("pg_url")}


def _rank_evaluation_set(
    request: pytest.FixtureRequest, tmp_path: Path, modes: tuple[str, ...]
) -> tuple[Any, dict[str, dict[tuple[str, str], list[tuple[str, float]]]]]:
    """The evaluation set loaded into each store, and each store's top 8 (evaluation id, score)
    for every (mode, query)."""
    from bench.memory_eval import build_store, load_eval

    data = load_eval()
    found: dict[str, dict[tuple[str, str], list[tuple[str, float]]]] = {}
    for kind in ("sqlite", "postgresql"):
        location = _location(kind, request, tmp_path)
        mapping = build_store(tmp_path / f"eval-{kind}.sqlite3", data, **location)
        with open_memory(**{**location, "embedding_provider": "static"}) as memory:
            vis = memory.visibility(MemoryContext(None, None))
            found[kind] = {
                (mode, query): [(mapping[h.memory.id], h.score) for h in memory.rank(vis, query, 8, mode).hits]
                for mode in modes
                for query, _ in data.queries
            }
    return data, found


def _differing(found: dict[str, dict[tuple[str, str], list[tuple[str, float]]]]) -> list[tuple[str, str]]:
    """The (mode, query) whose top 8 differ between the stores, in ids or in scores beyond 1e-6
    (cosines are float4 products in pgvector, hence the tolerance)."""
    pg = found["postgresql"]
    return [
        key for key, hits in found["sqlite"].items()
        if [i for i, _ in hits] != [i for i, _ in pg[key]]
        or any(abs(a - b) > 1e-6 for (_, a), (_, b) in zip(hits, pg[key], strict=True))
    ]


@pytest.mark.pg
def test_both_stores_rank_the_evaluation_set_alike(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    data, found = _rank_evaluation_set(request, tmp_path, MODES)
    answers = {kind: {key: [i for i, _ in hits] for key, hits in ranked.items()} for kind, ranked in found.items()}
    differ = [key for key in answers["sqlite"] if answers["sqlite"][key] != answers["postgresql"][key]]
    assert not differ, f"{len(differ)} of {len(answers['sqlite'])} rankings differ, e.g. {differ[:3]}"
    assert all(answers["sqlite"][("hybrid", q)] for q, _ in data.queries)


@pytest.mark.pg
def test_rows_found_only_by_meaning_get_the_same_keyword_score_in_both_stores(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With few candidates, most rows found by meaning are not among the keyword candidates, so
    their keyword score comes from their own words: SQL on PostgreSQL, Python on SQLite. With the
    usual 100 candidates every matching row of the evaluation set is a keyword candidate, and this
    path would go untested."""
    monkeypatch.setattr(ranking, "CANDIDATES", 5)
    _, found = _rank_evaluation_set(request, tmp_path, ("hybrid",))
    differ = _differing(found)
    assert not differ, f"{len(differ)} of {len(found['sqlite'])} rankings differ, e.g. {differ[:2]}"


@pytest.mark.pg
def test_full_keyword_windows_keep_the_stores_alike(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With 200 memories no term fills a window of ranking.WINDOW rows, so the window rule itself
    (each term counts in the rows it weighs most in only) would go uncompared between the stores. A window of
    3 rows is full for every common term of the evaluation set."""
    monkeypatch.setattr(ranking, "WINDOW", 3)
    _, found = _rank_evaluation_set(request, tmp_path, ("keyword", "hybrid"))
    differ = _differing(found)
    assert not differ, f"{len(differ)} of {len(found['sqlite'])} rankings differ, e.g. {differ[:2]}"
    pg = found["postgresql"]
    # The window is really in force: with no window, SQLite ranks some queries otherwise.
    monkeypatch.setattr(ranking, "WINDOW", 10**9)
    with open_memory(memory_path=tmp_path / "memory.sqlite3", embedding_provider="static") as memory:
        vis = memory.visibility(MemoryContext(None, None))
        queries = [query for mode, query in pg if mode == "keyword"]
        wide = {query: [h.memory.id for h in memory.rank(vis, query, 8, "keyword").hits] for query in queries}
    with open_memory(memory_path=tmp_path / "memory.sqlite3", embedding_provider="static") as memory:
        monkeypatch.setattr(ranking, "WINDOW", 3)
        vis = memory.visibility(MemoryContext(None, None))
        narrow = {query: [h.memory.id for h in memory.rank(vis, query, 8, "keyword").hits] for query in wide}
    assert any(wide[q] != narrow[q] for q in wide), "a 3-row window ranked every query as no window does"


SEARCHER = textwrap.dedent(
    """
    import json, sys, time
    from autocode.memory import MemoryContext, open_memory
    location = json.loads(sys.argv[1])
    with open_memory(embedding_provider="static", **location) as memory:
        ctx = MemoryContext(None, None)
        started = time.perf_counter()
        hits = memory.search(ctx, "which port does the mail catcher listen on").hits
        first = time.perf_counter() - started
        loads = getattr(getattr(memory.store, "vectors", None), "loads", None)
        print(json.dumps({"first": [h.memory.content for h in hits[:3]], "seconds": first, "loads": loads}), flush=True)
        # Wait for the parent to save in another process, then search again.
        sys.stdin.readline()
        hits = memory.search(ctx, "where do emails sent in development end up").hits
        loads_after = getattr(getattr(memory.store, "vectors", None), "loads", None)
        print(json.dumps({"second": [h.memory.content for h in hits[:3]], "loads": loads_after}), flush=True)
    """
)


def _fill(location: dict[str, Any], count: int) -> None:
    """`count` filler team memories with embeddings, straight through the store (the save path is tested elsewhere)."""
    from autocode.memory import rules
    from autocode.memory.embeddings import StaticEmbedder, pack

    embedder = StaticEmbedder()
    with open_memory(embedding_provider="none", **location) as memory:
        words = ["deploy", "cache", "queue", "schema", "review", "lint", "worker", "index", "token", "backup"]
        texts = [f"The {words[i % 10]} service {i} keeps its {words[(i * 7) % 10]} settings in area {i % 97}" for i in range(count)]
        vectors = embedder.embed(texts)
        with memory.store.write() as w:
            for text, vector in zip(texts, vectors, strict=True):
                stamp = now_text()
                w.insert_memory(
                    NewMemory(new_id("mem"), text, rules.content_hash(text), " ".join(rules.terms(text)), None,
                              "global", "", "", stamp, None, pack(vector), embedder.model)
                )


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_new_process_searches_a_large_bucket_and_sees_another_process_write(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location = _location(kind, request, tmp_path)
    _fill(location, 3000)
    with open_memory(embedding_provider="static", **location) as memory:
        mail = memory.save(MemoryContext(None, None), "The mail catcher listens on port 8025 in development")
        assert mail.saved
    arg = json.dumps({k: str(v) for k, v in location.items()})
    proc = subprocess.Popen(
        [sys.executable, "-c", SEARCHER, arg], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=_env(),
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        first = json.loads(proc.stdout.readline() or "{}")
        assert first.get("first", [None])[0] == "The mail catcher listens on port 8025 in development", first
        with open_memory(embedding_provider="static", **location) as other:
            saved = other.save(
                MemoryContext(None, None), "Outgoing email in development is captured by the mail catcher, never delivered"
            )
            assert saved.saved
        proc.stdin.write("go\n")
        proc.stdin.flush()
        second = json.loads(proc.stdout.readline() or "{}")
        assert "Outgoing email in development is captured by the mail catcher, never delivered" in second.get("second", []), second
        if kind == "sqlite":
            # The write reached the searcher through the change log, not by loading the bucket again.
            assert first["loads"] == 1 and second["loads"] == 1, (first, second)
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()


def test_sqlite_cache_follows_deletes_and_backfilled_embeddings_without_reloading(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    reader = open_memory(memory_path=path, embedding_provider="static")
    writer = open_memory(memory_path=path, embedding_provider="static")
    plain = open_memory(memory_path=path, embedding_provider="none")
    try:
        ctx = MemoryContext("implementer", None)
        first = writer.save(ctx, "The staging database is refreshed from production every Sunday night")
        assert [h.memory.id for h in reader.search(ctx, "when is staging data refreshed").hits][:1] == [first.id]
        loads = reader.store.vectors.loads  # type: ignore[attr-defined]
        no_vector = plain.save(ctx, "Production backups are copied to a second region each night")
        writer.delete(ctx, first.id or "")
        hits = reader.search(ctx, "nightly copies of backups to another region").hits
        assert [h.memory.id for h in hits][:1] == [no_vector.id]
        assert first.id not in {h.memory.id for h in hits}
        assert reader.store.vectors.loads == loads  # type: ignore[attr-defined]
        stored = reader.store.query("SELECT embedding_model FROM memories WHERE id = ?", (no_vector.id,))
        assert stored == [("static:tokenlearn-static-model-0.1.1",)], "the searcher embedded the memory saved without one"
    finally:
        for service in (reader, writer, plain):
            service.close()


KILLER = textwrap.dedent(
    """
    import os, sys
    import autocode.memory.sqlite_store as sqlite_store
    import autocode.memory.pg_store as pg_store
    kind, where = sys.argv[1], sys.argv[2]
    module = sqlite_store if kind == "sqlite" else pg_store
    module.MIGRATION_BATCH = 7
    calls = []
    def die(done, total):
        calls.append(done)
        if len(calls) == 2:
            os._exit(9)
    module._progress = die
    if kind == "sqlite":
        sqlite_store.SqliteStore(sqlite_store.Path(where))
    else:
        pg_store.PostgresStore(where)
    """
)


def _release_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path, version: int = 4) -> str:
    """A copy of the store a release wrote at schema `version` (fixtures/memory-stores), to upgrade."""
    if kind == "sqlite":
        path = tmp_path / "release.sqlite3"
        shutil.copy(RELEASE / f"release-v{version}.sqlite3", path)
        return str(path)
    import psycopg

    url = str(request.getfixturevalue("pg_url"))
    dump = (RELEASE / f"release-v{version}-postgresql.sql").read_text(encoding="utf-8")
    script = "\n".join(line for line in dump.splitlines() if not line.startswith("\\"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(script.encode())  # type: ignore[call-overload]
    return url


def _raw_rows(kind: str, where: str) -> set[tuple[str, str, str, str]]:
    sql = "SELECT id, content, owner, repo_key FROM memories"
    if kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(where)
        try:
            return {tuple(r) for r in conn.execute(sql)}  # type: ignore[misc]
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(where) as pg:
        return {tuple(r) for r in pg.execute(sql)}  # type: ignore[misc]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_upgrade_from_the_release_store_killed_halfway_then_run_again(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from autocode.memory import doctor_section

    where = _release_store(kind, request, tmp_path)
    location: dict[str, Any] = {"memory_path": where} if kind == "sqlite" else {"database_url": where}
    rows = _raw_rows(kind, where)
    assert len(rows) == 47
    pending = doctor_section(embedding_provider="none", **location, _upgrade=False)
    assert pending["schema_version"] == 4 and pending["index"]["state"] == "upgrade pending", pending

    proc = subprocess.run([sys.executable, "-c", KILLER, kind, where], env=_env(), capture_output=True, timeout=120)
    assert proc.returncode == 9, proc.stderr.decode()
    halfway = doctor_section(embedding_provider="none", **location, _upgrade=False)
    assert halfway["index"]["state"] == "upgrading" and halfway["index"]["detail"].startswith(
        ("full-text index 14 of", "postings for 14 of")
    ), halfway
    assert _raw_rows(kind, where) == rows, "nothing was lost by the kill"

    with open_memory(embedding_provider="static", **location) as memory:
        store = memory.store
        assert store.schema_version() == LATEST[kind] and store.index_state()["state"] == "ready"
        assert _raw_rows(kind, where) == rows
        repo = "origin:git.example.com/team/fixture-service"
        vis = memory.visibility(MemoryContext("reviewer", repo))
        found = {h.memory.id for h in memory.rank(vis, "tests database deploy cache api", 100, "keyword").hits}
        assert any(r[0] in found for r in rows if r[2] == "reviewer"), "old memories are in the new index"
        assert any(r[0] in found for r in rows if r[2] == ""), "old memories are in the new index"
        hybrid = memory.search(MemoryContext(None, None), "how are money amounts stored", limit=3)
        assert hybrid.method == "hybrid" and hybrid.hits
        count = store.count_memories()
        if kind == "sqlite":
            assert store.query("SELECT count(*) FROM memory_fts")[0][0] == count
            assert not store.query("SELECT 1 FROM sqlite_master WHERE name = 'memories_fts'")
        else:
            assert store.query("SELECT coalesce(sum(rows), 0) FROM memory_buckets")[0][0] == count
            assert store.query("SELECT count(*) FROM memories WHERE bucket IS NULL")[0][0] == 0
        # A save of something the release stored is still recognised as a duplicate.
        content = next(r[1] for r in rows if r[2] == "")
        assert memory.save(MemoryContext(None, None), content).duplicate_method == "exact"
    again = doctor_section(embedding_provider="none", **location)
    assert again["index"]["state"] == "ready" and again["schema_version"] == LATEST[kind]


IMPACT_KILLER = textwrap.dedent(
    """
    import os, sys
    from autocode.memory import pg_store
    def die():
        os._exit(9)
    pg_store._impact_built = die
    pg_store.PostgresStore(sys.argv[1])
    """
)


@pytest.mark.pg
def test_upgrade_of_the_current_release_store_to_the_impact_index_killed_then_run_again(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A store the current release wrote (schema 5) gets the keyword window's index (schema 6). A kill
    after the index is built but before it commits leaves the store as it was; the next open builds it."""
    import psycopg

    from autocode.memory import doctor_section, pg_store

    url = _release_store("postgresql", request, tmp_path, version=5)
    rows = _raw_rows("postgresql", url)
    assert len(rows) == 47
    pending = doctor_section(embedding_provider="none", database_url=url, _upgrade=False)
    assert pending["schema_version"] == 5 and pending["index"]["state"] == "upgrade pending", pending
    assert "keyword window" in pending["index"]["detail"]

    proc = subprocess.run([sys.executable, "-c", IMPACT_KILLER, url], env=_env(), capture_output=True, timeout=120)
    assert proc.returncode == 9, proc.stderr.decode()
    with psycopg.connect(url, autocommit=True) as conn:
        assert not conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'memory_terms_impact'").fetchall()
    after_kill = doctor_section(embedding_provider="none", database_url=url, _upgrade=False)
    assert after_kill["schema_version"] == 5 and after_kill["index"]["state"] == "upgrade pending"
    assert _raw_rows("postgresql", url) == rows, "nothing was lost by the kill"

    with open_memory(embedding_provider="static", database_url=url) as memory:
        assert memory.store.schema_version() == 6 and memory.store.index_state()["state"] == "ready"
        plan = memory.store.query(
            "EXPLAIN SELECT p.seq FROM memory_terms p WHERE p.bucket = 1 AND p.term = 'x' "
            f"ORDER BY {pg_store._IMPACT_ORDER} DESC, p.seq DESC LIMIT 5"
        )
        assert "memory_terms_impact" in "\n".join(r[0] for r in plan)
        hits = memory.search(MemoryContext(None, None), "how are money amounts stored", limit=3)
        assert hits.method == "hybrid" and hits.hits
        content = next(r[1] for r in rows if r[2] == "")
        assert memory.save(MemoryContext(None, None), content).duplicate_method == "exact"
    assert _raw_rows("postgresql", url) == rows


def test_bucket_tag_is_the_same_digest_as_the_bucket_number() -> None:
    from autocode.memory.store import bucket_id

    assert int(bucket_tag("a", "b")[1:16], 16) == bucket_id("a", "b")


WRITER = textwrap.dedent(
    """
    import json, sys
    from autocode.memory import MemoryContext, open_memory
    location, worker = json.loads(sys.argv[1]), int(sys.argv[2])
    out = {"own": [], "common": [], "team": None}
    name = ["alpha", "bravo", "charlie", "delta"][worker]
    with open_memory(embedding_provider="none", memory_max_count=15, **location) as memory:
        for n in range(20):
            r = memory.save(MemoryContext(f"agent{worker}", None), f"worker {worker} fact {n}: table t{worker}x{n} is append-only")
            out["own"].append(r.saved)
            r = memory.save(MemoryContext("common", None), f"writer {name} keeps queue q{worker}y{n} drained every {n + 2} hours")
            out["common"].append(r.saved)
        out["team"] = memory.save(MemoryContext(None, None), "The shared build cache lives on the NFS mount").saved
    print(json.dumps(out))
    """
)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_concurrent_writers_keep_caps_duplicates_and_the_index_exact(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location = _location(kind, request, tmp_path)
    with open_memory(embedding_provider="none", **location):
        pass
    arg = json.dumps({k: str(v) for k, v in location.items()})
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, arg, str(w)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
        for w in range(4)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        outputs.append(json.loads(out))
    assert all(all(o["own"]) and all(o["common"]) for o in outputs)
    assert sum(o["team"] for o in outputs) == 1, "the same team fact from four writers is saved once"
    with open_memory(embedding_provider="static", **location) as memory:
        store = memory.store
        counts = dict(store.query("SELECT owner, count(*) FROM memories GROUP BY owner"))
        assert counts == {"": 1, "common": 15, **{f"agent{w}": 15 for w in range(4)}}, counts
        evicted = store.query("SELECT count(*) FROM memory_events WHERE kind = 'evicted'")[0][0]
        assert evicted == 4 * 5 + (80 - 15)
        kept = store.query("SELECT content FROM memories WHERE owner = 'common'")
        newest = memory.list(MemoryContext("common", None), owner="self")
        assert {m.content for m in newest} == {c for (c,) in kept}
        if kind == "sqlite":
            assert store.query("SELECT count(*) FROM memory_fts")[0][0] == 76
        else:
            assert store.query("SELECT sum(rows) FROM memory_buckets")[0][0] == 76
            postings = store.query("SELECT count(*) FROM memory_terms")[0][0]
            expected = sum(len(set(t.split())) for (t,) in store.query("SELECT terms FROM memories"))
            assert postings == expected
            drift = store.query(
                "SELECT d.term FROM memory_term_df d LEFT JOIN (SELECT term, bucket, count(*) AS n FROM memory_terms "
                "GROUP BY term, bucket) p USING (term, bucket) WHERE d.df <> coalesce(p.n, 0)"
            )
            assert drift == []
        hits = memory.search(MemoryContext("agent2", None), "which table is append-only", limit=20).hits
        assert hits and all(h.memory.owner in ("agent2", None) for h in hits)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_write_in_progress_does_not_hold_up_a_search(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    import threading

    location = _location(kind, request, tmp_path)
    with open_memory(embedding_provider="static", **location) as memory:
        ctx = MemoryContext(None, None)
        memory.save(ctx, "Feature flags are read once at start-up")
        found: list[list[str]] = []
        with memory.store.write(lock_key="|") as w:
            w.execute("DELETE FROM memories WHERE content = ?", ("no such memory",))
            searcher = threading.Thread(
                target=lambda: found.append([h.memory.content for h in memory.search(ctx, "feature flags").hits])
            )
            searcher.start()
            searcher.join(timeout=10)
            assert found == [["Feature flags are read once at start-up"]], "the search finished while the write was open"


def test_sqlite_bm25_from_statistics_equals_fts5_bm25(tmp_path: Path) -> None:
    from autocode.memory import ranking
    from autocode.memory.sqlite_store import (
        BM25,
        SqliteStore,
        Windows,
        _bm25_from_windows,
        fts_match,
        keyword_top,
    )
    from bench.memory_eval import build_store, load_eval

    data = load_eval()
    path = tmp_path / "eval.sqlite3"
    build_store(path, data)
    with open_memory(memory_path=path, embedding_provider="none") as memory:
        doomed = memory.list(MemoryContext(None, None))[:5]
        for m in doomed:
            memory.delete(MemoryContext(None, None), m.id)
        store = memory.store
        assert isinstance(store, SqliteStore)
        from autocode.memory import rules

        tag = bucket_tag("", "")
        for query, _ in data.queries[:20]:
            terms = rules.terms(query)
            match = fts_match([tag], terms)
            assert match is not None
            exact = {int(s): float(k) for s, k in store.query(
                f"SELECT rowid, -{BM25} FROM memory_fts WHERE memory_fts MATCH ?", (match,)
            )}
            owner = dict.fromkeys(exact, tag)
            with store._snapshot() as fetch:
                cache, seen = ranking.VectorCache(), Windows()
                ranked = dict(keyword_top(fetch, cache, [tag], terms, len(exact) + 1, seen))
                # The rows by meaning: known from the windows (rows met), and read (a process that met none).
                met = _bm25_from_windows(fetch, cache.terms, list(exact), owner, terms, seen)
                read = _bm25_from_windows(fetch, ranking.RowTerms(), list(exact), owner, terms, seen)
            for computed in (ranked, met, read):
                assert computed.keys() == exact.keys()
                assert all(abs(computed[s] - exact[s]) < 1e-9 for s in exact), query


def test_bucket_vectors_stay_exact_through_adds_replacements_and_removals() -> None:
    import random

    from autocode.memory.embeddings import pack
    from autocode.memory.ranking import BucketVectors

    rng = random.Random(3)

    def unit() -> list[float]:
        v = [rng.uniform(-1, 1) for _ in range(8)]
        n = sum(x * x for x in v) ** 0.5
        return [x / n for x in v]

    truth: dict[int, list[float] | None] = {}
    vectors = BucketVectors()
    vectors.load([], "m")
    for step in range(600):
        seq = rng.randrange(1, 120)
        if rng.random() < 0.3:
            vectors.remove(seq)
            truth.pop(seq, None)
        else:
            v = unit() if rng.random() < 0.9 else None
            vectors.put(seq, pack(v) if v else None, v is not None)
            truth[seq] = v
        if step % 50 == 0:
            query = unit()
            want = sorted(
                ((s, sum(a * b for a, b in zip(v, query, strict=True)) if v else 0.0) for s, v in truth.items()),
                key=lambda r: (-r[1], -r[0]),
            )[:10]
            got = vectors.nearest(query, 10)
            assert [s for s, _ in got] == [s for s, _ in want]
            assert all(abs(a[1] - b[1]) < 1e-5 for a, b in zip(got, want, strict=True))
            assert vectors.missing == {s for s, v in truth.items() if v is None}


NEAR_WRITER = textwrap.dedent(
    """
    import json, sys
    from autocode.memory import MemoryContext, open_memory
    location, worker, mode = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    sep = [":", " -", ",", ";"][worker]
    out = []
    with open_memory(embedding_provider=mode, **location) as memory:
        for n in range(12):
            r = memory.save(MemoryContext(None, None), f"Fact {n}{sep} the queue q{n} drains every hour")
            out.append([r.saved, r.duplicate_method])
    print(json.dumps(out))
    """
)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_concurrent_writers_of_near_duplicates_save_each_fact_once(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Four processes save the same twelve facts, each worded a little differently (not the same
    normalised text, so only the duplicate rules can merge them): every fact is stored once."""
    location = _location(kind, request, tmp_path)
    with open_memory(embedding_provider="static", **location):
        pass
    arg = json.dumps({k: str(v) for k, v in location.items()})
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", NEAR_WRITER, arg, str(w), "static" if w % 2 else "none"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
        )
        for w in range(4)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        results.append(json.loads(out))
    with open_memory(embedding_provider="none", **location) as memory:
        contents = [m.content for m in memory.list(MemoryContext(None, None))]
    facts = sorted(int(c.split()[1].rstrip(":-,;")) for c in contents)
    assert facts == list(range(12)), contents
    assert sum(saved for r in results for saved, _ in r) == 12
    assert {method for r in results for saved, method in r if not saved} <= {"terms", "exact"}


def test_the_connection_pool_bounds_a_process_and_waits_for_a_free_connection(pg_url: str) -> None:
    import threading

    from autocode.memory.pg_store import PostgresStore, _Pool

    class Slots(threading.BoundedSemaphore):
        """The pool's slots, telling when a caller found none free and started waiting."""

        def __init__(self, size: int) -> None:
            super().__init__(size)
            self.waiting = threading.Event()

        def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
            if super().acquire(blocking=False):
                return True
            self.waiting.set()
            return super().acquire(blocking, timeout)

    store = PostgresStore(pg_url)
    try:
        store.pool = _Pool(store._connect, 2, wait=0.1)
        store.pool._slots = Slots(2)
        first, second = store.pool.get(), store.pool.get()
        with pytest.raises(StoreUnavailable, match="all 2 connections"):
            store.pool.get()
        store.pool._slots.waiting.clear()
        store.pool.wait = 120  # only a bound on a hang: the put below frees the slot
        got: list[object] = []
        waiter = threading.Thread(target=lambda: got.append(store.pool.get()))
        waiter.start()
        assert store.pool._slots.waiting.wait(120), "the third caller never had to wait"
        store.pool.put(first)
        waiter.join(120)
        third = got[0]
        assert third is first, "the free connection was reused"
        store.pool.put(second)
        store.pool.put(third)
        assert store.count_memories() == 0
        opened = store.query("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")[0][0]
        assert opened <= 2
    finally:
        store.close()


def test_a_near_duplicate_saved_between_the_checks_and_the_insert_is_caught(tmp_path: Path) -> None:
    """SQLite checks for duplicates without a lock; another writer's save that lands after the
    checks and before the insert is compared with under the lock."""
    location = _location("sqlite", None, tmp_path)  # type: ignore[arg-type]
    ctx = MemoryContext(None, None)
    first = open_memory(embedding_provider="static", **location)
    other = open_memory(embedding_provider="none", **location)
    try:
        first.save(ctx, "The staging database is refreshed every Sunday night")
        real = first.store.save_checks
        landed: list[str | None] = []
        others = ["Fact 7 - the queue q7 drains every hour", "Backups are copied to a second region each night"]

        def checks_then_another_writer(*args: Any, **kwargs: Any) -> Any:
            found = real(*args, **kwargs)
            landed.append(other.save(ctx, others.pop(0)).id)
            return found

        first.store.save_checks = checks_then_another_writer  # type: ignore[method-assign]
        late = first.save(ctx, "Fact 7: the queue q7 drains every hour")
        assert landed[0] and not late.saved and late.duplicate_of == landed[0] and late.duplicate_method == "terms"
        # Something new that landed meanwhile does not stop a save.
        landed.clear()
        fresh = first.save(ctx, "Deploys are frozen on Fridays after noon")
        assert fresh.saved and landed[0]
        assert len(first.list(ctx)) == 4
    finally:
        first.close()
        other.close()


@pytest.mark.pg
def test_postgresql_checks_a_save_while_it_holds_the_bucket_lock(request: pytest.FixtureRequest) -> None:
    """On PostgreSQL a save checks for duplicates only once it holds its bucket's lock: a save
    that starts while another writer holds it waits, and then sees what that writer added."""
    import threading

    url = request.getfixturevalue("pg_url")
    ctx = MemoryContext(None, None)
    with open_memory(embedding_provider="static", database_url=url) as first, \
            open_memory(embedding_provider="none", database_url=url) as other:
        first.save(ctx, "The staging database is refreshed every Sunday night")

        def unlocked(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("PostgreSQL checks a save only under the bucket lock")

        first.store.save_checks = unlocked  # type: ignore[method-assign]
        answers: list[Any] = []
        saver = threading.Thread(target=lambda: answers.append(first.save(ctx, "Fact 7: the queue q7 drains every hour")))
        with other.store.write(lock_key="|") as w:  # the team's global bucket
            saver.start()
            saver.join(1.0)
            assert saver.is_alive() and not answers, "the save waits for the bucket lock"
            landed = new_id("mem")
            text = "Fact 7 - the queue q7 drains every hour"
            w.insert_memory(NewMemory(
                id=landed, content=text, norm_hash="x" * 64, terms=" ".join(rules.terms(text)), category=None,
                scope="global", repo_key="", owner="", created_at=now_text(), run_id=None, embedding=None,
                embedding_model=None,
            ))
        saver.join(30)
        assert answers and not answers[0].saved and answers[0].duplicate_of == landed
        assert answers[0].duplicate_method == "terms"
        assert len(first.list(ctx)) == 2


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_repeated_search_still_backfills_and_notices_an_emptied_bucket(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A second search of the same buckets sends the state check with the ranking (one round trip
    on PostgreSQL): a memory saved meanwhile without an embedding is still embedded and ranked by
    meaning, and a bucket emptied meanwhile answers nothing."""
    location = _location(kind, request, tmp_path)
    ctx = MemoryContext(None, None)
    with open_memory(embedding_provider="static", **location) as searcher:
        searcher.save(ctx, "Feature flags are read once at start-up")
        assert [h.memory.content for h in searcher.search(ctx, "feature flags").hits]
        if kind == "postgresql":
            store: Any = searcher.store
            trips: list[int] = []
            retrying = store._retrying
            store._retrying = lambda action: trips.append(1) or retrying(action)
            assert [h.memory.content for h in searcher.search(ctx, "feature flags").hits]
            store._retrying = retrying
            assert len(trips) == 1, "a repeated search is one round trip"
        with open_memory(embedding_provider="none", **location) as keyword_only:
            saved = keyword_only.save(ctx, "The invoice exporter writes UTF-8 CSV files")
        assert saved.id and searcher.store.missing_embeddings([("", "")], searcher.choice.embedder.model, 10) == [saved.id]
        hits = searcher.search(ctx, "invoice CSV export", mode="semantic").hits
        assert hits and hits[0].memory.id == saved.id and hits[0].score > 0.3, "ranked by meaning after the backfill"
        assert searcher.store.missing_embeddings([("", "")], searcher.choice.embedder.model, 10) == []
        with searcher.store.write() as w:
            w.execute("DELETE FROM memories")
        assert searcher.search(ctx, "invoice CSV export").hits == []
