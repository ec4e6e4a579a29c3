"""Embedding providers: the offline static model from the `semantic` extra, or an OpenAI-compatible endpoint.

No model is ever downloaded here: the static model's weights ship inside its
package, and an endpoint is only called when a person configured one. When
neither is usable, `select_embedder` says why and memory falls back to keyword
search and recency.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import operator
import os
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from autocode import DIST_NAME

STATIC_PACKAGE = "tokenlearn-static-model"
STATIC_MODULE = "static_model"
STATIC_MODEL_NAME = "static:tokenlearn-static-model-0.1.1"
PROVIDERS: tuple[str, ...] = ("auto", "none", "static", "openai")


class EmbeddingUnavailable(RuntimeError):
    """The configured embedding provider cannot embed right now (the message says why)."""


class Embedder(Protocol):
    @property
    def model(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0:
        return [0.0 for _ in vector]
    return [x / norm for x in vector]


class StaticEmbedder:
    """The bundled 64-dimension static model (no torch, weights inside the installed package).

    Read lean by default (`static_lean`: memory-mapped int8 matrix, a compact
    vocabulary index, a few MB instead of the package encoder's 330 MB); the
    package's own encoder is the fallback when the lean reader cannot serve
    the installed model. Nothing is loaded before the first text to embed.
    """

    model = STATIC_MODEL_NAME

    def __init__(self) -> None:
        self._encode: Any = None
        self.how = "not loaded"

    def _load(self) -> Any:
        if self._encode is None:
            # lazy: not needed by the CLI's memory commands, which imports this module
            from autocode.memory import static_lean

            try:
                lean = static_lean.LeanStaticModel()
            except (OSError, ValueError, KeyError, static_lean.LeanUnavailable) as lean_error:
                try:
                    module = importlib.import_module(STATIC_MODULE)
                except ImportError as exc:  # pragma: no cover - selection checks first
                    raise EmbeddingUnavailable(
                        f"{STATIC_PACKAGE} is not installed: pip install '{DIST_NAME}[semantic]'"
                    ) from exc
                self._encode = module.get_embeddings
                self.how = f"package encoder (lean reader unavailable: {lean_error})"
            else:
                self._encode = lean.encode_many
                self.how = "lean reader"
        return self._encode

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        encode = self._load()
        try:
            vectors = encode(list(texts))
        except (OSError, ValueError, RuntimeError) as exc:
            raise EmbeddingUnavailable(f"the static embedding model failed: {exc}") from exc
        return [_unit(v) for v in vectors]


class OpenAIEmbedder:
    """Any endpoint that answers POST {base_url}/embeddings the way OpenAI's does."""

    def __init__(self, base_url: str, model: str, api_key_env: str | None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._model = model
        self.api_key_env = api_key_env
        self.timeout = timeout

    @property
    def model(self) -> str:
        return f"openai:{self._model}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # The one HTTP client of the engine, shared with the chat providers (retries on 429 and
        # 5xx with backoff, a timeout that says so); imported here: http.client costs a server tens of ms.
        from autocode.providers.agent.http import ChatClient

        # lazy: not needed by the CLI's memory commands, which imports this module
        from autocode.providers.base import ProviderError

        # An unset key variable sends no key (an endpoint that needs none), as before.
        key_env = self.api_key_env if self.api_key_env and os.environ.get(self.api_key_env) else None
        client = ChatClient(base_url=self.base_url, api_key_env=key_env, timeout=self.timeout)
        try:
            payload = client.post("/embeddings", {"model": self._model, "input": list(texts)})
        except ProviderError as exc:
            raise EmbeddingUnavailable(
                f"the embeddings endpoint failed: {exc.message}; check embedding_base_url, "
                "embedding_model and the key named by embedding_api_key_env"
            ) from exc
        try:
            rows = sorted(payload["data"], key=lambda row: int(row.get("index", 0)))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingUnavailable("the embeddings endpoint answered without data[].embedding") from exc
        if len(vectors) != len(texts):
            raise EmbeddingUnavailable("the embeddings endpoint answered a different number of vectors")
        return [_unit(v) for v in vectors]


@dataclass(frozen=True)
class EmbedderChoice:
    embedder: Embedder | None
    provider: str
    reason: str

    @property
    def mode(self) -> str:
        return "semantic" if self.embedder is not None else "keyword"


def static_model_installed() -> bool:
    return importlib.util.find_spec(STATIC_MODULE) is not None


def select_embedder(
    provider: str | None,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
) -> EmbedderChoice:
    """The embedder the settings ask for, or None with the reason memory runs on keywords."""
    name = (provider or "auto").strip().lower()
    if name not in PROVIDERS:
        return EmbedderChoice(
            None, name, f"embedding_provider {provider!r} is unknown; use one of {', '.join(PROVIDERS)}"
        )
    if name == "none":
        return EmbedderChoice(None, name, "embedding_provider is none: keyword search, recall by recency")
    if name == "openai" or (name == "auto" and base_url):
        if not base_url or not model:
            return EmbedderChoice(
                None,
                "openai",
                "the openai embedding provider needs embedding_base_url and embedding_model; "
                "keyword search until both are set",
            )
        return EmbedderChoice(
            OpenAIEmbedder(base_url, model, api_key_env),
            "openai",
            f"OpenAI-compatible endpoint, model {model}",
        )
    if static_model_installed():
        return EmbedderChoice(StaticEmbedder(), "static", f"offline static model from {STATIC_PACKAGE}")
    return EmbedderChoice(
        None,
        name,
        f"no embedding model installed ({STATIC_PACKAGE} is missing: pip install '{DIST_NAME}[semantic]'); "
        "keyword search, recall by recency",
    )


def pack(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def unpack(blob: bytes) -> array[float]:
    values = array("f")
    values.frombytes(blob)
    return values


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """Dot product; vectors are stored unit-length, so this is their cosine."""
    return float(sum(map(operator.mul, a, b)))
