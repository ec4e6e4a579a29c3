"""Which Python a test command runs (`python3 -m pytest`, a `pytest` script's `#!` line, or
`python3` from PATH for commands that are not Python), which framework it runs, and, for
doctor, whether that interpreter has the framework installed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

PYTHON_NAME = re.compile(r"^(python|pypy)(\d+(\.\d+)?)?$")


def command_words(test_command: str) -> list[str]:
    """The command's words from its program on (`VAR=1 pytest -q` -> pytest -q); [] if it cannot be split."""
    try:
        argv = shlex.split(test_command)
    except ValueError:
        return []
    while argv and (re.match(r"^\w+=", argv[0]) or argv[0] == "env"):
        argv = argv[1:]  # `VAR=1 pytest` and `env VAR=1 pytest` run pytest
    return argv


def _shebang(program: str) -> str | None:
    """The interpreter a script's `#!` line names (`#!/usr/bin/env python3` -> python3)."""
    try:
        with open(program, "rb") as handle:
            first = handle.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return words[0] if words else None


def _program(name: str, path: str | None) -> str | None:
    """The program `name` runs (a path is taken as it is), or None when there is none."""
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name, path=path)


def interpreter_for(test_command: str, path: str | None = None, cwd: Path | None = None) -> tuple[str | None, bool]:
    """(the Python the test command runs, whether the command itself is Python-based).

    A command starting with a Python (`python3 -m pytest`) runs that one; a script such as
    `pytest` runs the interpreter of its `#!` line; anything else (`make test`) is not Python
    based, and `python3` from PATH stands for it. `path` is the PATH to look programs up in;
    `cwd` is where the command runs (a relative `.venv/bin/python` is taken from there)."""
    argv = command_words(test_command)
    if argv and "/" in argv[0] and not os.path.isabs(argv[0]) and cwd is not None:
        argv[0] = str(cwd / argv[0])
    fallback = shutil.which("python3", path=path)
    if not argv:
        return fallback, False
    first = argv[0]
    program = _program(first, path)
    if PYTHON_NAME.match(Path(first).name):
        return program, True
    if program is None and Path(first).name in ("pytest", "py.test"):
        return None, True  # a Python command whose program is not there
    if program:
        named = _shebang(program)
        if named and PYTHON_NAME.match(Path(named).name):
            return _program(named, path), True
    return fallback, False


def framework_of(test_command: str) -> str | None:
    """The Python test framework a command runs: pytest, unittest, or None (cannot tell)."""
    argv = command_words(test_command)
    if not argv:
        return None
    if Path(argv[0]).name in ("pytest", "py.test") or (len(argv) > 2 and argv[1] == "-m" and argv[2] == "pytest"):
        return "pytest"
    if len(argv) > 2 and argv[1] == "-m" and argv[2] == "unittest":
        return "unittest"
    return None


def interpreter_report(test_command: str | None, *, origin: str | None = None, path: str | None = None,
                       cwd: Path | None = None, check: bool = True) -> dict[str, Any]:
    """Which interpreter and test command will run, and whether that interpreter has the test
    framework (at most one short subprocess, only for a Python-based pytest command)."""
    if not test_command:
        return {"test_command": None, "origin": origin, "interpreter": None, "python_based": False,
                "framework": None, "framework_installed": None,
                "message": "no test command is known; set test_command in .autocode/config.toml"}
    interpreter, python_based = interpreter_for(test_command, path, cwd)
    framework = framework_of(test_command) if python_based else None
    installed: bool | None = None
    message = f"{test_command} runs with {interpreter}" if python_based else (
        f"{test_command} is not a Python command; AutoCode cannot tell which interpreter it runs")
    if python_based and interpreter is None:
        installed = False
        message = (f"{test_command}: its interpreter is not there (not on PATH, or no such file); "
                   "set test_command to a Python that exists")
    elif framework == "unittest":
        installed = True  # in the standard library
    elif framework == "pytest" and check and interpreter is not None:
        # lazy: doctor loads this module only when it builds a report
        from autocode.sandbox import BASE_ENV

        # The environment a task's test run gets (no PYTHONPATH of the caller's), so the answer is its answer.
        env = {k: v for k, v in os.environ.items() if k in BASE_ENV}
        try:
            proc = subprocess.run(
                [interpreter, "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('pytest') else 3)"],
                capture_output=True, timeout=15, stdin=subprocess.DEVNULL, env=env,
            )
            installed = proc.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            installed = False
        if not installed:
            message = (f"{interpreter} (which {test_command} runs) cannot import pytest: install it there "
                       f"({interpreter} -m pip install pytest) or set test_command to the interpreter that has it")
    return {"test_command": test_command, "origin": origin, "interpreter": interpreter, "python_based": python_based,
            "framework": framework, "framework_installed": installed, "message": message}
