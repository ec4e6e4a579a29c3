"""Resolving settings through their layers into an immutable snapshot with origins.

Layers: the command-line flag, the person's user config
(`$XDG_CONFIG_HOME/autocode/config.toml`), `.autocode/config.toml`,
`[tool.autocode]` in pyproject.toml, the learned record, detection, built-in
defaults. Which of them may give a setting, and in which order, follows the
setting's class (`schema.SETTING_CLASSES`):

- team:        flag > config.toml > pyproject > learned > detected > user config > default
               (the user config never gives `test_command` or `framework`);
- destination: flag > user config > config.toml > pyproject > default, the
               repository's files only once the person trusted their values (`trust`);
- person:      flag > user config > default; never a repository's file.

Each resolved value says which layer and file won and which lower-layer values
it shadows; values a layer sets but AutoCode does not use are kept, with the
reason, in `SettingsSnapshot.ignored`. A task stores the snapshot at launch, so
editing or forgetting files later cannot change a run in progress.
"""

from __future__ import annotations

import os
import types
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocode.errors import UsageError
from autocode.record.load import RecordLoad, load_record
from autocode.record.location import check_workspace
from autocode.settings import trust as trust_mod
from autocode.settings.layers import (
    DETECTED_SETTINGS,
    Layer,
    Origin,
    config_layer,
    default_layer,
    detected_layer,
    flag_layer,
    learned_layer,
    pyproject_layer,
    short_path,
    user_layer,
)
from autocode.settings.schema import (
    DESTINATION_SETTINGS,
    OFFLINE_PROVIDERS,
    SETTING_CLASSES,
    SETTING_NAMES,
)
from autocode.settings.trust import AskedValue, IgnoredValue, RepositoryTrust
from autocode.settings.values import freeze as _freeze
from autocode.settings.values import thaw as _thaw

PRECEDENCE: dict[str, tuple[Origin, ...]] = {
    "team": ("flag", "config", "pyproject", "learned", "detected", "user", "default"),
    "destination": ("flag", "user", "config", "pyproject", "default"),
    "person": ("flag", "user", "default"),
}


@dataclass(frozen=True)
class ShadowedValue:
    value: Any
    origin: Origin
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"value": _thaw(self.value, mask=True), "origin": self.origin, "source": self.source}


@dataclass(frozen=True)
class ResolvedValue:
    name: str
    value: Any
    origin: Origin
    source: str
    shadowed: tuple[ShadowedValue, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": _thaw(self.value, mask=True),
            "origin": self.origin,
            "source": self.source,
            "shadowed": [s.to_dict() for s in self.shadowed],
        }


@dataclass(frozen=True)
class SettingsSnapshot:
    """Every setting resolved once; immutable (mappings are read-only views, lists are tuples)."""

    workspace: Path
    package: Path | None
    values: Mapping[str, ResolvedValue]
    warnings: tuple[str, ...] = ()
    record: RecordLoad | None = field(default=None, compare=False)
    trust: RepositoryTrust | None = field(default=None, compare=False)
    """What the repository's files ask for (destination values) and whether the person trusted it."""
    ignored: tuple[IgnoredValue, ...] = ()
    """Values a layer sets that are not used, each with the reason (doctor shows them)."""

    def value(self, name: str) -> Any:
        return self[name].value

    def __getitem__(self, name: str) -> ResolvedValue:
        try:
            return self.values[name]
        except KeyError:
            raise KeyError(f"unknown setting {name!r}; known: {', '.join(self.values)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def to_dict(self) -> dict[str, Any]:
        """Doctor's `settings` shape. Passwords inside URLs are masked; use `.value()` for the real one."""
        return {name: resolved.to_dict() for name, resolved in self.values.items()}


def _memory_file(name: str, value: Any, root: Path) -> tuple[Path, bool] | None:
    """The file a repository's `memory_path` or SQLite `database_url` names, absolute (relative
    to the workspace), and whether it was given relative; None when the value names no file."""
    text = str(value)
    if name == "database_url":
        if not text.startswith("sqlite://"):
            return None
        text = text[len("sqlite://"):]
    path = Path(text).expanduser()
    return (path, False) if path.is_absolute() else (root / path, True)


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(os.path.abspath(path)).resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


_STORE_SETTINGS = frozenset({"memory_path", "database_url"})


def _gate_repository(layers: Mapping[str, Layer], root: Path, ignored: list[IgnoredValue]) -> list[AskedValue]:
    """Take the values a repository may never set out of its layers (person-only settings, a
    memory store inside the repository) and list the destination values it sets: those are
    used once the person trusted them."""
    asks: list[AskedValue] = []
    for origin in ("config", "pyproject"):
        layer = layers[origin]
        for name in list(layer.values):
            kind = SETTING_CLASSES[name]
            value, source = layer.values[name]
            if kind == "person":
                del layer.values[name]
                ignored.append(IgnoredValue(
                    name, value, origin, source,
                    "a repository cannot relax your sandbox, trusted or not; set it in your user config "
                    f"({short_path(trust_mod.user_config_path())}) or pass it on the command line",
                ))
            elif kind == "destination":
                memory_file = _memory_file(name, value, root) if name in _STORE_SETTINGS else None
                if memory_file is not None:
                    path, relative = memory_file
                    # A relative SQLite URL is opened from the current folder: often the workspace.
                    if _inside(path, root) or (relative and name == "database_url"):
                        del layer.values[name]
                        ignored.append(IgnoredValue(
                            name, value, origin, source,
                            "a repository cannot keep your memories inside itself, trusted or not (the "
                            "store holds what you taught AutoCode in every project); set memory_path "
                            f"outside it in your user config ({short_path(trust_mod.user_config_path())})",
                        ))
                        continue
                    if name == "memory_path":
                        layer.values[name] = (str(path), source)
                if name == "routes":
                    value = _networked_routes(value)
                    if not value:
                        continue  # every route names the offline provider: a team setting
                if name == "provider" and value in OFFLINE_PROVIDERS:
                    continue  # the offline provider sends nothing anywhere
                asks.append(AskedValue(name, value, origin, source))
    return asks


def _networked_routes(routes: Any) -> dict[str, str]:
    """The routes that name a provider with an endpoint (not the offline fixture provider)."""
    return {
        role: str(target) for role, target in dict(routes).items()
        if str(target).partition(":")[0] not in OFFLINE_PROVIDERS
    }


def _withhold(layers: Mapping[str, Layer], trust: RepositoryTrust, ignored: list[IgnoredValue]) -> None:
    """Remove the asked values of an untrusted repository from its layers, saying why."""
    if trust.status == "changed":
        reason = (
            "this repository's values changed since you trusted them; ignored until you trust "
            f"it again: {trust.command}"
        )
    else:
        reason = f"ignored until you trust this repository: {trust.command}"
    for ask in trust.asks:
        layer = layers[ask.origin]
        if ask.name == "routes" and ask.name in layer.values:
            # Routes to the offline provider stay: they send nothing anywhere.
            routes, source = layer.values["routes"]
            kept = {r: t for r, t in dict(routes).items() if r not in ask.value}
            layer.values["routes"] = (kept, source)
            if not kept:
                del layer.values["routes"]
            ignored.append(IgnoredValue(ask.name, ask.value, ask.origin, ask.source, reason))
        elif ask.name in layer.values:
            del layer.values[ask.name]
            ignored.append(IgnoredValue(ask.name, ask.value, ask.origin, ask.source, reason))


def _check_folders(workspace: Path | str, package: Path | str | None) -> tuple[Path, Path | None]:
    root = check_workspace(workspace)
    if package is None:
        return root, None
    folder = (root / package).absolute()
    if not folder.is_dir():
        raise UsageError(f"package {package} is not a directory inside {workspace}; pass the package's folder")
    try:
        folder.resolve().relative_to(root.resolve())
    except ValueError:
        raise UsageError(f"package {package} is outside the workspace {workspace}; pass a folder inside it") from None
    return root, folder


def _pick(name: str, layers: Mapping[str, Layer]) -> list[tuple[Origin, Any, str]]:
    """Every value of `name`, in the order its class gives the layers (the first one wins)."""
    order = PRECEDENCE[SETTING_CLASSES[name]]
    return [(origin, *layers[origin].values[name]) for origin in order if name in layers[origin].values]


def resolve_settings(
    workspace: Path | str,
    flags: Mapping[str, Any] | None = None,
    package: Path | str | None = None,
    *,
    only: Collection[str] | None = None,
) -> SettingsSnapshot:
    """Resolve every setting for `workspace` (optionally one `package` folder inside it).

    `flags` maps setting names to command-line values (None means not given).
    `only` resolves just those names (the snapshot holds no others), and looks for a
    test command only when one of them is detected: the memory store's settings
    are read on every memory command, and detection walks the workspace.
    A repository's destination values are used only when its person trusted them
    (`snapshot.trust`); untrusted and person-only values are listed in `snapshot.ignored`.
    Raises SettingsError (exit 2) for malformed TOML or a wrong type, UsageError for a bad path.
    """
    root, package_dir = _check_folders(workspace, package)
    warnings: list[str] = []
    ignored: list[IgnoredValue] = []
    record = load_record(root)
    wanted = None if only is None else frozenset(only)
    detect = wanted is None or bool(wanted & DETECTED_SETTINGS)
    read = [
        flag_layer(flags),
        user_layer(warnings, ignored),
        config_layer(root, warnings),
        pyproject_layer(root, warnings),
        learned_layer(record, root, package_dir, warnings),
        detected_layer(root, package_dir) if detect else Layer("detected", {}),
        default_layer(),
    ]
    layers: dict[str, Layer] = {layer.origin: layer for layer in read}
    asks = _gate_repository(layers, root, ignored)
    trust = _trust_of(root, asks, layers)
    if not trust.trusted:
        _withhold(layers, trust, ignored)
    resolved: dict[str, ResolvedValue] = {}
    for name in SETTING_NAMES:
        if wanted is not None and name not in wanted:
            continue
        found = _pick(name, layers)
        (origin, value, source), rest = found[0], found[1:]
        shadowed = tuple(
            ShadowedValue(_freeze(v), o, s) for o, v, s in rest if not (o == "default" and v is None)
        )
        resolved[name] = ResolvedValue(name, _freeze(value), origin, source, shadowed)
    return SettingsSnapshot(
        workspace=root,
        package=package_dir,
        values=types.MappingProxyType(resolved),
        warnings=tuple(warnings),
        record=record,
        trust=trust,
        ignored=tuple(ignored),
    )


def _trust_of(root: Path, asks: list[AskedValue], layers: Mapping[str, Layer]) -> RepositoryTrust:
    """Whether the person trusted exactly `asks`, and what they would do (described with the
    destination values as they would be once trusted)."""
    real = root.resolve()
    digest = trust_mod.digest_of(real, asks)
    status = trust_mod.status_of(real, asks, digest)
    effective: dict[str, Any] = {}
    if asks:
        for name in DESTINATION_SETTINGS:
            found = _pick(name, layers)
            effective[name] = _thaw(found[0][1]) if found else None
    says = tuple(trust_mod.describe_requests(asks, effective)) if asks else ()
    return RepositoryTrust(real, tuple(asks), digest, status, says)
