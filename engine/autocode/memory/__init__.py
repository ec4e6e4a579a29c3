"""Agent and team memories: stores, rules, search, recall, eviction, reflection and promotion.

`open_memory(settings)` gives a MemoryService on the configured store:
SQLite in the user data folder by default, PostgreSQL when `database_url` is
set. Heavy modules (psycopg, the embedding model) load only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autocode.memory.config import (
    SETTING_NAMES,
    StoreConfig,
    config_for,
    config_of,
    default_memory_path,
)
from autocode.memory.model import (
    DEFAULT_ROLES,
    Hit,
    Memory,
    MemoryContext,
    MemoryNotFound,
    MemoryStoreError,
    MemoryView,
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

if TYPE_CHECKING:
    from autocode.memory.service import SAVE_DESCRIPTION, MemoryService


def __getattr__(name: str) -> Any:
    # The service (rules, stores, ranking) loads on first use: the protocol module imports this
    # package's result models on the server's first command, which may never touch a store.
    if name in ("MemoryService", "SAVE_DESCRIPTION"):
        from autocode.memory import service  # on first use: see above

        return getattr(service, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ROLES",
    "SAVE_DESCRIPTION",
    "SETTING_NAMES",
    "Hit",
    "Memory",
    "MemoryContext",
    "MemoryNotFound",
    "MemoryService",
    "MemoryStoreError",
    "MemoryView",
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
    "StoreConfig",
    "StoreUnavailable",
    "config_for",
    "config_of",
    "default_memory_path",
    "doctor_section",
    "is_repository_key",
    "open_memory",
    "repository_key",
]

def open_memory(settings: Any = None, **overrides: Any) -> MemoryService:
    """A new MemoryService on the store the settings name; keyword overrides win over `settings`.

    `settings` is a SettingsSnapshot (anything with `.value(name)`); overrides
    use the same names: memory_max_count, database_url, memory_path,
    embedding_provider, embedding_model, embedding_base_url,
    embedding_api_key_env, plus `roles` (the agents promotion may target).
    The store is the backend of the URL's scheme (`memory.backends`). Most callers
    lease a long-lived service from `memory.pool` instead.
    """
    # lazy: not needed by the server's `initialize`, which imports this module
    from autocode.memory.pool import open_config

    upgrade = bool(overrides.get("_upgrade", True))  # doctor looks without upgrading
    return open_config(config_of(settings, **overrides), upgrade=upgrade, roles=overrides.get("roles"))


def doctor_section(settings: Any = None, **overrides: Any) -> dict[str, Any]:
    """Memory health for `autocode doctor`: store kind, location (no secrets), search mode and why.

    A SQLite file that does not exist yet is reported, not created.
    """
    # lazy: not needed by the server's `initialize`, which imports this module
    from autocode.memory.backends import backend_for
    from autocode.memory.embeddings import select_embedder

    config = config_of(settings, **overrides)
    choice = select_embedder(
        config.embedding_provider, config.embedding_model, config.embedding_base_url, config.embedding_api_key_env
    )
    section: dict[str, Any] = {
        "store": None,
        "search_mode": "hybrid" if choice.embedder is not None else "keyword",
        "embedding_provider": choice.provider,
        "embedding_model": choice.embedder.model if choice.embedder else None,
        "why": choice.reason,
        "max_count": config.max_count,
    }
    try:
        backend = backend_for(config.url)
    except StoreUnavailable as exc:
        section.update(store="unknown", ok=False, status=f"unavailable: {exc.message}")
        return section
    section["store"] = backend.name
    section["location"] = backend.location(config.url)
    early = backend.before_opening(config.url)
    if early is not None:
        section.update(early)
        return section
    try:
        info = _look(config)
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


def _look(config: StoreConfig) -> dict[str, Any]:
    """The store's doctor figures: through the pool's open service when there is one, else a
    service opened just for the look (without upgrading the schema) and closed again."""
    # lazy: not needed by the server's `initialize`, which imports this module
    from autocode.memory.pool import open_config, pool

    with pool().lease_if_open(config) as pooled:
        if pooled is not None:
            return pooled.doctor()
    with open_config(config, upgrade=False) as service:
        return service.doctor()
