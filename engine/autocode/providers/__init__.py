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

PROVIDERS: tuple[str, ...] = ("fixture", "openai")


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "scenario": self.scenario,
            "timeout": self.timeout,
            "routes": dict(self.routes),
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
    if name == "openai":
        from autocode.providers.openai import OpenAIProvider

        return OpenAIProvider(
            base_url=config.base_url or "",
            model=model or "",
            api_key_env=config.api_key_env,
            timeout=config.timeout,
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
