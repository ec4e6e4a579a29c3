"""Every setting, declared once. The same model reads `.autocode/config.toml`,
`[tool.autocode]` in pyproject.toml and command-line flags; adding a setting
is adding one field here (its default, type and description)."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

RouteTarget = Annotated[str, StringConstraints(pattern=r"^[^:\s]+:\S.*$", max_length=300)]
# An empty string is never a useful value; unset a setting by leaving it out.
Text = Annotated[str, StringConstraints(min_length=1)]


class Settings(BaseModel):
    """AutoCode settings with their built-in defaults. None means "not set"."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    test_command: Text | None = Field(
        default=None,
        description="command that runs the project's tests; detected from the project when unset",
    )
    framework: Text | None = Field(
        default=None, description="test framework name, for context and diagnostics; detected when unset"
    )
    test_timeout: int = Field(default=600, gt=0, description="seconds a test run may take")
    provider: str = Field(
        default="fixture", min_length=1, description="model provider for task agents (fixture, openai, azure, anthropic)"
    )
    model: Text | None = Field(default=None, description="model name passed to the provider")
    base_url: Text | None = Field(default=None, description="base URL of an OpenAI-compatible provider")
    api_key_env: Text | None = Field(
        default=None, description="name of the environment variable holding the provider's API key"
    )
    routes: dict[str, RouteTarget] = Field(
        default_factory=dict, description='per-role model routes, role = "provider:model"'
    )
    agent: str = Field(default="implementer", min_length=1, description="agent name used for memories")
    max_turns: int = Field(
        default=40, gt=0, description="model requests one agent loop (the implementer's, a reading role's) may make"
    )
    token_budget: int = Field(
        default=400_000, gt=0, description="tokens, as the endpoint reports them, one agent loop may use"
    )
    time_budget: int = Field(default=1800, gt=0, description="seconds of wall time one agent loop may take")
    edit_format: Literal["auto", "tools", "edit_blocks"] = Field(
        default="auto",
        description="how the implementer edits: tool calls, search/replace blocks, or tools with the blocks as fallback",
    )
    reading_roles: list[str] = Field(
        default_factory=lambda: ["investigator"],
        description="roles that may read the copy (read_file, list_files, search) before answering",
    )
    request_timeout: float = Field(
        default=120.0, gt=0,
        description="seconds a model endpoint may send nothing (an idle timeout: a reply that keeps streaming may take longer)",
    )
    endpoint_family: Literal[
        "auto", "openai", "azure", "anthropic", "ollama", "lmstudio", "vllm", "llamacpp", "litellm", "generic"
    ] = Field(
        default="auto",
        description="which server or service base_url is, for the request parameters it takes; guessed from the URL and model when auto",
    )
    temperature: float | None = Field(
        default=None, ge=0, le=2,
        description="sampling temperature sent to the model; unset sends 0 where the model takes it and nothing to reasoning models",
    )
    response_format: Literal["auto", "json_object", "none"] = Field(
        default="auto",
        description="whether JSON answers ask for response_format json_object; auto asks where the endpoint family takes it",
    )
    max_output_tokens: int | None = Field(
        default=None, gt=0,
        description="the most tokens one reply may have (sent as max_tokens or max_completion_tokens); unset leaves the server's limit",
    )
    context_window: int | None = Field(
        default=None, gt=0,
        description="the model's context window in tokens; unset uses the endpoint family's (4096 for Ollama, LM Studio, llama.cpp)",
    )
    stream: bool = Field(default=True, description="stream chat replies (server-sent events) from the model endpoint")
    api_version: Text | None = Field(default=None, description="Azure OpenAI api-version (provider azure)")
    deployment: Text | None = Field(
        default=None, description="Azure OpenAI deployment name (provider azure); the model name when unset"
    )
    memory_max_count: int = Field(default=200, gt=0, description="memories kept per scope before eviction")
    keep_prep_copies: int = Field(
        default=0, ge=0, description="prep copies of finished tasks kept on disk (newest first); 0 removes each"
    )
    database_url: Text | None = Field(
        default=None, description="PostgreSQL URL of a shared memory store; SQLite file when unset"
    )
    memory_path: Text | None = Field(
        default=None, description="SQLite memory file; the user data folder when unset"
    )
    embedding_provider: Literal["auto", "none", "static", "openai"] = Field(
        default="auto", description="embeddings for memory search"
    )
    embedding_model: Text | None = Field(default=None, description="embedding model name")
    embedding_base_url: Text | None = Field(default=None, description="base URL of an embedding endpoint")
    embedding_api_key_env: Text | None = Field(
        default=None, description="name of the environment variable holding the embedding API key"
    )


SETTING_NAMES: tuple[str, ...] = tuple(Settings.model_fields)

# The learned record may only supply these; everything else it holds is context.
LEARNED_SETTINGS: tuple[str, ...] = ("framework", "test_command")


def flag_name(name: str) -> str:
    """The command-line flag of a setting: `test_command` -> `--test-command`."""
    return "--" + name.replace("_", "-")


def settings_table() -> str:
    """Markdown table of every setting, as published in docs/settings.md."""
    lines = ["| setting | type | default | meaning |", "| --- | --- | --- | --- |"]
    schema = Settings.model_json_schema()["properties"]
    for name, info in Settings.model_fields.items():
        default = info.get_default(call_default_factory=True)
        prop = schema[name]
        kind = _type_text(prop)
        default_text = "unset" if default is None else f"`{json.dumps(default)}`"
        lines.append(f"| `{name}` | {kind} | {default_text} | {info.description} |")
    return "\n".join(lines) + "\n"


def _type_text(prop: dict[str, object]) -> str:
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])  # type: ignore[attr-defined]
    options = prop.get("anyOf")
    if isinstance(options, list):
        kinds = [str(o.get("type")) for o in options if isinstance(o, dict) and o.get("type") != "null"]
        return " \\| ".join(kinds) if kinds else "any"
    kind = prop.get("type")
    if kind == "object":
        return "table of strings"
    return str(kind)
