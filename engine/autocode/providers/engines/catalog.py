"""The settings one engine run takes, checked before a task starts: that the person chose it,
that it plays the implementer only, and that its program is on PATH."""

from __future__ import annotations

import importlib
import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autocode.providers.engines.base import Adapter, EngineError

if TYPE_CHECKING:
    from autocode.providers import ProviderConfig


@dataclass(frozen=True)
class EngineSettings:
    name: str
    adapter: str  # "module:Class" of its adapter
    program: str  # the program's full path on the host
    model: str | None
    base_url: str | None
    api_key_env: str | None
    idle_timeout: float
    time_budget: float
    context_window: int | None


def load_adapter(spec: str) -> Adapter:
    """The adapter named by "module:Class"."""
    module, _, cls = spec.partition(":")
    made: Adapter = getattr(importlib.import_module(module), cls)()
    return made


def program_path(found: Adapter, path: str | None = None) -> str | None:
    """Where the engine's program is on PATH (the environment AutoCode runs in), or None."""
    return shutil.which(found.program, path=path if path is not None else os.environ.get("PATH"))


def engine_settings(name: str, spec: str, config: ProviderConfig, role: str) -> EngineSettings:
    if config.engine != name:
        raise EngineError(
            f"{name} is an engine (a program AutoCode would run), so only you choose it: set "
            f'engine = "{name}" in your user config (~/.config/autocode/config.toml) or pass --engine {name}; '
            "it cannot be a provider or a route",
            kind="engineRefused",
        )
    if role != "implementer":
        raise EngineError(f"the {name} engine plays the implementer only, not the {role} role", kind="engineRefused")
    found = load_adapter(spec)
    program = program_path(found)
    if program is None:
        raise EngineError(
            f"the {name} engine's program {found.program!r} is not on PATH. Remedy: {found.install}; "
            "or unset engine to use AutoCode's own loop",
            kind="engineMissing",
        )
    return EngineSettings(
        name=name, adapter=spec, program=program, model=config.engine_model, base_url=config.engine_base_url,
        api_key_env=config.engine_api_key_env, idle_timeout=config.engine_idle_timeout,
        time_budget=config.time_budget, context_window=config.context_window,
    )
