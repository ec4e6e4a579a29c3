"""Changes that weaken the tests, found from the change itself: deleted or renamed tests, new
skip / xfail / only markers, removed or loosened assertions, changed expected values in tests
that existed on the base, edits to the test configuration, and a change made of tests alone.

Input: the change as `(path, base text or None, new text or None)` triples (`read_change`
builds them from the copy and the base `tasks.verify.capture_base` saved). Output: typed
`Concern`s, each with a sentence a person reads before approving. Python test files are read
with `ast` (`pytests.py`); other languages, and Python `ast` cannot read, by their lines.
Nothing here runs the code it reads, and no input makes it raise.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from autocode.proof import pytests, testconfig, testlines
from autocode.proof.concerns import Concern, vanished

KINDS = (
    "testDeleted", "testRenamed", "skipAdded", "assertionRemoved", "assertionLoosened",
    "expectationChanged", "testConfigChanged", "testOnlyChange", "notChecked", "truncated",
)
MAX_CHARS = 1_000_000  # of each side of a file; past it only the start is read, by lines
MAX_AST_CHARS = 300_000  # larger Python files are read by lines (parsing them costs seconds)
MAX_CONCERNS = 200

Change = tuple[str, "str | None", "str | None"]

# --------------------------------------------------------------------------- test paths

TEST_DIRS = {"tests", "test", "__tests__", "spec", "specs", "testing"}
TEST_NAME = re.compile(
    r"^(test_.*\.py|.*_test\.py|tests\.py|conftest\.py|.*_test\.go|.*\.(test|spec)\.[cm]?[jt]sx?|.*_spec\.rb"
    r"|.*Tests?\.(java|kt|cs))$"
)


def is_test_path(path: str) -> bool:
    """Whether `path` is a test file: under tests/, test/, __tests__/, spec/, or named as
    frameworks name tests (test_*.py, *_test.py, *_test.go, *.test.js/ts, *.spec.js/ts...)."""
    p = PurePosixPath(path.replace("\\", "/"))
    if TEST_NAME.match(p.name):
        return True
    return any(part in TEST_DIRS for part in p.parts[:-1])


# --------------------------------------------------------------------------- Python by ast


def _python(path: str, base: str, new: str) -> list[Concern]:
    old_file, new_file = pytests.read(base), pytests.read(new)
    out = vanished(
        path,
        {k: t.body for k, t in old_file.tests.items()},
        {k: t.body for k, t in new_file.tests.items()},
        {k: t.body for k, t in new_file.others.items()},
        {k: t.line for k, t in old_file.tests.items()},
    )
    old_marks = Counter(m for m, _ in old_file.module_skips)
    for mark, line in new_file.module_skips:
        if old_marks[mark] > 0:
            old_marks[mark] -= 1
            continue
        out.append(Concern("skipAdded", path, f"{path}: {mark} was added for the whole module", line))
    for name, test in new_file.tests.items():
        was = old_file.tests.get(name)
        if was is not None:
            out += _compare_test(path, was, test)
    return out


def _compare_test(path: str, was: pytests.PyTest, now: pytests.PyTest) -> list[Concern]:
    out: list[Concern] = []
    name = now.name
    old_marks = Counter((m, scope) for m, _, scope in was.skips)
    for mark, line, scope in now.skips:
        if old_marks[(mark, scope)] > 0:
            old_marks[(mark, scope)] -= 1
            continue
        where = f"the class {scope}, so to its tests" if scope else name
        out.append(Concern("skipAdded", path, f"{path}: {mark} was added to {where}", line))
    strict_was = [c for c in was.checks if c.strict]
    strict_now = [c for c in now.checks if c.strict]
    if len(now.checks) < len(was.checks):
        out.append(Concern("assertionRemoved", path, f"{path}: {name} has {len(was.checks) - len(now.checks)} "
                           f"assertion(s) fewer than on the base ({len(was.checks)} -> {len(now.checks)})", now.line))
    elif len(strict_now) < len(strict_was):
        gone = Counter(c.form for c in strict_was) - Counter(c.form for c in strict_now)
        came = Counter(c.form for c in now.checks if not c.strict) - Counter(c.form for c in was.checks if not c.strict)
        line = next((c.line for c in now.checks if not c.strict), now.line)
        out.append(Concern("assertionLoosened", path, f"{path}: {name}'s assertion(s) were loosened: "
                           f"{_forms(gone)} became {_forms(came) or 'weaker checks'}", line))
    before: dict[tuple[str, str], list[str | None]] = {}
    for c in was.checks:
        before.setdefault((c.form, c.subject), []).append(c.expected)
    for c in now.checks:
        expected = before.get((c.form, c.subject))
        if c.expected is None or not expected:
            continue
        if c.expected in expected:
            expected.remove(c.expected)
            continue
        old = next((e for e in expected if e is not None), None)
        if old is not None:
            expected.remove(old)
            what = "expected exception" if c.form == "raises" else "expected value"
            out.append(Concern("expectationChanged", path, f"{path}: {name}'s {what} changed from {old} to "
                               f"{c.expected}", c.line))
    for var, literal in now.expected.items():
        old_literal = was.expected.get(var)
        if old_literal is not None and old_literal != literal:
            out.append(Concern("expectationChanged", path, f"{path}: {name}'s expected value {var} changed from "
                               f"{old_literal} to {literal}", now.line))
    dropped = [case for case in was.cases if case not in now.cases]
    if dropped and now.cases != was.cases:
        out.append(Concern("expectationChanged", path, f"{path}: {name}'s parametrized case(s) "
                           f"{', '.join(dropped[:3])} were changed or removed", now.line))
    return out


def _forms(counts: Counter[str]) -> str:
    names = {"Eq": "==", "Is": "is", "In": "in", "NotEq": "!=", "IsNot": "is not", "NotIn": "not in",
             "assert": "a bare assert"}
    return ", ".join(names.get(form, form) for form in counts.elements())


# --------------------------------------------------------------------------- the change


def _test_names(path: str, text: str) -> list[str]:
    if testlines.language_of(path) == "py" and len(text) <= MAX_AST_CHARS:
        try:
            return list(pytests.read(text).tests)
        except (ValueError, RecursionError, MemoryError):
            pass
    return list(testlines.blocks_of(text.splitlines(), testlines.language_of(path)))


def _one_file(path: str, base: str | None, new: str | None) -> list[Concern]:
    out = [Concern("testConfigChanged", path, sentence) for sentence in testconfig.config_changes(path, base, new)]
    if not is_test_path(path) or base is None or new is None:
        return out
    language = testlines.language_of(path)
    cut = len(base) > MAX_AST_CHARS or len(new) > MAX_AST_CHARS
    base, new = base[:MAX_CHARS], new[:MAX_CHARS]
    if language == "py" and not cut:
        try:
            return out + _python(path, base, new)
        except (ValueError, RecursionError, MemoryError):
            pass  # not readable Python: read it by its lines
    return out + testlines.by_lines(path, base, new, language)


def _moves(change: list[Change]) -> tuple[list[Concern], set[str]]:
    """Test files deleted, or moved (the same text at a path the change adds)."""
    out: list[Concern] = []
    handled: set[str] = set()
    added = {new: path for path, base, new in change if base is None and new is not None}
    for path, base, new in change:
        if new is not None or base is None or not is_test_path(path):
            continue
        handled.add(path)
        target = added.get(base)
        if target is not None:
            where = "" if is_test_path(target) else ", a path the test runner does not look in"
            out.append(Concern("testRenamed", path, f"{path}: the test file was moved to {target}{where}"))
            continue
        names = _test_names(path, base[:MAX_CHARS])
        listed = f" with its {len(names)} test(s) ({', '.join(names[:5])}{', ...' if len(names) > 5 else ''})" \
            if names else ""
        out.append(Concern("testDeleted", path, f"{path}: the test file was deleted{listed}"))
    return out, handled


def weakening_concerns(change: Iterable[Change]) -> list[Concern]:
    """Every way the change weakens the tests, in the change's order, each once."""
    triples = [(str(p), b, n) for p, b, n in change if b != n]
    out, handled = _moves(triples)
    for path, base, new in triples:
        if path in handled:
            continue
        try:
            out += _one_file(path, base, new)
        except Exception as exc:  # hostile input never stops the review: say what was not read
            out.append(Concern("notChecked", path, f"{path}: could not be checked for weakened tests ({type(exc).__name__}); "
                               "read its change yourself"))
    paths = [p for p, _, _ in triples]
    if paths and all(is_test_path(p) or testconfig.config_changes(p, b, n) for p, b, n in triples):
        shown = ", ".join(paths[:5]) + (", ..." if len(paths) > 5 else "")
        out.append(Concern("testOnlyChange", "", f"every file the change touches is a test or test configuration "
                           f"({shown}); no source changed, so passing tests prove nothing about the code"))
    unique = list(dict.fromkeys(out))
    if len(unique) > MAX_CONCERNS:
        more = len(unique) - MAX_CONCERNS
        unique = [*unique[:MAX_CONCERNS], Concern("truncated", "", f"and {more} more concern(s) not listed")]
    return unique


def read_change(copy: Path, base: Path, files: Iterable[str]) -> list[Change]:
    """The change of a task as triples: each file as `capture_base` saved it in `base` (the run's
    evidence/base) and as it is in the copy now. Text is read as UTF-8 (odd bytes replaced)."""
    try:
        index = dict(json.loads((base / "index.json").read_text(encoding="utf-8")).get("files", {}))
    except (OSError, ValueError, AttributeError, TypeError):
        index = {}
    limit = MAX_CHARS * 4

    def text(path: Path) -> str | None:
        if not path.is_file() or path.is_symlink():
            return None
        with path.open("rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")

    out: list[Change] = []
    for rel in files:
        entry = index.get(rel)
        out.append((rel, text(base / "files" / entry) if entry else None, text(copy / rel)))
    return out
