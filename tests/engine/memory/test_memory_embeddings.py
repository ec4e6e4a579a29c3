"""Embedding providers: the bundled static model, an OpenAI-compatible endpoint on 127.0.0.1,
and the fall-back to keywords when neither can embed."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from autocode.memory import MemoryContext, doctor_section, open_memory
from autocode.memory.embeddings import StaticEmbedder, select_embedder
from support import serve_http


class _Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible /embeddings endpoint answering with the static model's vectors."""

    model = StaticEmbedder()
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.path != "/v1/embeddings":
            self.send_response(404)
            self.end_headers()
            return
        vectors = self.model.embed(body["input"])
        payload = {"data": [{"index": i, "embedding": v} for i, v in reversed(list(enumerate(vectors)))]}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with serve_http(_Endpoint) as url:
        yield url


def test_openai_compatible_endpoint_ranks_by_meaning(endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "test" + "-key-" + "123"
    monkeypatch.setenv("EMBED_KEY_FOR_TESTS", key)
    _Endpoint.seen.clear()
    settings = {
        "memory_path": tmp_path / "m.sqlite3",
        "embedding_provider": "openai",
        "embedding_base_url": endpoint,
        "embedding_model": "embed-small",
        "embedding_api_key_env": "EMBED_KEY_FOR_TESTS",
    }
    with open_memory(**settings) as memory:
        ctx = MemoryContext("implementer", None)
        billing = memory.save(ctx, "GitHub Actions billing for the org is blocked, so CI check runs fail within seconds")
        memory.save(ctx, "The design system uses an 8 pixel spacing grid")
        memory.save(ctx, "Python services are formatted with ruff format")
        result = memory.search(ctx, "why do CI jobs fail right away")
        assert result.method == "hybrid"
        assert result.hits[0].memory.id == billing.id
        assert result.hits[0].memory.embedding_model == "openai:embed-small"
        assert memory.doctor()["search_mode"] == "hybrid"
    assert _Endpoint.seen[0]["auth"] == f"Bearer {key}"
    assert _Endpoint.seen[0]["body"]["model"] == "embed-small"
    info = doctor_section(**settings)
    assert info["search_mode"] == "hybrid" and "embed-small" in info["why"] and key not in json.dumps(info)


def test_unreachable_endpoint_falls_back_to_keywords(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = {
        "memory_path": tmp_path / "m.sqlite3",
        "embedding_provider": "openai",
        "embedding_base_url": "http://127.0.0.1:9/v1",
        "embedding_model": "embed-small",
    }
    with open_memory(**settings) as memory, caplog.at_level(logging.WARNING, logger="autocode.memory"):
        ctx = MemoryContext(None, None)
        saved = memory.save(ctx, "The mobile app pins OkHttp 4")
        assert saved.saved
        result = memory.search(ctx, "okhttp")
        assert result.method == "keyword-recent" and [h.memory.id for h in result.hits] == [saved.id]
        assert memory.recall(ctx, "upgrade okhttp").method == "recency"
    assert any("falling back to keywords" in r.getMessage() for r in caplog.records)


def test_memories_saved_without_embeddings_are_embedded_when_search_needs_them(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    with open_memory(memory_path=path, embedding_provider="none") as memory:
        ctx = MemoryContext(None, None)
        old = memory.save(ctx, "Background jobs retry with exponential backoff up to one hour")
        assert memory.list(ctx)[0].embedding_model is None
    with open_memory(memory_path=path, embedding_provider="static") as memory:
        hits = memory.search(ctx, "how long do failed jobs keep retrying").hits
        assert hits[0].memory.id == old.id
        assert memory.list(ctx)[0].embedding_model == StaticEmbedder.model


@pytest.mark.parametrize(
    ("provider", "kwargs", "mode", "why"),
    [
        ("none", {}, "keyword", "embedding_provider is none"),
        ("sparkle", {}, "keyword", "unknown"),
        ("openai", {}, "keyword", "needs embedding_base_url and embedding_model"),
        ("static", {}, "semantic", "offline static model"),
        ("auto", {}, "semantic", "offline static model"),
        ("auto", {"base_url": "http://127.0.0.1:9/v1", "model": "m"}, "semantic", "OpenAI-compatible"),
    ],
)
def test_provider_selection_says_why(provider: str, kwargs: dict[str, str], mode: str, why: str) -> None:
    choice = select_embedder(provider, **kwargs)
    assert choice.mode == mode
    assert why in choice.reason


def test_evaluation_set_is_all_memories_and_ranks_well(tmp_path: Path) -> None:
    from bench.memory_eval import build_store, load_eval, recall_at_k

    data = load_eval()
    assert len(data.memories) >= 200 and len(data.queries) >= 60
    mapping = build_store(tmp_path / "eval.sqlite3", data)  # raises if any is refused, merged or a skill
    assert len(mapping) == len(data.memories)
    with open_memory(memory_path=tmp_path / "eval.sqlite3", embedding_provider="static") as memory:
        assert recall_at_k(memory, data, mapping, "keyword") >= 0.85
        assert recall_at_k(memory, data, mapping, "hybrid") >= 0.85
        assert recall_at_k(memory, data, mapping, "semantic") >= 0.55


def test_a_search_query_reaches_the_embedding_endpoint_without_its_credentials(endpoint: str, tmp_path: Path) -> None:
    """A query typed into search may hold a key; the endpoint gets the query with it redacted."""
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    _Endpoint.seen.clear()
    settings = {"memory_path": tmp_path / "m.sqlite3", "embedding_provider": "openai",
                "embedding_base_url": endpoint, "embedding_model": "embed-small"}
    with open_memory(**settings) as memory:
        ctx = MemoryContext("implementer", None)
        memory.save(ctx, "The release checklist lives in docs/release.md")
        memory.search(ctx, f"why does the token {secret} fail on release")
    sent = json.dumps([s["body"] for s in _Endpoint.seen])
    assert _Endpoint.seen and secret not in sent
    assert "release" in sent  # the rest of the query still went
