"""Memory at team scale: one big team bucket, searched warm, cold and right after another process wrote.

Run: python tests/bench/bench_memory_scale.py [--count N] [--team-count N] [--seconds S] [--procs P] [--savers S] [--skip-pg]

Part 1, on SQLite and PostgreSQL: one team bucket of --count memories (with
embeddings). Warm search p95 in one process; the first search of a new
process (cold); and searches that each follow a save by another process
(goal: p95 at most 2x the warm p95 of the same run).

Part 2, PostgreSQL only: --team-count memories in one team bucket, --procs
processes saving (--savers, when given) and --procs searching for --seconds: search p95 (goal
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


def generate_team_bucket(url: str, count: int) -> float:
    """`count` team global memories made by PostgreSQL itself (generate_series), for the million-row run.

    Each row is one of the 200 evaluation memories plus three words of their vocabulary and a
    number, as `contents` makes them, with terms as rules.terms gives them; its vector is the
    normalised sum of the memory's and the three words' static-model vectors (the `embedding`
    column keeps the memory's own bytes: only the save path reads it, for rows saved meanwhile).
    The postings, term statistics and indexes are then built in bulk, the way the statement
    triggers would have built them row by row.
    """
    import psycopg

    from autocode.memory.pg_store import PostgresStore, vector_literal

    started = time.perf_counter()
    data = load_eval()
    bases = [m[2] for m in data.memories]
    vocab = sorted({t for b in bases for t in rules.terms(b) if t.isalpha() and len(t) > 3})
    embedder = StaticEmbedder()
    base_vectors = embedder.embed(bases)
    word_vectors = embedder.embed(vocab)
    with open_memory(embedding_provider="none", database_url=url) as memory:
        store: Any = memory.store
        assert isinstance(store, PostgresStore) and store.has_vector
        indexes = store.model_indexes(StaticEmbedder.model, 64)
    tag = bucket_id("", "")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        conn.execute("CREATE TEMP TABLE gen_base (n INT, content TEXT, terms TEXT, emb BYTEA, vec vector(64))")
        conn.execute("CREATE TEMP TABLE gen_word (n INT, word TEXT, vec vector(64))")
        with conn.cursor().copy("COPY gen_base FROM STDIN") as copy:
            for n, (text, vector) in enumerate(zip(bases, base_vectors, strict=True)):
                copy.write_row((n, text, " ".join(rules.terms(text)), pack(vector), vector_literal(vector)))
        with conn.cursor().copy("COPY gen_word FROM STDIN") as copy:
            for n, (word, vector) in enumerate(zip(vocab, word_vectors, strict=True)):
                copy.write_row((n, word, vector_literal([x * 0.3 for x in vector])))
        first = int(conn.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()[0]) + 1
        conn.execute("ALTER TABLE memories DISABLE TRIGGER memories_index_added")
        conn.execute("ALTER TABLE memory_terms DROP CONSTRAINT memory_terms_pkey")
        for name in indexes:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
        words, nb = len(vocab), len(bases)
        step = 200_000
        for low in range(0, count, step):
            high = min(low + step, count) - 1
            conn.execute(
                f"""INSERT INTO memories (id, content, norm_hash, terms, category, scope, repo_key, owner,
                    created_at, updated_at, run_id, embedding, embedding_model, bucket, vec)
                SELECT 'mem_' || lpad(to_hex(i), 12, '0'), c.content, encode(sha256(convert_to(c.content, 'UTF8')), 'hex'),
                    b.terms || ' ' || w1.word || ' ' || w2.word || ' ' || w3.word || ' seen area ' || i,
                    NULL, 'global', '', '', c.stamp, c.stamp, NULL, b.emb, %(model)s, %(bucket)s,
                    l2_normalize(b.vec + w1.vec + w2.vec + w3.vec)
                FROM generate_series(%(low)s::bigint, %(high)s::bigint) AS i
                JOIN gen_base b ON b.n = (i * 7919) %% {nb}
                JOIN gen_word w1 ON w1.n = (i * 104729) %% {words}
                JOIN gen_word w2 ON w2.n = (i * 15485863 + 1) %% {words}
                JOIN gen_word w3 ON w3.n = (i * 32452843 + 2) %% {words}
                CROSS JOIN LATERAL (SELECT b.content || '; seen in the ' || w1.word || ' ' || w2.word || ' ' || w3.word
                                       || ' area (' || i || ')' AS content,
                                    to_char(timestamp '2026-01-01' + i * interval '1 second',
                                            'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS stamp) c""",
                {"model": StaticEmbedder.model, "bucket": tag, "low": low, "high": high},
            )
            print(f"  generated {high + 1} rows, {time.perf_counter() - started:.0f} s", flush=True)
        conn.execute("ALTER TABLE memories ENABLE TRIGGER memories_index_added")
        conn.execute(
            """INSERT INTO memory_terms (bucket, term, seq, tf, dl)
            SELECT m.bucket, t.term, m.seq, count(*), min(cardinality(string_to_array(m.terms, ' ')))
            FROM memories m CROSS JOIN LATERAL unnest(string_to_array(m.terms, ' ')) AS t(term)
            WHERE m.seq >= %(first)s GROUP BY m.bucket, t.term, m.seq""",
            {"first": first},
        )
        print(f"  postings written, {time.perf_counter() - started:.0f} s", flush=True)
        conn.execute("ALTER TABLE memory_terms ADD PRIMARY KEY (bucket, term, seq) INCLUDE (tf, dl)")
        conn.execute(
            """INSERT INTO memory_term_df AS d (term, bucket, df)
            SELECT term, bucket, count(*) FROM memory_terms p WHERE p.seq >= %(first)s GROUP BY term, bucket
            ON CONFLICT (term, bucket) DO UPDATE SET df = d.df + EXCLUDED.df""",
            {"first": first},
        )
        conn.execute(
            """INSERT INTO memory_buckets AS b (bucket, rows, tokens)
            SELECT bucket, count(*), sum(cardinality(string_to_array(terms, ' '))) FROM memories
            WHERE seq >= %(first)s GROUP BY bucket
            ON CONFLICT (bucket) DO UPDATE SET rows = b.rows + EXCLUDED.rows, tokens = b.tokens + EXCLUDED.tokens""",
            {"first": first},
        )
        print(f"  postings indexed, term statistics kept, {time.perf_counter() - started:.0f} s", flush=True)
        for name, body in indexes.items():
            conn.execute(f"CREATE INDEX {name} ON memories {body}")
            print(f"  {name} built, {time.perf_counter() - started:.0f} s", flush=True)
        conn.execute("VACUUM ANALYZE memories")
        conn.execute("VACUUM ANALYZE memory_terms")
        conn.execute("ANALYZE memory_term_df")
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


def _worker(role: str, number: int, url: str, seconds: float, queue: Any, run: str = "") -> None:
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
                r = memory.save(TEAM, f"Team scale fact {run}w{number}n{i}: {words}")
                if r.saved and r.id:
                    saved.append(r.id)
            times.append(time.perf_counter() - started)
            i += 1
    queue.put((role, times, saved))


def _load() -> str:
    """The 1-, 5- and 15-minute load averages (the machine is shared: every figure goes with one)."""
    import os

    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def warm_searches(url: str, samples: int) -> list[float]:
    """Search times of one warm process on the team bucket (the anchor of the concurrent run)."""
    queries = [q for q, _ in load_eval().queries]
    with open_memory(embedding_provider="static", database_url=url) as memory:
        memory.search(TEAM, queries[0])
        times = []
        for i in range(samples):
            started = time.perf_counter()
            memory.search(TEAM, queries[i % len(queries)])
            times.append(time.perf_counter() - started)
    return times


def part_two(
    url: str, count: int, procs: int, seconds: float, loaded: bool = False, samples: int = 100, savers: int | None = None
) -> list[str]:
    savers = procs if savers is None else savers
    lines = []
    if not loaded:
        load_s = generate_team_bucket(url, count)
        lines.append(f"postgresql: one team bucket of {count} memories generated and indexed in {load_s:.1f} s")
    warm = warm_searches(url, samples)
    warm_p95 = percentile(warm, 0.95)
    lines.append(
        f"postgresql: warm single-process search before the concurrent run: p50 {statistics.median(warm) * 1000:.1f} ms"
        f"  p95 {warm_p95 * 1000:.1f} ms ({_load()})"
    )
    with open_memory(embedding_provider="none", database_url=url) as memory:
        count = memory.store.count_memories()
        before = int(memory.store.query("SELECT coalesce(max(seq), 0) FROM memories")[0][0])
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    workers = [
        ctx.Process(target=_worker, args=(role, n, url, seconds, queue, f"r{int(time.time())}"))
        for role, many in (("save", savers), ("search", procs))
        for n in range(many)
    ]
    load_before = _load()
    for w in workers:
        w.start()
    results = [queue.get(timeout=seconds + 600) for _ in workers]
    load_after = _load()
    for w in workers:
        w.join(timeout=60)
    searches = [t for role, times, _ in results if role == "search" for t in times]
    saves = [t for role, times, _ in results if role == "save" for t in times]
    saved_ids = [i for role, _, ids in results if role == "save" for i in ids]
    with open_memory(embedding_provider="none", database_url=url) as memory:
        total = memory.store.count_memories()
        found = {r[0] for r in memory.store.query("SELECT id FROM memories WHERE seq > ?", (before,))}
        duplicates = memory.store.query(
            "SELECT count(*) - count(DISTINCT norm_hash) FROM memories WHERE seq > ?", (before,)
        )[0][0]
    lost = len(set(saved_ids) - found)
    extra = len(found - set(saved_ids))
    p95 = percentile(searches, 0.95)
    lines.append(
        f"postgresql: {savers} saving + {procs} searching for {seconds:.0f} s: {len(searches)} searches p50 "
        f"{statistics.median(searches) * 1000:.1f} ms p95 {p95 * 1000:.1f} ms (goal {SEARCH_GOAL_P95 * 1000:.0f} ms, "
        f"{p95 / SEARCH_GOAL_P95:.2f}x); "
        + (
            f"{len(saves)} saves ({len(saves) / seconds:.1f}/s) p50 {statistics.median(saves) * 1000:.1f} ms "
            f"p95 {percentile(saves, 0.95) * 1000:.1f} ms" if saves else "no saves"
        )
    )
    lines.append(
        f"postgresql: concurrent search p95 vs the warm single-process p95 of this run {p95 / warm_p95:.2f}x; "
        f"{load_before} at the start, {load_after} at the end"
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
    parser.add_argument("--savers", type=int, help="processes saving in part 2 (default: --procs; 0 measures the searches alone)")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--skip-pg", action="store_true")
    parser.add_argument("--team-only", action="store_true", help="only part 2 (PostgreSQL, concurrent)")
    parser.add_argument("--url", help="part 2 on this database (its team bucket already filled) instead of a new server")
    args = parser.parse_args()
    if args.url:
        for line in part_two(args.url, args.team_count, args.procs, args.seconds, True, args.samples, args.savers):
            print(line, flush=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-memory-scale-") as tmp:
        for line in [] if args.team_only else part_one("sqlite", {"memory_path": Path(tmp) / "scale.sqlite3"}, args.count, args.samples):
            print(line, flush=True)
        if args.skip_pg:
            return 0
        print(_load(), flush=True)
        from support.pgserver import PgServer

        server = PgServer()
        # A million memories' postings and vectors are a few GB: the default 128 MB of shared
        # buffers would turn every save's index writes into reads from the operating system.
        server.start({"shared_buffers": "1GB", "max_connections": "200"})
        try:
            url = server.url(server.create_database())
            for line in [] if args.team_only else part_one("postgresql", {"database_url": url}, args.count, args.samples):
                print(line, flush=True)
            reuse = args.team_count == args.count and not args.team_only  # the bucket part 1 loaded (plus its few saves)
            if not reuse:
                url = server.url(server.create_database())
            for line in part_two(url, args.team_count, args.procs, args.seconds, reuse, args.samples, args.savers):
                print(line, flush=True)
        finally:
            server.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
