"""Which files (and which parts of shared files) say how a project's tests run, and what a
change did to them: `conftest.py`, `pytest.ini`, `[pytest]` in tox.ini, `[tool:pytest]` in
setup.cfg, `[tool.pytest...]` and `[tool.autocode] test_command` in pyproject.toml, the test
scripts and jest/mocha/vitest settings of package.json, mocha/jest/vitest config files,
`test_command` in `.autocode/config.toml`, tox's `[testenv]` sections, noxfile.py, and a
Makefile's `test` target.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

# Whole files that only configure tests (by name, or name prefix for `jest.config.ts` and kin).
WHOLE_NAMES = {"conftest.py", "pytest.ini", ".pytest.ini", "noxfile.py"}
WHOLE_PREFIXES = (".mocharc", "jest.config", "vitest.config", "vitest.workspace", "karma.conf", "ava.config",
                  "jest.setup")
MAKEFILES = {"Makefile", "makefile", "GNUmakefile"}


def _ini_section(text: str, names: tuple[str, ...], prefix: str | None = None) -> str:
    """The lines of the INI sections called `names` (or starting with `prefix`); a line reader,
    so hostile files never raise."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        header = re.match(r"^\s*\[([^\]]*)\]", line)
        if header:
            title = header.group(1).strip()
            inside = title in names or (prefix is not None and title.startswith(prefix))
            if inside and prefix is not None:
                out.append(f"[{title}]")
            continue
        if inside and line.strip() and not line.lstrip().startswith(("#", ";")):
            out.append(line.rstrip())
    return "\n".join(out)


def _toml(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return None


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _keys_named(data: Any, key: str, at: str = "") -> dict[str, Any]:
    """Every value under `key`, at any depth, by its dotted place."""
    found: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            place = f"{at}.{k}" if at else str(k)
            if k == key:
                found[place] = v
            found.update(_keys_named(v, key, place))
    return found


def _pyproject(text: str) -> dict[str, Any]:
    data = _toml(text)
    if data is None:  # not TOML: the lines under a [tool.pytest...] header, and any test_command line
        lines: list[str] = []
        inside = False
        for line in text.splitlines():
            header = re.match(r"^\s*\[+\s*([^\]\s]*)", line)
            if header:
                inside = header.group(1).startswith("tool.pytest")
            if inside or "test_command" in line:
                lines.append(line.rstrip())
        return {"[tool.pytest]": "\n".join(lines)}
    tool = _table(data, "tool")
    autocode = _table(tool, "autocode")
    return {"[tool.pytest]": tool.get("pytest"), "[tool.autocode] test_command": autocode.get("test_command")}


def _autocode_config(text: str) -> dict[str, Any]:
    data = _toml(text)
    if data is None:
        return {"test_command": "\n".join(line for line in text.splitlines() if "test_command" in line)}
    return {f"{k} (test_command)" if k != "test_command" else "test_command": v
            for k, v in _keys_named(data, "test_command").items()}


def _package_json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        lines = [line.strip() for line in text.splitlines() if re.search(r'"(test|pretest|posttest|jest|mocha|vitest)', line)]
        return {"test settings": "\n".join(lines)}
    scripts = _table(data, "scripts")
    out: dict[str, Any] = {
        f'the "{k}" script': v for k, v in scripts.items() if re.match(r"^(pre|post)?test(\b|:|$)", str(k))
    }
    for key in ("jest", "mocha", "vitest", "ava"):
        if key in data:
            out[f'the "{key}" settings'] = data[key]
    return out


def _makefile(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        target = re.match(r"^(test|tests|check)\s*:(?!=)(.*)$", line)
        if target:
            recipe = [target.group(2).strip()]
            for more in lines[i + 1 :]:
                if not more.startswith("\t"):
                    break
                recipe.append(more.strip())
            out[f"the {target.group(1)} target"] = "\n".join(recipe)
    return out


def _reader(path: str) -> Callable[[str], dict[str, Any]] | None:
    """How to read the test-configuring parts of `path`, or None when it configures no tests."""
    p = PurePosixPath(path)
    name = p.name
    if name in WHOLE_NAMES or name.startswith(WHOLE_PREFIXES):
        return lambda text: {"the file": text}
    if name == "tox.ini":
        return lambda text: {"[pytest]": _ini_section(text, ("pytest",)),
                             "the [testenv] sections": _ini_section(text, (), prefix="testenv")}
    if name == "setup.cfg":
        return lambda text: {"[tool:pytest]": _ini_section(text, ("tool:pytest",))}
    if name == "pyproject.toml":
        return _pyproject
    if name == "package.json" and "node_modules" not in p.parts:
        return _package_json
    if name == "config.toml" and p.parent.name == ".autocode":
        return _autocode_config
    if name in MAKEFILES:
        return _makefile
    return None


def is_test_config_path(path: str) -> bool:
    """Whether `path` is a file that can say how the tests run (maybe only in one of its parts)."""
    return _reader(path) is not None


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return repr(text if len(text) <= 80 else text[:77] + "...")


def config_changes(path: str, base: str | None, new: str | None) -> list[str]:
    """Sentences saying what the change did to the test configuration in `path` ([] for none)."""
    reader = _reader(path)
    if reader is None:
        return []
    before = reader(base) if base is not None else {}
    after = reader(new) if new is not None else {}
    out: list[str] = []
    for part in dict.fromkeys([*before, *after]):
        was, now = before.get(part), after.get(part)
        if was == now or (not was and not now):
            continue
        if part == "the file":
            verb = "was added" if base is None else "was deleted" if new is None else "changed"
            out.append(f"{path}: test configuration {verb}")
        elif not was:
            out.append(f"{path}: {part} was added ({_show(now)})")
        elif not now:
            out.append(f"{path}: {part} was removed (it was {_show(was)})")
        else:
            out.append(f"{path}: {part} changed from {_show(was)} to {_show(now)}")
    return out
