"""What the person allowed a task's programs: the sandbox on or off, the network, extra
environment names. Read from the resolved settings, and only from layers the person controls
(a flag, their user config, the built-in default); a repository's files never relax it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Layers a repository controls: a value from one of them never relaxes the sandbox.
REPOSITORY_ORIGINS = frozenset({"config", "pyproject", "learned", "detected"})


@dataclass(frozen=True)
class Policy:
    """What the person allowed (from layers they control, never a repository file)."""

    enabled: bool = True  # False only when the person set sandbox = "off"
    network: bool = False  # True only when the person set sandbox_network = "allow"
    env_names: tuple[str, ...] = ()  # extra environment names the person listed (sandbox_env)
    # Names that never enter the environment even when listed (the provider's key variables).
    refused_names: tuple[str, ...] = ()
    # Why a setting was not used as given (a repository's value, a host list): doctor and the run say so.
    notes: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "network": self.network,
            "env_names": list(self.env_names),
            "refused_names": list(self.refused_names),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Policy:
        """The policy a launch stored; anything missing or malformed keeps the strict default."""
        if not isinstance(data, Mapping):
            return cls()
        names = data.get("env_names")
        refused = data.get("refused_names")
        notes = data.get("notes")
        return cls(
            enabled=data.get("enabled") is not False,
            network=data.get("network") is True,
            env_names=tuple(str(n) for n in names) if isinstance(names, list) else (),
            refused_names=tuple(str(n) for n in refused) if isinstance(refused, list) else (),
            notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
        )


def _person_value(snapshot: Any, name: str, notes: list[str]) -> Any:
    """The value of `name` when a layer the person controls gave it, else None."""
    try:
        item = snapshot[name]
    except KeyError:
        return None  # a settings schema without the key: the default applies
    origin = getattr(item, "origin", "default")
    if origin == "default":
        return None
    if origin in REPOSITORY_ORIGINS:
        notes.append(
            f"{name} from {getattr(item, 'source', origin)} is ignored: only a flag or your user config "
            "may change the sandbox"
        )
        return None
    return item.value


def policy_from_settings(snapshot: Any) -> Policy:
    """The policy from a resolved `SettingsSnapshot` (`sandbox`, `sandbox_network`, `sandbox_env`).

    Keys that do not exist, hold an unexpected type, or come from a repository's files leave
    the strict default: sandbox on, no network, no extra names.
    """
    notes: list[str] = []
    enabled = _person_value(snapshot, "sandbox", notes) != "off"
    network_value = _person_value(snapshot, "sandbox_network", notes)
    network = network_value == "allow"
    if isinstance(network_value, list | tuple):
        # A host list needs a filtering proxy inside the sandbox; until there is one, a list
        # would either leak everything or nothing. Deny, and say so.
        notes.append(
            "sandbox_network as a list of hosts is not supported yet: the network stays denied; "
            'set sandbox_network = "allow" in your user config (or --sandbox-network allow) to allow all hosts'
        )
    env_value = _person_value(snapshot, "sandbox_env", notes)
    env_names = tuple(str(n) for n in env_value) if isinstance(env_value, list | tuple) else ()
    refused = []
    for key in ("api_key_env", "embedding_api_key_env"):
        try:
            value = snapshot.value(key)
        except KeyError:
            continue
        if isinstance(value, str) and value:
            refused.append(value)
    return Policy(enabled=enabled, network=network, env_names=env_names, refused_names=tuple(refused), notes=tuple(notes))
