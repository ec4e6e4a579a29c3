"""A test command restricted to some test files: the runner's own selection words replaced
by the files, every other option kept. Where a runner's words cannot be told apart (an
option of unknown arity before a word that is not a path), the answer is None and the
caller runs the whole command; a wrong narrowing would select the wrong tests.
"""

from __future__ import annotations

import os
from pathlib import Path

from autocode.proof.commands import Command

# options that take the next word as their value, per runner (the `--x=value` form is always fine)
_VALUES: dict[str, frozenset[str]] = {
    "pytest": frozenset({"-k", "-m", "-p", "-c", "-o", "-W", "--rootdir", "--ignore", "--ignore-glob",
                         "--deselect", "--tb", "--junitxml", "--junit-xml", "--basetemp", "--confcutdir",
                         "--maxfail", "--durations", "--log-level", "--cov", "--cov-report", "-n",
                         "--numprocesses", "--dist", "--import-mode", "--color", "--capture",
                         "--override-ini", "--config-file", "--timeout", "-r"}),
    "go": frozenset({"-run", "-skip", "-count", "-timeout", "-tags", "-p", "-cpu", "-parallel", "-bench",
                     "-benchtime", "-coverprofile", "-covermode", "-coverpkg", "-o", "-exec", "-vet",
                     "-ldflags", "-gcflags", "-mod", "-modfile", "-shuffle", "-failfast", "-outputdir"}),
    "node": frozenset({"--test-reporter", "--test-reporter-destination", "--test-name-pattern",
                       "--test-skip-pattern", "--import", "--require", "-r", "--loader",
                       "--experimental-loader", "--test-concurrency", "--test-timeout", "--conditions",
                       "-C", "--test-shard"}),
    "jest": frozenset({"-c", "--config", "-t", "--testNamePattern", "-w", "--maxWorkers", "--outputFile",
                       "--reporters", "--selectProjects", "--shard", "--testTimeout", "--rootDir",
                       "--testPathIgnorePatterns", "--coverageDirectory", "--env", "--testEnvironment"}),
    "vitest": frozenset({"-c", "--config", "-t", "--testNamePattern", "--root", "--dir", "--project",
                         "--reporter", "--outputFile", "--shard", "--pool", "--environment", "--mode"}),
}
_GO_BOOLEAN = frozenset({"-failfast", "-short", "-v", "-race", "-json", "-cover", "-benchmem", "-x", "-n", "-a"})


def _looks_like_tests(word: str, cwd: Path) -> bool:
    path = word.split("::", 1)[0]
    return (cwd / path).exists() or "*" in word or word.startswith("./")


def _split(args: list[str], values: frozenset[str], cwd: Path, booleans: frozenset[str] = frozenset()) -> list[str] | None:
    """The options among `args` (selections dropped), or None when a word cannot be placed."""
    kept: list[str] = []
    n = 0
    while n < len(args):
        word = args[n]
        if word == "--":
            return None  # what follows goes elsewhere (a script, the test binary)
        if word.startswith("-"):
            name = word.split("=", 1)[0]
            if "=" not in word and name in values and name not in booleans:
                if n + 1 >= len(args):
                    return None
                kept += args[n : n + 2]
                n += 2
                continue
            kept.append(word)
            n += 1
            continue
        if not _looks_like_tests(word, cwd):
            return None
        n += 1
    return kept


def _python_module(rel: str) -> str | None:
    if not rel.endswith(".py"):
        return None
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _unittest(command: Command, files: list[str], cwd: Path) -> list[str] | None:
    args = command.argv[command.at :]
    head = command.argv[: command.at]
    options: list[str] = []
    rest = args
    if args[:1] == ["discover"]:
        # narrowed ids must match the discovered ones: only when discovery's top folder is the cwd
        start, top, n, positional = ".", None, 1, []
        while n < len(args):
            word = args[n]
            if word in ("-s", "--start-directory", "-t", "--top-level-directory", "-p", "--pattern", "-k"):
                if n + 1 >= len(args):
                    return None
                if word in ("-s", "--start-directory"):
                    start = args[n + 1]
                elif word in ("-t", "--top-level-directory"):
                    top = args[n + 1]
                elif word == "-k":
                    options += args[n : n + 2]
                n += 2
                continue
            if word.startswith("-"):
                options.append(word)
            else:
                positional.append(word)
            n += 1
        if positional:
            start = positional[0]
            top = positional[2] if len(positional) > 2 else top
        top_folder = os.path.normpath(cwd / (top if top is not None else start))
        if top_folder != os.path.normpath(cwd):
            return None
        rest = []
    else:
        for word in args:
            if word.startswith("-"):
                options.append(word)
            elif not word.replace(".", "").replace("_", "").isalnum() and not word.endswith(".py"):
                return None
    del rest
    modules = [_python_module(f) for f in files]
    if any(m is None for m in modules):
        return None
    return [*head, *options, *[m for m in modules if m]]


def _go(command: Command, files: list[str], cwd: Path) -> list[str] | None:
    args = command.argv[command.at :]
    if "-args" in args or "--args" in args:
        return None
    kept = _split(args, _VALUES["go"], cwd, _GO_BOOLEAN)
    if kept is None:
        return None
    packages = sorted({"./" + os.path.dirname(f) if os.path.dirname(f) else "." for f in files})
    return [*command.argv[: command.at], *kept, *packages]


def narrowed(command: Command, files: list[str], cwd: Path) -> list[str] | None:
    """`command` restricted to `files` (relative to `cwd`), or None."""
    head, args = command.argv[: command.at], command.argv[command.at :]
    kind = command.framework
    if kind == "pytest":
        kept = _split(args, _VALUES["pytest"], cwd)
        return None if kept is None else [*head, *kept, *files]
    if kind == "unittest":
        return _unittest(command, files, cwd)
    if kind == "go":
        return _go(command, files, cwd)
    if kind in ("node", "jest", "vitest"):
        kept = _split(args, _VALUES[kind], cwd)
        if kept is None:
            return None
        if kind == "node":
            return [*head, *kept, *files]
        return [*head, *kept, *(["--runTestsByPath"] if kind == "jest" else []), *files]
    if kind in ("npm", "yarn", "pnpm") and command.script is not None:
        inner = command.script
        if inner.framework not in ("jest", "vitest", "node") or inner.argv[inner.at :] or args:
            return None  # the script selects files itself: appended files would add to them
        sep = ["--"] if kind == "npm" else []
        extra = ["--runTestsByPath"] if inner.framework == "jest" else []
        return [*command.argv, *sep, *extra, *files]
    return None
