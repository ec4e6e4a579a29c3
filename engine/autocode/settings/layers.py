"""Reading each settings layer: the flag, the person's user config, `.autocode/config.toml`,
`[tool.autocode]`, the learned record, detection and the defaults, each typed by the schema.

`resolve` orders them and decides what a repository's files may give.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from autocode.errors import SetupError, UsageError
from autocode.record.load import RecordLoad
from autocode.record.location import display_path
from autocode.settings.schema import (
    LEARNED_SETTINGS,
    REPOSITORY_ORDERED,
    SETTING_NAMES,
    Settings,
    flag_name,
)
from autocode.settings.trust import IgnoredValue, user_config_path
from autocode.settings.values import freeze

Origin = Literal["flag", "user", "config", "pyproject", "learned", "detected", "default"]
ORIGINS: tuple[Origin, ...] = ("flag", "user", "config", "pyproject", "learned", "detected", "default")
"""Every origin a value can have (the order of each class is `resolve.PRECEDENCE`)."""
CONFIG_RELPATH = ".autocode/config.toml"
PYPROJECT_RELPATH = "pyproject.toml"
DEFAULT_SOURCE = "built-in"


class SettingsError(SetupError):
    """A settings file or flag AutoCode cannot use; the message names the file, line or key."""

    kind = "settingsError"


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
    return {name: getattr(model, name) for name in Settings.model_fields if name in model.model_fields_set}


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
            # lazy: only for a key AutoCode does not know
            import difflib

            close = RENAMED.get(key) or next(iter(difflib.get_close_matches(str(key), sorted(SETTING_NAMES), n=1)), None)
            hint = f"; did you mean {close}?" if close else ""
            warnings.append(f"{label}: unknown setting '{key}' is ignored{hint} (known settings: see docs/settings.md)")
    return known


@dataclass
class Layer:
    origin: Origin
    values: dict[str, tuple[Any, str]]  # name -> (value, source)


def flag_layer(flags: Mapping[str, Any] | None) -> Layer:
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    unknown = [k for k in given if k not in SETTING_NAMES]
    if unknown:
        raise UsageError(f"unknown setting flag(s): {', '.join(unknown)}")
    values = _validate_layer(given, "command line", strict=False) if given else {}
    return Layer("flag", {k: (v, flag_name(k)) for k, v in values.items()})


def config_layer(workspace: Path, warnings: list[str]) -> Layer:
    data = _read_toml(workspace / CONFIG_RELPATH, CONFIG_RELPATH)
    if not data:
        return Layer("config", {})
    values = _validate_layer(_split_unknown(data, CONFIG_RELPATH, warnings), CONFIG_RELPATH, strict=True)
    return Layer("config", {k: (v, CONFIG_RELPATH) for k, v in values.items()})


def pyproject_layer(workspace: Path, warnings: list[str]) -> Layer:
    data = _read_toml(workspace / PYPROJECT_RELPATH, PYPROJECT_RELPATH)
    tool = (data or {}).get("tool")
    table = tool.get("autocode") if isinstance(tool, dict) else None
    if table is None:
        return Layer("pyproject", {})
    label = f"{PYPROJECT_RELPATH} [tool.autocode]"
    if not isinstance(table, dict):
        raise SettingsError(f"{label} must be a table of settings", data={"file": PYPROJECT_RELPATH})
    values = _validate_layer(_split_unknown(table, label, warnings), label, strict=True)
    return Layer("pyproject", {k: (v, PYPROJECT_RELPATH) for k, v in values.items()})


def learned_layer(record: RecordLoad, workspace: Path, package: Path | None, warnings: list[str]) -> Layer:
    if record.status in ("invalid", "unsupported", "unavailable"):
        detail = "; ".join(record.problems)
        warnings.append(
            f"the learned record {display_path(record.path, workspace)} is {record.status} and was ignored"
            + (f": {detail}" if detail else "")
        )
    if record.record is None or package is not None:
        # The record describes the whole repository, never one package of it.
        return Layer("learned", {})
    source = display_path(record.path, workspace)
    values: dict[str, tuple[Any, str]] = {}
    for name in LEARNED_SETTINGS:
        value = getattr(record.record, name)
        if value is not None:
            values[name] = (value, source)
    return Layer("learned", values)


DETECTED_SETTINGS = frozenset({"framework", "test_command"})
"""The settings detection can give (`_detected_layer`)."""


def detected_layer(workspace: Path, package: Path | None) -> Layer:
    # lazy: not needed by the server's first memory save, which imports this module
    from autocode.detect import detect_tests

    folder = package or workspace
    found = detect_tests(folder, workspace)
    if found is None:
        return Layer("detected", {})
    source = display_path(folder / found.source, workspace)
    return Layer("detected", {"framework": (found.framework, source), "test_command": (found.test_command, source)})


def default_layer() -> Layer:
    defaults = Settings()
    return Layer("default", {name: (getattr(defaults, name), DEFAULT_SOURCE) for name in Settings.model_fields})




def user_layer(warnings: list[str], ignored: list[IgnoredValue]) -> Layer:
    path = user_config_path()
    label = short_path(path)
    data = _read_toml(path, label)
    if not data:
        return Layer("user", {})
    table = _split_unknown(data, label, warnings)
    for name in REPOSITORY_ORDERED:
        if name in table:
            ignored.append(IgnoredValue(
                name, freeze(table.pop(name)), "user", label,
                f"the user config does not set {name}: it is the repository's (a flag, {CONFIG_RELPATH}, "
                "[tool.autocode], the learned record or detection gives it)",
            ))
    values = _validate_layer(table, label, strict=True)
    return Layer("user", {k: (v, label) for k, v in values.items()})


def short_path(path: Path) -> str:
    """`path` with the home folder written as ~ (doctor shows the person's own files so)."""
    home = os.path.expanduser("~")
    text = str(path)
    return "~" + text[len(home):] if home not in ("", "/") and text.startswith(home + os.sep) else text
