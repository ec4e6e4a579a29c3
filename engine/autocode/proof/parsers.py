"""One reader per framework's machine output (pytest, unittest, node --test, jest, vitest,
mocha, TAP; `compiled` holds go, cargo and JUnit XML): each turns a report (JSON lines from a
shipped helper, a JSON document, or the TAP a tool prints) into TestResults.

Every reader gets the report and `Where` (the host folder the command ran in and the project
root) and raises `Unreadable` for anything it cannot use; it never guesses a result.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autocode.proof.reading import Unreadable, json_document, json_lines
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
        if os.path.isabs(path) and _inside(path, self.project):
            # already a host path in the copy (the copy may live inside the workspace, under
            # .autocode/prep, so this comes before the workspace-as-seen mapping)
            return Path(os.path.normpath(path)).relative_to(os.path.normpath(self.project)).as_posix()
        if os.path.isabs(path) and seen and (path == seen or path.startswith(seen.rstrip("/") + "/")):
            path = os.path.relpath(path, seen)
        host = Path(path) if os.path.isabs(path) else self.cwd / path
        try:
            rel = Path(os.path.normpath(host)).relative_to(os.path.normpath(self.project))
        except ValueError:
            return None
        return rel.as_posix()


def _inside(path: str, root: Path) -> bool:
    path, top = os.path.normpath(path), os.path.normpath(root)
    return path == top or path.startswith(top.rstrip("/") + "/")


def _bounded(items: Iterable[TestResult]) -> list[TestResult]:
    found: list[TestResult] = []
    for item in items:
        found.append(item)
        if len(found) > RESULT_LIMIT:
            raise Unreadable(f"the run reported more than {RESULT_LIMIT} results; AutoCode does not read that many")
    return found


def as_text(value: Any) -> str | None:
    """`value` when it is a string (report fields may be anything)."""
    return value if isinstance(value, str) else None


# ---- pytest (the shipped plugin's JSON lines)

# Markers the shipped helpers write (json.dumps with its default separators).
_FINISH = b'{"event": "finish"'
_DONE = {"pytest": (b'"when": "call"', b'"event": "collect"'), "unittest": (b'"event": "test"',),
         "node": (b'"event":"test:pass"', b'"event":"test:fail"')}


def session_finished(data: bytes) -> bool:
    """Whether the helper saw the end of the session (a run cut short never writes it)."""
    return _FINISH in data


def finished_count(framework: str, data: bytes) -> int:
    """Tests finished so far, counted in a report that is still being written."""
    return sum(data.count(marker) for marker in _DONE.get(framework, ()))



def pytest_results(data: bytes, where: Where) -> list[TestResult]:
    events = list(json_lines(data, "pytest"))
    start = next((e for e in events if e.get("event") == "start"), None)
    if start is None:
        raise Unreadable("pytest did not load AutoCode's results plugin (no start line in its report)")
    where = Where(where.cwd, where.project, as_text(start.get("cwd")))
    rootdir = as_text(start.get("rootdir"))

    # a test whose setup passed but whose call was never reported did not finish (the run died in it)
    called = {as_text(e.get("nodeid")) for e in events if e.get("event") == "test" and e.get("when") != "setup"}

    def items() -> Iterator[TestResult]:
        for event in events:
            kind = event.get("event")
            nodeid = as_text(event.get("nodeid"))
            outcome = event.get("outcome")
            if kind not in ("test", "collect") or nodeid is None or outcome not in ("passed", "failed", "skipped"):
                continue
            file = where.file(as_text(event.get("file")), rootdir)
            message = as_text(event.get("message"))
            if kind == "collect":
                shown: Outcome = "skipped" if outcome == "skipped" else "error"
                yield result(nodeid or "<collection>", shown, file, message)
            elif outcome == "failed":
                yield result(nodeid, "failed" if event.get("when") == "call" else "error", file, message)
            elif outcome == "passed" and event.get("when") == "setup" and nodeid not in called:
                yield result(nodeid, "error", file, "the test did not finish: the run stopped while it ran")
            else:
                yield result(nodeid, "skipped" if outcome == "skipped" else "passed", file, message)

    return _bounded(items())


# ---- unittest (the shipped launcher's JSON lines)


def unittest_results(data: bytes, where: Where) -> list[TestResult]:
    events = list(json_lines(data, "unittest"))
    start = next((e for e in events if e.get("event") == "start"), None)
    if start is None:
        raise Unreadable("the unittest launcher did not start (no start line in its report)")
    where = Where(where.cwd, where.project, as_text(start.get("cwd")))

    def items() -> Iterator[TestResult]:
        for event in events:
            test_id = as_text(event.get("id"))
            outcome = event.get("outcome")
            if event.get("event") != "test" or not test_id or outcome not in ("passed", "failed", "error", "skipped"):
                continue
            yield result(test_id, outcome, where.file(as_text(event.get("file"))), as_text(event.get("message")))

    return _bounded(items())


# ---- node --test (the shipped reporter's JSON lines)


def node_results(data: bytes, where: Where) -> list[TestResult]:
    stacks: dict[str, list[str]] = {}

    def items() -> Iterator[TestResult]:
        for event in json_lines(data, "node --test"):
            name, nesting, file = as_text(event.get("name")), event.get("nesting"), as_text(event.get("file"))
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
                    yield result(rel or name, "error", rel, as_text(event.get("error")) or "the test file failed")
                continue
            title = " > ".join([*stack[:nesting], name])
            outcome: Outcome = "skipped" if event.get("skip") or event.get("todo") else "failed" if failed else "passed"
            yield result(f"{rel or file or ''}::{title}", outcome, rel, as_text(event.get("error")))

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
            path = as_text(entry.get("name")) or as_text(entry.get("testFilePath"))
            rel = where.file(path)
            shown = rel or path or ""
            assertions = entry.get("assertionResults") or entry.get("testResults") or []
            if not isinstance(assertions, list):
                assertions = []
            if not assertions and entry.get("status") == "failed":
                message = as_text(entry.get("message")) or as_text(entry.get("failureMessage"))
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
        raise Unreadable("mocha wrote no JSON report: it stopped before running its tests (a test file that "
                         "fails to load stops it; the output says why)")
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
        return {(as_text(e.get("file")), as_text(e.get("fullTitle"))) for e in entries if isinstance(e, dict)}

    failed, pending = keys("failures"), keys("pending")

    def items() -> Iterator[TestResult]:
        seen = set()
        entries = [e for e in doc["tests"] if isinstance(e, dict)]
        # hook failures are listed under failures only
        entries += [e for e in listed("failures") if isinstance(e, dict)]
        for case in entries:
            path, title = as_text(case.get("file")), as_text(case.get("fullTitle"))
            if title is None or (path, title) in seen:
                continue
            seen.add((path, title))
            rel = where.file(path)
            err: dict[str, Any] = case["err"] if isinstance(case.get("err"), dict) else {}
            message = as_text(err.get("stack")) or as_text(err.get("message"))
            hook = _MOCHA_HOOK.match(as_text(case.get("title")) or "")
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
    (`# Subtest:` blocks, indented) as node-tap prints it. YAML diagnostics are skipped; a
    subtest stands as a result itself when it has none inside or failed with none failing."""
    found: list[TestResult] = []
    names: dict[str, int] = {}
    file: str | None = None
    planned: int | None = None
    ran = 0
    trail: list[tuple[int, str, int]] = []  # open subtests: (indent, name, results before it)
    yaml: int | None = None  # indent of an open YAML block's `---`

    def close_file() -> None:
        if file is not None and (ran == 0 or (planned is not None and ran < planned)):
            why = "no tests ran" if ran == 0 else f"planned {planned} tests, {ran} ran"
            found.append(result(file, "error", where.file(file), f"{file}: {why} (see the output)"))

    def add(path: list[str], outcome: Outcome) -> None:
        owner = file
        if owner is None and _TAP_FILE.search(path[0]):
            owner, path = path[0], path[1:]  # node-tap: each file is a top-level subtest
            if not path:  # the file itself failed (it did not load, or died)
                found.append(result(owner, "error" if outcome == "failed" else outcome, where.file(owner),
                                    f"{owner} failed outside its tests (see the output)"))
                return
        key = (f"{owner}::" if owner else "") + " > ".join(path)
        count = names.get(key, 0) + 1
        names[key] = count
        found.append(result(key if count == 1 else f"{key} ({count})", outcome, where.file(owner) if owner else None))
        if len(found) > RESULT_LIMIT:
            raise Unreadable(f"the run reported more than {RESULT_LIMIT} results")

    for line in output.splitlines():
        stripped = line.strip()
        if yaml is not None:
            if stripped == "..." and len(line) - len(line.lstrip()) <= yaml:
                yaml = None
            continue
        if stripped == "---":
            yaml = len(line) - len(line.lstrip())
            continue
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
            trail = [t for t in trail if t[0] < depth] + [(depth, sub.group("name"), len(found))]
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
        lowered = (match.group("dir") or "").strip().lower()
        outcome: Outcome = (
            "skipped" if lowered.startswith(("skip", "todo"))  # a TODO's result counts neither way
            else "passed" if match.group("ok") == "ok" else "failed"
        )
        trail = [t for t in trail if t[0] < depth or (t[0] == depth and t[1] == desc)]
        if trail and trail[-1][0] == depth and trail[-1][1] == desc:
            # the line that closes a subtest: its results were inside it, unless there were none
            # or none of them failed while it did
            _, name, before = trail.pop()
            inside = found[before:]
            if not inside or (outcome == "failed" and all(r.outcome != "failed" for r in inside)):
                add([t[1] for t in trail] + [name], outcome)
            if depth == 0:
                ran += 1
            continue
        if depth == 0:
            ran += 1
        add([t[1] for t in trail] + [desc or f"#{match.group('num') or ran}"], outcome)
    close_file()
    if not found:
        raise Unreadable("the output holds no TAP test lines")
    return found
