"""Ranking visible memories for a query: BM25 over their terms and cosine over their embeddings.

Both are computed in this process over per-bucket pools, so SQLite and
PostgreSQL rank identically. A pool (ids, term postings, an embedding matrix)
is cached per bucket and rebuilt only when the store's generation changes,
i.e. after any committed write from any process. numpy (from the `semantic`
extra) does the vector arithmetic when installed; plain Python otherwise.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autocode.memory.embeddings import dot, unpack
from autocode.memory.store import Store


@functools.lru_cache(maxsize=1)
def _numpy() -> Any:
    """numpy when installed (the semantic extra brings it), else None; imported on first ranking."""
    try:
        import numpy
    except ImportError:  # pragma: no cover - exercised only without the extra
        return None
    return numpy

K1 = 1.2
B = 0.75
CACHE_BUCKETS = 256


@dataclass
class Pool:
    """One bucket's memories, ready to score."""

    ids: list[str]
    seqs: list[int]
    created: list[str]
    lengths: list[int]
    postings: dict[str, list[tuple[int, int]]]
    vectors: Any = None
    """numpy matrix (rows x dims) or a list of arrays; rows without an embedding are zero."""
    missing: list[int] = field(default_factory=list)
    _arrays: dict[str, Any] = field(default_factory=dict)
    _lengths: Any = None

    def term_arrays(self, np: Any, term: str) -> Any:
        """(rows, tf) of a term as numpy arrays, made on first use and kept with the pool."""
        if term not in self._arrays:
            found = self.postings.get(term)
            self._arrays[term] = (
                None
                if not found
                else (np.fromiter((r for r, _ in found), dtype=np.int64), np.fromiter((t for _, t in found), dtype=np.float64))
            )
        return self._arrays[term]

    def length_array(self, np: Any) -> Any:
        if self._lengths is None:
            self._lengths = np.asarray(self.lengths, dtype=np.float64)
        return self._lengths


def _build(rows: Sequence[tuple[Any, ...]], model: str | None) -> Pool:
    ids, seqs, created, lengths = [], [], [], []
    postings: dict[str, list[tuple[int, int]]] = {}
    blobs: list[bytes | None] = []
    missing = []
    for index, (seq, memory_id, terms, blob, row_model, created_at) in enumerate(rows):
        ids.append(memory_id)
        seqs.append(int(seq))
        created.append(created_at)
        words = terms.split()
        lengths.append(len(words))
        for term, tf in Counter(words).items():
            postings.setdefault(term, []).append((index, tf))
        ok = model is not None and blob is not None and row_model == model
        blobs.append(bytes(blob) if ok else None)
        if model is not None and not ok:
            missing.append(index)
    pool = Pool(ids, seqs, created, lengths, postings, missing=missing)
    if model is not None:
        pool.vectors = _matrix(blobs)
    return pool


def _matrix(blobs: list[bytes | None]) -> Any:
    if not blobs:  # an empty bucket: nothing to compare, no numpy to import
        return None
    np = _numpy()
    dims = next((len(b) // 4 for b in blobs if b), 0)
    if np is not None:
        matrix = np.zeros((len(blobs), dims), dtype=np.float32)
        for i, blob in enumerate(blobs):
            if blob and len(blob) // 4 == dims:
                matrix[i] = np.frombuffer(blob, dtype=np.float32)
        return matrix
    return [unpack(b) if b and len(b) // 4 == dims else None for b in blobs]


class PoolCache:
    """Bucket pools keyed by (owner, repo_key, model), valid for one store generation."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._pools: OrderedDict[tuple[str, str, str | None], tuple[int, Pool]] = OrderedDict()
        self._lock = threading.Lock()

    def pools(
        self,
        buckets: Sequence[tuple[str, str]],
        model: str | None,
        backfill: Callable[[list[str]], bool] | None = None,
    ) -> list[Pool]:
        """The pools of `buckets`; `backfill(ids)` may embed rows that lack a `model` embedding."""
        generation = self.store.generation()
        out = []
        for owner, repo_key in buckets:
            key = (owner, repo_key, model)
            with self._lock:
                cached = self._pools.get(key)
            if cached is not None and cached[0] == generation and generation >= 0:
                with self._lock:
                    self._pools.move_to_end(key)
                out.append(cached[1])
                continue
            pool = _build(self.store.bucket_rows(owner, repo_key), model)
            if pool.missing and backfill is not None and backfill([pool.ids[i] for i in pool.missing]):
                generation = self.store.generation()
                pool = _build(self.store.bucket_rows(owner, repo_key), model)
            with self._lock:
                self._pools[key] = (generation, pool)
                self._pools.move_to_end(key)
                while len(self._pools) > CACHE_BUCKETS:
                    self._pools.popitem(last=False)
            out.append(pool)
        return out


@dataclass(frozen=True)
class Scored:
    id: str
    seq: int
    score: float


def bm25(pools: Sequence[Pool], query_terms: set[str]) -> list[Any]:
    """BM25 per row of each pool, with collection statistics over all the pools together."""
    np = _numpy()
    count = sum(len(p.ids) for p in pools)
    total = sum(sum(p.lengths) for p in pools)
    average = (total / count) if count else 1.0
    out: list[Any] = []
    df = {t: sum(len(p.postings.get(t, ())) for p in pools) for t in query_terms}
    idf = {t: math.log(1 + (count - n + 0.5) / (n + 0.5)) for t, n in df.items() if n}
    for pool in pools:
        if np is not None:
            scores = np.zeros(len(pool.ids), dtype=np.float64)
            norm = K1 * (1 - B + B * pool.length_array(np) / (average or 1.0))
            for term, weight in idf.items():
                arrays = pool.term_arrays(np, term)
                if arrays is not None:
                    rows, tf = arrays
                    scores[rows] += weight * tf * (K1 + 1) / (tf + norm[rows])
            out.append(scores)
            continue
        scores = [0.0] * len(pool.ids)
        for term, weight in idf.items():
            for row, tf in pool.postings.get(term, ()):
                norm = K1 * (1 - B + B * pool.lengths[row] / (average or 1.0))
                scores[row] += weight * tf * (K1 + 1) / (tf + norm)
        out.append(scores)
    return out


def cosines(pool: Pool, vector: Sequence[float]) -> Any:
    np = _numpy()
    if pool.vectors is None:
        return None
    if np is not None:
        if pool.vectors.shape[1] != len(vector):
            return np.zeros(len(pool.ids), dtype=np.float64)
        return pool.vectors @ np.asarray(vector, dtype=np.float32)
    return [dot(vector, v) if v is not None else 0.0 for v in pool.vectors]


def rank(
    pools: Sequence[Pool],
    query_terms: set[str],
    vector: Sequence[float] | None,
    mode: str,
    limit: int,
    keyword_weight: float,
    floor: float | None,
) -> list[Scored]:
    """Top `limit` rows by `mode`: 'keyword' (BM25), 'recent' (keyword matches, newest first),
    'semantic' (cosine) or 'hybrid' (both, BM25 scaled to 0..1)."""
    np = _numpy()
    keyword = bm25(pools, query_terms)
    best = max((float(max(k)) for k in keyword if len(k)), default=0.0) or 1.0
    if mode == "recent":
        matches = [
            (pool.created[row], pool.seqs[row], pool.ids[row], float(kw[row]))
            for pool, kw in zip(pools, keyword, strict=True)
            for row in (range(len(pool.ids)) if np is None else np.nonzero(kw > 0)[0].tolist())
            if kw[row] > 0
        ]
        matches.sort(reverse=True)
        return [Scored(memory_id, seq, score) for _created, seq, memory_id, score in matches[:limit]]
    found: list[Scored] = []
    for pool, kw in zip(pools, keyword, strict=True):
        cos = cosines(pool, vector) if vector is not None and mode != "keyword" else None
        if np is not None:
            found += _top_numpy(pool, kw, cos, mode, limit, keyword_weight, floor, best)
            continue
        for row, memory_id in enumerate(pool.ids):
            k = float(kw[row])
            c = float(cos[row]) if cos is not None else 0.0
            if mode == "keyword":
                if k <= 0:
                    continue
                score = k
            else:
                if floor is not None and k <= 0 and c < floor:
                    continue
                score = c if mode == "semantic" else (1 - keyword_weight) * c + keyword_weight * k / best
            found.append(Scored(memory_id, pool.seqs[row], score))
    found.sort(key=lambda s: (-s.score, -s.seq))
    return found[:limit]


def _top_numpy(
    pool: Pool, kw: Any, cos: Any, mode: str, limit: int, weight: float, floor: float | None, best: float
) -> list[Scored]:
    np = _numpy()
    c = np.asarray(cos, dtype=np.float64) if cos is not None else np.zeros(len(pool.ids))
    if mode == "keyword":
        score, keep = kw, kw > 0
    else:
        score = c if mode == "semantic" else (1 - weight) * c + weight * kw / best
        keep = np.ones(len(pool.ids), dtype=bool) if floor is None else (kw > 0) | (c >= floor)
    rows = np.nonzero(keep)[0]
    if not len(rows):
        return []
    seqs = np.asarray(pool.seqs, dtype=np.int64)[rows]
    order = np.lexsort((-seqs, -score[rows]))[:limit]
    return [Scored(pool.ids[int(rows[i])], int(seqs[i]), float(score[rows[i]])) for i in order]
