"""Memory benchmark: 100k memories on SQLite and PostgreSQL, with and without embeddings, plus recall@8.

Run: python tests/bench/bench_memory.py [--count N] [--samples N] [--skip-pg]

Each latency is printed with its ratio to two anchors: mem0's reported search
p50 (0.148 s, a published figure) and a naive full scan (`LIKE '%word%'` over
the same rows) measured in this run on the same store.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from memory_eval import MODES, build_store, load_eval, recall_at_k  # noqa: E402

from autocode.memory import MemoryContext, MemoryService, open_memory, rules  # noqa: E402
from autocode.memory.embeddings import StaticEmbedder, pack  # noqa: E402
from autocode.memory.store import bucket_tag, new_id  # noqa: E402

MEM0_SEARCH_P50 = 0.148
RECALL_GOAL_P95 = 0.020
AGENTS = ("requirements", "planner", "implementer", "investigator", "reviewer")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(samples: int, action: Callable[[int], object]) -> tuple[float, float]:
    times = []
    for i in range(samples):
        start = time.perf_counter()
        action(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times), percentile(times, 0.95)


def layout(count: int, repos: int) -> list[tuple[str, str, str]]:
    """(scope, repo_key, owner) per memory: 75% agent project, 20% team project, 1% agent global, 4% team global."""
    per_agent = int(count * 0.75) // (repos * len(AGENTS))
    team_project = int(count * 0.20) // repos
    rows: list[tuple[str, str, str]] = []
    for r in range(repos):
        key = f"origin:git.example.com/team/service-{r}"
        for agent in AGENTS:
            rows += [("project", key, agent)] * per_agent
        rows += [("project", key, "")] * team_project
    agent_global = min(200, int(count * 0.01) // len(AGENTS))
    for agent in AGENTS:
        rows += [("global", "", agent)] * agent_global
    rows += [("global", "", "")] * (count - len(rows))
    return rows


def contents(count: int, seed: int = 7) -> Iterator[str]:
    data = load_eval()
    bases = [m[2] for m in data.memories]
    vocab = sorted({t for b in bases for t in rules.terms(b) if t.isalpha() and len(t) > 3})
    rng = random.Random(seed)
    for i in range(count):
        extra = " ".join(rng.sample(vocab, 3))
        yield f"{rng.choice(bases)}; seen in the {extra} area ({i})"


def bulk_load(memory: MemoryService, count: int, repos: int, embed: bool) -> float:
    """Insert `count` memories straight into the store (the save path is timed separately)."""
    started = time.perf_counter()
    embedder = StaticEmbedder() if embed else None
    rows = layout(count, repos)
    texts = list(contents(len(rows)))
    base = time.time() - len(rows)
    batch = 5000
    store = memory.store
    for offset in range(0, len(rows), batch):
        chunk = list(zip(rows[offset : offset + batch], texts[offset : offset + batch], strict=True))
        vectors = embedder.embed([t for _, t in chunk]) if embedder else [None] * len(chunk)
        records = []
        for n, ((scope, key, owner), text) in enumerate(chunk):
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(base + offset + n)) + ".000000Z"
            vector = vectors[n]
            records.append(
                (
                    new_id("mem"), text, rules.content_hash(text), " ".join(rules.terms(text)), None, scope, key,
                    owner, stamp, stamp, None, pack(vector) if vector else None,
                    StaticEmbedder.model if vector else None,
                )
            )
        _insert_many(store, records)
    return time.perf_counter() - started


def _insert_many(store: Any, records: list[tuple[Any, ...]]) -> None:
    columns = (
        "id, content, norm_hash, terms, category, scope, repo_key, owner, created_at, updated_at, "
        "run_id, embedding, embedding_model"
    )
    if store.kind == "sqlite":
        tagged = [(*r, bucket_tag(r[7], r[6])) for r in records]
        with store.write() as w:
            w.conn.executemany(f"INSERT INTO memories ({columns}, bucket) VALUES ({', '.join('?' * 14)})", tagged)
        return
    from autocode.memory.embeddings import unpack
    from autocode.memory.pg_store import vector_literal
    from autocode.memory.store import bucket_id

    cols = columns + ", bucket" + (", vec" if store.has_vector else "")
    with store.write() as w, w.conn.cursor().copy(f"COPY memories ({cols}) FROM STDIN") as copy:
        for record in records:
            extra = (vector_literal(unpack(record[11])) if record[11] else None,) if store.has_vector else ()
            copy.write_row((*record, bucket_id(record[7], record[6]), *extra))


def naive_scan(memory: MemoryService, word: str) -> None:
    memory.store.query("SELECT id FROM memories WHERE content LIKE ? ORDER BY created_at DESC LIMIT 10", (f"%{word}%",))


def measure(name: str, memory_factory: Callable[..., MemoryService], count: int, samples: int) -> list[str]:
    data = load_eval()
    queries = [q for q, _ in data.queries]
    rng = random.Random(11)
    lines = []
    with memory_factory(embedding_provider="none") as plain:
        load_s = bulk_load(plain, count, 100, embed=True)
        total = plain.store.count_memories()
        lines.append(f"{name}: loaded {total} memories in {load_s:.1f} s")
        scan_p50, _ = timed(samples, lambda i: naive_scan(plain, rng.choice(["redis", "deploy", "tests", "cache"])))
        lines.append(f"{name}: anchor naive LIKE scan p50 {scan_p50 * 1000:.1f} ms")
    for mode_name, provider in (("keyword", "none"), ("embeddings", "static")):
        with memory_factory(embedding_provider=provider) as memory:
            vocab = sorted({t for q in queries for t in rules.terms(q) if t.isalpha()})

            def ctx(i: int) -> MemoryContext:
                return MemoryContext(AGENTS[i % len(AGENTS)], f"origin:git.example.com/team/service-{i % 100}")

            memory.recall(ctx(0), queries[0])  # loads the model once, outside the timings

            def save(i: int, memory: MemoryService = memory, label: str = mode_name, vocab: list[str] = vocab) -> None:
                words = " ".join(random.Random(i * 7919 + len(label)).sample(vocab, 8))
                memory.save(ctx(i), f"Benchmark note {label} {i}: {words}")

            results = {
                "save": timed(samples, save),
                "search": timed(samples, lambda i: memory.search(ctx(i), queries[i % len(queries)])),
                "recall": timed(samples, lambda i: memory.recall(ctx(i), queries[i % len(queries)])),
            }
            for op, (p50, p95) in results.items():
                line = (
                    f"{name} {mode_name:10} {op:6} p50 {p50 * 1000:7.2f} ms  p95 {p95 * 1000:7.2f} ms  "
                    f"p50 vs mem0 search {p50 / MEM0_SEARCH_P50:.3f}x  p50 vs naive scan {p50 / scan_p50:.2f}x"
                )
                if op == "recall" and name == "sqlite":
                    line += f"  p95 vs 20 ms goal {p95 / RECALL_GOAL_P95:.2f}x"
                lines.append(line)
    return lines


def quality(factory_location: dict[str, Any], workdir: Path) -> list[str]:
    data = load_eval()
    mapping = build_store(workdir / "eval.sqlite3", data, **factory_location)
    out = []
    with open_memory(memory_path=workdir / "eval.sqlite3", embedding_provider="static", **factory_location) as memory:
        scores = {mode: recall_at_k(memory, data, mapping, mode) for mode in MODES}
    names = {"keyword": "keyword (BM25)", "recent": "keyword, newest first", "semantic": "semantic", "hybrid": "hybrid"}
    for mode in MODES:
        out.append(f"recall@8 {names[mode]:22} {scores[mode]:.3f}  vs keyword {scores[mode] / scores['keyword']:.2f}x")
    out.insert(0, f"evaluation set: {len(data.memories)} memories, {len(data.queries)} queries")
    return out


@contextmanager
def postgres() -> Iterator[str]:
    from support.pgserver import PgServer

    server = PgServer()
    server.start()
    try:
        yield server.url(server.create_database())
    finally:
        server.destroy()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--skip-pg", action="store_true")
    parser.add_argument("--skip-sqlite", action="store_true", help="only the PostgreSQL part")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        work = Path(tmp)
        for line in quality({}, work):
            print(line, flush=True)
        if not args.skip_sqlite:
            lines = measure(
                "sqlite",
                lambda **kw: open_memory(memory_path=work / "bench.sqlite3", **kw),
                args.count,
                args.samples,
            )
            print("\n".join(lines), flush=True)
        if not args.skip_pg:
            with postgres() as url:
                lines = measure("postgresql", lambda **kw: open_memory(database_url=url, **kw), args.count, args.samples)
                print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
