"""The sandbox relaxations the person chose, read from a settings snapshot.

Only a flag or the person's user config can set them (`schema.PERSON`); a repository's
files never can, trusted or not. The sandbox reads them here:

    relaxations = sandbox_relaxations(resolve_settings(workspace))
    relaxations.enabled, relaxations.network, relaxations.env
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SandboxRelaxations:
    enabled: bool
    """False only when the person set `sandbox = "off"`."""
    network: str | tuple[str, ...]
    """"deny" (the default), "allow", or the host names sandboxed processes may reach."""
    env: tuple[str, ...]
    """Extra environment variable names let into sandboxed processes (none by default)."""
    origins: dict[str, str]
    """Where each of the three came from ("flag", "user" or "default") and the file or flag."""

    @property
    def relaxed(self) -> bool:
        """True when any of the three differs from the default protection."""
        return not self.enabled or self.network != "deny" or bool(self.env)


def sandbox_relaxations(snapshot: Any) -> SandboxRelaxations:
    """The three sandbox settings of `snapshot` (a `SettingsSnapshot`) as one value."""
    network = snapshot.value("sandbox_network")
    return SandboxRelaxations(
        enabled=snapshot.value("sandbox") != "off",
        network=network if isinstance(network, str) else tuple(str(h) for h in network),
        env=tuple(str(v) for v in snapshot.value("sandbox_env")),
        origins={
            name: f"{snapshot[name].origin} ({snapshot[name].source})"
            for name in ("sandbox", "sandbox_network", "sandbox_env")
        },
    )
