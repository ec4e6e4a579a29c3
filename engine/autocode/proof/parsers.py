"""One reader per framework's machine output: each turns a report (JSON lines from a shipped
helper, a JSON or XML document, or the stable text a tool prints) into TestResults.

Every reader gets the report and `Where` (the host folder the command ran in and the project
root) and raises `Unreadable` for anything it cannot use; it never guesses a result.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from autocode.proof.reading import Unreadable, json_document, json_lines, xml_document
from autocode.proof.results import RESULT_LIMIT, Outcome, TestResult, result


@dataclass(frozen=True)
class Where:
    cwd: Path  # the host folder the command ran in
    project: Path  # the copy's root: files are named relative to it
    seen_cwd: str | None = None  # the same folder as the test process named it, when it said

    def file(self, path: str | None, base: str | None = None) -> str | None:
        """`path` (absolute as the process saw it, or relative to `base`, default the cwd)
        as a project-relative POSIX path; None when it lies outside the project."""
        if not path:
            return None
        seen = self.seen_cwd
        if base and not os.path.isabs(path):
            path = os.path.join(base, path)
        if os.path.isabs(path) and seen and (path == seen or path.startswith(seen.rstrip("/") + "/")):
            path = os.path.relpath(path, seen)
        host = Path(path) if os.path.isabs(path) else self.cwd / path
        try:
            rel = Path(os.path.normpath(host)).relative_to(os.path.normpath(self.project))
        except ValueError:
            return None
        return rel.as_posix()


def _bounded(items: Iterable[TestResult]) -> list[TestResult]:
    found: list[TestResult] = []
    for item in items:
        found.append(item)
        if len(found) > RESULT_LIMIT:
            raise Unreadable(f"the run reported more than {RESULT_LIMIT} results; AutoCode does not read that many")
    return found


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# ---- pytest (the shipped plugin's JSON lines)


def pytest_results(data: bytes, where: Where) -> list[TestResult]:
    events = list(json_lines(data, "pytest"))
    start = next((e for e in events if e.get("event") == "start"), None)
    if start is None:
        raise Unreadable("pytest did not load AutoCode's results plugin (no start line in its report)")
    where = Where(where.cwd, where.project, _text(start.get("cwd")))
    rootdir = _text(start.get("rootdir"))

    def items() -> Iterator[TestResult]:
        for event in events:
            kind = event.get("event")
            nodeid = _text(event.get("nodeid"))
            outcome = event.get("outcome")
            if kind not in ("test", "collect") or nodeid is None or outcome not in ("passed", "failed", "skipped"):
                continue
            file = where.file(_text(event.get("file")), rootdir)
            message = _text(event.get("message"))
            if kind == "collect":
                shown: Outcome = "skipped" if outcome == "skipped" else "error"
                yield result(nodeid or "<collection>", shown, file, message)
            elif outcome == "failed":
                yield result(nodeid, "failed" if event.get("when") == "call" else "error", file, message)
            else:
                yield result(nodeid, "skipped" if outcome == "skipped" else "passed", file, message)

    return _bounded(items())


# ---- unittest (the shipped launcher's JSON lines)


def unittest_results(data: bytes, where: Where) -> list[TestResult]:
    events = list(json_lines(data, "unittest"))
    start = next((e for e in events if e.get("event") == "start"), None)
    if start is None:
        raise Unreadable("the unittest launcher did not start (no start line in its report)")
    where = Where(where.cwd, where.project, _text(start.get("cwd")))

    def items() -> Iterator[TestResult]:
        for event in events:
            test_id = _text(event.get("id"))
            outcome = event.get("outcome")
            if event.get("event") != "test" or not test_id or outcome not in ("passed", "failed", "error", "skipped"):
                continue
            yield result(test_id, outcome, where.file(_text(event.get("file"))), _text(event.get("message")))

    return _bounded(items())


# ---- node --test (the shipped reporter's JSON lines)


def node_results(data: bytes, where: Where) -> list[TestResult]:
    stacks: dict[str, list[str]] = {}

    def items() -> Iterator[TestResult]:
        for event in json_lines(data, "node --test"):
            name, nesting, file = _text(event.get("name")), event.get("nesting"), _text(event.get("file"))
            if name is None or not isinstance(nesting, int) or not 0 <= nesting < 1000:
                continue
            key = file or ""
            stack = stacks.setdefault(key, [])
            del stack[nesting:]
            if event.get("event") == "test:start":
                stack.append(name)
                continue
            if event.get("kind") == "suite":
                continue
            rel = where.file(file) if file else None
            failed = event.get("event") == "test:fail"
            if nesting == 0 and file and name == file:  # the file itself: it failed to load or run
                if failed:
                    yield result(rel or name, "error", rel, _text(event.get("error")) or "the test file failed")
                continue
            title = " > ".join([*stack[:nesting], name])
            outcome: Outcome = "skipped" if event.get("skip") or event.get("todo") else "failed" if failed else "passed"
            yield result(f"{rel or file or ''}::{title}", outcome, rel, _text(event.get("error")))

    return _bounded(items())


# ---- jest and vitest (--json / --reporter=json: the same document shape)

_JEST_STATUS: dict[str, Outcome] = {
    "passed": "passed",
    "failed": "failed",
    "pending": "skipped",
    "skipped": "skipped",
    "todo": "skipped",
    "disabled": "skipped",
    "focused": "passed",
}


def jest_results(data: bytes, where: Where, name: str = "jest") -> list[TestResult]:
    doc = json_document(data, name)
    files = doc.get("testResults") if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise Unreadable(f"the {name} report has no testResults list")

    def items() -> Iterator[TestResult]:
        for entry in files:
            if not isinstance(entry, dict):
                continue
            path = _text(entry.get("name")) or _text(entry.get("testFilePath"))
            rel = where.file(path)
            shown = rel or path or ""
            assertions = entry.get("assertionResults") or entry.get("testResults") or []
            if not isinstance(assertions, list):
                assertions = []
            if not assertions and entry.get("status") == "failed":
                message = _text(entry.get("message")) or _text(entry.get("failureMessage"))
                yield result(shown, "error", rel, message or f"{name} could not run this file")
                continue
            for case in assertions:
                if not isinstance(case, dict) or not isinstance(case.get("title"), str):
                    continue
                titles = [t for t in case.get("ancestorTitles") or [] if isinstance(t, str)]
                status = _JEST_STATUS.get(str(case.get("status")), "error")
                messages = [m for m in case.get("failureMessages") or [] if isinstance(m, str)]
                title = " > ".join([*titles, case["title"]])
                yield result(f"{shown}::{title}", status, rel, "\n".join(messages) or None)

    return _bounded(items())


# ---- mocha (its json reporter)

_MOCHA_HOOK = re.compile(r'^"(?:before|after) (?:all|each)" hook')


def mocha_json(text: str) -> bytes:
    """The JSON document the json reporter printed to stdout, among whatever else was printed."""
    at = text.rfind('{\n  "stats"')
    if at < 0:
        raise Unreadable("mocha printed no JSON report (its json reporter did not run)")
    return text[at:].encode("utf-8", "surrogateescape")


def mocha_results(data: bytes, where: Where) -> list[TestResult]:
    doc = json_document(data, "mocha")
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list):
        raise Unreadable("the mocha report has no tests list")

    def listed(name: str) -> list[Any]:
        entries = doc.get(name)
        return entries if isinstance(entries, list) else []

    def keys(name: str) -> set[tuple[str | None, str | None]]:
        entries = listed(name)
        return {(_text(e.get("file")), _text(e.get("fullTitle"))) for e in entries if isinstance(e, dict)}

    failed, pending = keys("failures"), keys("pending")

    def items() -> Iterator[TestResult]:
        seen = set()
        entries = [e for e in doc["tests"] if isinstance(e, dict)]
        # hook failures are listed under failures only
        entries += [e for e in listed("failures") if isinstance(e, dict)]
        for case in entries:
            path, title = _text(case.get("file")), _text(case.get("fullTitle"))
            if title is None or (path, title) in seen:
                continue
            seen.add((path, title))
            rel = where.file(path)
            err: dict[str, Any] = case["err"] if isinstance(case.get("err"), dict) else {}
            message = _text(err.get("stack")) or _text(err.get("message"))
            hook = _MOCHA_HOOK.match(_text(case.get("title")) or "")
            outcome: Outcome = (
                "error" if hook else "failed" if (path, title) in failed else
                "skipped" if (path, title) in pending else "passed"
            )
            yield result(f"{rel or path or ''}::{title}", outcome, rel, message)

    return _bounded(items())


# ---- TAP (prove -v, tap -R tap, any producer that prints plain TAP)

_TAP_LINE = re.compile(r"^(?P<indent>\s*)(?P<ok>not ok|ok)\b\s*(?P<num>\d+)?\s*(?:-\s*)?(?P<desc>[^#]*?)\s*(?:#\s*(?P<dir>.*))?$")
_TAP_SUBTEST = re.compile(r"^(?P<indent>\s*)# Subtest: (?P<name>.*)$")
_PROVE_FILE = re.compile(r"^(?P<file>\S(?:.*\S)?) \.{2,} ?(?P<rest>.*)$")
_TAP_FILE = re.compile(r"\.(?:[cm]?[jt]sx?|t|pl)$")
_TAP_PLAN = re.compile(r"^\s*1\.\.(?P<n>\d+)")


def tap_results(output: str, where: Where) -> list[TestResult]:
    """TAP as prove -v prints it (a `file .. ` line before each file's TAP), or nested TAP
    (`# Subtest:` blocks, indented) as node-tap prints it."""
    found: list[TestResult] = []
    names: dict[str, int] = {}
    file: str | None = None
    planned: int | None = None
    ran = 0
    trail: list[tuple[int, str]] = []  # open subtests: (indent, name)

    def close_file() -> None:
        if file is not None and (ran == 0 or (planned is not None and ran < planned)):
            why = "no tests ran" if ran == 0 else f"planned {planned} tests, {ran} ran"
            found.append(result(file, "error", where.file(file), f"{file}: {why} (see the output)"))

    for line in output.splitlines():
        header = _PROVE_FILE.match(line)
        if header and not line.startswith((" ", "\t", "#")) and not _TAP_LINE.match(line):
            close_file()
            file, planned, ran, trail = header.group("file"), None, 0, []
            continue
        if line.startswith("Test Summary Report"):
            close_file()
            file = None
            continue
        sub = _TAP_SUBTEST.match(line)
        if sub:
            depth = len(sub.group("indent"))
            trail = [t for t in trail if t[0] < depth] + [(depth, sub.group("name"))]
            continue
        plan = _TAP_PLAN.match(line)
        if plan and file is not None and not line.startswith((" ", "\t")):
            planned = int(plan.group("n"))
            continue
        match = _TAP_LINE.match(line)
        if not match:
            continue
        depth = len(match.group("indent"))
        desc = match.group("desc").strip()
        directive = (match.group("dir") or "").strip()
        if trail and trail[-1][0] >= depth and trail[-1][1] == desc:
            trail.pop()  # the line that closes a subtest: its assertions were the results
            continue
        trail = [t for t in trail if t[0] < depth]
        if depth == 0:
            ran += 1
        label = desc or f"#{match.group('num') or ran}"
        path = [name for _, name in trail] + [label]
        owner = file
        if owner is None and len(path) > 1 and _TAP_FILE.search(path[0]):
            owner, path = path[0], path[1:]  # node-tap: each file is a top-level subtest
        key = (f"{owner}::" if owner else "") + " > ".join(path)
        count = names.get(key, 0) + 1
        names[key] = count
        test_id = key if count == 1 else f"{key} ({count})"
        lowered = directive.lower()
        outcome: Outcome
        if lowered.startswith("skip"):
            outcome = "skipped"
        elif lowered.startswith("todo"):
            outcome = "skipped"  # a TODO test's result does not count either way
        else:
            outcome = "passed" if match.group("ok") == "ok" else "failed"
        found.append(result(test_id, outcome, where.file(owner) if owner else None))
        if len(found) > RESULT_LIMIT:
            raise Unreadable(f"the run reported more than {RESULT_LIMIT} results")
    close_file()
    if not found:
        raise Unreadable("the output holds no TAP test lines")
    return found


# ---- cargo test (its stable human output)

_CARGO_TARGET = re.compile(r"^\s*Running (?:unittests )?(?P<src>\S+) \(")
_CARGO_DOC = re.compile(r"^\s*Doc-tests (?P<name>\S+)")
_CARGO_TEST = re.compile(r"^test (?P<name>.+?) \.\.\. (?P<status>ok|FAILED|ignored(?:, .*)?)$")
_CARGO_BLOCK = re.compile(r"^---- (?P<name>.+?) stdout ----$")


def _rust_module_file(where: Where, src: str, name: str) -> str | None:
    """The file of a unit test `a::b::tests::name` in the crate whose root is `src`."""
    root = where.file(src)
    if root is None:
        return None
    parts = name.split("::")[:-1]
    base = PurePosixPath(root).parent
    best = root
    for n in range(1, len(parts) + 1):
        stem = base.joinpath(*parts[:n])
        for candidate in (f"{stem}.rs", f"{stem}/mod.rs"):
            if (where.project / candidate).is_file():
                best = candidate
    return best


def cargo_results(output: str, where: Where) -> list[TestResult]:
    target: str | None = None
    doc = False
    found: list[TestResult] = []
    messages: dict[str, list[str]] = {}
    block: str | None = None
    for line in output.splitlines():
        running = _CARGO_TARGET.match(line)
        if running:
            target, doc, block = running.group("src"), False, None
            continue
        docs = _CARGO_DOC.match(line)
        if docs:
            target, doc, block = None, True, None
            continue
        header = _CARGO_BLOCK.match(line)
        if header:
            block = f"{target or ''}::{header.group('name')}"
            messages[block] = []
            continue
        if block is not None:
            if line.startswith(("failures:", "test result:")):
                block = None
            else:
                messages[block].append(line)
            continue
        test = _CARGO_TEST.match(line)
        if not test or (target is None and not doc):
            continue
        name = test.group("name").removesuffix(" - should panic")
        status = test.group("status")
        outcome: Outcome = "passed" if status == "ok" else "failed" if status == "FAILED" else "skipped"
        if doc:  # "src/lib.rs - add (line 5)"
            file = where.file(name.split(" - ", 1)[0])
            found.append(result(f"doc::{name}", outcome, file))
        else:
            found.append(result(f"{target}::{name}", outcome, _rust_module_file(where, target or "", name)))
        if len(found) > RESULT_LIMIT:
            raise Unreadable(f"the run reported more than {RESULT_LIMIT} results")
    if not found:
        raise Unreadable("cargo printed no test results (did the build fail? see the output)")
    return [
        TestResult(r.id, r.outcome, r.file, result(r.id, r.outcome, None, "\n".join(messages[r.id])).message)
        if r.outcome == "failed" and r.id in messages else r
        for r in found
    ]


# ---- go test -json (events on stdout)


def _go_module(where: Where) -> tuple[str, Path] | None:
    for folder in (where.cwd, *where.cwd.parents):
        mod = folder / "go.mod"
        if mod.is_file():
            try:
                text = mod.read_text(encoding="utf-8", errors="replace")[: 1 << 16]
            except OSError:
                return None
            found = re.search(r"^module\s+(\S+)", text, re.MULTILINE)
            return (found.group(1).strip('"'), folder) if found else None
        if folder == where.project:
            break
    return None


def _go_test_files(where: Where, module: tuple[str, Path] | None, package: str) -> dict[str, str]:
    """Top-level test function name -> project-relative file, for one package."""
    if module is None or not (package == module[0] or package.startswith(module[0] + "/")):
        return {}
    folder = module[1] / package[len(module[0]) :].lstrip("/")
    names: dict[str, str] = {}
    try:
        files = sorted(p for p in folder.iterdir() if p.name.endswith("_test.go") and p.is_file())
    except OSError:
        return {}
    for path in files[:500]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")[: 1 << 20]
        except OSError:
            continue
        rel = where.file(str(path))
        for match in re.finditer(r"^func\s+((?:Test|Example|Fuzz)\w*)\s*\(", text, re.MULTILINE):
            names.setdefault(match.group(1), rel or "")
    return names


def go_results(output: str, where: Where) -> list[TestResult]:
    module = _go_module(where)
    outcomes: dict[tuple[str, str], Outcome] = {}
    logs: dict[tuple[str, str], list[str]] = {}
    failed_packages: dict[str, bool] = {}
    any_event = False
    build_log: dict[str, list[str]] = {}  # go before 1.24 prints build errors as plain text
    building: str | None = None
    for line in output.splitlines():
        if not line.startswith("{"):
            header = re.match(r"^# (\S+)", line)
            failed = re.match(r"^FAIL\t(\S+) \[(?:build|setup) failed\]", line)
            if header:
                building = header.group(1)
                build_log.setdefault(building, [])
            elif failed:
                package = failed.group(1)
                failed_packages[package] = True
                logs.setdefault((package, ""), []).extend(build_log.get(package, [line + "\n"]))
                any_event = True
            elif building is not None and len(build_log[building]) < 200:
                build_log[building].append(line + "\n")
            continue
        building = None
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("Package"), str):
            continue
        any_event = True
        package, test, action = event["Package"], _text(event.get("Test")) or "", event.get("Action")
        key = (package, test)
        if action == "output" and isinstance(event.get("Output"), str):
            kept = logs.setdefault(key, [])
            if sum(map(len, kept)) < 8000:
                kept.append(event["Output"])
        elif action in ("pass", "fail", "skip"):
            if test:
                outcomes[key] = {"pass": "passed", "fail": "failed", "skip": "skipped"}[action]  # type: ignore[assignment]
            else:
                failed_packages[package] = action == "fail"
        if len(outcomes) > RESULT_LIMIT:
            raise Unreadable(f"the run reported more than {RESULT_LIMIT} results")
    if not any_event:
        raise Unreadable("go test printed no JSON events (did the build fail? see the output)")
    files: dict[str, dict[str, str]] = {}
    found: list[TestResult] = []
    for (package, test), outcome in outcomes.items():
        known = files.setdefault(package, _go_test_files(where, module, package))
        file = known.get(test.split("/", 1)[0]) or None
        found.append(result(f"{package}::{test}", outcome, file, "".join(logs.get((package, test), [])) or None))
    for package, failed in failed_packages.items():
        if failed and not any(p == package and o == "failed" for (p, _), o in outcomes.items()):
            found.append(result(package, "error", None, "".join(logs.get((package, ""), [])) or "the package failed"))
    return found


def go_output(output: str) -> str:
    """What plain `go test -v` would have printed: the events' output, in order."""
    shown: list[str] = []
    for line in output.splitlines(keepends=True):
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except ValueError:
                shown.append(line)
                continue
            if isinstance(event, dict) and event.get("Action") == "output" and isinstance(event.get("Output"), str):
                shown.append(event["Output"])
            continue
        shown.append(line)
    return "".join(shown)


# ---- JUnit XML (Maven surefire, Gradle; any tool writing TEST-*.xml)


def _java_file(where: Where, report: Path, classname: str) -> str | None:
    module = report.parent
    for marker in ("surefire-reports", "failsafe-reports", "test-results"):
        parts = module.parts
        if marker in parts:
            # <module>/target/surefire-reports, <module>/build/test-results/<task>
            module = Path(*parts[: parts.index(marker) - 1])
            break
    outer = classname.split("$", 1)[0].replace(".", "/")
    for lang, ext in (("java", "java"), ("kotlin", "kt"), ("groovy", "groovy"), ("scala", "scala")):
        candidate = module / "src" / "test" / lang / f"{outer}.{ext}"
        if candidate.is_file():
            return where.file(str(candidate))
    return None


def junit_results(reports: list[tuple[Path, bytes]], where: Where) -> list[TestResult]:
    found: list[TestResult] = []
    for path, data in reports:
        root = xml_document(data, path.name)
        for case in root.iter("testcase"):
            classname, name = case.get("classname") or "", case.get("name") or ""
            if not name:
                continue
            outcome: Outcome = "passed"
            message: str | None = None
            for child in case:
                tag = child.tag if isinstance(child.tag, str) else ""
                if tag in ("failure", "error", "skipped"):
                    outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]  # type: ignore[assignment]
                    message = (child.get("message") or "") + ("\n" + child.text if child.text else "")
                    break
            test_id = f"{classname}#{name}" if classname else name
            found.append(result(test_id, outcome, _java_file(where, path, classname) if classname else None, message))
            if len(found) > RESULT_LIMIT:
                raise Unreadable(f"the run reported more than {RESULT_LIMIT} results")
    return found

