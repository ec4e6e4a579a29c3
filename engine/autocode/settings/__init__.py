"""AutoCode settings: one schema, seven layers, the origin of every value, and trust.

`resolve_settings(workspace, flags=None, package=None)` returns an immutable
`SettingsSnapshot`. A repository's destination values (where data or secrets go)
apply once its person trusted them (`trust_repository`); `snapshot.trust` says
what the repository asks for, `snapshot.ignored` what is not used and why.
Importing this package is cheap; pydantic loads when a snapshot is first resolved.
"""

from autocode.settings.consent import (
    repository_trust,
    require_trust,
    revoke_trust,
    trust_repository,
)
from autocode.settings.layers import ORIGINS, SettingsError
from autocode.settings.relaxations import SandboxRelaxations, sandbox_relaxations
from autocode.settings.resolve import (
    PRECEDENCE,
    ResolvedValue,
    SettingsSnapshot,
    ShadowedValue,
    resolve_settings,
)
from autocode.settings.schema import (
    DESTINATION_SETTINGS,
    PERSON_SETTINGS,
    SETTING_CLASSES,
    SETTING_NAMES,
)
from autocode.settings.trust import (
    AskedValue,
    IgnoredValue,
    RepositoryTrust,
    TrustChanged,
    TrustRequired,
    describe_requests,
    user_config_path,
)

__all__ = [
    "DESTINATION_SETTINGS",
    "ORIGINS",
    "PERSON_SETTINGS",
    "PRECEDENCE",
    "SETTING_CLASSES",
    "SETTING_NAMES",
    "AskedValue",
    "IgnoredValue",
    "RepositoryTrust",
    "ResolvedValue",
    "SandboxRelaxations",
    "SettingsError",
    "SettingsSnapshot",
    "ShadowedValue",
    "TrustChanged",
    "TrustRequired",
    "describe_requests",
    "repository_trust",
    "require_trust",
    "resolve_settings",
    "revoke_trust",
    "sandbox_relaxations",
    "trust_repository",
    "user_config_path",
]
