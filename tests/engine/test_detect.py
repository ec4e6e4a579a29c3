"""Test framework detection: each ecosystem, the deciding file, portable Python launchers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autocode.detect import detect_tests
from autocode.settings import resolve_settings
from support import write_files

UNITTEST_MODULE = "import unittest\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        pass\n"

CASES: list[tuple[str, dict[str, str], str, str, str]] = [
    ("pytest.ini", {"pytest.ini": "[pytest]\n"}, "pytest", "python3 -m pytest", "pytest.ini"),
    ("conftest", {"conftest.py": ""}, "pytest", "python3 -m pytest", "conftest.py"),
    ("tests/conftest", {"tests/conftest.py": ""}, "pytest", "python3 -m pytest", "tests/conftest.py"),
    (
        "pyproject ini_options",
        {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"},
        "pytest",
        "python3 -m pytest",
        "pyproject.toml",
    ),
    ("setup.cfg", {"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\n"}, "pytest", "python3 -m pytest", "setup.cfg"),
    ("tox.ini", {"tox.ini": "[tox]\nenvlist = py311\n[pytest]\n"}, "pytest", "python3 -m pytest", "tox.ini"),
    (
        "unittest in tests/",
        {"tests/__init__.py": "", "tests/test_things.py": UNITTEST_MODULE},
        "unittest",
        "python3 -m unittest discover -s tests -t .",
        "tests/test_things.py",
    ),
    (
        "unittest from-import in test/",
        {"test/test_a.py": "from unittest import TestCase\n"},
        "unittest",
        "python3 -m unittest discover -s test -t .",
        "test/test_a.py",
    ),
    (
        "npm",
        {"package.json": json.dumps({"scripts": {"test": "jest --ci"}})},
        "jest",
        "npm test",
        "package.json",
    ),
    (
        "yarn",
        {"package.json": json.dumps({"scripts": {"test": "mocha"}}), "yarn.lock": ""},
        "mocha",
        "yarn test",
        "package.json",
    ),
    (
        "pnpm",
        {"package.json": json.dumps({"scripts": {"test": "node --test"}}), "pnpm-lock.yaml": ""},
        "pnpm",
        "pnpm test",
        "package.json",
    ),
    ("go", {"go.mod": "module example.com/x\n"}, "go", "go test ./...", "go.mod"),
    ("cargo", {"Cargo.toml": "[package]\nname = 'x'\n"}, "cargo", "cargo test", "Cargo.toml"),
    ("maven", {"pom.xml": "<project/>"}, "maven", "mvn test", "pom.xml"),
    ("maven wrapper", {"pom.xml": "<project/>", "mvnw": "#!/bin/sh\n"}, "maven", "./mvnw test", "pom.xml"),
    ("gradle", {"build.gradle": ""}, "gradle", "gradle test", "build.gradle"),
    ("gradle kts wrapper", {"build.gradle.kts": "", "gradlew": ""}, "gradle", "./gradlew test", "build.gradle.kts"),
    ("make", {"Makefile": "all:\n\techo\n\ntest: all\n\t./run-tests\n"}, "make", "make test", "Makefile"),
]


@pytest.mark.parametrize(("files", "framework", "command", "source"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_detects_framework_command_and_deciding_file(
    tmp_path: Path, files: dict[str, str], framework: str, command: str, source: str
) -> None:
    write_files(tmp_path, files)
    found = detect_tests(tmp_path)
    assert found is not None
    assert (found.framework, found.test_command, found.source) == (framework, command, source)
    snapshot = resolve_settings(tmp_path)
    assert snapshot["test_command"].value == command
    assert (snapshot["test_command"].origin, snapshot["test_command"].source) == ("detected", source)
    assert snapshot["framework"].value == framework


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"package.json": json.dumps({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}})},
        {"package.json": "{not json"},
        {"Makefile": "build:\n\tcc x.c\n"},
        {"pyproject.toml": "[tool.black]\n"},
        {"tests/test_x.py": "print('no framework import')\n"},
    ],
    ids=["empty", "npm placeholder", "broken package.json", "make without test", "pyproject without pytest", "plain module"],
)
def test_nothing_recognised_gives_none(tmp_path: Path, files: dict[str, str]) -> None:
    write_files(tmp_path, files)
    assert detect_tests(tmp_path) is None
    assert resolve_settings(tmp_path)["test_command"].origin == "default"


def test_pytest_configuration_wins_over_a_makefile(tmp_path: Path) -> None:
    write_files(tmp_path, {"Makefile": "test:\n\tpytest\n", "pytest.ini": "[pytest]\n"})
    found = detect_tests(tmp_path)
    assert found is not None and found.source == "pytest.ini"


def test_python_commands_never_name_this_machines_interpreter(tmp_path: Path) -> None:
    import sys

    for name, files in (("a", {"pytest.ini": ""}), ("b", {"tests/test_u.py": UNITTEST_MODULE})):
        write_files(tmp_path / name, files)
        found = detect_tests(tmp_path / name)
        assert found is not None
        assert found.test_command.startswith("python3 -m ")
        assert sys.executable not in found.test_command


@pytest.mark.parametrize(
    ("lockfiles", "command"),
    [
        ({"pnpm-lock.yaml": ""}, "pnpm test"),
        ({"yarn.lock": ""}, "yarn test"),
        ({}, "npm test"),
        ({"pnpm-lock.yaml": "", "packages/web/package-lock.json": "{}"}, "npm test"),  # the nearest lockfile wins
    ],
)
def test_a_package_uses_the_monorepos_lockfile(tmp_path: Path, lockfiles: dict[str, str], command: str) -> None:
    write_files(tmp_path, {"packages/web/package.json": json.dumps({"scripts": {"test": "vitest run"}}), **lockfiles})
    snapshot = resolve_settings(tmp_path, package="packages/web")
    assert snapshot["test_command"].value == command
    assert snapshot["test_command"].source == "packages/web/package.json"
    assert snapshot["framework"].value == "vitest"
    # Detection alone stays inside the folder it is given: no lockfile above it is seen.
    found = detect_tests(tmp_path / "packages/web")
    assert found is not None and found.test_command == "npm test"
