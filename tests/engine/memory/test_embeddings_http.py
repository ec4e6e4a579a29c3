"""Embeddings go through the engine's one HTTP client, the chat providers' (`ChatClient`).

So a busy endpoint (HTTP 503, 429) is retried with backoff as a chat request
is, instead of dropping memory search to keywords at the first refusal; a
refusal that lasts still falls back to keywords with the reason logged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

from autocode.memory.embeddings import EmbeddingUnavailable, OpenAIEmbedder
from support import serve_http


class _Busy(BaseHTTPRequestHandler):
    """Answers 503 (with Retry-After: 0) `failures` times, then the vectors."""

    failures: ClassVar[int] = 0
    calls: ClassVar[int] = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls += 1
        if type(self).calls <= type(self).failures:
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps({"data": [{"index": i, "embedding": [1.0, float(i)]} for i in range(len(body["input"]))]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def busy() -> Iterator[str]:
    _Busy.calls = 0
    with serve_http(_Busy) as url:
        yield url


def test_a_busy_endpoint_is_retried(busy: str) -> None:
    _Busy.failures = 2
    vectors = OpenAIEmbedder(busy, "embed-small", None, timeout=5).embed(["a", "b"])
    assert len(vectors) == 2 and _Busy.calls == 3


def test_a_lasting_refusal_is_embedding_unavailable(busy: str) -> None:
    _Busy.failures = 100
    with pytest.raises(EmbeddingUnavailable, match=r"HTTP 503\) after 4 attempts"):
        OpenAIEmbedder(busy, "embed-small", None, timeout=5).embed(["a"])
    assert _Busy.calls == 4
