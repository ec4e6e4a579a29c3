"""SQLite keyword ranking scores each term's window from row statistics kept in the process (token
counts and repeated terms, each row read once, then followed through the change log), not by
reading the rows on every search: the same scores as BM25 computed from the rows' own terms,
through cut windows, repeated terms, and another connection's adds and deletes."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from autocode.memory import MemoryContext, open_memory, ranking, rules
from autocode.memory.embeddings import StaticEmbedder, pack
from autocode.memory.sqlite_store import SqliteStore
from autocode.memory.store import NewMemory, bucket_tag, new_id, now_text

WORDS = ["retry", "queue", "cache", "deploy", "schema", "token", "backup", "worker", "lint", "index", "review"]


def _add(store: SqliteStore, texts: list[str]) -> None:
    with store.write() as w:
        for text in texts:
            w.insert_memory(
                NewMemory(new_id("mem"), text, rules.content_hash(text), " ".join(rules.terms(text)), None,
                          "global", "", "", now_text(), None, None, None)
            )


def _reference(store: SqliteStore, query_terms: list[str], depth: int) -> list[tuple[int, float]]:
    """Windowed BM25 computed the slow way, from every row's own terms (the rule of ranking.WINDOW)."""
    tag = bucket_tag("", "")
    rows = [(int(s), t.split()) for s, t in store.query("SELECT seq, terms FROM memories ORDER BY seq DESC")]
    bucket = {int(s) for (s,) in store.query("SELECT seq FROM memories WHERE bucket = ?", (tag,))}
    count = len(rows)
    average = sum(len(words) for _, words in rows) / count
    scores: dict[int, float] = {}
    k1, b = ranking.K1, ranking.B
    for term in sorted(set(query_terms)):
        having = [(s, words) for s, words in rows if s in bucket and term in words]
        weight = ranking.idf(count, len(having))
        # The window: the rows holding the term most strongly, the newer first on ties.
        having.sort(key=lambda r: (ranking.impact(r[1].count(term), len(r[1])), r[0]), reverse=True)
        for seq, words in having[: ranking.WINDOW]:
            tf = words.count(term)
            share = weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(words) / average))
            scores[seq] = scores.get(seq, 0.0) + share
    return sorted(scores.items(), key=lambda r: (-r[1], -r[0]))[:depth]


def _ranked(store: SqliteStore, query_terms: list[str], depth: int) -> list[tuple[int, float]]:
    found = store.rank([("", "")], query_terms, None, None, "keyword", depth, 0.0, None)
    return [(s.seq, s.score) for s in found]


def _same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> bool:
    return [s for s, _ in got] == [s for s, _ in want] and all(
        math.isclose(a, b, rel_tol=1e-12) for (_, a), (_, b) in zip(got, want, strict=True)
    )


@pytest.mark.parametrize("numpy_rows", [None, 1])
def test_window_scores_from_the_cached_statistics_equal_bm25_from_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, numpy_rows: int | None
) -> None:
    if numpy_rows is not None:
        pytest.importorskip("numpy")
        monkeypatch.setattr(ranking, "NUMPY_ROWS", numpy_rows)  # numpy for every window
    else:
        monkeypatch.setattr(ranking, "_numpy_for", lambda rows: None)  # plain Python for every window
    monkeypatch.setattr(ranking, "WINDOW", 7)  # windows are cut at this size
    rng = random.Random(11)

    def text(i: int) -> str:
        words = rng.sample(WORDS, 4) + [rng.choice(WORDS) for _ in range(rng.randrange(0, 3))]  # some repeated
        return f"Note {i}: " + " ".join(words)

    path = tmp_path / "m.sqlite3"
    searcher = SqliteStore(path)
    writer = SqliteStore(path)  # another connection with its own cache: its writes reach `searcher` via the log
    try:
        _add(writer, [text(i) for i in range(60)])
        queries = [["retry", "queue"], ["cache", "retry", "lint", "missing"], ["deploy"], ["retry"]]
        for query in queries:
            assert _same(_ranked(searcher, query, 10), _reference(searcher, query, 10)), query
        read = searcher.vectors.terms.read
        for query in queries:
            _ranked(searcher, query, 10)
        assert searcher.vectors.terms.read == read, "a second search read rows again"
        for round_ in range(12):
            _add(writer, [text(100 + 10 * round_ + i) for i in range(rng.randrange(0, 7))])
            doomed = [s for (s,) in writer.query("SELECT seq FROM memories ORDER BY random() LIMIT ?", (rng.randrange(0, 5),))]
            with writer.write() as w:
                for seq in doomed:
                    w.execute("DELETE FROM memories WHERE seq = ?", (seq,))
            if round_ % 3 == 1:  # an embedding added to old rows: the log says 'add' for rows already known
                ids = [i for (i,) in writer.query("SELECT id FROM memories ORDER BY random() LIMIT 3")]
                writer.set_embeddings([(i, [1.0, 0.0]) for i in ids], "test-model")
            for query in [*queries, rng.sample(WORDS, 2)]:
                assert _same(_ranked(searcher, query, 10), _reference(searcher, query, 10)), (round_, query)
    finally:
        searcher.close()
        writer.close()


def test_a_warm_keyword_search_reads_no_row_of_the_bucket(tmp_path: Path) -> None:
    """Scoring a window reads no row: the memories table is read for the hits alone, and a window
    read a moment ago is not read again."""
    path = tmp_path / "m.sqlite3"
    with open_memory(memory_path=path, embedding_provider="none") as memory:
        store: Any = memory.store
        _add(store, [f"Worker {i} retries the {WORDS[i % 11]} queue, then the {WORDS[(i * 3) % 11]} queue" for i in range(300)])
        ctx = MemoryContext(None, None)
        memory.search(ctx, "which worker retries the deploy queue", mode="keyword")  # reads the window rows once
        statements: list[str] = []
        store.reader.set_trace_callback(statements.append)
        hits = memory.search(ctx, "which worker retries the deploy queue", mode="keyword", limit=5).hits
        store.reader.set_trace_callback(None)
    assert len(hits) == 5
    reads = [s for s in statements if "FROM memories" in s]
    # One read: the hits' own rows (no per-row terms for the windows, no whole-bucket load).
    assert len(reads) == 1 and "terms" not in reads[0].split("FROM")[0], reads
    # The windows of the terms searched a moment ago come from the process, not from FTS5 again.
    assert not [s for s in statements if "MATCH" in s], statements


def test_hybrid_search_on_the_cached_statistics_is_unchanged_by_a_reload(tmp_path: Path) -> None:
    """A searcher whose statistics followed many writes ranks exactly like a fresh process's."""
    pytest.importorskip("static_model")
    path = tmp_path / "m.sqlite3"
    embedder = StaticEmbedder()
    ctx = MemoryContext(None, None)
    texts = [f"The {WORDS[i % 11]} job {i} retries its {WORDS[(i * 5) % 11]} step {i % 7} times" for i in range(120)]
    with open_memory(memory_path=path, embedding_provider="static") as warm:
        warm.search(ctx, "retry the queue")
        store: Any = warm.store
        with store.write() as w:
            for text, vector in zip(texts, embedder.embed(texts), strict=True):
                w.insert_memory(NewMemory(new_id("mem"), text, rules.content_hash(text), " ".join(rules.terms(text)),
                                          None, "global", "", "", now_text(), None, pack(vector), embedder.model))
        first = [(h.memory.id, h.score) for h in warm.search(ctx, "which job retries the deploy step").hits]
        with open_memory(memory_path=path, embedding_provider="static") as other:
            for memory_id, _ in first[:3]:
                other.delete(ctx, memory_id)
        warm_hits = [(h.memory.id, h.score) for h in warm.search(ctx, "which job retries the deploy step").hits]
        with open_memory(memory_path=path, embedding_provider="static") as fresh:
            fresh_hits = [(h.memory.id, h.score) for h in fresh.search(ctx, "which job retries the deploy step").hits]
    assert warm_hits == fresh_hits
    assert not {m for m, _ in first[:3]} & {m for m, _ in warm_hits}


def test_numpy_is_imported_with_one_blas_thread_and_the_environment_put_back() -> None:
    """A 100,000-row product on OpenBLAS's thread per core spun on a busy machine (4x the wall time)."""
    pytest.importorskip("numpy")
    code = textwrap.dedent(
        """
        import ctypes, glob, json, os, subprocess, sys
        from autocode.memory import ranking
        np = ranking._numpy()
        libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*openblas*"))
        threads = None
        for lib in libs:
            for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
                function = getattr(ctypes.CDLL(lib), name, None)
                if function is not None:
                    threads = function()
                    break
        child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"],
                               capture_output=True, text=True, check=True).stdout.strip()
        print(json.dumps({"threads": threads, "env": os.environ.get("OPENBLAS_NUM_THREADS"), "child": child}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    found = json.loads(done.stdout)
    assert found["env"] is None and found["child"] == "None", found
    if found["threads"] is not None:  # an OpenBLAS build that answers (numpy's wheels do)
        assert found["threads"] == 1, found
