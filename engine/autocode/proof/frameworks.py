"""The project's own test command, made to also write per-test machine output, and that
output read back as a Report; and the same command narrowed to a few test files.

`instrument` rewrites argv (and adds environment) so what runs and what the person sees
stay the same; it copies the helper it needs (a pytest plugin, a unittest launcher, a node
reporter) into `report_dir`, which the caller makes writable and visible to the program at
the same path. It returns None for commands with no per-test output (`make test`, a
custom script): their verdict can only be unproven.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autocode.proof.commands import Command, parse
from autocode.proof.reading import FILE_LIMIT, Unreadable, read_bytes
from autocode.proof.results import Report, merge, unavailable

HELPERS = Path(__file__).with_name("helpers")
REPORT_FILES = {"pytest": "pytest.jsonl", "unittest": "unittest.jsonl", "node": "node.jsonl",
                "jest": "jest.json", "vitest": "vitest.json", "mocha": "mocha.json"}
_NO_REPORT = {
    "pytest": "pytest stopped before it ran any test (a conftest.py, plugin or option failed; the output says which)",
    "unittest": "python -m unittest stopped before it ran any test (the output says why)",
    "node": "node --test stopped before it ran any test (the output says why)",
}
_JUNIT_LIMIT = 5000  # report files read from target/ or build/


@dataclass(frozen=True)
class Instrumented:
    """A test command that also writes per-test output.

    `env` is added to the program's environment; `PYTHONPATH` in it is a folder to put
    first on any PYTHONPATH the caller sets, `NODE_OPTIONS` words to add to the caller's. `framework` is the runner that writes the
    results (for `npm test` running jest: "jest").
    """

    argv: list[str]
    env: dict[str, str]
    framework: str
    cwd: Path
    since: float = field(default=0.0)  # when it was made: report files older than this are stale


def _ignores_env(flag: str) -> bool:
    """-I or -E among an interpreter's short flags (`-IB`, `-E`; not the value of `-W`/`-X`)."""
    if not flag.startswith("-") or flag.startswith("--"):
        return False
    letters = flag[1:]
    for letter in letters:
        if letter in "WX":
            return False
        if letter in "IE":
            return True
    return False


def _staged(name: str, report_dir: Path, folder: str) -> Path:
    target = report_dir / folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HELPERS / name, target)
    return target


def _fresh(report_dir: Path, framework: str) -> Path:
    path = report_dir / REPORT_FILES[framework]
    path.unlink(missing_ok=True)
    return path


def _reporter_args(runner: Command, report_dir: Path) -> tuple[list[str], dict[str, str]] | None:
    """The arguments that make a JS runner also write its report, and the environment."""
    args = runner.argv[runner.at :]
    if runner.framework == "jest":
        return ["--json", f"--outputFile={_fresh(report_dir, 'jest')}"], {}
    if runner.framework == "vitest":
        out = _fresh(report_dir, "vitest")
        return ["--reporter=default", "--reporter=json", f"--outputFile.json={out}"], {}
    if runner.framework == "mocha":
        if any(a in ("-R", "--reporter") or a.startswith("--reporter=") for a in args):
            return None  # the person's own reporter: mocha runs one reporter only
        return ["--reporter", "json", "--reporter-option", f"output={_fresh(report_dir, 'mocha')}"], {}
    if runner.framework == "tap":
        return ["--reporter=tap"], {}
    if runner.framework == "node":
        reporters = [a for a in args if a == "--test-reporter" or a.startswith("--test-reporter=")]
        targets = [a for a in args if a.startswith("--test-reporter-destination")]
        ours = [f"--test-reporter={_staged('autocode_proof_node.mjs', report_dir, 'node')}",
                f"--test-reporter-destination={_fresh(report_dir, 'node')}"]
        if not reporters and not targets:
            return ["--test-reporter=spec", "--test-reporter-destination=stdout", *ours], {}
        if len(reporters) == len(targets):
            return ours, {}
        if len(reporters) == 1 and not targets:
            return ["--test-reporter-destination=stdout", *ours], {}
        return None
    return None


def _node_options(
    inner: Command, report_dir: Path, words: list[str], folder: Path, now: float
) -> Instrumented | None:
    if any(a.startswith("--test-reporter") for a in inner.argv):
        return None  # reporters of its own: how they would pair with ours is not defined
    found = _reporter_args(inner, report_dir)
    if found is None or any(ch in str(report_dir) for ch in '"\\'):
        return None
    options = " ".join(f'"{a}"' if " " in a else a for a in found[0])
    return Instrumented(words, {"NODE_OPTIONS": options}, "node", folder, now)


def instrument(
    argv: Sequence[str], *, framework: str | None, report_dir: Path, project: Path, cwd: Path | None = None
) -> Instrumented | None:
    """`argv` made to also write per-test output into `report_dir`, or None when it cannot be.

    `framework` is detect's name when known (a hint; the command itself decides), `project`
    the copy's root, `cwd` where the command will run (default: the project root).
    """
    del framework  # the words of the command say what runs; detection may name only the manager
    words = list(argv)
    folder = cwd or project
    command = parse(words, project=project, cwd=folder)
    if command is None:
        return None
    report_dir.mkdir(parents=True, exist_ok=True)
    head, tail = words[: command.at], words[command.at :]
    now = time.time()
    kind = command.framework
    if kind == "pytest":
        if any(_ignores_env(f) for f in command.python_flags):
            return None  # -I / -E: the interpreter ignores PYTHONPATH, so the plugin cannot load
        plugin = _staged("autocode_proof_pytest.py", report_dir, "pytest-plugin")
        env = {"PYTHONPATH": str(plugin.parent), "AUTOCODE_PROOF_REPORT": str(_fresh(report_dir, "pytest"))}
        return Instrumented([*head, "-p", "autocode_proof_pytest", *tail], env, "pytest", folder, now)
    if kind == "unittest":
        launcher = _staged("autocode_proof_unittest.py", report_dir, "unittest")
        launch = [*head[: command.at - 2], str(launcher)]
        env = {"AUTOCODE_PROOF_REPORT": str(_fresh(report_dir, "unittest"))}
        return Instrumented([*launch, *tail], env, "unittest", folder, now)
    if kind == "go":
        extra = [] if "-json" in tail else ["-json"]
        return Instrumented([*head, *extra, *tail], {}, "go", folder, now)
    if kind == "prove":
        extra = [] if any(a in ("-v", "--verbose") for a in tail) else ["-v"]
        return Instrumented([*head, *extra, *tail], {}, "prove", folder, now)
    if kind in ("cargo", "maven", "gradle"):
        return Instrumented(words, {}, kind, folder, now)
    if kind in ("npm", "yarn", "pnpm"):
        inner = command.script
        if inner is None:
            return None
        if inner.framework == "node" and inner.argv[inner.at :]:
            # `node --test test/`: node would read appended words as the tests' own arguments,
            # so the reporter goes in through NODE_OPTIONS (node allows these two flags there)
            return _node_options(inner, report_dir, words, folder, now)
        found = _reporter_args(inner, report_dir)
        if found is None:
            return None
        extra, env = found
        sep = ["--"] if kind == "npm" and "--" not in tail else []
        return Instrumented([*words, *sep, *extra], env, inner.framework, folder, now)
    found = _reporter_args(command, report_dir)
    if found is None:
        return None
    extra, env = found
    if kind == "node":
        return Instrumented([*head, *extra, *tail], env, "node", folder, now)
    return Instrumented([*words, *extra], env, kind, folder, now)


def _build_modules(top: Path) -> list[Path]:
    """Folders under `top` holding a Maven or Gradle build file, skipping what never holds one
    (sources, outputs, dependencies), so a large tree costs a walk of its build folders only."""
    skip = {"node_modules", "target", "build", "src", ".git", ".gradle", ".idea", ".mvn", "__pycache__"}
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(top):
        depth = len(Path(dirpath).relative_to(top).parts)
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith(".") and depth < 8)
        if {"pom.xml", "build.gradle", "build.gradle.kts"} & set(filenames):
            found.append(Path(dirpath))
        if len(found) > 2000:
            break
    return found or [top]


def _junit_reports(inst: Instrumented, project: Path) -> list[tuple[Path, bytes]]:
    del project
    found: list[tuple[Path, bytes]] = []
    total = 0
    for module in _build_modules(inst.cwd):
        if inst.framework == "maven":
            paths = sorted((module / "target" / "surefire-reports").glob("TEST-*.xml"))
        else:
            paths = sorted((module / "build" / "test-results").glob("*/*.xml"))
        for path in paths:
            if len(found) >= _JUNIT_LIMIT:
                raise Unreadable(f"more than {_JUNIT_LIMIT} report files under {inst.cwd.name}")
            try:
                if path.is_symlink() or path.stat().st_mtime < inst.since - 1:
                    continue  # left by an earlier run, or a link out of the copy
            except OSError:
                continue
            data = read_bytes(path)
            total += len(data)
            if total > FILE_LIMIT * 4:
                raise Unreadable("the test reports together are larger than AutoCode reads")
            found.append((path, data))
    if not found:
        raise Unreadable(f"{inst.framework} wrote no test report in this run (did the build fail, or was "
                         "the test task up to date? see the output)")
    return found


def read_report(
    inst: Instrumented, *, report_dir: Path, output: str, project: Path, seen_cwd: str | None = None
) -> Report:
    """The per-test results of a run of `inst`: from `report_dir`, or from `output` (what the
    program printed) for runners whose machine output is their stdout (go, cargo, TAP).
    `seen_cwd`: the run's folder as the process saw it (the sandbox may show the copy at the
    workspace's path), so absolute file names in a report (mocha, jest) become project-relative."""
    # lazy: the readers' patterns and the XML parser are needed only once a run is over
    from autocode.proof import compiled, parsers

    where = parsers.Where(inst.cwd, project, seen_cwd)
    kind = inst.framework
    try:
        if kind in ("pytest", "unittest", "node", "jest", "vitest"):
            if not (report_dir / REPORT_FILES[kind]).exists() and not (report_dir / REPORT_FILES[kind]).is_symlink():
                return unavailable(kind, _NO_REPORT.get(kind, f"{kind} wrote no report (see the output)"))
            data = read_bytes(report_dir / REPORT_FILES[kind])
            reader = {"pytest": parsers.pytest_results, "unittest": parsers.unittest_results,
                      "node": parsers.node_results, "jest": parsers.jest_results}.get(kind)
            found = reader(data, where) if reader else parsers.jest_results(data, where, "vitest")
        elif kind == "mocha":
            path = report_dir / REPORT_FILES["mocha"]
            data = read_bytes(path) if path.exists() else parsers.mocha_json(output)
            found = parsers.mocha_results(data, where)
        elif kind == "go":
            found = compiled.go_results(output, where)
        elif kind == "cargo":
            found = compiled.cargo_results(output, where)
        elif kind in ("prove", "tap"):
            found = parsers.tap_results(output, where)
        elif kind in ("maven", "gradle"):
            found = compiled.junit_results(_junit_reports(inst, project), where)
        else:
            return unavailable(kind, f"{kind} has no per-test output AutoCode reads")
    except Unreadable as exc:
        return unavailable(kind, str(exc))
    except (RecursionError, MemoryError):
        return unavailable(kind, "the test report is too deeply nested or too large to read")
    if not found:
        return Report(kind, (), "the run reported no tests")
    if kind in ("pytest", "unittest") and not parsers.session_finished(data):
        return Report(kind, merge(found), "the run stopped before it finished (timed out, killed or crashed): "
                      "these are the results it reached")
    return Report(kind, merge(found))


def progress(inst: Instrumented, *, report_dir: Path) -> int | None:
    """How many tests have finished so far in a run of `inst` that is still going (read from
    its report file as it grows), or None for runners whose progress is only in their output."""
    from autocode.proof import parsers  # lazy, as in read_report

    name = REPORT_FILES.get(inst.framework)
    if name is None or inst.framework in ("jest", "vitest", "mocha"):
        return None  # these write their report once, at the end
    try:
        data = read_bytes(report_dir / name)
    except Unreadable:
        return 0
    return parsers.finished_count(inst.framework, data)


def shown_output(inst: Instrumented, output: str) -> str:
    """What the person would have read: the same output, except go's JSON events, turned back
    into the text `go test -v` prints."""
    from autocode.proof import compiled  # lazy, as in read_report

    return compiled.go_output(output) if inst.framework == "go" else output


def why_not(argv: Sequence[str], *, project: Path, cwd: Path | None = None) -> str:
    """Why `instrument` gave None for `argv`: a sentence for the unproven verdict."""
    words = list(argv)
    command = parse(words, project=project, cwd=cwd or project)
    name = " ".join(words[:2]) or "the command"
    if command is None:
        return (f"`{name}` is not a test runner AutoCode reads per-test results from; set test_command "
                "to the runner itself (pytest, python -m unittest, go test, node --test, jest, vitest, "
                "mocha, cargo test, mvn test, gradle test, prove)")
    return f"`{name}` is run in a way AutoCode cannot add its reporter to (an interpreter flag or a reporter of its own)"


def narrow(argv: Sequence[str], *, test_files: Sequence[str], project: Path, cwd: Path | None = None) -> list[str] | None:
    """`argv` restricted to `test_files` (project-relative), or None when it cannot be (the caller
    then runs the whole command). Narrow first, then instrument the result."""
    # lazy: only the baseline of a change's own tests needs it
    from autocode.proof.narrowing import narrowed

    folder = cwd or project
    command = parse(list(argv), project=project, cwd=folder)
    if command is None or not test_files:
        return None
    rel: list[str] = []
    for name in test_files:
        full = os.path.normpath(project / name)
        try:
            rel.append(Path(full).relative_to(os.path.normpath(folder)).as_posix())
        except ValueError:
            return None  # a test outside the folder the command runs in
    return narrowed(command, rel, folder)
