"""A throwaway model provider for tests: `echo` writes the brief into ECHO.md.

It is the whole of adding a provider: this one module and one registry entry
(`register()` below), with its own settings (`EchoSettings`: the file it
writes, from the task's `model`, which must end in `.md`) and its own check.
"""

from __future__ import annotations

from dataclasses import dataclass

from autocode.errors import UsageError
from autocode.providers import (
    Implementation,
    Plan,
    Provider,
    ProviderConfig,
    ProviderContext,
    ProviderKind,
    RequirementsReport,
    Review,
)
from autocode.providers import register as register_provider
from autocode.providers.fixture import scripted_diff


@dataclass(frozen=True)
class EchoSettings:
    target: str


class EchoProvider:
    name = "echo"

    def __init__(self, settings: EchoSettings) -> None:
        self.settings = settings
        self.model: str | None = settings.target

    def requirements(self, ctx: ProviderContext) -> RequirementsReport:
        return RequirementsReport(summary=f"Echo: {ctx.brief.strip()}", questions=[], acceptance_criteria=[],
                                  citations=["brief"], machine_decisions=[])

    def plan(self, ctx: ProviderContext, requirements: RequirementsReport) -> Plan:
        return Plan(summary=requirements.summary, steps=[f"Write the brief to {self.settings.target}."],
                    citations=["brief"], acceptance_criteria=[])

    def implement(self, ctx: ProviderContext, plan: Plan) -> Implementation:
        diff = scripted_diff(ctx.copy, [{"path": self.settings.target, "content": ctx.brief.strip() + "\n"}])
        return Implementation(diff=diff, summary=f"echoed the brief into {self.settings.target}")

    def investigate(self, ctx: ProviderContext) -> list[str]:
        return []

    def review(self, ctx: ProviderContext, diff: str, test_exit_code: int | None) -> Review:
        return Review(summary="echoed", concerns=[], lessons=[])


def _settings(config: ProviderConfig, role: str, model: str | None) -> EchoSettings:
    target = model or "ECHO.md"
    if not target.endswith(".md") or "/" in target:
        raise UsageError(f"role {role} uses the echo provider, whose model names a .md file at the top (got {target!r})")
    return EchoSettings(target)


def _build(settings: EchoSettings, config: ProviderConfig, role: str) -> Provider:
    return EchoProvider(settings)


def register() -> ProviderKind:
    return register_provider(ProviderKind("echo", _settings, _build))
