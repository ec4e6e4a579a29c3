"""Resolving settings through their layers into an immutable snapshot with origins.

Layers, highest first: command-line flag, `.autocode/config.toml`,
`[tool.autocode]` in pyproject.toml, the learned record, detection, built-in
defaults. Each resolved value says which layer and file won and which
lower-layer values it shadows. A task stores the snapshot at launch, so
editing or forgetting files later cannot change a run in progress.
"""

from __future__ import annotations

import re
import tomllib
import types
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from autocode.errors import SetupError, UsageError
from autocode.record.load import RecordLoad, load_record
from autocode.record.location import check_workspace, display_path
from autocode.settings.schema import LEARNED_SETTINGS, SETTING_NAMES, Settings, flag_name

Origin = Literal["flag", "config", "pyproject", "learned", "detected", "default"]
ORIGINS: tuple[Origin, ...] = ("flag", "config", "pyproject", "learned", "detected", "default")
CONFIG_RELPATH = ".autocode/config.toml"
PYPROJECT_RELPATH = "pyproject.toml"
DEFAULT_SOURCE = "built-in"


class SettingsError(SetupError):
    """A settings file or flag AutoCode cannot use; the message names the file, line or key."""

    kind = "settingsError"


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


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return types.MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


_URL_PASSWORD = re.compile(r"(?<=://)([^:/@\s]*):[^@/\s]+@")


def _thaw(value: Any, *, mask: bool = False) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v, mask=mask) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v, mask=mask) for v in value]
    if mask and isinstance(value, str):
        return _URL_PASSWORD.sub(r"\1:***@", value)
    return value


_TOML_TYPES = {
    "str": "a string",
    "int": "an integer",
    "float": "a float",
    "bool": "a boolean",
    "dict": "a table",
    "list": "an array",
    "datetime": "a date-time",
    "date": "a date",
    "time": "a time",
}
_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "dict_type": "a table of strings",
    "greater_than": "a number greater than {gt}",
    "string_too_short": "a non-empty string",
    "string_too_long": "a string of at most {max_length} characters",
    "string_pattern_mismatch": 'a string of the form "provider:model"',
    "literal_error": "one of {expected}",
}


def _type_errors(exc: ValidationError, source: str) -> SettingsError:
    problems = []
    first: dict[str, Any] = {}
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        template = _EXPECTED.get(error["type"])
        context = error.get("ctx") or {}
        expected = template.format(**context) if template else error["msg"].lower()
        found = _TOML_TYPES.get(type(error["input"]).__name__, type(error["input"]).__name__)
        problems.append(f"{source}: setting '{key}' must be {expected} (found {found})")
        first = first or {"file": source, "key": key, "expected": expected}
    message = "; ".join(problems) + f". Fix the value in {source}."
    return SettingsError(message, data=first)


def _validate_layer(values: Mapping[str, Any], source: str, *, strict: bool) -> dict[str, Any]:
    """The values set in one layer, typed by the schema; raises SettingsError naming source and key."""
    try:
        model = Settings.model_validate(dict(values), strict=strict)
    except ValidationError as exc:
        raise _type_errors(exc, source) from None
    return {name: getattr(model, name) for name in model.model_fields_set}


_TOML_LINE = re.compile(r"line (\d+)")


def _read_toml(path: Path, label: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise SettingsError(f"{label} is a directory; it must be a TOML file", data={"file": label}) from None
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_LINE.search(str(exc))
        line = int(found.group(1)) if found else None
        where = f" line {line}" if line else ""
        raise SettingsError(
            f"{label}:{where} is not valid TOML ({exc}); fix the syntax on that line",
            data={"file": label, "line": line},
        ) from None
    except UnicodeDecodeError:
        raise SettingsError(f"{label} is not UTF-8 text; save it as UTF-8", data={"file": label}) from None
    except OSError as exc:
        raise SettingsError(
            f"cannot read {label}: {exc.strerror or exc}; check its permissions", data={"file": label}
        ) from None
    return data


# Names people reach for that AutoCode spells otherwise.
RENAMED = {"timeout": "request_timeout", "max_tokens": "max_output_tokens", "num_ctx": "context_window"}


def _split_unknown(table: Mapping[str, Any], label: str, warnings: list[str]) -> dict[str, Any]:
    known = {k: v for k, v in table.items() if k in SETTING_NAMES}
    for key in table:
        if key not in SETTING_NAMES:
            hint = f"; did you mean {RENAMED[key]}?" if key in RENAMED else ""
            warnings.append(f"{label}: unknown setting '{key}' is ignored{hint} (known settings: see docs/settings.md)")
    return known


@dataclass
class _Layer:
    origin: Origin
    values: dict[str, tuple[Any, str]]  # name -> (value, source)


def _flag_layer(flags: Mapping[str, Any] | None) -> _Layer:
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    unknown = [k for k in given if k not in SETTING_NAMES]
    if unknown:
        raise UsageError(f"unknown setting flag(s): {', '.join(unknown)}")
    values = _validate_layer(given, "command line", strict=False) if given else {}
    return _Layer("flag", {k: (v, flag_name(k)) for k, v in values.items()})


def _config_layer(workspace: Path, warnings: list[str]) -> _Layer:
    data = _read_toml(workspace / CONFIG_RELPATH, CONFIG_RELPATH)
    if not data:
        return _Layer("config", {})
    values = _validate_layer(_split_unknown(data, CONFIG_RELPATH, warnings), CONFIG_RELPATH, strict=True)
    return _Layer("config", {k: (v, CONFIG_RELPATH) for k, v in values.items()})


def _pyproject_layer(workspace: Path, warnings: list[str]) -> _Layer:
    data = _read_toml(workspace / PYPROJECT_RELPATH, PYPROJECT_RELPATH)
    tool = (data or {}).get("tool")
    table = tool.get("autocode") if isinstance(tool, dict) else None
    if table is None:
        return _Layer("pyproject", {})
    label = f"{PYPROJECT_RELPATH} [tool.autocode]"
    if not isinstance(table, dict):
        raise SettingsError(f"{label} must be a table of settings", data={"file": PYPROJECT_RELPATH})
    values = _validate_layer(_split_unknown(table, label, warnings), label, strict=True)
    return _Layer("pyproject", {k: (v, PYPROJECT_RELPATH) for k, v in values.items()})


def _learned_layer(record: RecordLoad, workspace: Path, package: Path | None, warnings: list[str]) -> _Layer:
    if record.status in ("invalid", "unsupported", "unavailable"):
        detail = "; ".join(record.problems)
        warnings.append(
            f"the learned record {display_path(record.path, workspace)} is {record.status} and was ignored"
            + (f": {detail}" if detail else "")
        )
    if record.record is None or package is not None:
        # The record describes the whole repository, never one package of it.
        return _Layer("learned", {})
    source = display_path(record.path, workspace)
    values: dict[str, tuple[Any, str]] = {}
    for name in LEARNED_SETTINGS:
        value = getattr(record.record, name)
        if value is not None:
            values[name] = (value, source)
    return _Layer("learned", values)


DETECTED_SETTINGS = frozenset({"framework", "test_command"})
"""The settings detection can give (`_detected_layer`)."""


def _detected_layer(workspace: Path, package: Path | None) -> _Layer:
    # lazy: not needed by the server's first memory save, which imports this module
    from autocode.detect import detect_tests

    folder = package or workspace
    found = detect_tests(folder, workspace)
    if found is None:
        return _Layer("detected", {})
    source = display_path(folder / found.source, workspace)
    return _Layer("detected", {"framework": (found.framework, source), "test_command": (found.test_command, source)})


def _default_layer() -> _Layer:
    defaults = Settings()
    return _Layer("default", {name: (getattr(defaults, name), DEFAULT_SOURCE) for name in Settings.model_fields})




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
    Raises SettingsError (exit 2) for malformed TOML or a wrong type, UsageError for a bad path.
    """
    root, package_dir = _check_folders(workspace, package)
    warnings: list[str] = []
    record = load_record(root)
    wanted = None if only is None else frozenset(only)
    detect = wanted is None or bool(wanted & DETECTED_SETTINGS)
    layers = [
        _flag_layer(flags),
        _config_layer(root, warnings),
        _pyproject_layer(root, warnings),
        _learned_layer(record, root, package_dir, warnings),
        _detected_layer(root, package_dir) if detect else _Layer("detected", {}),
        _default_layer(),
    ]
    resolved: dict[str, ResolvedValue] = {}
    for name in layers[-1].values:
        if wanted is not None and name not in wanted:
            continue
        found = [(layer.origin, *layer.values[name]) for layer in layers if name in layer.values]
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
    )
