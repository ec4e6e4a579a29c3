"""The memory retrieval evaluation set (fixtures/memory) and recall@k over it, shared by the bench and a test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autocode.memory import MemoryContext, MemoryService, open_memory

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "memory"
MODES = ("keyword", "recent", "semantic", "hybrid")


@dataclass(frozen=True)
class EvalSet:
    memories: list[tuple[str, str, str]]
    queries: list[tuple[str, list[str]]]


def _rows(name: str) -> list[list[str]]:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]


def load_eval() -> EvalSet:
    memories = [(r[0], r[1], r[2]) for r in _rows("memories.tsv")]
    queries = [(r[0], r[1].split(",")) for r in _rows("queries.tsv")]
    return EvalSet(memories, queries)


def build_store(path: Path, data: EvalSet, **location: object) -> dict[str, str]:
    """Save every evaluation memory as a global team memory; returns store id -> fixture id."""
    settings: dict[str, object] = {"memory_path": path, **location, "embedding_provider": "none"}
    mapping: dict[str, str] = {}
    with open_memory(**settings) as memory:
        for fixture_id, category, content in data.memories:
            result = memory.save(MemoryContext(None, None), content, category=category)
            if not result.saved or result.id is None:
                raise AssertionError(f"evaluation memory {fixture_id} was not saved: {result.to_dict()}")
            mapping[result.id] = fixture_id
    return mapping


def recall_at_k(memory: MemoryService, data: EvalSet, mapping: dict[str, str], mode: str, k: int = 8) -> float:
    vis = memory.visibility(MemoryContext(None, None))
    total = 0.0
    for query, relevant in data.queries:
        result = memory.rank(vis, query, k, mode)
        got = {mapping.get(h.memory.id) for h in result.hits}
        total += len(got & set(relevant)) / len(relevant)
    return total / len(data.queries)
