"""AutoCode settings: one schema, six layers, and the origin of every value.

`resolve_settings(workspace, flags=None, package=None)` returns an immutable
`SettingsSnapshot`. Importing this package is cheap; pydantic loads when a
snapshot is first resolved.
"""

from autocode.settings.resolve import (
    ORIGINS,
    ResolvedValue,
    SettingsError,
    SettingsSnapshot,
    ShadowedValue,
    resolve_settings,
)

__all__ = [
    "ORIGINS",
    "ResolvedValue",
    "SettingsError",
    "SettingsSnapshot",
    "ShadowedValue",
    "resolve_settings",
]
