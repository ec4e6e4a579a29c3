"""The ranking rule both stores apply, and SQLite's in-process vector cache.

Keyword relevance is BM25 (bounded by `WINDOW`, see there) with SQLite FTS5's formula (k1 1.2, b 0.75, IDF
log((N - n + 0.5) / (n + 0.5)) floored at 1e-6): N rows and the average
length over the whole store, the document frequency n inside the row's
bucket (the full-text index holds bucket-prefixed terms). SQLite computes
FTS5's `bm25()` sum from FTS5's statistics and each row's length and term
counts (`RowTerms`, `window_scores`); PostgreSQL computes the same sum in
SQL from its postings and term statistics tables. Meaning is the cosine of
unit-length embeddings.

A hybrid or semantic search scores the union of the best `CANDIDATES` rows by
keywords and the best `CANDIDATES` rows by meaning:
hybrid = (1 - w) * cosine + w * BM25 / best BM25 of the query; semantic =
cosine. With a floor, a row is kept only when it shares a term with the query
or its cosine reaches the floor. Ties go to the newer row (higher sequence).

SQLite keeps each searched bucket's vectors in a matrix in the process, with
the length and repeated terms of the rows its searches met and the term
windows searched lately, and brings them up to date from the store's change
log (rows added or removed since the last change it saw), so a teammate's
write costs one row, not a rebuild.

Kept whole: the one ranking rule both stores follow (the bounded keyword
window, meaning, the hybrid fusion) and the in-process caches SQLite keeps
current from the change log; the cross-store test relies on there being one
definition of each.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autocode.memory.embeddings import dot, unpack

MODES: tuple[str, ...] = ("keyword", "recent", "semantic", "hybrid")
K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
CANDIDATES = 100
"""Rows taken by keywords and by meaning before the hybrid rule picks the best."""
WINDOW = 750
"""Per query term and bucket, the rows holding the term that keyword ranking reads: the
WINDOW rows that hold it most strongly (highest `impact`, the newer first on ties).

A term in at most this many rows of a bucket counts in all of them; a term in more
counts only in the rows where it weighs most, so a search reads at most WINDOW
postings per term however large the bucket grows, and the rows it drops are those
the term would have ranked last. Both stores apply the same window. (Until schema 6
the window was a term's newest 1,000 rows: among 100,000 other memories that cost recall@8
0.83 -> 0.75, as tests/bench/bench_memory_recall.py measures. By impact, 750 rows rank those
100,000 as no window does, and a search reads a quarter fewer postings than with 1,000;
docs/memory.md and docs/performance.md give the figures.)"""
IMPACT_LENGTH = 16.0
"""The row length (in terms) `impact` takes as average: a constant, so that a posting's
impact never changes and an index can keep each term's postings in its order."""
_IMPACT_PLUS = K1 * (1 - B)
_IMPACT_PER_TERM = K1 * B / IMPACT_LENGTH


def impact(tf: int, length: int) -> float:
    """How strongly a row of `length` terms holding a term `tf` times holds it: BM25's share of one
    term without the IDF, against IMPACT_LENGTH instead of the store's average length. It orders
    a term's rows for its keyword window; scores use the real average. numpy arrays of tf and
    length give an array of the same floats, and PostgreSQL's index too (`impact_sql`)."""
    return tf / (tf + _IMPACT_PLUS + _IMPACT_PER_TERM * length)


def impact_sql(alias: str = "") -> str:
    """`impact` over a postings row's `tf` and `dl` (columns of `alias`, e.g. "p."), in PostgreSQL,
    in the same operations and order."""
    tf, dl = f"{alias}tf", f"{alias}dl"
    return f"({tf}::float8 / ({tf} + {_IMPACT_PLUS!r}::float8 + {_IMPACT_PER_TERM!r}::float8 * {dl}))"


@functools.lru_cache(maxsize=1)
def _numpy() -> Any:
    """numpy when installed (the semantic extra brings it), else None; imported on first use."""
    from autocode.memory.static_lean import import_numpy  # with its BLAS on one thread (see there)

    return import_numpy()


NUMPY_ROWS = 1000
"""A bucket of fewer rows compares in plain Python unless numpy is loaded already:
importing numpy (about 0.1 s and 20 MB) costs more than such a bucket's sums.
A bucket that grows to this many rows moves to numpy."""


def _numpy_for(rows: int) -> Any:
    """numpy for a bucket of `rows` rows, or None to use plain Python lists."""
    if rows < NUMPY_ROWS and "numpy" not in sys.modules:
        return None
    return _numpy()


def idf(rows: float, having: float) -> float:
    """FTS5's inverse document frequency, floored so very common terms still count a little."""
    value = math.log((rows - having + 0.5) / (having + 0.5))
    return value if value > 0 else IDF_FLOOR


def bm25_row(words: Sequence[str], length: int, average: float, weights: dict[str, float]) -> float:
    """One row's BM25 (FTS5's sum) given its terms, its token count and each query term's IDF."""
    score = 0.0
    for term, weight in weights.items():
        tf = sum(1 for w in words if w == term)
        if tf:
            score += weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
    return score


def combine(
    rows: Iterable[tuple[str, int, float, float]],
    best: float,
    mode: str,
    limit: int,
    keyword_weight: float,
    floor: float | None,
) -> list[tuple[str, int, float]]:
    """(id, seq, score) of the top `limit` candidates (id, seq, bm25, cosine) by the hybrid or semantic rule."""
    best = best if best > 0 else 1.0
    out = []
    for memory_id, seq, kw, cos in rows:
        if floor is not None and kw <= 0 and cos < floor:
            continue
        score = cos if mode == "semantic" else (1 - keyword_weight) * cos + keyword_weight * kw / best
        out.append((memory_id, seq, score))
    out.sort(key=lambda r: (-r[2], -r[1]))
    return out[:limit]


@dataclass
class BucketVectors:
    """One bucket's embeddings of one model: rows [0, size) of `matrix` are live, `seqs` names them."""

    dims: int = 0
    size: int = 0
    matrix: Any = None
    seqs: list[int] = field(default_factory=list)
    rows: dict[int, int] = field(default_factory=dict)
    missing: set[int] = field(default_factory=set)
    """Sequence numbers of rows with no embedding of this model (cosine 0 until backfilled)."""
    np: Any = None
    """numpy when this bucket's rows are a numpy matrix; None while they are Python lists."""
    _seq_array: Any = None

    def load(self, rows: Sequence[tuple[Any, ...]], model: str) -> None:
        """Fill an empty bucket from (seq, embedding, embedding_model) rows in one pass."""
        self._seq_array = None
        if not rows:  # an empty bucket has nothing to compare: numpy (about 20 MB and 0.1 s) waits for rows
            return
        np = self.np = _numpy_for(len(rows))
        if np is None:
            for seq, blob, row_model in rows:
                self.put(int(seq), blob, row_model == model)
            return
        self.dims = next((len(b) // 4 for _, b, m in rows if m == model and b), 0)
        width = self.dims * 4
        self.seqs = [int(r[0]) for r in rows]
        self.rows = {seq: i for i, seq in enumerate(self.seqs)}
        self.size = len(rows)
        good = [i for i, (_, b, m) in enumerate(rows) if m == model and b and len(b) == width]
        self.missing = set(self.seqs) - {self.seqs[i] for i in good}
        self.matrix = np.zeros((max(self.size * 5 // 4, 64), self.dims), dtype=np.float32)
        if good and self.dims:
            joined = b"".join(bytes(rows[i][1]) for i in good)
            self.matrix[np.asarray(good, dtype=np.int64)] = np.frombuffer(joined, dtype=np.float32).reshape(-1, self.dims)

    def put(self, seq: int, blob: bytes | None, ok: bool) -> None:
        self._seq_array = None
        if self.np is None and seq not in self.rows and self.size + 1 >= NUMPY_ROWS:
            self._to_numpy()
        vector = bytes(blob) if ok and blob else None
        if vector is not None and self.dims == 0:
            self.dims = len(vector) // 4
        if vector is not None and len(vector) // 4 != self.dims:
            vector = None
        if vector is None:
            self.missing.add(seq)
        else:
            self.missing.discard(seq)
        row = self.rows.get(seq)
        if row is None:
            row = self.size
            self._grow(row + 1)
            self.rows[seq] = row
            self.seqs.append(seq)
            self.size += 1
        self._set(row, vector)

    def remove(self, seq: int) -> None:
        self._seq_array = None
        row = self.rows.pop(seq, None)
        self.missing.discard(seq)
        if row is None:
            return
        last = self.size - 1
        if row != last:
            moved = self.seqs[last]
            self.seqs[row] = moved
            self.rows[moved] = row
            self.matrix[row] = self.matrix[last]
        self.seqs.pop()
        self.size = last

    def _to_numpy(self) -> None:
        """Move the rows from Python lists into a numpy matrix (the bucket grew past NUMPY_ROWS)."""
        np = _numpy()
        if np is None:
            return
        rows = self.matrix[: self.size] if self.matrix is not None else []
        matrix = np.zeros((max(self.size * 2, 64), self.dims), dtype=np.float32)
        for i, vector in enumerate(rows):
            if vector is not None and self.dims:
                matrix[i] = vector
        self.matrix, self.np = matrix, np

    def _grow(self, need: int) -> None:
        np = self.np
        if np is None:
            if self.matrix is None:
                self.matrix = []
            while len(self.matrix) < need:
                self.matrix.append(None)
            return
        if self.dims == 0:
            if self.matrix is None or len(self.matrix) < need:
                self.matrix = np.zeros((max(need * 2, 64), 0), dtype=np.float32)
            return
        if self.matrix is None or self.matrix.shape[1] != self.dims:
            # The first embedding of this bucket: every earlier row was missing (zero).
            self.matrix = np.zeros((max(need * 2, 64), self.dims), dtype=np.float32)
        elif len(self.matrix) < need:
            bigger = np.zeros((max(need, len(self.matrix) * 2), self.dims), dtype=np.float32)
            bigger[: len(self.matrix)] = self.matrix
            self.matrix = bigger

    def _set(self, row: int, vector: bytes | None) -> None:
        np = self.np
        if np is None:
            self.matrix[row] = unpack(vector) if vector is not None else None
            return
        if vector is None:
            if self.matrix.shape[1]:
                self.matrix[row] = 0.0
            return
        self._grow(row + 1)
        self.matrix[row] = np.frombuffer(vector, dtype=np.float32)

    def cosines(self, vector: Sequence[float]) -> Any:
        """The cosine of every live row with `vector` (0 for rows without an embedding)."""
        np = self.np
        if np is None:
            return [dot(vector, v) if v is not None else 0.0 for v in self.matrix[: self.size]]
        if self.dims != len(vector) or self.size == 0:
            return np.zeros(self.size, dtype=np.float64)
        return (self.matrix[: self.size] @ np.asarray(vector, dtype=np.float32)).astype(np.float64)

    def cosine_of(self, seq: int, vector: Sequence[float]) -> float:
        row = self.rows.get(seq)
        if row is None or seq in self.missing or self.dims != len(vector):
            return 0.0
        values = self.matrix[row]
        return float(dot(vector, values.tolist() if hasattr(values, "tolist") else values))

    def nearest(self, vector: Sequence[float], count: int) -> list[tuple[int, float]]:
        """(seq, cosine) of the `count` closest rows, closest first, newer first on ties."""
        if self.size == 0:
            return []
        np = self.np
        scores = self.cosines(vector)
        if np is None:
            order = sorted(range(self.size), key=lambda r: (-scores[r], -self.seqs[r]))[:count]
            return [(self.seqs[r], float(scores[r])) for r in order]
        if self._seq_array is None:
            self._seq_array = np.asarray(self.seqs, dtype=np.int64)
        seqs = self._seq_array
        if self.size > count:
            # Every row scoring at least the count-th best (ties included) is kept, then ordered exactly.
            cut = np.partition(scores, self.size - count)[self.size - count]
            keep = np.nonzero(scores >= cut)[0]
        else:
            keep = np.arange(self.size)
        order = keep[np.lexsort((-seqs[keep], -scores[keep]))][:count]
        return [(int(seqs[r]), float(scores[r])) for r in order]


class RowTerms:
    """Keyword statistics of the rows keyword ranking has met: each row's token count and the terms it
    holds more than once, by sequence number (a row's terms never change).

    Filled on demand: the rows of a window not known yet are read once (one query for all of them);
    later windows holding them are scored without reading any row. Rows added through the change
    log are learnt from the row the cache reads anyway, removed rows are dropped. A row in a term's
    window holds the term once unless `repeats` says otherwise.
    """

    def __init__(self) -> None:
        self.lengths: dict[int, int] = {}
        self.repeats: dict[str, dict[int, int]] = {}
        """term -> {seq: how many times} for the known rows holding the term more than once."""
        self._repeated: dict[int, list[str]] = {}
        self.read = 0
        """Rows read so far to learn them (a test checks a warm search reads none)."""

    def learn(self, fetch: Fetch, windows: Iterable[Sequence[int]]) -> set[int]:
        """Read the rows of the windows not known yet; the seqs of rows that do not exist come back."""
        unknown: set[int] = set()
        for seqs in windows:
            unknown.update(itertools.filterfalse(self.lengths.__contains__, seqs))  # no Python frame per row
        missing = sorted(unknown)
        for start in range(0, len(missing), 900):
            chunk = missing[start : start + 900]
            self.load(fetch(f"SELECT seq, terms FROM memories WHERE seq IN ({', '.join('?' * len(chunk))})", chunk))
            self.read += len(chunk)
        return {s for s in missing if s not in self.lengths} if missing else set()

    def load(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Learn rows whose first item is the seq and last the terms (inlined: thousands in a cold search)."""
        lengths, repeats, repeated = self.lengths, self.repeats, self._repeated
        for row in rows:
            seq, words = int(row[0]), row[-1].split()
            if seq in lengths:
                self.remove(seq)
            count = len(words)
            lengths[seq] = count
            if count != len(set(words)):
                seen: set[str] = set()
                twice = {w for w in words if w in seen or seen.add(w)}  # type: ignore[func-returns-value]
                repeated[seq] = list(twice)
                for word in twice:
                    repeats.setdefault(word, {})[seq] = words.count(word)

    def remove(self, seq: int) -> None:
        self.lengths.pop(seq, None)
        for word in self._repeated.pop(seq, ()):
            found = self.repeats.get(word)
            if found is not None:
                found.pop(seq, None)
                if not found:
                    del self.repeats[word]


def window_scores(
    windows: Sequence[tuple[Sequence[int], float, dict[int, int], dict[int, int]]],
    average: float,
    depth: int,
) -> list[tuple[int, float]]:
    """(seq, BM25) of the best `depth` rows of keyword windows, best first, newer first on ties.

    Each window is (its rows' seqs, the term's IDF, the rows' token counts, tf of the rows holding the
    term more than once); a row's score is the sum of its shares in window order, so numpy and plain
    Python give the same floats.
    """
    rows = sum(len(w[0]) for w in windows)
    np = _numpy_for(rows)
    k1, b = K1, B
    if np is None:
        scores: dict[int, float] = {}
        for seqs, weight, lengths, repeats in windows:
            for seq in seqs:
                tf = repeats.get(seq, 1)
                share = weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[seq] / average))
                scores[seq] = scores.get(seq, 0.0) + share
        ranked = sorted(scores.items(), key=lambda r: (-r[1], -r[0]))
        return ranked[:depth]
    all_seqs = []
    shares = []
    for seqs, weight, lengths, repeats in windows:
        seq_array = np.fromiter(seqs, dtype=np.int64, count=len(seqs))
        # map() over the dict's own lookup: no Python frame per row.
        length = np.fromiter(map(lengths.__getitem__, seqs), dtype=np.float64, count=len(seqs))
        tf = np.ones(len(seqs), dtype=np.float64)
        if repeats:
            if len(repeats) < len(seqs):
                # The repeated rows placed by binary search (seqs come sorted, oldest first).
                repeated = np.fromiter(repeats.keys(), dtype=np.int64, count=len(repeats))
                counts = np.fromiter(repeats.values(), dtype=np.float64, count=len(repeats))
                if len(seq_array) > 1 and bool(np.all(seq_array[1:] > seq_array[:-1])):
                    at = np.minimum(np.searchsorted(seq_array, repeated), len(seq_array) - 1)
                    hit = seq_array[at] == repeated
                    tf[at[hit]] = counts[hit]
                else:
                    tf = np.fromiter((repeats.get(s, 1) for s in seqs), dtype=np.float64, count=len(seqs))
            else:
                tf = np.fromiter((repeats.get(s, 1) for s in seqs), dtype=np.float64, count=len(seqs))
        # The same operations in the same order as the plain-Python branch (and as before).
        shares.append(weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average)))
        all_seqs.append(seq_array)
    if not all_seqs:
        return []
    unique, where = np.unique(np.concatenate(all_seqs), return_inverse=True)
    # bincount adds each row's shares one by one in window order, starting from 0.0.
    totals = np.bincount(where, weights=np.concatenate(shares), minlength=len(unique))
    if len(unique) > depth:
        cut = np.partition(totals, len(unique) - depth)[len(unique) - depth]
        keep = np.nonzero(totals >= cut)[0]
    else:
        keep = np.arange(len(unique))
    order = keep[np.lexsort((-unique[keep], -totals[keep]))][:depth]
    return [(int(unique[i]), float(totals[i])) for i in order]


Fetch = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def _strength(term: str, seq: int, known: RowTerms) -> tuple[float, int]:
    """A known row's place in `term`'s window order: higher impact first, then the newer."""
    return impact(known.repeats.get(term, {}).get(seq, 1), known.lengths[seq]), seq


def strongest(term: str, seqs: Sequence[int], known: RowTerms) -> list[int]:
    """The WINDOW rows of `seqs` (known rows holding `term`) that hold it most strongly, oldest first.

    The first search of a common term in a process ranks every row holding it: `impact` over numpy
    arrays gives the same floats, some 10x faster than a key function per row."""
    np = _numpy_for(len(seqs))
    if np is None:
        ranked = sorted(seqs, key=lambda seq: _strength(term, seq, known), reverse=True)
        return sorted(ranked[:WINDOW])
    seq_array = np.fromiter(seqs, dtype=np.int64, count=len(seqs))
    length = np.fromiter(map(known.lengths.__getitem__, seqs), dtype=np.float64, count=len(seqs))
    repeats = known.repeats.get(term, {})
    tf = np.fromiter((repeats.get(s, 1) for s in seqs), dtype=np.float64, count=len(seqs)) if repeats else np.ones(len(seqs))
    order = np.lexsort((-seq_array, -impact(tf, length)))[:WINDOW]
    return sorted(int(s) for s in seq_array[order])


class TermWindows:
    """The keyword windows searches read lately: per (bucket tag, term), the seqs of the rows holding
    the term most strongly (see WINDOW), at most WINDOW, oldest first. Kept current from the change
    log: a new row holding a cached term joins its window when it holds the term at least as
    strongly as the weakest row of a full window (which then leaves), a removed row leaves it; a
    full window that loses a row is dropped (the next row is not known here) and read again.
    """

    KEEP = 256
    """Windows kept (the least recently used go first): at most about 256 x 1,000 row numbers."""

    def __init__(self) -> None:
        self.windows: OrderedDict[tuple[str, str], list[int]] = OrderedDict()
        self.by_tag: dict[str, set[str]] = {}

    def get(self, tag: str, term: str) -> list[int] | None:
        found = self.windows.get((tag, term))
        if found is not None:
            self.windows.move_to_end((tag, term))
        return found

    def put(self, tag: str, term: str, oldest_first: list[int]) -> None:
        self.windows[(tag, term)] = oldest_first
        self.windows.move_to_end((tag, term))
        self.by_tag.setdefault(tag, set()).add(term)
        while len(self.windows) > self.KEEP:
            (old_tag, old_term), _ = self.windows.popitem(last=False)
            self._forget(old_tag, old_term)

    def _forget(self, tag: str, term: str) -> None:
        terms = self.by_tag.get(tag)
        if terms is not None:
            terms.discard(term)
            if not terms:
                del self.by_tag[tag]

    def _drop(self, tag: str, term: str) -> None:
        self.windows.pop((tag, term), None)
        self._forget(tag, term)

    def added(self, tag: str, seq: int, terms: str, known: RowTerms) -> None:
        """A row of bucket `tag` was added, or its embedding changed (the change log says 'add' for
        both); `known` knows it and every row of the cached windows."""
        cached = self.by_tag.get(tag)
        if not cached:
            return
        for term in cached & set(terms.split()):
            window = self.windows[(tag, term)]
            at = bisect.bisect_left(window, seq)
            if at < len(window) and window[at] == seq:
                continue  # already in (an embedding change)
            try:
                if len(window) >= WINDOW:
                    weakest = min(window, key=lambda s: _strength(term, s, known))
                    if _strength(term, seq, known) < _strength(term, weakest, known):
                        continue  # holds the term more weakly than every row of a full window
                    window.remove(weakest)
                    at = bisect.bisect_left(window, seq)
            except KeyError:
                self._drop(tag, term)  # a row of the window not known here: read the window again
                continue
            window.insert(at, seq)

    def removed(self, tag: str, seq: int) -> None:
        for term in list(self.by_tag.get(tag, ())):
            window = self.windows[(tag, term)]
            at = bisect.bisect_left(window, seq)
            if at < len(window) and window[at] == seq:
                if len(window) >= WINDOW:
                    self._drop(tag, term)
                else:
                    del window[at]


class VectorCache:
    """Per (bucket tag, model) vectors, and the keyword statistics of the rows met so far, kept current
    from the `memory_changes` log of a SQLite store."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.seen = -1
        self.buckets: dict[tuple[str, str], BucketVectors] = {}
        self.terms = RowTerms()
        self.windows = TermWindows()
        self.loads = 0
        """Whole-bucket loads so far (a test checks another process's write does not cause one)."""

    def sync(self, fetch: Fetch) -> None:
        """Apply the changes logged since the last one seen (call inside one read transaction)."""
        with self.lock:
            # Two subqueries: SQLite answers a lone min() or max() from the index, but reads the
            # whole log for both in one SELECT (that was half of a search on a 100k bucket).
            low, high = fetch(
                "SELECT coalesce((SELECT min(seq) FROM memory_changes), 0), "
                "coalesce((SELECT max(seq) FROM memory_changes), 0)",
                (),
            )[0]
            if self.seen >= 0 and high <= self.seen:
                return  # nothing new (or a writer of this process already brought the cache further)
            if self.seen < 0 or (low and low > self.seen + 1):
                # First use, or the log no longer reaches back to what this cache saw: start over.
                self.buckets.clear()
                self.terms = RowTerms()
                self.windows = TermWindows()
                self.seen = int(high)
                return
            changes = fetch(
                "SELECT memory_seq, bucket, op FROM memory_changes WHERE seq > ? AND seq <= ? ORDER BY seq",
                (self.seen, high),
            )
            cached_tags = {tag for tag, _ in self.buckets} | set(self.windows.by_tag)
            final: dict[int, tuple[str, str]] = {}
            for memory_seq, tag, op in changes:
                if tag in cached_tags:
                    final[int(memory_seq)] = (tag, op)
                elif op == "del":
                    self.terms.remove(int(memory_seq))
            added = [s for s, (_, op) in final.items() if op == "add"]
            rows: dict[int, tuple[Any, ...]] = {}
            for start in range(0, len(added), 500):
                chunk = added[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                for found in fetch(
                    f"SELECT seq, embedding, embedding_model, terms FROM memories WHERE seq IN ({marks})", chunk
                ):
                    rows[int(found[0])] = found
            for (tag, model), vectors in self.buckets.items():
                for memory_seq, (change_tag, _op) in final.items():
                    if change_tag != tag:
                        continue
                    row = rows.get(memory_seq)
                    if row is None:
                        vectors.remove(memory_seq)
                    else:
                        vectors.put(memory_seq, row[1], row[2] == model)
            for memory_seq, (tag, _op) in final.items():
                row = rows.get(memory_seq)
                if row is None:
                    self.terms.remove(memory_seq)
                    self.windows.removed(tag, memory_seq)
                else:
                    if memory_seq not in self.terms.lengths:
                        self.terms.load([row])
                    self.windows.added(tag, memory_seq, row[3], self.terms)
            self.seen = int(high)

    def bucket(self, fetch: Fetch, tag: str, model: str) -> BucketVectors:
        """The vectors of one bucket (loaded whole the first time; call after `sync`)."""
        with self.lock:
            found = self.buckets.get((tag, model))
            if found is not None:
                return found
            vectors = BucketVectors()
            vectors.load(
                fetch("SELECT seq, embedding, embedding_model FROM memories WHERE bucket = ? ORDER BY seq", (tag,)),
                model,
            )
            self.buckets[(tag, model)] = vectors
            self.loads += 1
            return vectors
