"""Retrieval quality at scale: the evaluation memories among many others.

Run: python tests/bench/bench_memory_recall.py [--count N] [--windows W,W] [--skip-pg] [--skip-sqlite] [--url URL]

recall@8 on fixtures/memory alone says nothing about the keyword window (ranking.WINDOW): with
200 memories no term is in more than a few rows, so no window is ever full. Here the 200
evaluation memories are scattered at random ages through one team bucket of --count other
memories, and the 61 evaluation queries are ranked there. The others are sentences of the
docstrings of this Python's standard library (read from its source files, one or two sentences
to a memory): real technical prose whose common words ("test", "file", "return", "value") are
common here too, and none of it is what the queries ask for. recall@8 (the share of each
query's relevant memories in its top 8, averaged) is printed for keyword and hybrid search with
the shipped window and with no window at all, the reference of what the window costs.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from bench_memory import _insert_many  # noqa: E402
from memory_eval import EvalSet, load_eval, recall_at_k  # noqa: E402

from autocode.memory import open_memory, ranking, rules  # noqa: E402
from autocode.memory.embeddings import StaticEmbedder, pack  # noqa: E402
from autocode.memory.store import new_id  # noqa: E402

SKIP_DIRS = {"test", "tests", "site-packages", "idlelib", "lib2to3", "turtledemo", "__pycache__"}
NO_WINDOW = 10**9


def stdlib_sentences() -> list[str]:
    """Sentences of 6 to 40 words from the docstrings of the standard library's modules, classes and
    functions, parsed (never imported), deduplicated and sorted: the same list for the same Python."""
    root = Path(os.__file__).parent
    found: set[str] = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(f for f in files if f.endswith(".py")):
            try:
                tree = ast.parse((Path(folder) / name).read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                doc = ast.get_docstring(node)
                for sentence in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", doc or "")):
                    words = sentence.split()
                    letters = sum(c.isalpha() for c in sentence)
                    if 6 <= len(words) <= 40 and sentence.isprintable() and letters > 0.6 * len(sentence):
                        found.add(sentence.strip())
    return sorted(found)


def layout(data: EvalSet, count: int, seed: int = 11) -> list[tuple[str, str | None]]:
    """(text, fixture id or None) in age order: `count` distinct distractors with the evaluation
    memories at random places among them."""
    sentences = stdlib_sentences()
    rng = random.Random(seed)
    texts: list[str] = []
    seen: set[str] = set()
    while len(texts) < count:
        text = " ".join(rng.sample(sentences, 1 if rng.random() < 0.5 else 2))
        if text not in seen:
            seen.add(text)
            texts.append(text)
    rows: list[tuple[str, str | None]] = [(t, None) for t in texts]
    for fixture_id, _category, content in data.memories:
        rows.insert(rng.randrange(len(rows) + 1), (content, fixture_id))
    return rows


def load(location: dict[str, Any], rows: list[tuple[str, str | None]]) -> dict[str, str]:
    """Insert every row straight into a new store (team scope, global); returns store id -> fixture id."""
    embedder = StaticEmbedder()
    mapping: dict[str, str] = {}
    base = time.time() - len(rows)
    with open_memory(embedding_provider="none", **location) as memory:
        store: Any = memory.store
        for start in range(0, len(rows), 5000):
            chunk = rows[start : start + 5000]
            vectors = embedder.embed([text for text, _ in chunk])
            records = []
            for n, ((text, fixture_id), vector) in enumerate(zip(chunk, vectors, strict=True)):
                memory_id = new_id("mem")
                if fixture_id is not None:
                    mapping[memory_id] = fixture_id
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(base + start + n)) + ".000000Z"
                records.append((
                    memory_id, text, rules.content_hash(text), " ".join(rules.terms(text)), None, "global", "", "",
                    stamp, stamp, None, pack(vector), StaticEmbedder.model,
                ))
            _insert_many(store, records)
        if store.kind == "postgresql":
            store.ensure_model(StaticEmbedder.model, 64)
            store.query("ANALYZE memories")
            store.query("ANALYZE memory_terms")
    return mapping


def recalls(location: dict[str, Any], data: EvalSet, mapping: dict[str, str], window: int) -> dict[str, float]:
    shipped = ranking.WINDOW
    ranking.WINDOW = window
    try:
        with open_memory(embedding_provider="static", **location) as memory:
            return {mode: recall_at_k(memory, data, mapping, mode) for mode in ("keyword", "hybrid")}
    finally:
        ranking.WINDOW = shipped


def measure(name: str, location: dict[str, Any], count: int, windows: list[int]) -> list[str]:
    data = load_eval()
    rows = layout(data, count)
    digest = hashlib.sha256("\n".join(t for t, _ in rows).encode()).hexdigest()[:12]
    started = time.perf_counter()
    mapping = load(location, rows)
    lines = [f"{name}: {count} other memories (stdlib docstrings, sha256 {digest}) + {len(mapping)} evaluation "
             f"memories loaded in {time.perf_counter() - started:.0f} s"]
    for window in windows:
        got = recalls(location, data, mapping, window)
        label = f"window {window}" if window != NO_WINDOW else "no window"
        lines.append(f"{name}: recall@8 with {label}: keyword {got['keyword']:.3f}  hybrid {got['hybrid']:.3f}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--skip-pg", action="store_true")
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--url", help="a PostgreSQL database to fill (empty) instead of a new server")
    parser.add_argument("--windows", help="comma-separated windows to rank with (default: the shipped one, then none)")
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")] if args.windows else [ranking.WINDOW, NO_WINDOW]
    with tempfile.TemporaryDirectory(prefix="bench-memory-recall-") as tmp:
        if not args.skip_sqlite:
            for line in measure("sqlite", {"memory_path": Path(tmp) / "recall.sqlite3"}, args.count, windows):
                print(line, flush=True)
        if args.skip_pg:
            return 0
        if args.url:
            for line in measure("postgresql", {"database_url": args.url}, args.count, windows):
                print(line, flush=True)
            return 0
        from support.pgserver import PgServer

        server = PgServer()
        server.start({"shared_buffers": "512MB"})
        try:
            url = server.url(server.create_database())
            for line in measure("postgresql", {"database_url": url}, args.count, windows):
                print(line, flush=True)
        finally:
            server.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
