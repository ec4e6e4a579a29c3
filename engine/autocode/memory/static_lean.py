"""A lean reader of the static embedding model from the `semantic` extra.

The model package (tokenlearn-static-model) ships a 276k-piece Unigram
vocabulary as tokenizer.json, and model.safetensors with each piece's cluster
row and weight plus a 10000 x 64 int8 matrix. Its own encoder parses the
vocabulary into about 330 MB of memory and takes most of a second to do it.
This reader gives the same vectors for a few MB:

- model.safetensors is memory-mapped where it is installed; int8 stays int8
  and only the rows a text uses are ever read;
- the vocabulary is read from an index built once per machine and model file
  (sorted 64-bit hashes of the pieces, their ids and scores, about 5 MB) in the
  user cache folder; a child process builds it, so the server never holds the
  parsed JSON;
- a text is NFKC-normalized, split on whitespace, each word prefixed with the
  metaspace and cut into pieces by the Unigram Viterbi search (the unknown
  penalty is the lowest score minus 10, as in the tokenizers library); the
  vector is the mean of the pieces' weighted rows, made unit length by the caller.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib.util
import itertools
import json
import mmap
import os
import struct
import subprocess
import sys
import unicodedata
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import platformdirs

from autocode.atomic import write_atomically

MAGIC = b"ACVOCAB1"
HEADER = struct.Struct("<8sQQQqd")  # magic, pieces kept, vocabulary size, longest piece, unknown id and score
MAX_TOKENS = 512
WORD_CACHE = 50_000
NUMPY_BATCH = 64
UNK_PENALTY = 10.0
BUILD_TIMEOUT = 120.0



BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def import_numpy() -> Any:
    """numpy (None when not installed), its BLAS limited to one thread when this import loads it.

    Memory's products are a matrix of at most a few hundred thousand rows by a vector: one thread
    does one in a few ms, while OpenBLAS's default of a thread per core spins for work on a busy
    machine (measured on 100,000 x 64: 2.9 ms of CPU on one thread, 8.5 ms and four times the wall
    time on two). The settings are read when the library loads, so the environment is put back
    right after: processes this one starts keep the person's own settings.
    """
    if "numpy" in sys.modules:
        return sys.modules["numpy"]
    saved = {name: os.environ.get(name) for name in BLAS_THREADS}
    for name in BLAS_THREADS:
        os.environ.setdefault(name, "1")
    try:
        # optional: numpy may not be installed
        import numpy
    except ImportError:
        return None
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
    return numpy


class LeanUnavailable(RuntimeError):
    """The lean reader cannot serve this model (the message says why); the package's own encoder can."""


def piece_key(piece: str) -> int:
    data = piece.encode("utf-8")
    return (zlib.crc32(data) << 32) | zlib.adler32(data)


def model_dir() -> Path:
    """The installed model folder, found without importing the package's native module."""
    spec = importlib.util.find_spec("static_model")
    if spec is None or not spec.submodule_search_locations:
        raise LeanUnavailable("tokenlearn-static-model is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("autocode", appauthor=False))


def index_path(tokenizer: Path) -> Path:
    info = tokenizer.stat()
    digest = hashlib.sha256(f"{tokenizer.resolve()}|{info.st_size}|{info.st_mtime_ns}|1".encode()).hexdigest()
    return cache_dir() / f"static-vocab-{digest[:16]}.bin"


def build_index(tokenizer: Path, out: Path) -> None:
    """Write the vocabulary index for `tokenizer` to `out` (atomically)."""
    data = json.loads(tokenizer.read_text(encoding="utf-8"))
    model = data.get("model") or {}
    if model.get("type") != "Unigram" or model.get("byte_fallback"):
        raise LeanUnavailable(f"{tokenizer.name} is not a plain Unigram vocabulary")
    vocab: list[list[object]] = model["vocab"]
    special = {int(t["id"]) for t in data.get("added_tokens", []) if t.get("special")}
    unk = int(model.get("unk_id", -1))
    rows: list[tuple[int, int]] = []
    longest = 1
    for i, (piece, _score) in enumerate(vocab):
        if i in special or not isinstance(piece, str) or not piece:
            continue
        rows.append((piece_key(piece), i))
        longest = max(longest, len(piece))
    rows.sort()
    if any(a[0] == b[0] for a, b in itertools.pairwise(rows)):
        raise LeanUnavailable("two pieces of the vocabulary share a hash")
    scores = [float(s) for _p, s in vocab]  # type: ignore[arg-type]
    blob = b"".join(
        [
            HEADER.pack(MAGIC, len(rows), len(vocab), longest, unk, min(scores) - UNK_PENALTY),
            struct.pack(f"<{len(rows)}Q", *(k for k, _ in rows)),
            struct.pack(f"<{len(rows)}I", *(i for _, i in rows)),
            struct.pack(f"<{len(scores)}f", *scores),
        ]
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, blob, durable=False)  # a cache: rebuilt when lost


def ensure_index(tokenizer: Path) -> Path:
    """The index for `tokenizer`, built in a child process when this machine has none yet."""
    out = index_path(tokenizer)
    if out.is_file():
        return out
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "autocode.memory.static_lean", str(tokenizer), str(out)],
            capture_output=True, text=True, timeout=BUILD_TIMEOUT, env=env, check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise LeanUnavailable(f"could not build the vocabulary index: {exc}") from exc
    if done.returncode != 0 or not out.is_file():
        raise LeanUnavailable(f"could not build the vocabulary index: {done.stderr.strip()[-300:]}")
    return out


class _Mapped:
    def __init__(self, path: Path) -> None:
        with path.open("rb") as handle:
            self.map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self.view = memoryview(self.map)


class LeanStaticModel:
    """Encodes texts like the package's encoder, from memory-mapped files."""

    def __init__(self, folder: Path | None = None) -> None:
        folder = folder or model_dir()
        tokenizer = folder / "tokenizer.json"
        weights = folder / "model.safetensors"
        if not tokenizer.is_file() or not weights.is_file():
            raise LeanUnavailable(f"the model files are missing in {folder}")
        self._index = _Mapped(ensure_index(tokenizer))
        magic, kept, size, longest, unk, unk_score = HEADER.unpack_from(self._index.map, 0)
        if magic != MAGIC:
            raise LeanUnavailable("the vocabulary index is not one this version wrote")
        start = HEADER.size
        self._keys = self._index.view[start : start + 8 * kept].cast("Q")
        self._ids = self._index.view[start + 8 * kept : start + 12 * kept].cast("I")
        self._scores = self._index.view[start + 12 * kept : start + 12 * kept + 4 * size].cast("f")
        self._longest = int(longest)
        self._unk = int(unk)
        self._unk_score = float(unk_score)
        self._words: dict[str, list[int]] = {}
        self._weights = _Mapped(weights)
        self._read_tensors(size)

    def _read_tensors(self, size: int) -> None:
        view = self._weights.view
        (length,) = struct.unpack_from("<Q", view, 0)
        header = json.loads(bytes(view[8 : 8 + length]))
        base = 8 + length

        def tensor(name: str, dtype: str, fmt: Any) -> tuple[Any, list[int]]:
            entry = header.get(name)
            if not isinstance(entry, dict) or entry.get("dtype") != dtype:
                raise LeanUnavailable(f"model.safetensors has no {dtype} tensor {name!r}")
            begin, end = entry["data_offsets"]
            return view[base + begin : base + end].cast(fmt), [int(n) for n in entry["shape"]]

        self._mapping, shape = tensor("mapping", "I64", "q")
        self._piece_weights, weights_shape = tensor("weights", "F32", "f")
        self._matrix, matrix_shape = tensor("embeddings", "I8", "b")
        if shape != [size] or weights_shape != [size] or len(matrix_shape) != 2:
            raise LeanUnavailable("model.safetensors does not match its vocabulary")
        if sys.byteorder != "little":
            raise LeanUnavailable("the lean reader needs a little-endian machine")
        self.rows, self.dim = matrix_shape
        self._np: Any = None

    def _numpy(self, batch: int) -> Any:
        """numpy when a process already has it or a batch is big enough to pay for importing it."""
        if self._np is None and ("numpy" in sys.modules or batch >= NUMPY_BATCH):
            numpy = import_numpy()
            if numpy is None:
                return None
            self._np = numpy
            self._np_matrix = numpy.frombuffer(self._matrix, dtype=numpy.int8).reshape(self.rows, self.dim)
            self._np_mapping = numpy.frombuffer(self._mapping, dtype=numpy.int64)
            self._np_weights = numpy.frombuffer(self._piece_weights, dtype=numpy.float32)
        return self._np

    def _lookup(self, piece: str) -> int:
        key = piece_key(piece)
        at = bisect.bisect_left(self._keys, key)
        if at < len(self._keys) and self._keys[at] == key:
            return int(self._ids[at])
        return -1

    def _pieces(self, word: str) -> list[int]:
        """The best-scoring cut of `word` into vocabulary pieces (Viterbi)."""
        n = len(word)
        score = [0.0] + [float("-inf")] * n
        back: list[tuple[int, int]] = [(0, -1)] * (n + 1)
        scores, longest, lookup = self._scores, self._longest, self._lookup
        for end in range(1, n + 1):
            best, choice = float("-inf"), (end - 1, self._unk)
            for begin in range(max(0, end - longest), end):
                if score[begin] == float("-inf"):
                    continue
                found = lookup(word[begin:end])
                if found >= 0:
                    candidate = score[begin] + scores[found]
                elif begin == end - 1:  # a character no piece covers: the unknown piece
                    found, candidate = self._unk, score[begin] + self._unk_score
                else:
                    continue
                if candidate > best:
                    best, choice = candidate, (begin, found)
            score[end], back[end] = best, choice
        out: list[int] = []
        end = n
        while end > 0:
            begin, found = back[end]
            out.append(found)
            end = begin
        out.reverse()
        return out

    def _word(self, word: str) -> list[int]:
        found = self._words.get(word)
        if found is None:
            if len(self._words) >= WORD_CACHE:
                self._words.clear()
            found = self._words[word] = self._pieces("\u2581" + word)
        return found

    def tokens(self, text: str) -> list[int]:
        ids: list[int] = []
        if not text.isprintable():  # as the model's normalizer: no control characters, ZWSP splits
            text = "".join(
                " " if c == "\u200b" else c for c in text if c.isspace() or unicodedata.category(c) != "Cc"
            )
        for word in unicodedata.normalize("NFKC", text).split():
            ids.extend(self._word(word))
            if len(ids) >= MAX_TOKENS:
                break
        return ids[:MAX_TOKENS]

    def encode(self, text: str, np: Any = None) -> list[float]:
        ids = [i for i in self.tokens(text) if i >= 0]
        dim = self.dim
        if not ids:
            return [0.0] * dim
        if np is not None:
            rows = self._np_matrix[self._np_mapping[ids]].astype(np.float32)
            mean = (rows * self._np_weights[ids][:, None]).mean(axis=0)
            return [float(x) for x in mean]
        total = [0.0] * dim
        for i in ids:
            row = self._mapping[i] * dim
            weight = self._piece_weights[i]
            total = [t + weight * v for t, v in zip(total, self._matrix[row : row + dim], strict=True)]
        return [t / len(ids) for t in total]

    def encode_many(self, texts: Sequence[str]) -> list[list[float]]:
        np = self._numpy(len(texts))
        return [self.encode(t, np) for t in texts]


def _main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m autocode.memory.static_lean TOKENIZER_JSON OUT", file=sys.stderr)
        return 2
    try:
        build_index(Path(argv[0]), Path(argv[1]))
    except (OSError, ValueError, KeyError, LeanUnavailable) as exc:
        print(f"could not build the vocabulary index: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
