"""Agent and team memories: stores, rules, search, recall, eviction, reflection and promotion.

`open_memory(settings)` gives a MemoryService on the configured store:
SQLite in the user data folder by default, PostgreSQL when `database_url` is
set. Heavy modules (psycopg, the embedding model) load only when used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autocode.memory.model import (
    DEFAULT_ROLES,
    Hit,
    Memory,
    MemoryContext,
    MemoryNotFound,
    MemoryStoreError,
    NoRepositoryInContext,
    PromotionCandidate,
    PromotionPlan,
    PromotionResult,
    RecallReceipt,
    ReflectionProposal,
    ReflectionResult,
    Refusal,
    SaveResult,
    SearchResult,
    Skill,
    StoreUnavailable,
)
from autocode.memory.repokey import NotARepository, is_repository_key, repository_key
from autocode.memory.service import SAVE_DESCRIPTION, MemoryService

__all__ = [
    "DEFAULT_ROLES",
    "SAVE_DESCRIPTION",
    "Hit",
    "Memory",
    "MemoryContext",
    "MemoryNotFound",
    "MemoryService",
    "MemoryStoreError",
    "NoRepositoryInContext",
    "NotARepository",
    "PromotionCandidate",
    "PromotionPlan",
    "PromotionResult",
    "RecallReceipt",
    "ReflectionProposal",
    "ReflectionResult",
    "Refusal",
    "SaveResult",
    "SearchResult",
    "Skill",
    "StoreUnavailable",
    "default_memory_path",
    "doctor_section",
    "is_repository_key",
    "open_memory",
    "repository_key",
]

SETTING_NAMES: tuple[str, ...] = (
    "memory_max_count",
    "database_url",
    "memory_path",
    "embedding_provider",
    "embedding_model",
    "embedding_base_url",
    "embedding_api_key_env",
)
_DEFAULTS: dict[str, Any] = {"memory_max_count": 200, "embedding_provider": "auto"}


def default_memory_path() -> Path:
    """memory.sqlite3 in the user data folder (XDG_DATA_HOME on Linux)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("autocode", appauthor=False)) / "memory.sqlite3"


def _read_settings(settings: Any, overrides: dict[str, Any]) -> dict[str, Any]:
    unknown = set(overrides) - set(SETTING_NAMES) - {"roles", "_upgrade"}
    if unknown:
        raise TypeError(f"open_memory() got unknown settings: {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    for name in SETTING_NAMES:
        if name in overrides:
            values[name] = overrides[name]
            continue
        value = None
        if settings is not None:
            try:
                value = settings.value(name)
            except (KeyError, AttributeError, LookupError):
                value = None
        values[name] = _DEFAULTS.get(name) if value is None else value
    return values


def _max_count(value: Any) -> int:
    from autocode.errors import UsageError

    try:
        count = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"memory_max_count must be a whole number (got {value!r})") from None
    if count < 1:
        raise UsageError(f"memory_max_count must be at least 1 (got {count})")
    return count


def open_memory(settings: Any = None, **overrides: Any) -> MemoryService:
    """A MemoryService on the store the settings name; keyword overrides win over `settings`.

    `settings` is a SettingsSnapshot (anything with `.value(name)`); overrides
    use the same names: memory_max_count, database_url, memory_path,
    embedding_provider, embedding_model, embedding_base_url,
    embedding_api_key_env, plus `roles` (the agents promotion may target).
    """
    from autocode.memory.embeddings import select_embedder
    from autocode.memory.store import Store

    values = _read_settings(settings, overrides)
    upgrade = bool(overrides.get("_upgrade", True))  # doctor looks without upgrading
    store: Store
    if values["database_url"]:
        from autocode.memory.pg_store import PostgresStore

        store = PostgresStore(str(values["database_url"]), upgrade=upgrade)
    else:
        from autocode.memory.sqlite_store import SqliteStore

        path = Path(values["memory_path"]).expanduser() if values["memory_path"] else default_memory_path()
        store = SqliteStore(path, upgrade=upgrade)
    choice = select_embedder(
        values["embedding_provider"],
        values["embedding_model"],
        values["embedding_base_url"],
        values["embedding_api_key_env"],
    )
    roles = overrides.get("roles") or DEFAULT_ROLES
    return MemoryService(store, choice, max_count=_max_count(values["memory_max_count"]), roles=roles)


def doctor_section(settings: Any = None, **overrides: Any) -> dict[str, Any]:
    """Memory health for `autocode doctor`: store kind, location (no secrets), search mode and why.

    A SQLite file that does not exist yet is reported, not created.
    """
    from autocode.memory.embeddings import select_embedder
    from autocode.memory.pg_store import redact_url

    values = _read_settings(settings, overrides)
    choice = select_embedder(
        values["embedding_provider"],
        values["embedding_model"],
        values["embedding_base_url"],
        values["embedding_api_key_env"],
    )
    section: dict[str, Any] = {
        "store": "postgresql" if values["database_url"] else "sqlite",
        "search_mode": "hybrid" if choice.embedder is not None else "keyword",
        "embedding_provider": choice.provider,
        "embedding_model": choice.embedder.model if choice.embedder else None,
        "why": choice.reason,
        "max_count": values["memory_max_count"],
    }
    if values["database_url"]:
        section["location"] = redact_url(str(values["database_url"]))
    else:
        path = Path(values["memory_path"]).expanduser() if values["memory_path"] else default_memory_path()
        section["location"] = str(path)
        if not path.exists():
            section.update(ok=True, status="not created yet (made on the first save)", memories=0)
            return section
    try:
        with open_memory(settings, **{"_upgrade": False, **overrides}) as service:
            info = service.doctor()
    except Exception as exc:  # doctor reports every failure rather than raising
        message = getattr(exc, "message", None) or str(exc)
        section.update(ok=False, status=f"unavailable: {message}")
        return section
    section.update(
        ok=True,
        status="ok",
        memories=info["memories"],
        schema_version=info["schema_version"],
        vectors=info["vectors"],
        index=info["index"],
    )
    return section
