"""The copy tests the copy: where the project's own packages resolve from inside the copy.

A `src/` layout installed editable (`pip install -e .`), a `.pth` file or `npm link` can make
the copy's tests import the person's work tree instead of the changed copy; then a passing run
proves nothing about the change. This module names the project's top-level packages
(`project_packages`), builds the small program that asks the test command's own interpreter
(or node) where each resolves, without running the packages' code (`probes`), reads its output
(`Probe.parse`) and judges the answer (`classify`) against the place the copy is seen at by the
program (the sandbox may show the copy at the workspace's own path: `sandbox.seen_at`).
Which interpreter a test command runs is `interpreter.py`'s.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocode.proof.interpreter import PYTHON_NAME, command_words, framework_of, interpreter_for

MARK = "AUTOCODE-RESOLVE "
MAX_NAMES = 20
SKIP_DIRS = {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "bench", "scripts",
             "build", "dist", "tools", "site-packages", "node_modules", "venv", "env"}

# Run as `python -c PY_PROBE [--no-cwd] [--path DIR]... NAME...` in the copy (`--no-cwd`: the
# test command does not put its folder on sys.path, as a `pytest` script does not). `find_spec` of a top-level
# name reads the finders (sys.path, .pth entries, editable-install finders) without importing
# the package, so none of the project's code runs.
PY_PROBE = """
import importlib.util, json, sys
args = sys.argv[1:]
if args[:1] == ["--no-cwd"]:
    if sys.path and sys.path[0] == "":
        del sys.path[0]
    args = args[1:]
while args[:1] == ["--path"]:
    sys.path.insert(0, args[1])
    args = args[2:]
out = {}
for name in args:
    try:
        spec = importlib.util.find_spec(name)
    except Exception as exc:
        out[name] = {"origin": None, "locations": [], "error": type(exc).__name__ + ": " + str(exc)}
        continue
    if spec is None:
        out[name] = {"origin": None, "locations": [], "error": "not found"}
    else:
        loader = type(spec.loader).__name__ if spec.loader is not None else None
        out[name] = {"origin": spec.origin, "locations": list(spec.submodule_search_locations or []),
                     "loader": loader}
print(%r + json.dumps(out))
""".strip() % MARK

# Run as `node -e NODE_PROBE NAME...` in the copy: the entry `require` would load for each name.
NODE_PROBE = """
const out = {};
for (const name of process.argv.slice(1)) {
  try { out[name] = {origin: require.resolve(name), locations: []}; }
  catch (first) {
    try { out[name] = {origin: require.resolve(name + "/package.json"), locations: []}; }
    catch (e) { out[name] = {origin: null, locations: [], error: String(first.code || first.message)}; }
  }
}
console.log(%s + JSON.stringify(out));
""".strip() % json.dumps(MARK)


@dataclass(frozen=True)
class Resolved:
    """Where one name resolved, as the program saw it (None: it did not resolve)."""

    name: str
    origin: str | None
    locations: list[str] = field(default_factory=list)
    error: str | None = None
    loader: str | None = None


@dataclass(frozen=True)
class Probe:
    """A program to run in the copy (cwd: the copy, or its package folder) and how to read it."""

    language: str  # "python" | "node"
    argv: list[str]
    names: list[str]

    def parse(self, output: str) -> dict[str, Resolved]:
        """The probe's answer from its output (its last marked line); {} when there is none."""
        for line in reversed(output.splitlines()):
            if line.startswith(MARK):
                try:
                    data = json.loads(line[len(MARK):])
                except ValueError:
                    return {}
                if not isinstance(data, dict):
                    return {}
                return {str(k): _resolved(str(k), v) for k, v in data.items() if isinstance(v, dict)}
        return {}


def _resolved(name: str, item: dict[str, Any]) -> Resolved:
    locations = [str(p) for p in item.get("locations") or [] if isinstance(p, str)]
    origin = item.get("origin") if isinstance(item.get("origin"), str) else None
    error = item.get("error") if isinstance(item.get("error"), str) else None
    loader = item.get("loader") if isinstance(item.get("loader"), str) else None
    return Resolved(name, origin, locations, error, loader)


@dataclass(frozen=True)
class Resolution:
    """The judgement: `ok` when every package resolves inside the copy (or not at all);
    otherwise `reason` names each one that does not and `remedy` says what to do."""

    ok: bool
    packages: list[dict[str, Any]]  # {name, language, where: copy|workspace|elsewhere|missing, path}
    reason: str | None = None
    remedy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "packages": self.packages, "reason": self.reason, "remedy": self.remedy}


# --------------------------------------------------------------------------- the project's packages


def _toml(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _table(data: Any, *keys: str) -> dict[str, Any]:
    """data[k1][k2]... when each is a table, else {}."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file() and folder.name.isidentifier()


def python_packages(root: Path) -> list[str]:
    """The project's top-level import names: setuptools' declared packages and py-modules,
    `src/*/__init__.py`, top-level folders with `__init__.py`, and the `[project]` name when
    it names one of those or a module beside them."""
    names: dict[str, None] = {}
    data = _toml(root / "pyproject.toml")
    setuptools = _table(data, "tool", "setuptools")
    declared = setuptools.get("packages")
    if isinstance(declared, list):
        names.update((str(p).split(".")[0], None) for p in declared if str(p).split(".")[0].isidentifier())
    modules = setuptools.get("py-modules")
    if isinstance(modules, list):
        names.update((str(m), None) for m in modules if str(m).isidentifier())
    for base in (root / "src", root):
        try:
            entries = sorted(base.iterdir()) if base.is_dir() else []
        except OSError:
            entries = []
        for entry in entries:
            if entry.name in SKIP_DIRS or entry.name.startswith((".", "_")):
                continue
            if entry.is_dir() and not entry.is_symlink() and _is_package(entry):
                names.setdefault(entry.name, None)
            elif base.name == "src" and entry.suffix == ".py" and entry.stem.isidentifier():
                names.setdefault(entry.stem, None)
    project = _table(data, "project")
    guess = re.sub(r"[-.]+", "_", str(project.get("name") or "")).lower()
    if guess.isidentifier() and guess not in names and any(
        (base / guess).with_suffix(".py").is_file() for base in (root, root / "src")
    ):
        names[guess] = None
    return list(names)[:MAX_NAMES]


def node_packages(root: Path) -> list[str]:
    """The package's own name from package.json (what `require(name)` loads from inside it)."""
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    name = data.get("name") if isinstance(data, dict) else None
    if isinstance(name, str) and re.fullmatch(r"(@[\w.-]+/)?[\w.-]+", name):
        return [name]
    return []


def _pytest_paths(root: Path) -> list[str]:
    """`pythonpath` folders the pytest configuration adds to sys.path (pyproject, pytest.ini)."""
    data = _toml(root / "pyproject.toml")
    value: Any = _table(data, "tool", "pytest", "ini_options").get("pythonpath")
    if value is None:
        try:
            text = (root / "pytest.ini").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        match = re.search(r"^\s*pythonpath\s*=\s*(.+)$", text, re.M)
        value = match.group(1).split() if match else []
    if isinstance(value, str):
        value = value.split()
    return [str(v) for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _cwd_on_path(root: Path, test_command: str, path: str | None) -> bool:
    """Whether the tests see the folder they run in on sys.path: `python -m ...` puts it there;
    a `pytest` script does not, unless a conftest.py at the root makes pytest insert it. For a
    command that is no Python (`make test`), the `python -m` case is assumed."""
    argv = command_words(test_command)
    if not argv or PYTHON_NAME.match(Path(argv[0]).name):
        return True
    _, python_based = interpreter_for(test_command, path, root)
    if not python_based:
        return True
    return framework_of(test_command) == "pytest" and (root / "conftest.py").is_file()


def probes(root: Path, test_command: str, *, path: str | None = None) -> list[Probe]:
    """The programs to run in the copy (cwd `root`, the copy or its package folder) that say
    where the project's packages resolve: one for Python, one for Node, as the project has."""
    out: list[Probe] = []
    names = python_packages(root)
    if names:
        interpreter, _ = interpreter_for(test_command, path, root)
        extra: list[str] = [] if _cwd_on_path(root, test_command, path) else ["--no-cwd"]
        if framework_of(test_command) == "pytest":
            for folder in _pytest_paths(root):
                extra += ["--path", folder]
        out.append(Probe("python", [interpreter or "python3", "-c", PY_PROBE, *extra, *names], names))
    node_names = node_packages(root)
    if node_names:
        out.append(Probe("node", ["node", "-e", NODE_PROBE, *node_names], node_names))
    return out


# --------------------------------------------------------------------------- the judgement


def _inside(path: str, root: Path) -> bool:
    candidate = os.path.normpath(path)
    top = os.path.normpath(str(root))
    if candidate == top or candidate.startswith(top.rstrip(os.sep) + os.sep):
        return True
    real, real_top = os.path.realpath(candidate), os.path.realpath(top)
    return real == real_top or real.startswith(real_top.rstrip(os.sep) + os.sep)


def _place(item: Resolved) -> str | None:
    """The package's folder (or a module's file) the name resolved to."""
    if item.locations:
        return item.locations[0]
    if item.origin and item.origin not in ("namespace", "built-in", "frozen"):
        return item.origin
    return None


def classify(
    found: dict[str, Resolved], *, copy_seen_at: Path, workspace: Path, language: str = "python"
) -> Resolution:
    """Judge a probe's answer. `copy_seen_at`: where the program sees the copy (the copy's own
    path without a sandbox; the workspace's path when the sandbox shows the copy there, and then
    a path under the workspace IS the copy). `workspace`: the person's work tree."""
    packages: list[dict[str, Any]] = []
    problems: list[str] = []
    where_seen = {"workspace": False, "elsewhere": False}
    for name, item in found.items():
        place = _place(item)
        if place is None:
            where = "missing"
        elif _inside(place, copy_seen_at):
            where = "copy"
        elif _inside(place, workspace):
            where = "workspace"
        else:
            where = "elsewhere"
        packages.append({"name": name, "language": language, "where": where, "path": place,
                         **({"error": item.error} if item.error and where == "missing" else {})})
        if where == "workspace":
            where_seen["workspace"] = True
            how = "an editable install of the workspace" if language == "python" else "a link to the workspace"
            problems.append(f"{name} resolves to {place} ({how}); the copy's tests would import your work tree, "
                            "not the change")
        elif where == "elsewhere":
            where_seen["elsewhere"] = True
            problems.append(f"{name} resolves to {place}, outside the copy (an installed package); the copy's "
                            "tests would import that, not the change")
    if not problems:
        return Resolution(True, packages)
    remedies = []
    if where_seen["workspace"]:
        remedies.append("run with the sandbox on (it shows the copy at the workspace's path)")
    if language == "python":
        remedies.append("make the tests import the project's own source (for a src/ layout: "
                        "pythonpath = [\"src\"] under [tool.pytest.ini_options])")
        if where_seen["workspace"]:
            remedies.append("or install the package without -e")
    else:
        remedies.append("remove the `npm link` or give package.json an \"exports\" entry so the package "
                        "resolves to itself")
    return Resolution(False, packages, "; ".join(problems), "; ".join(remedies))


def classify_output(
    probe: Probe, output: str, *, copy_seen_at: Path, workspace: Path
) -> Resolution:
    """`classify` of a probe's raw output; a probe that printed no answer is not ok."""
    found = probe.parse(output)
    if not found:
        tail = " ".join(output.strip().splitlines()[-3:])[:300] or "no output"
        return Resolution(False, [], f"could not tell where {', '.join(probe.names)} resolve ({probe.argv[0]} "
                          f"answered: {tail})", f"check that {probe.argv[0]} runs in the copy")
    return classify(found, copy_seen_at=copy_seen_at, workspace=workspace, language=probe.language)


def merge(resolutions: Iterable[Resolution]) -> Resolution:
    """One judgement of several probes (Python and Node)."""
    items = list(resolutions)
    bad = [r for r in items if not r.ok]
    packages = [p for r in items for p in r.packages]
    if not bad:
        return Resolution(True, packages)
    return Resolution(False, packages, "; ".join(r.reason or "" for r in bad), "; ".join(r.remedy or "" for r in bad))
