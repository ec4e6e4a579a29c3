"""A small bucket compares in plain Python (no numpy import), a large one with numpy: same ranking either way,
and a bucket that grows past the threshold moves to numpy without losing a row."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from autocode.memory import MemoryContext, open_memory, ranking

pytest.importorskip("static_model")
numpy = pytest.importorskip("numpy")


def _ranked(tmp_path: Path, mapping_path: Path, mode_numpy: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from bench.memory_eval import load_eval

    monkeypatch.setattr(ranking, "_numpy_for", lambda rows: numpy if mode_numpy else None)
    out = []
    with open_memory(memory_path=mapping_path, embedding_provider="static") as memory:
        vis = memory.visibility(MemoryContext(None, None))
        for query, _ in load_eval().queries:
            for mode in ("hybrid", "semantic"):
                hits = memory.rank(vis, query, 8, mode).hits
                out.append([(h.memory.id, round(h.score, 4)) for h in hits])
        store: Any = memory.store
        pools = list(store.vectors.buckets.values())
        assert pools and all((p.np is not None) is mode_numpy for p in pools)
    return out


def test_plain_python_and_numpy_rank_the_evaluation_set_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.memory_eval import build_store, load_eval

    path = tmp_path / "eval.sqlite3"
    build_store(path, load_eval())
    with open_memory(memory_path=path, embedding_provider="static") as memory:  # embed every memory once
        memory.rank(memory.visibility(MemoryContext(None, None)), "warm up", 1, "hybrid")
    plain = _ranked(tmp_path, path, False, monkeypatch)
    with_numpy = _ranked(tmp_path, path, True, monkeypatch)
    differing = [i for i, (a, b) in enumerate(zip(plain, with_numpy, strict=True)) if a != b]
    # float32 (numpy) against float64 (Python) sums: at most a rare exact tie may swap.
    assert len(differing) <= 2, differing
    assert len(plain) == 2 * len(load_eval().queries)


def test_a_bucket_that_grows_past_the_threshold_moves_to_numpy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "NUMPY_ROWS", 6)
    monkeypatch.setattr(ranking, "_numpy_for", lambda rows: numpy if rows >= 6 else None)
    facts = [f"Service number {i} {word} logs to the central collector" for i, word in
             enumerate(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"])]
    ctx = MemoryContext(None, None)
    with open_memory(memory_path=tmp_path / "m.sqlite3", embedding_provider="static") as memory:
        memory.save(ctx, facts[0])
        memory.save(ctx, facts[1])
        memory.search(ctx, "collector")  # the bucket loads with 2 rows: plain Python
        store: Any = memory.store
        (pool,) = store.vectors.buckets.values()
        assert pool.np is None and isinstance(pool.matrix, list)
        for fact in facts[2:]:
            memory.save(ctx, fact)
            memory.search(ctx, "collector")  # each search brings the cached bucket up to date
        assert pool.np is numpy and pool.size == len(facts)
        found = memory.search(ctx, "which service is hotel", limit=3).hits
        assert found[0].memory.content == facts[7]
        assert {h.memory.content for h in memory.search(ctx, "collector", limit=20).hits} == set(facts)


def test_a_first_search_over_a_few_memories_imports_no_numpy(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from autocode.memory import MemoryContext, open_memory
        ctx = MemoryContext(None, None)
        with open_memory(memory_path=Path({str(tmp_path / "m.sqlite3")!r}), embedding_provider="static") as m:
            m.save(ctx, "The test suite runs with unittest discovery from the tests folder.")
            m.save(ctx, "Release branches only take fixes that have a linked incident.")
            result = m.search(ctx, "how do the tests run")
            print(result.method, result.hits[0].memory.content[:8], "numpy" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["hybrid", "The", "test", "False"], done.stdout + done.stderr
