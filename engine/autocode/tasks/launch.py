"""What a task is launched with: settings with origins, the record as loaded, recalled memories.

Everything here is read once, at start, and frozen into the run's
`launch.json`; later phases (and resumed processes) read only that file, so
editing or forgetting `.autocode/project.json` mid-run changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autocode.memory import MemoryContext, config_of
from autocode.memory.pool import lease, lease_for
from autocode.settings import resolve_settings

SETTING_NAMES = (
    "test_command",
    "framework",
    "test_timeout",
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "routes",
    "agent",
    "max_turns",
    "token_budget",
    "time_budget",
    "edit_format",
    "reading_roles",
    "api_version",
    "deployment",
    "request_timeout",
    "endpoint_family",
    "temperature",
    "response_format",
    "max_output_tokens",
    "context_window",
    "stream",
    "engine",
    "engine_model",
    "engine_base_url",
    "engine_api_key_env",
    "engine_idle_timeout",
    "sandbox",
    "sandbox_network",
    "sandbox_env",
)


@dataclass
class Launch:
    settings: dict[str, Any]  # doctor's shape, with origins
    values: dict[str, Any]  # the resolved value of each setting the task uses
    record: dict[str, Any]  # status, path, problems and the record as loaded
    conventions: list[dict[str, str]]  # project data handed to requirements
    settings_obj: Any  # the SettingsSnapshot itself (not stored)


def resolve_launch(workspace: Path, flags: dict[str, Any], package: str | None) -> Launch:
    snapshot = resolve_settings(workspace, flags=flags or None, package=package)
    values = {name: _plain(snapshot.value(name)) for name in SETTING_NAMES}
    origins = {name: snapshot[name].origin for name in SETTING_NAMES}
    load = snapshot.record
    record_data = _plain(getattr(load, "record", None))
    conventions: list[dict[str, str]] = []
    if getattr(load, "status", None) == "valid" and isinstance(record_data, dict):
        for item in record_data.get("conventions") or []:
            if isinstance(item, dict) and item.get("question") and item.get("answer") is not None:
                conventions.append({"question": str(item["question"]), "answer": str(item["answer"])})
    record = {
        "status": getattr(load, "status", "missing"),
        "path": str(getattr(load, "path", "")),
        "problems": [str(p) for p in getattr(load, "problems", []) or []],
        "record": record_data,
    }
    settings = _plain(snapshot.to_dict())
    return Launch(
        settings=settings if isinstance(settings, dict) else {},
        values={**values, "origins": origins},
        record=record,
        conventions=conventions,
        settings_obj=snapshot,
    )


def recall_memories(settings_obj: Any, workspace: Path, agent: str, run_id: str, brief: str) -> dict[str, Any]:
    """What memory recalls for this run: both sections with content, the receipt, the rendered text."""
    with lease(config_of(settings_obj)) as service:
        ctx = MemoryContext(agent=agent, repository=workspace, run_id=run_id)
        recalled = service.recall(ctx, brief)
        data = recalled.to_dict()
        data["receipt"] = recalled.receipt()
        data["rendered"] = recalled.render()
        return data


def save_memory(workspace: Path, agent: str, run_id: str, content: str, item: dict[str, Any]) -> dict[str, Any]:
    """A save_memory call made by a role during the run, under the memory part's rules.

    The store is opened from the workspace's settings as they are now: the
    launch snapshot keeps database URLs masked, so it cannot name the store.
    """
    with lease_for(workspace) as service:
        ctx = MemoryContext(agent=agent, repository=workspace, run_id=run_id)
        result = service.save(
            ctx,
            content,
            category=item.get("category"),
            scope=item.get("scope"),
            shared=bool(item.get("shared", False)),
        )
        return result.to_dict()


def record_lessons(workspace: Path, agent: str, run_id: str, lessons: list[str]) -> list[str]:
    """Queue a completed run's lessons for `autocode memory reflect` (which applies the refusal rules)."""
    with lease_for(workspace) as service:
        ctx = MemoryContext(agent=agent, repository=workspace, run_id=run_id)
        return list(service.record_lessons(ctx, lessons))


def _plain(value: Any) -> Any:
    """JSON-ready data from pydantic models, dataclasses with to_dict, paths and containers."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(mode="json"))
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return str(value)
