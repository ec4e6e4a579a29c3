"""Readers of the compiled languages' runners: `cargo test` (its stable text), `go test -json`
(events on stdout, plus the plain-text build failures of go before 1.24), and JUnit XML as
Maven surefire and Gradle write it. Same contract as `parsers`: results or `Unreadable`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath

from autocode.proof.parsers import Where, as_text
from autocode.proof.reading import Unreadable, xml_document
from autocode.proof.results import RESULT_LIMIT, Outcome, TestResult, result

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
            broken = re.match(r"^FAIL\t(\S+) \[(?:build|setup) failed\]", line)
            if header:
                building = header.group(1)
                build_log.setdefault(building, [])
            elif broken:
                package = broken.group(1)
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
        package, test, action = event["Package"], as_text(event.get("Test")) or "", event.get("Action")
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

