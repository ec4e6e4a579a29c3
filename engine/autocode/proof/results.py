"""Per-test results: one named test and how it ended, and the report of one test run.

The values are plain and frozen so the verdict can compare a base run with a candidate
run by id. Ids come from untrusted test processes: `clean` makes every id and message
printable (control characters, line breaks and lone surrogates escaped) so a test name
can never forge a line of evidence, and the same raw name always gives the same id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["passed", "failed", "error", "skipped"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "error", "skipped")
MESSAGE_LIMIT = 4000  # characters of a failure message kept (its end, where the error is)
ID_LIMIT = 2000  # characters of a test id kept
RESULT_LIMIT = 200_000  # more results than this in one run and the report is refused, not cut

# When one id is reported more than once (phases of a pytest test, unittest subtests, a
# test run twice), the worst outcome is the one that stands.
_WORST = {"error": 3, "failed": 2, "skipped": 1, "passed": 0}


@dataclass(frozen=True)
class TestResult:
    """One named test. `id` is stable across runs and between base and candidate:

    pytest `tests/test_x.py::TestA::test_b`, unittest `tests.test_x.TestA.test_b`,
    go `example.com/m/pkg::TestName`, node --test / jest / vitest `test/x.test.js::suite > name`,
    mocha `test/x.js::full title`, TAP `t/x.t::3 - description`, cargo `src/lib.rs::tests::name`,
    surefire/gradle `com.example.FooTest#method`.

    `file` is the workspace-relative (project-relative) path of the test's file when known.
    A file or module that fails to load is one result: its path (or module) as the id,
    outcome "error", the error text as the message.
    """

    __test__ = False  # not a pytest test class, whatever the name says

    id: str
    outcome: Outcome
    file: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class Report:
    """The results of one run. `results` is None when the run left no per-test output
    (`reason` says why: a command without a reporter, a missing or corrupt report file)."""

    framework: str
    results: tuple[TestResult, ...] | None
    reason: str | None = None

    def by_id(self) -> dict[str, TestResult]:
        return {r.id: r for r in self.results or ()}

    def failing(self) -> list[str]:
        """Ids of the tests that failed or errored, in report order."""
        return [r.id for r in self.results or () if r.outcome in ("failed", "error")]


def unavailable(framework: str, reason: str) -> Report:
    return Report(framework, None, reason)


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    if ch == "\r":
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _unsafe(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code < 0xA0 or code in (0x2028, 0x2029) or 0xD800 <= code < 0xE000


def clean(text: str, limit: int = ID_LIMIT, *, keep_lines: bool = False) -> str:
    """`text` with unprintable characters escaped (line breaks kept when `keep_lines`), cut to `limit`."""
    if keep_lines:
        out = "".join(_escape(ch) if _unsafe(ch) and ch not in "\n\t" else ch for ch in text)
        return out[-limit:]
    return "".join(_escape(ch) if _unsafe(ch) else ch for ch in text)[:limit]


def clean_message(text: str | None) -> str | None:
    if not text:
        return None
    # lazy: the credential detectors compile many patterns, needed only once a test failed
    from autocode import scrub

    return scrub.redact(clean(text, MESSAGE_LIMIT * 2, keep_lines=True), secrets=True, paths=False)[-MESSAGE_LIMIT:]


def result(test_id: str, outcome: Outcome, file: str | None = None, message: str | None = None) -> TestResult:
    """A TestResult with its id and file cleaned and a message only where it says something."""
    kept = clean_message(message) if outcome != "passed" else None
    return TestResult(clean(test_id), outcome, clean(file) if file else None, kept)


def merge(results: Iterable[TestResult]) -> tuple[TestResult, ...]:
    """One result per id, in first-seen order, the worst outcome winning."""
    kept: dict[str, TestResult] = {}
    for item in results:
        old = kept.get(item.id)
        if old is None or _WORST[item.outcome] > _WORST[old.outcome]:
            file = item.file or (old.file if old else None)
            kept[item.id] = TestResult(item.id, item.outcome, file, item.message or (old.message if old else None))
    return tuple(kept.values())
