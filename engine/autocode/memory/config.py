"""The settings that pick and shape a memory store, read into one hashable `StoreConfig`.

`StoreConfig` is the key of the process's store pool (`memory.pool`): two
workspaces with the same memory settings share one open store. A workspace's
configuration is read with `config_for(workspace)`, which resolves only the
memory settings (no test detection, which walks the workspace).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

SETTING_NAMES: tuple[str, ...] = (
    "memory_max_count",
    "database_url",
    "memory_path",
    "embedding_provider",
    "embedding_model",
    "embedding_base_url",
    "embedding_api_key_env",
)
DEFAULTS: dict[str, Any] = {"memory_max_count": 200, "embedding_provider": "auto"}
SQLITE_PREFIX = "sqlite://"


def default_memory_path() -> Path:
    """memory.sqlite3 in the user data folder (XDG_DATA_HOME on Linux)."""
    # lazy: not needed by the server's `initialize`, which imports this module
    import platformdirs

    return Path(platformdirs.user_data_dir("autocode", appauthor=False)) / "memory.sqlite3"


def store_url(database_url: Any, memory_path: Any) -> str:
    """The store's URL: `database_url` when set, else `sqlite://` and the SQLite file's absolute path."""
    if database_url:
        return str(database_url)
    path = Path(str(memory_path)).expanduser().absolute() if memory_path else default_memory_path()
    return SQLITE_PREFIX + str(path)


@dataclass(frozen=True)
class StoreConfig:
    """Which store (its URL, see `memory.backends`) and how it searches and evicts."""

    url: str
    max_count: Any = DEFAULTS["memory_max_count"]
    embedding_provider: Any = DEFAULTS["embedding_provider"]
    embedding_model: Any = None
    embedding_base_url: Any = None
    embedding_api_key_env: Any = None


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def config_of(settings: Any = None, **overrides: Any) -> StoreConfig:
    """The configuration `settings` (anything with `.value(name)`) and keyword overrides name.

    Overrides use the setting names (and `roles`, `_upgrade`, which are not part of it).
    """
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
        values[name] = DEFAULTS.get(name) if value is None else value
    return StoreConfig(
        url=store_url(values["database_url"], values["memory_path"]),
        max_count=_hashable(values["memory_max_count"]),
        embedding_provider=_hashable(values["embedding_provider"]),
        embedding_model=_hashable(values["embedding_model"]),
        embedding_base_url=_hashable(values["embedding_base_url"]),
        embedding_api_key_env=_hashable(values["embedding_api_key_env"]),
    )


def config_for(workspace: Path | str | None) -> StoreConfig:
    """The configuration of `workspace`'s settings (only the memory ones); the defaults without one."""
    if workspace is None:
        return config_of(None)
    # lazy: not needed by the server's `initialize`, which imports this module
    from autocode.settings import resolve_settings

    return config_of(resolve_settings(workspace, only=SETTING_NAMES))
