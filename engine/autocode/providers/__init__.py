"""Model providers behind one interface, and the routing of roles to them.

Routes (role -> provider and model) come only from explicit settings. What a
run actually used is reported back as observed routes for the record and
diagnostics; an observation never selects anything.

Providers are a registry, `name -> ProviderKind`: each kind reads its own
settings model from the launch's `ProviderConfig` (refusing what it cannot use,
before any run folder exists) and builds its `Provider` from it. To add one:
a module with the `Provider` class and one `register(ProviderKind(...))`
(tests/throwaway/echo_provider.py adds an `echo` provider that way). The
built-in kinds load their module only when a task uses them.

Engines (agent CLIs as the implementer, `autocode.providers.engines`) are kinds of the same
registry made by `engine_kind(name, "module:Adapter")`: adding one is its adapter module and
one `register(engine_kind(...))` line. The person's `engine` setting routes the implementer
to it; nothing else can (a repository's provider or routes naming one are refused).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from autocode.errors import UsageError
from autocode.providers.base import (
    CATEGORIES,
    ROLES,
    Implementation,
    MachineDecision,
    Plan,
    Provider,
    ProviderContext,
    ProviderError,
    Question,
    RequirementsReport,
    Review,
)
from autocode.remedy import Advice, Remedy, RemedyKind

# The launch values the agent loop reads (settings of the same names).
LOOP_SETTINGS: tuple[str, ...] = (
    "max_turns", "token_budget", "time_budget", "edit_format", "reading_roles", "api_version", "deployment",
    "request_timeout", "endpoint_family", "temperature", "response_format", "max_output_tokens", "context_window",
    "stream", "engine", "engine_model", "engine_base_url", "engine_api_key_env", "engine_idle_timeout",
)


@dataclass(frozen=True)
class ProviderConfig:
    """The provider settings a task was launched with (stored in its launch snapshot)."""

    provider: str = "fixture"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    scenario: str | None = None
    timeout: float = 120.0  # the request_timeout setting: seconds an endpoint may send nothing
    routes: tuple[tuple[str, str], ...] = ()
    max_turns: int = 40
    token_budget: int = 400_000
    time_budget: float = 1800.0
    edit_format: str = "auto"
    reading_roles: tuple[str, ...] = ("investigator",)
    api_version: str | None = None
    deployment: str | None = None
    endpoint_family: str = "auto"
    temperature: float | None = None
    response_format: str = "auto"
    max_output_tokens: int | None = None
    context_window: int | None = None
    stream: bool = True
    engine: str | None = None  # an agent CLI as the implementer (the person's `engine` setting)
    engine_model: str | None = None
    engine_base_url: str | None = None
    engine_api_key_env: str | None = None
    engine_idle_timeout: float = 300.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "scenario": self.scenario,
            "timeout": self.timeout,
            "routes": dict(self.routes),
            "max_turns": self.max_turns,
            "token_budget": self.token_budget,
            "time_budget": self.time_budget,
            "edit_format": self.edit_format,
            "reading_roles": list(self.reading_roles),
            "api_version": self.api_version,
            "deployment": self.deployment,
            "endpoint_family": self.endpoint_family,
            "temperature": self.temperature,
            "response_format": self.response_format,
            "max_output_tokens": self.max_output_tokens,
            "context_window": self.context_window,
            "stream": self.stream,
            "engine": self.engine,
            "engine_model": self.engine_model,
            "engine_base_url": self.engine_base_url,
            "engine_api_key_env": self.engine_api_key_env,
            "engine_idle_timeout": self.engine_idle_timeout,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProviderConfig:
        routes = data.get("routes") or {}
        return cls(
            provider=str(data.get("provider") or "fixture"),
            model=data.get("model"),
            base_url=data.get("base_url"),
            api_key_env=data.get("api_key_env"),
            scenario=data.get("scenario"),
            timeout=float(data.get("request_timeout") or data.get("timeout") or 120.0),
            routes=tuple(sorted((str(k), str(v)) for k, v in dict(routes).items())),
            max_turns=int(data.get("max_turns") or 40),
            token_budget=int(data.get("token_budget") or 400_000),
            time_budget=float(data.get("time_budget") or 1800.0),
            edit_format=str(data.get("edit_format") or "auto"),
            reading_roles=tuple(
                str(r) for r in (data["reading_roles"] if data.get("reading_roles") is not None else ["investigator"])
            ),
            api_version=data.get("api_version"),
            deployment=data.get("deployment"),
            endpoint_family=str(data.get("endpoint_family") or "auto"),
            temperature=float(data["temperature"]) if data.get("temperature") is not None else None,
            response_format=str(data.get("response_format") or "auto"),
            max_output_tokens=int(data["max_output_tokens"]) if data.get("max_output_tokens") else None,
            context_window=int(data["context_window"]) if data.get("context_window") else None,
            stream=bool(data.get("stream", True)),
            engine=str(data["engine"]) if data.get("engine") else None,
            engine_model=data.get("engine_model"),
            engine_base_url=data.get("engine_base_url"),
            engine_api_key_env=data.get("engine_api_key_env"),
            engine_idle_timeout=float(data.get("engine_idle_timeout") or 300.0),
        )

    def route(self, role: str) -> tuple[str, str | None]:
        """(provider, model) for a role: the person's engine for the implementer, else an explicit
        route, else the task's provider."""
        if role == "implementer" and self.engine:
            return self.engine, self.engine_model
        for name, target in self.routes:
            if name == role:
                provider, _, model = target.partition(":")
                return provider, model or self.model
        return self.provider, self.model


@dataclass(frozen=True)
class ProviderKind:
    """One kind of provider, registered under its name.

    `settings(config, role, model)` returns the kind's own settings for a role (any
    object; the built-ins use frozen dataclasses) or raises `UsageError` (or
    `ProviderError`) saying what to set; `build(settings, config, role)` makes the provider from them.
    """

    name: str
    settings: Callable[[ProviderConfig, str, str | None], Any]
    build: Callable[[Any, ProviderConfig, str], Provider]
    engine: str | None = None  # for an engine: "module:Class" of its adapter


_KINDS: dict[str, ProviderKind] = {}


def register(kind: ProviderKind) -> ProviderKind:
    """Add (or replace) a provider kind; returns it."""
    _KINDS[kind.name] = kind
    return kind


def unregister(kind: ProviderKind) -> None:
    if _KINDS.get(kind.name) is kind:
        del _KINDS[kind.name]


def provider_names() -> tuple[str, ...]:
    """The registered providers, built-ins first."""
    return tuple(_KINDS)


def engine_specs() -> dict[str, str]:
    """The registered engines: name -> "module:Class" of the adapter."""
    return {k.name: k.engine for k in _KINDS.values() if k.engine}


def _kind(name: str, role: str | None = None) -> ProviderKind:
    try:
        return _KINDS[name]
    except KeyError:
        where = f"role {role} routes to unknown provider" if role else "unknown provider"
        raise UsageError(f"{where} {name!r}; use one of {', '.join(_KINDS)}") from None


def provider_for(config: ProviderConfig, role: str) -> Provider:
    """The provider instance that plays `role` under `config`."""
    if role not in ROLES:
        raise UsageError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    name, model = config.route(role)
    kind = _kind(name)
    return kind.build(kind.settings(config, role, model), config, role)


def check_config(config: ProviderConfig) -> None:
    """Raise a UsageError now (before any run directory exists) for an unusable provider setup."""
    if config.engine is not None and config.engine not in engine_specs():
        raise UsageError(f"unknown engine {config.engine!r}; use one of {', '.join(engine_specs())}")
    for role in ROLES:
        name, model = config.route(role)
        try:
            _kind(name, role).settings(config, role, model)
        except ProviderError as exc:  # e.g. a fixture scenario that cannot be read
            raise UsageError(exc.message) from exc
    unknown = [r for r in config.reading_roles if r not in ROLES]
    if unknown:
        raise UsageError(f"reading_roles names unknown role(s) {', '.join(unknown)}; roles are {', '.join(ROLES)}")
    if config.edit_format not in ("auto", "tools", "edit_blocks"):
        raise UsageError(f"edit_format {config.edit_format!r} is not one of auto, tools, edit_blocks")


# The fixture provider: scripted scenarios, no model (demos and tests).


@dataclass(frozen=True)
class FixtureSettings:
    scenario: Mapping[str, Any]
    model: str | None


def _fixture_settings(config: ProviderConfig, role: str, model: str | None) -> FixtureSettings:
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.providers.fixture import load_scenario

    return FixtureSettings(load_scenario(config.scenario), model)


def _fixture_build(settings: FixtureSettings, config: ProviderConfig, role: str) -> Provider:
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.providers.fixture import FixtureProvider

    return FixtureProvider(dict(settings.scenario), model=settings.model)


# OpenAI-compatible chat endpoints, Azure OpenAI (the same client, its own URL and settings), and
# Anthropic's Messages API (the same loop through its own wire format: agent.messages).


@dataclass(frozen=True)
class HttpSettings:
    base_url: str
    model: str
    api_key_env: str | None
    timeout: float
    azure_api_version: str | None = None
    azure_deployment: str | None = None


def _openai_settings(config: ProviderConfig, role: str, model: str | None) -> HttpSettings:
    if not (config.base_url and model):
        raise UsageError(Advice(
            f"role {role} uses the openai provider but base_url or model is not set; ",
            Remedy(RemedyKind.SET_SETTINGS, keys=("base_url", "model")),
        ))
    return HttpSettings(config.base_url, model, config.api_key_env, config.timeout)


def _azure_settings(config: ProviderConfig, role: str, model: str | None) -> HttpSettings:
    deployment = config.deployment or model
    if not (config.base_url and config.api_version and deployment):
        raise UsageError(
            f"role {role} uses the azure provider, which needs base_url (the resource endpoint), "
            "api_version and deployment (or model); set them in .autocode/config.toml"
        )
    return HttpSettings(
        config.base_url, model or deployment, config.api_key_env, config.timeout,
        azure_api_version=config.api_version, azure_deployment=deployment,
    )


def _anthropic_settings(config: ProviderConfig, role: str, model: str | None) -> HttpSettings:
    if not model:
        raise UsageError(Advice(
            f"role {role} uses the anthropic provider but model is not set; ",
            Remedy(RemedyKind.SET_SETTINGS, keys=("model",)),
            " (e.g. the Claude model your account uses)",
        ))
    return HttpSettings(config.base_url or "https://api.anthropic.com/v1", model,
                        config.api_key_env or "ANTHROPIC_API_KEY", config.timeout)


def _http_builder(name: str) -> Callable[[HttpSettings, ProviderConfig, str], Provider]:
    def build(settings: HttpSettings, config: ProviderConfig, role: str) -> Provider:
        # lazy: not needed by `autocode task list`, which imports this module
        from autocode.providers.agent.families import RequestShape, family_of
        from autocode.providers.agent.http import ChatClient
        from autocode.providers.agent.loop import Budgets
        from autocode.providers.agent.messages import MessagesClient
        from autocode.providers.openai import OpenAIProvider

        shape = RequestShape(
            family_of(name, settings.base_url, settings.model, config.endpoint_family),
            temperature=config.temperature,
            response_format=config.response_format,
            max_output_tokens=config.max_output_tokens,
            stream=config.stream,
            context_window=config.context_window,
        )
        return OpenAIProvider(
            base_url=settings.base_url,
            model=settings.model,
            api_key_env=settings.api_key_env,
            timeout=settings.timeout,
            budgets=Budgets(config.max_turns, config.token_budget, config.time_budget),
            edit_format=config.edit_format,
            reading=role in config.reading_roles,
            azure_api_version=settings.azure_api_version,
            azure_deployment=settings.azure_deployment,
            name=name,
            shape=shape,
            client_class=MessagesClient if name == "anthropic" else ChatClient,
        )

    return build


def engine_kind(name: str, adapter: str) -> ProviderKind:
    """The kind that runs engine `name` (its adapter "module:Class") as the implementer."""

    def settings(config: ProviderConfig, role: str, model: str | None) -> Any:
        # lazy: an engine's adapter and checks load only when a task chooses it
        from autocode.providers.engines.catalog import engine_settings

        return engine_settings(name, adapter, config, role)

    def build(settings: Any, config: ProviderConfig, role: str) -> Provider:
        # lazy: the runner (sandbox, git) loads only when the engine runs
        from autocode.providers.engines.runner import EngineProvider

        return EngineProvider(settings)

    return ProviderKind(name, settings, build, engine=adapter)


register(ProviderKind("fixture", _fixture_settings, _fixture_build))
register(ProviderKind("openai", _openai_settings, _http_builder("openai")))
register(ProviderKind("azure", _azure_settings, _http_builder("azure")))
register(ProviderKind("anthropic", _anthropic_settings, _http_builder("anthropic")))
register(engine_kind("claude-code", "autocode.providers.engines.claude_code:ClaudeCode"))
register(engine_kind("codex", "autocode.providers.engines.codex:Codex"))
register(engine_kind("aider", "autocode.providers.engines.aider:Aider"))
register(engine_kind("opencode", "autocode.providers.engines.opencode:OpenCode"))
register(engine_kind("gemini", "autocode.providers.engines.gemini:Gemini"))


__all__ = [
    "CATEGORIES",
    "ROLES",
    "Implementation",
    "MachineDecision",
    "Plan",
    "Provider",
    "ProviderConfig",
    "ProviderContext",
    "ProviderError",
    "ProviderKind",
    "Question",
    "RequirementsReport",
    "Review",
    "check_config",
    "engine_kind",
    "engine_specs",
    "provider_for",
    "provider_names",
    "register",
    "unregister",
]
