"""Every setting, declared once. The same model reads `.autocode/config.toml`,
`[tool.autocode]` in pyproject.toml, the person's user config and command-line
flags; adding a setting is adding one field here (its default, type and
description) and, when it decides where data or secrets go, one word: its class.

Who may set what is declared once, by the `json_schema_extra` of each field
(`DESTINATION` or `PERSON`; a field without one is a team setting):

- team: shared in the repository's files without asking anyone (test command, timeouts...);
- destination: where data or secrets go (endpoints, key variables, stores); read from a
  repository's files only once the person trusted that repository's values;
- person: relaxations of the person's own protection (the sandbox); never read from a
  repository's files, trusted or not.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

SettingClass = Literal["team", "destination", "person"]
DESTINATION: dict[str, Any] = {"x-autocode-class": "destination"}
"""A field's `json_schema_extra` for a setting that decides where data or secrets go."""
PERSON: dict[str, Any] = {"x-autocode-class": "person"}
"""A field's `json_schema_extra` for a setting only the person may give (flag or user config)."""

RouteTarget = Annotated[str, StringConstraints(pattern=r"^[^:\s]+:\S.*$", max_length=300)]
# An empty string is never a useful value; unset a setting by leaving it out.
Text = Annotated[str, StringConstraints(min_length=1)]
HostName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9]([A-Za-z0-9.:-]{0,252})$")]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]


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
        default="fixture",
        min_length=1,
        description="model provider for task agents (fixture, openai, azure, anthropic)",
        json_schema_extra=DESTINATION,
    )
    model: Text | None = Field(default=None, description="model name passed to the provider")
    base_url: Text | None = Field(
        default=None, description="base URL of an OpenAI-compatible provider", json_schema_extra=DESTINATION
    )
    api_key_env: Text | None = Field(
        default=None,
        description="name of the environment variable holding the provider's API key",
        json_schema_extra=DESTINATION,
    )
    routes: dict[str, RouteTarget] = Field(
        default_factory=dict,
        description='per-role model routes, role = "provider:model"',
        json_schema_extra=DESTINATION,
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
    engine: str | None = Field(
        default=None,
        min_length=1,
        description="an agent CLI that implements the approved plan in the prep copy: claude-code, codex, aider, "
        "opencode or gemini (person only: a repository never chooses a program to run); unset: AutoCode's own loop",
        json_schema_extra=PERSON,
    )
    engine_model: Text | None = Field(default=None, description="model name passed to the engine; its own default when unset")
    engine_base_url: Text | None = Field(
        default=None, description="the engine's model endpoint (person only); its own default when unset",
        json_schema_extra=PERSON,
    )
    engine_api_key_env: Text | None = Field(
        default=None,
        description="name of the variable holding the engine's key, passed to it in the variable its CLI reads (person only)",
        json_schema_extra=PERSON,
    )
    engine_idle_timeout: float = Field(
        default=300.0, gt=0, description="seconds an engine may print nothing before it is stopped"
    )
    memory_max_count: int = Field(default=200, gt=0, description="memories kept per scope before eviction")
    keep_prep_copies: int = Field(
        default=0, ge=0, description="prep copies of finished tasks kept on disk (newest first); 0 removes each"
    )
    database_url: Text | None = Field(
        default=None,
        description="PostgreSQL URL of a shared memory store; SQLite file when unset",
        json_schema_extra=DESTINATION,
    )
    memory_path: Text | None = Field(
        default=None, description="SQLite memory file; the user data folder when unset", json_schema_extra=DESTINATION
    )
    embedding_provider: Literal["auto", "none", "static", "openai"] = Field(
        default="auto", description="embeddings for memory search"
    )
    embedding_model: Text | None = Field(default=None, description="embedding model name")
    embedding_base_url: Text | None = Field(
        default=None, description="base URL of an embedding endpoint", json_schema_extra=DESTINATION
    )
    embedding_api_key_env: Text | None = Field(
        default=None,
        description="name of the environment variable holding the embedding API key",
        json_schema_extra=DESTINATION,
    )
    sandbox: Literal["on", "off"] = Field(
        default="on", description="run what a task starts in the sandbox (person only)", json_schema_extra=PERSON
    )
    sandbox_network: Literal["deny", "allow"] | list[HostName] = Field(
        default="deny",
        description="network for sandboxed processes: deny, allow, or a list of host names (person only)",
        json_schema_extra=PERSON,
    )
    sandbox_env: list[EnvName] = Field(
        default_factory=list,
        description="extra environment variable names let into sandboxed processes (person only)",
        json_schema_extra=PERSON,
    )


SETTING_NAMES: tuple[str, ...] = tuple(Settings.model_fields)


def _class_of(name: str) -> SettingClass:
    extra = Settings.model_fields[name].json_schema_extra
    found = extra.get("x-autocode-class") if isinstance(extra, dict) else None
    return "destination" if found == "destination" else "person" if found == "person" else "team"


SETTING_CLASSES: dict[str, SettingClass] = {name: _class_of(name) for name in SETTING_NAMES}
"""Each setting's class, read from its field (the one declaration)."""
DESTINATION_SETTINGS: tuple[str, ...] = tuple(n for n, c in SETTING_CLASSES.items() if c == "destination")
PERSON_SETTINGS: tuple[str, ...] = tuple(n for n, c in SETTING_CLASSES.items() if c == "person")
OFFLINE_PROVIDERS: tuple[str, ...] = ("fixture",)
"""Providers that send nothing anywhere: a route to one of them is not a destination."""
REPOSITORY_ORDERED: tuple[str, ...] = ("framework", "test_command")
"""Team settings whose precedence the spec orders down to detection; the user config never gives them."""

# The learned record may only supply these; everything else it holds is context.
LEARNED_SETTINGS: tuple[str, ...] = ("framework", "test_command")


def flag_name(name: str) -> str:
    """The command-line flag of a setting: `test_command` -> `--test-command`."""
    return "--" + name.replace("_", "-")


def settings_table() -> str:
    """Markdown table of every setting, as published in docs/settings.md."""
    lines = [
        "| setting | type | default | from a repository | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    schema = Settings.model_json_schema()["properties"]
    for name, info in Settings.model_fields.items():
        default = info.get_default(call_default_factory=True)
        prop = schema[name]
        kind = _type_text(prop)
        default_text = "unset" if default is None else f"`{json.dumps(default)}`"
        repository = _REPOSITORY_MAY[SETTING_CLASSES[name]]
        lines.append(f"| `{name}` | {kind} | {default_text} | {repository} | {info.description} |")
    return "\n".join(lines) + "\n"


_REPOSITORY_MAY = {"team": "yes", "destination": "once trusted", "person": "never"}


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
