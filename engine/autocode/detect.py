"""Test framework and test command detection, with the file that decided it.

Detection looks only at a handful of well-known files at the root of the
workspace (or package) and at the first modules of its test folder, so it
costs the same on a repository of ten files or ten thousand. Python suites
get the portable `python3` launcher, never this machine's interpreter path.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PYTEST_COMMAND = "python3 -m pytest"
UNITTEST_SCAN_LIMIT = 50
_NPM_PLACEHOLDER = re.compile(r"no test specified", re.IGNORECASE)
_UNITTEST_IMPORT = re.compile(rb"^\s*(?:import\s+unittest\b|from\s+unittest\b)", re.MULTILINE)
_PYTEST_IMPORT = re.compile(rb"^\s*(?:import\s+pytest\b|from\s+pytest\b)", re.MULTILINE)
_MAKE_TEST_TARGET = re.compile(r"^test\s*:(?!=)", re.MULTILINE)
_JS_RUNNERS = ("vitest", "jest", "mocha", "ava", "jasmine", "playwright", "tap")


@dataclass(frozen=True)
class Detection:
    framework: str
    test_command: str
    source: str  # the deciding file, relative to the folder detection ran in

    def to_dict(self) -> dict[str, str]:
        return {"framework": self.framework, "test_command": self.test_command, "source": self.source}


def _read_text(path: Path, limit: int = 1 << 20) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _toml(path: Path) -> dict[str, Any] | None:
    text = _read_text(path)
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _ini_has_section(path: Path, section: str) -> bool:
    text = _read_text(path)
    return text is not None and re.search(rf"^\s*\[{re.escape(section)}\]\s*$", text, re.MULTILINE) is not None


def _pytest(root: Path, _top: Path) -> Detection | None:
    if (root / "pytest.ini").is_file():
        return Detection("pytest", PYTEST_COMMAND, "pytest.ini")
    for rel in ("conftest.py", "tests/conftest.py", "test/conftest.py"):
        if (root / rel).is_file():
            return Detection("pytest", PYTEST_COMMAND, rel)
    if (root / "pyproject.toml").is_file():
        data = _toml(root / "pyproject.toml") or {}
        tool = data.get("tool")
        if isinstance(tool, dict) and isinstance(tool.get("pytest"), dict) and "ini_options" in tool["pytest"]:
            return Detection("pytest", PYTEST_COMMAND, "pyproject.toml")
    if (root / "setup.cfg").is_file() and _ini_has_section(root / "setup.cfg", "tool:pytest"):
        return Detection("pytest", PYTEST_COMMAND, "setup.cfg")
    if (root / "tox.ini").is_file() and _ini_has_section(root / "tox.ini", "pytest"):
        return Detection("pytest", PYTEST_COMMAND, "tox.ini")
    return None


def _test_modules(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as entries:
            names = sorted(
                e.name for e in entries if e.name.startswith("test") and e.name.endswith(".py") and e.is_file()
            )
    except OSError:
        return []
    return [folder / name for name in names[:UNITTEST_SCAN_LIMIT]]


def _python_modules(root: Path, _top: Path) -> Detection | None:
    """A test folder whose modules import unittest (or pytest)."""
    for folder in ("tests", "test", ""):
        base = root / folder if folder else root
        modules = _test_modules(base)
        for module in modules:
            try:
                with open(module, "rb") as handle:
                    head = handle.read(64 * 1024)
            except OSError:
                continue
            rel = module.relative_to(root).as_posix()
            if _UNITTEST_IMPORT.search(head):
                command = (
                    f"python3 -m unittest discover -s {folder} -t ." if folder else "python3 -m unittest discover"
                )
                return Detection("unittest", command, rel)
            if _PYTEST_IMPORT.search(head):
                return Detection("pytest", PYTEST_COMMAND, rel)
    return None


def _package_manager(root: Path, top: Path) -> str:
    """pnpm or yarn when its lockfile is in `root` or a folder above it up to `top` (a monorepo
    keeps one lockfile at its top), else npm."""
    folders = [root]
    if root != top and top in root.parents:
        folders += [parent for parent in root.parents if top in parent.parents or parent == top]
    for folder in folders:
        if (folder / "pnpm-lock.yaml").is_file():
            return "pnpm"
        if (folder / "yarn.lock").is_file():
            return "yarn"
        if (folder / "package-lock.json").is_file():
            return "npm"
    return "npm"


def _node(root: Path, top: Path) -> Detection | None:
    path = root / "package.json"
    text = _read_text(path) if path.is_file() else None
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    scripts = data.get("scripts") if isinstance(data, dict) else None
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(script, str) or not script.strip() or _NPM_PLACEHOLDER.search(script):
        return None
    manager = _package_manager(root, top)
    runner = next((name for name in _JS_RUNNERS if re.search(rf"\b{name}\b", script)), manager)
    return Detection(runner, f"{manager} test", "package.json")


def _go(root: Path, _top: Path) -> Detection | None:
    return Detection("go", "go test ./...", "go.mod") if (root / "go.mod").is_file() else None


def _cargo(root: Path, _top: Path) -> Detection | None:
    return Detection("cargo", "cargo test", "Cargo.toml") if (root / "Cargo.toml").is_file() else None


def _maven(root: Path, _top: Path) -> Detection | None:
    if not (root / "pom.xml").is_file():
        return None
    return Detection("maven", "./mvnw test" if (root / "mvnw").is_file() else "mvn test", "pom.xml")


def _gradle(root: Path, _top: Path) -> Detection | None:
    for name in ("build.gradle.kts", "build.gradle"):
        if (root / name).is_file():
            command = "./gradlew test" if (root / "gradlew").is_file() else "gradle test"
            return Detection("gradle", command, name)
    return None


def _make(root: Path, _top: Path) -> Detection | None:
    for name in ("GNUmakefile", "makefile", "Makefile"):
        path = root / name
        if path.is_file():
            text = _read_text(path)
            if text is not None and _MAKE_TEST_TARGET.search(text):
                return Detection("make", "make test", name)
    return None


# Most specific first: a project's own test configuration wins over a
# Makefile that probably wraps it.
# Each takes the folder detection runs in and the workspace above it (the same folder unless
# a `--package` run looks at one package of a monorepo).
DETECTORS: tuple[Callable[[Path, Path], Detection | None], ...] = (
    _pytest,
    _python_modules,
    _node,
    _go,
    _cargo,
    _maven,
    _gradle,
    _make,
)


def detect_tests(root: Path | str, workspace: Path | str | None = None) -> Detection | None:
    """The test framework and command of the project at `root`, or None when nothing is recognised.

    `workspace` is the repository `root` belongs to when it is one package of a monorepo.
    """
    folder = Path(root).absolute()
    top = Path(workspace).absolute() if workspace is not None else folder
    for detector in DETECTORS:
        found = detector(folder, top)
        if found is not None:
            return found
    return None
