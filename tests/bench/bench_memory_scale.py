"""Memory at team scale: one big team bucket, searched warm, cold and right after another process wrote.

Run: python tests/bench/bench_memory_scale.py [--count N] [--team-count N] [--seconds S] [--procs P] [--skip-pg]

Part 1, on SQLite and PostgreSQL: one team bucket of --count memories (with
embeddings). Warm search p95 in one process; the first search of a new
process (cold); and searches that each follow a save by another process
(goal: p95 at most 2x the warm p95 of the same run).

Part 2, PostgreSQL only: --team-count memories in one team bucket, --procs
processes saving and --procs searching for --seconds: search p95 (goal
50 ms), save p95, and a count of lost or duplicated rows (goal 0).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from bench_memory import contents, percentile  # noqa: E402
from memory_eval import load_eval  # noqa: E402

from autocode.memory import MemoryContext, open_memory, rules  # noqa: E402
from autocode.memory.embeddings import StaticEmbedder, pack, unpack  # noqa: E402
from autocode.memory.store import bucket_id, bucket_tag, new_id  # noqa: E402

TEAM = MemoryContext(None, None)
SEARCH_GOAL_P95 = 0.050


def load_team_bucket(location: dict[str, Any], count: int) -> float:
    """`count` team global memories with static-model embeddings, inserted in batches straight into the store."""
    started = time.perf_counter()
    embedder = StaticEmbedder()
    texts = contents(count, seed=23)
    base = time.time() - count
    with open_memory(embedding_provider="none", **location) as memory:
        store: Any = memory.store
        batch: list[str] = []
        done = 0
        for text in texts:
            batch.append(text)
            if len(batch) == 5000:
                _insert(store, batch, embedder, base + done)
                done += len(batch)
                batch = []
        if batch:
            _insert(store, batch, embedder, base + done)
        if store.kind == "postgresql":
            built = time.perf_counter()
            store.ensure_model(StaticEmbedder.model, 64)
            print(f"  postgresql: HNSW and model indexes built in {time.perf_counter() - built:.1f} s", flush=True)
            store.query("ANALYZE memories")
            store.query("ANALYZE memory_terms")
    return time.perf_counter() - started


def _insert(store: Any, texts: list[str], embedder: StaticEmbedder, stamp0: float) -> None:
    vectors = embedder.embed(texts)
    records = []
    for n, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp0 + n)) + ".000000Z"
        records.append(
            (new_id("mem"), text, rules.content_hash(text), " ".join(rules.terms(text)), None, "global", "", "",
             stamp, stamp, None, pack(vector), StaticEmbedder.model)
        )
    columns = (
        "id, content, norm_hash, terms, category, scope, repo_key, owner, created_at, updated_at, "
        "run_id, embedding, embedding_model, bucket"
    )
    if store.kind == "sqlite":
        with store.write() as w:
            w.conn.executemany(
                f"INSERT INTO memories ({columns}) VALUES ({', '.join('?' * 14)})",
                [(*r, bucket_tag("", "")) for r in records],
            )
        return
    from autocode.memory.pg_store import vector_literal

    with store.write() as w, w.conn.cursor().copy(f"COPY memories ({columns}, vec) FROM STDIN") as copy:
        for r in records:
            copy.write_row((*r, bucket_id("", ""), vector_literal(unpack(r[11]))))


COLD = textwrap.dedent(
    """
    import json, sys, time
    from autocode.memory import MemoryContext, open_memory
    from autocode.memory.embeddings import StaticEmbedder
    location, query = json.loads(sys.argv[1]), sys.argv[2]
    StaticEmbedder().embed(["load the model before timing"])
    started = time.perf_counter()
    with open_memory(embedding_provider="static", **location) as memory:
        hits = memory.search(MemoryContext(None, None), query).hits
        print(json.dumps({"seconds": time.perf_counter() - started, "hits": len(hits)}))
    """
)

SAVER = textwrap.dedent(
    """
    import json, sys
    from autocode.memory import MemoryContext, open_memory
    location = json.loads(sys.argv[1])
    with open_memory(embedding_provider="static", **location) as memory:
        for line in sys.stdin:
            r = memory.save(MemoryContext(None, None), line.strip())
            print(json.dumps({"saved": r.saved}), flush=True)
    """
)


def part_one(name: str, location: dict[str, Any], count: int, samples: int) -> list[str]:
    lines = []
    load_s = load_team_bucket(location, count)
    lines.append(f"{name}: one team bucket of {count} memories loaded in {load_s:.1f} s")
    queries = [q for q, _ in load_eval().queries]
    arg = json.dumps({k: str(v) for k, v in location.items()})
    colds = []
    for i in range(3):
        out = subprocess.run(
            [sys.executable, "-c", COLD, arg, queries[i]], capture_output=True, text=True, check=True,
            env=_env(),
        )
        colds.append(json.loads(out.stdout)["seconds"])
    with open_memory(embedding_provider="static", **location) as memory:
        memory.search(TEAM, queries[0])  # the first search of this process: loads the model and (SQLite) the bucket

        def one(i: int) -> float:
            started = time.perf_counter()
            memory.search(TEAM, queries[i % len(queries)])
            return time.perf_counter() - started

        warm = [one(i) for i in range(samples)]
        saver = subprocess.Popen(
            [sys.executable, "-c", SAVER, arg], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env()
        )
        assert saver.stdin is not None and saver.stdout is not None
        after = []
        rng = random.Random(5)
        vocab = sorted({t for q in queries for t in rules.terms(q) if t.isalpha()})
        for i in range(max(20, samples // 4)):
            saver.stdin.write(f"Scale note {i}: the {' '.join(rng.sample(vocab, 6))} path was checked\n")
            saver.stdin.flush()
            json.loads(saver.stdout.readline())
            after.append(one(i))
        saver.stdin.close()
        saver.wait(timeout=60)
    warm_p95 = percentile(warm, 0.95)
    after_p95 = percentile(after, 0.95)
    lines.append(
        f"{name}: warm search p50 {statistics.median(warm) * 1000:.1f} ms  p95 {warm_p95 * 1000:.1f} ms"
    )
    lines.append(
        f"{name}: cold search in a new process (open + first search) {', '.join(f'{c * 1000:.0f}' for c in colds)} ms"
        f"  median vs warm p95 {statistics.median(colds) / warm_p95:.1f}x"
    )
    lines.append(
        f"{name}: search right after another process saved p50 {statistics.median(after) * 1000:.1f} ms"
        f"  p95 {after_p95 * 1000:.1f} ms  vs warm p95 {after_p95 / warm_p95:.2f}x (goal <= 2x)"
    )
    return lines


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _worker(role: str, number: int, url: str, seconds: float, queue: Any) -> None:
    from autocode.memory.embeddings import StaticEmbedder

    queries = [q for q, _ in load_eval().queries]
    vocab = sorted({t for _, _, text in load_eval().memories for t in rules.terms(text) if t.isalpha() and len(t) > 3})
    rng = random.Random(number * 1000 + (role == "save"))
    StaticEmbedder().embed(["warm up"])
    times: list[float] = []
    saved: list[str] = []
    with open_memory(embedding_provider="static", database_url=url, memory_max_count=1_000_000) as memory:
        memory.search(TEAM, queries[0])
        deadline = time.monotonic() + seconds
        i = 0
        while time.monotonic() < deadline:
            started = time.perf_counter()
            if role == "search":
                memory.search(TEAM, queries[(i + number) % len(queries)])
            else:
                words = " ".join(rng.sample(vocab, 8))
                r = memory.save(TEAM, f"Team scale fact w{number}n{i}: {words}")
                if r.saved and r.id:
                    saved.append(r.id)
            times.append(time.perf_counter() - started)
            i += 1
    queue.put((role, times, saved))


def part_two(url: str, count: int, procs: int, seconds: float, loaded: bool = False) -> list[str]:
    location = {"database_url": url}
    lines = []
    if not loaded:
        load_s = load_team_bucket(location, count)
        lines.append(f"postgresql: one team bucket of {count} memories loaded in {load_s:.1f} s")
    with open_memory(embedding_provider="none", database_url=url) as memory:
        count = memory.store.count_memories()
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    workers = [
        ctx.Process(target=_worker, args=(role, n, url, seconds, queue))
        for role in ("save", "search")
        for n in range(procs)
    ]
    for w in workers:
        w.start()
    results = [queue.get(timeout=seconds + 600) for _ in workers]
    for w in workers:
        w.join(timeout=60)
    searches = [t for role, times, _ in results if role == "search" for t in times]
    saves = [t for role, times, _ in results if role == "save" for t in times]
    saved_ids = [i for role, _, ids in results if role == "save" for i in ids]
    with open_memory(embedding_provider="none", database_url=url) as memory:
        total = memory.store.count_memories()
        found = {r[0] for r in memory.store.query(
            "SELECT id FROM memories WHERE starts_with(content, 'Team scale fact ')"
        )}
        duplicates = memory.store.query(
            "SELECT count(*) - count(DISTINCT norm_hash) FROM memories WHERE starts_with(content, 'Team scale fact ')"
        )[0][0]
    lost = len(set(saved_ids) - found)
    extra = len(found - set(saved_ids))
    p95 = percentile(searches, 0.95)
    lines.append(
        f"postgresql: {procs} saving + {procs} searching for {seconds:.0f} s: {len(searches)} searches p50 "
        f"{statistics.median(searches) * 1000:.1f} ms p95 {p95 * 1000:.1f} ms (goal {SEARCH_GOAL_P95 * 1000:.0f} ms, "
        f"{p95 / SEARCH_GOAL_P95:.2f}x); {len(saves)} saves p50 {statistics.median(saves) * 1000:.1f} ms "
        f"p95 {percentile(saves, 0.95) * 1000:.1f} ms"
    )
    lines.append(
        f"postgresql: rows {total} = {count} before + {len(found)} saved; lost {lost}, unexpected {extra}, "
        f"duplicated {duplicates}"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--team-count", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--skip-pg", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-memory-scale-") as tmp:
        for line in part_one("sqlite", {"memory_path": Path(tmp) / "scale.sqlite3"}, args.count, args.samples):
            print(line, flush=True)
        if args.skip_pg:
            return 0
        from support.pgserver import PgServer

        server = PgServer()
        server.start()
        try:
            url = server.url(server.create_database())
            for line in part_one("postgresql", {"database_url": url}, args.count, args.samples):
                print(line, flush=True)
            reuse = args.team_count == args.count  # the bucket part 1 loaded (plus its few saves)
            if not reuse:
                url = server.url(server.create_database())
            for line in part_two(url, args.team_count, args.procs, args.seconds, loaded=reuse):
                print(line, flush=True)
        finally:
            server.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
