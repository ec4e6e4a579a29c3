"""What a test command runs: which framework, and where in its words the runner's own
arguments begin, so a reporter can be added without changing what runs.

`parse` reads argv only (and package.json for `npm test`-style commands); it never runs
anything.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

_PYTHON = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?[a-z]?(?:\.exe)?$")
# python options that take a value in the next word
_PYTHON_VALUE = {"-W", "-X", "--check-hash-based-pycs"}
_JS_RUNNERS = ("jest", "vitest", "mocha", "tap")
_PACKAGE_MANAGERS = ("npm", "yarn", "pnpm")
_LAUNCHERS = ("npx", "bunx")
_ENV_MANAGERS = ("uv", "poetry", "pipenv", "pdm", "rye", "hatch")
# flags of `uv run` and the like that take no value
_MANAGER_FLAGS = frozenset({"--frozen", "--locked", "--no-sync", "--isolated", "--no-project", "--all-extras",
                            "--no-dev", "--offline", "--no-cache", "--active", "--exact", "-q", "--quiet",
                            "-v", "--verbose"})


@dataclass(frozen=True)
class Command:
    """A recognised test command. `argv[:at]` launches the runner; `argv[at:]` are its arguments."""

    framework: str  # detect.py's names, plus "node" for node --test and "prove" for Perl's prove
    argv: list[str]
    at: int
    python_flags: tuple[str, ...] = ()  # the interpreter's own flags (pytest/unittest)
    script: Command | None = None  # for npm/yarn/pnpm test: the runner package.json's script starts


def _base(word: str) -> str:
    return os.path.basename(word)


def _prefix(argv: list[str]) -> int:
    """Words before the runner: an `env A=B` / `A=B` prefix, then an environment manager's
    `uv run` / `poetry run` (and the like) with its flags. A flag that takes a value
    (`uv run --with x pytest`) leaves the value where the runner should be: not recognised."""
    at = 0
    if argv and _base(argv[0]) == "env":
        at = 1
    while at < len(argv) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[at]):
        at += 1
    if at + 1 < len(argv) and _base(argv[at]) in _ENV_MANAGERS and argv[at + 1] == "run":
        at += 2
        while at < len(argv) and argv[at].startswith("-") and argv[at] != "--":
            if "=" not in argv[at] and argv[at] not in _MANAGER_FLAGS:
                return len(argv)  # a flag that may take the next word: the runner cannot be told
            at += 1
        if at < len(argv) and argv[at] == "--":
            at += 1
    return at


def _python(argv: list[str], at: int) -> Command | None:
    flags: list[str] = []
    n = at + 1
    while n < len(argv):
        word = argv[n]
        if word == "-m" and n + 1 < len(argv):
            module = argv[n + 1]
            if module in ("pytest", "py.test"):
                return Command("pytest", argv, n + 2, tuple(flags))
            if module == "unittest":
                return Command("unittest", argv, n + 2, tuple(flags))
            return None
        if word in _PYTHON_VALUE and n + 1 < len(argv):
            flags += argv[n : n + 2]
            n += 2
            continue
        if word.startswith("-") and not word.startswith("-c") and word != "-":
            flags.append(word)
            n += 1
            continue
        return None  # a script or -c: not a runner we know
    return None


def _js(argv: list[str], at: int) -> Command | None:
    word = _base(argv[at])
    if word in _LAUNCHERS:
        n = at + 1
        while n < len(argv) and argv[n].startswith("-"):
            n += 1
        return _js(argv, n) if n < len(argv) else None
    if word in ("yarn", "pnpm") and at + 1 < len(argv):
        nxt = at + 1
        if argv[nxt] in ("exec", "dlx"):
            nxt += 1
        if nxt < len(argv) and _base(argv[nxt]) in _JS_RUNNERS:
            return _js(argv, nxt)
        return None
    if word == "node":
        n = at + 1
        while n < len(argv) and argv[n].startswith("-"):
            if argv[n] == "--test":
                return Command("node", argv, n + 1)
            n += 1
        if n < len(argv):
            script = argv[n].replace("\\", "/")
            for runner in _JS_RUNNERS:
                if f"/{runner}/" in script or script.endswith(f".bin/{runner}"):
                    return Command(runner, argv, n + 1)
        return None
    for runner in _JS_RUNNERS:
        if word in (runner, f"{runner}.js", f"{runner}.cmd"):
            n = at + 1
            if runner == "vitest" and n < len(argv) and argv[n] == "run":
                n += 1
            return Command(runner, argv, n)
    return None


def _script_words(project: Path, cwd: Path) -> list[str] | None:
    """The words of package.json's test script when it ends in one runner command."""
    try:
        with open(cwd / "package.json", "rb") as handle:
            data = json.loads(handle.read(1 << 20).decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None
    scripts = data.get("scripts") if isinstance(data, dict) else None
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(script, str):
        return None
    # the runner must be the last command: npm appends extra arguments to the script's end
    tail = re.split(r"&&|\|\||;", script)[-1]
    if re.search(r"[|<>`$(){}]", tail):
        return None
    try:
        return shlex.split(tail)
    except ValueError:
        return None


def parse(argv: list[str], *, project: Path, cwd: Path | None = None) -> Command | None:
    """The command's framework and the runner's arguments, or None when it is not one we know."""
    folder = cwd or project
    at = _prefix(argv)
    if at >= len(argv):
        return None
    word = _base(argv[at])
    if _PYTHON.match(word):
        return _python(argv, at)
    if word in ("pytest", "py.test"):
        return Command("pytest", argv, at + 1)
    if word == "go" and at + 1 < len(argv) and argv[at + 1] == "test":
        return Command("go", argv, at + 2)
    if word == "cargo" and "test" in argv[at + 1 : at + 3]:
        return Command("cargo", argv, argv.index("test", at + 1) + 1)
    if word in ("mvn", "mvnw", "mvnw.cmd"):
        return Command("maven", argv, at + 1)
    if word in ("gradle", "gradlew", "gradlew.bat"):
        return Command("gradle", argv, at + 1)
    if word == "prove":
        return Command("prove", argv, at + 1)
    if word in _PACKAGE_MANAGERS:
        rest = argv[at + 1 :]
        if rest[:1] in (["test"], ["t"]) or rest[:2] == ["run", "test"]:
            start = at + (3 if rest[:1] == ["run"] else 2)
            words = _script_words(project, folder)
            inner = parse(words, project=project, cwd=folder) if words else None
            if inner is None or inner.framework not in (*_JS_RUNNERS, "node"):
                return None
            return Command(word, argv, start, script=inner)
        return None
    return _js(argv, at)
