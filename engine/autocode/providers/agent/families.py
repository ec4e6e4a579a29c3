"""Endpoint families: which request parameters a model behind an endpoint takes, and its window.

Servers that all speak "OpenAI-compatible" still differ: OpenAI's reasoning
models (gpt-5*, o1/o3/o4*) refuse any temperature but the default and
want `max_completion_tokens`; LM Studio refuses `response_format:
json_object`; Ollama answers within a 4,096-token window unless told more.
`family_of` guesses the family from the provider, the base URL and the
model (the `endpoint_family` setting names it outright), and `RequestShape`
builds each chat body from the family's defaults and the person's settings
(`temperature`, `response_format`, `max_output_tokens`, `stream`).

What the family gets wrong, the endpoint says: a 400 naming a parameter
makes the client drop (or rename) it once and remember that for the process
(`http.ChatClient`); this module only states the first guess.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

FAMILIES = ("auto", "openai", "azure", "anthropic", "ollama", "lmstudio", "vllm", "llamacpp", "litellm", "generic")

# OpenAI's reasoning models, also behind a prefix ("openai/gpt-5", "azure/o3-mini").
REASONING_MODEL = re.compile(r"(^|/)(o[1-9](-|$)|o[1-9][a-z-]|gpt-5)", re.IGNORECASE)


@dataclass(frozen=True)
class Family:
    name: str
    temperature: bool  # whether a temperature other than the default is accepted
    token_param: str  # "max_tokens" or "max_completion_tokens"
    json_format: bool  # whether response_format {"type": "json_object"} is accepted
    context_window: int  # tokens, when the context_window setting is unset
    max_output_tokens: int | None  # sent when the max_output_tokens setting is unset; None sends nothing
    note: str | None = None  # said once at the start of a loop


_BASE = {
    "openai": Family("openai", True, "max_completion_tokens", True, 128_000, None),
    "azure": Family("azure", True, "max_tokens", True, 128_000, None),
    # The Messages API: max_tokens is required, there is no response_format.
    "anthropic": Family("anthropic", True, "max_tokens", False, 200_000, 8_192),
    "ollama": Family(
        "ollama", True, "max_tokens", True, 4_096, None,
        note=(
            "Ollama answers within 4,096 tokens of context unless the server is told more "
            "(OLLAMA_CONTEXT_LENGTH); AutoCode keeps requests within context_window (4096 unless set)"
        ),
    ),
    "lmstudio": Family("lmstudio", True, "max_tokens", False, 4_096, None),
    "vllm": Family("vllm", True, "max_tokens", True, 32_768, None),
    "llamacpp": Family("llamacpp", True, "max_tokens", True, 4_096, None),
    "litellm": Family("litellm", True, "max_tokens", True, 128_000, None),
    "generic": Family("generic", True, "max_tokens", True, 32_768, None),
}

# Well-known local ports, when the URL says nothing else.
_PORTS = {11434: "ollama", 1234: "lmstudio", 8080: "llamacpp", 4000: "litellm"}


def family_of(provider: str, base_url: str, model: str, named: str = "auto") -> Family:
    """The family of `model` behind `base_url`; `named` (the endpoint_family setting) wins over the guess."""
    name = named if named in _BASE else _guess(provider, base_url)
    family = _BASE[name]
    if name in ("openai", "azure", "litellm", "generic") and REASONING_MODEL.search(model or ""):
        # The reasoning models take only the default temperature and count their
        # hidden reasoning in max_completion_tokens (LiteLLM translates for its backends).
        window = 400_000 if "gpt-5" in model.lower() else 200_000
        token_param = "max_tokens" if name == "litellm" else "max_completion_tokens"
        return Family(f"{name}-reasoning", False, token_param, family.json_format, window, None)
    if name == "openai" and re.search(r"gpt-4\.1", model or ""):
        return Family(name, True, family.token_param, True, 1_000_000, None)
    return family


def _guess(provider: str, base_url: str) -> str:
    if provider in ("azure", "anthropic"):
        return provider
    parts = urllib.parse.urlsplit(base_url)
    host = (parts.hostname or "").lower()
    text = (host + parts.path).lower()
    if host == "api.openai.com":
        return "openai"
    if host.endswith(".openai.azure.com") or "azure" in host:
        return "azure"
    for hint in ("ollama", "lmstudio", "vllm", "litellm"):
        if hint in text:
            return hint
    if "llama" in text and "cpp" in text:
        return "llamacpp"
    if parts.port in _PORTS:
        return _PORTS[parts.port]
    return "generic"


def served_window(look: Any, family: Family, model: str) -> int | None:
    """The context window a local server says it serves `model` with, or None.

    `look(path)` is a GET returning the JSON object or None (`ChatClient.look`). vLLM lists
    `max_model_len` per model in /models; llama.cpp's server gives `n_ctx` in /props (at the
    server root). Other families are not asked: their answer would not be the window in use."""
    if family.name == "vllm":
        data = look("/models") or {}
        for item in data.get("data") or []:
            if isinstance(item, dict) and item.get("id") == model and isinstance(item.get("max_model_len"), int):
                return int(item["max_model_len"])
    if family.name == "llamacpp":
        data = look("/props", at_root=True) or {}
        settings = data.get("default_generation_settings") or {}
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        n_ctx = n_ctx if isinstance(n_ctx, int) else data.get("n_ctx")
        if isinstance(n_ctx, int) and n_ctx > 0:
            return n_ctx
    return None


@dataclass(frozen=True)
class RequestShape:
    """How one provider's chat bodies are built: the family's defaults under the person's settings."""

    family: Family
    temperature: float | None = None  # None: 0 where the family takes it, else left out
    response_format: str = "auto"  # auto (json_object where accepted), json_object, none
    max_output_tokens: int | None = None
    stream: bool = True
    context_window: int | None = None

    @property
    def window(self) -> int:
        return self.context_window or self.family.context_window

    def body(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_answer: bool = False,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        elif self.family.temperature:
            body["temperature"] = 0
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if json_answer and self._json_format():
            body["response_format"] = {"type": "json_object"}
        limit = self.max_output_tokens or self.family.max_output_tokens
        if limit:
            body[self.family.token_param] = limit
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _json_format(self) -> bool:
        if self.response_format == "none":
            return False
        return self.response_format == "json_object" or self.family.json_format

    def output_limit(self) -> int | None:
        return self.max_output_tokens or self.family.max_output_tokens
