"""Model providers behind one interface, and the routing of roles to them.

Routes (role -> provider and model) come only from explicit settings. What a
run actually used is reported back as observed routes for the record and
diagnostics; an observation never selects anything.
"""

from __future__ import annotations

from collections.abc import Mapping
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

PROVIDERS: tuple[str, ...] = ("fixture", "openai", "azure")
# The launch values the agent loop reads (settings of the same names).
LOOP_SETTINGS: tuple[str, ...] = (
    "max_turns", "token_budget", "time_budget", "edit_format", "reading_roles", "api_version", "deployment",
)


@dataclass(frozen=True)
class ProviderConfig:
    """The provider settings a task was launched with (stored in its launch snapshot)."""

    provider: str = "fixture"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    scenario: str | None = None
    timeout: float = 60.0
    routes: tuple[tuple[str, str], ...] = ()
    max_turns: int = 40
    token_budget: int = 400_000
    time_budget: float = 1800.0
    edit_format: str = "auto"
    reading_roles: tuple[str, ...] = ("investigator",)
    api_version: str | None = None
    deployment: str | None = None

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
            timeout=float(data.get("timeout") or 60.0),
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
        )

    def route(self, role: str) -> tuple[str, str | None]:
        """(provider, model) for a role: an explicit route, else the task's provider."""
        for name, target in self.routes:
            if name == role:
                provider, _, model = target.partition(":")
                return provider, model or self.model
        return self.provider, self.model


def provider_for(config: ProviderConfig, role: str) -> Provider:
    """The provider instance that plays `role` under `config`."""
    if role not in ROLES:
        raise UsageError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    name, model = config.route(role)
    if name == "fixture":
        from autocode.providers.fixture import FixtureProvider, load_scenario

        return FixtureProvider(load_scenario(config.scenario), model=model)
    if name in ("openai", "azure"):
        from autocode.providers.agent.loop import Budgets
        from autocode.providers.openai import OpenAIProvider

        return OpenAIProvider(
            base_url=config.base_url or "",
            model=model or config.deployment or "",
            api_key_env=config.api_key_env,
            timeout=config.timeout,
            budgets=Budgets(config.max_turns, config.token_budget, config.time_budget),
            edit_format=config.edit_format,
            reading=role in config.reading_roles,
            azure_api_version=config.api_version if name == "azure" else None,
            azure_deployment=(config.deployment or model) if name == "azure" else None,
            name=name,
        )
    raise UsageError(f"unknown provider {name!r}; use one of {', '.join(PROVIDERS)}")


def check_config(config: ProviderConfig) -> None:
    """Raise a UsageError now (before any run directory exists) for an unusable provider setup."""
    for role in ROLES:
        name, model = config.route(role)
        if name not in PROVIDERS:
            raise UsageError(f"role {role} routes to unknown provider {name!r}; use one of {', '.join(PROVIDERS)}")
        if name == "openai" and not (config.base_url and model):
            raise UsageError(
                f"role {role} uses the openai provider but base_url or model is not set; "
                "set them in .autocode/config.toml or pass --base-url and --model"
            )
        if name == "azure" and not (config.base_url and config.api_version and (config.deployment or model)):
            raise UsageError(
                f"role {role} uses the azure provider, which needs base_url (the resource endpoint), "
                "api_version and deployment (or model); set them in .autocode/config.toml"
            )
    unknown = [r for r in config.reading_roles if r not in ROLES]
    if unknown:
        raise UsageError(f"reading_roles names unknown role(s) {', '.join(unknown)}; roles are {', '.join(ROLES)}")
    if config.edit_format not in ("auto", "tools", "edit_blocks"):
        raise UsageError(f"edit_format {config.edit_format!r} is not one of auto, tools, edit_blocks")
    if any(config.route(r)[0] == "fixture" for r in ROLES):
        from autocode.providers.fixture import load_scenario

        try:
            load_scenario(config.scenario)
        except ProviderError as exc:
            raise UsageError(exc.message) from exc


__all__ = [
    "CATEGORIES",
    "PROVIDERS",
    "ROLES",
    "Implementation",
    "MachineDecision",
    "Plan",
    "Provider",
    "ProviderConfig",
    "ProviderContext",
    "ProviderError",
    "Question",
    "RequirementsReport",
    "Review",
    "check_config",
    "provider_for",
]
