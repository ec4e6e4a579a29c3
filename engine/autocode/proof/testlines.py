"""Test files read by their lines: JavaScript/TypeScript, Go, Rust, and Python that `ast`
cannot read. Finds tests by their first line, skip and only markers, assertion counts per
test, and expected values changed on a line that otherwise stayed the same.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import PurePosixPath

from autocode.proof.concerns import Concern, vanished

MAX_DIFF_LINES = 20_000  # longer files are not line-diffed for changed expectations
MAX_LINE = 2_000


LITERAL = re.compile(
    r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`|-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b'
    r"|\b(?:true|false|True|False|None|null|nil|undefined)\b"
)
SKIPS: dict[str, list[str]] = {
    "py": [r"@pytest\.mark\.(skip|skipif|xfail)\b", r"@(unittest\.)?(skip|skipIf|skipUnless|expectedFailure)\b",
           r"\.skipTest\(", r"\bpytest\.(skip|xfail|importorskip)\(", r"\bSkipTest\b"],
    "js": [r"\b(it|test|describe|context|suite|specify)\.(skip|todo)\b", r"\bx(it|describe|test|context|specify)\s*\(",
           r"\b(it|test|describe|context|suite|specify)\.only\b", r"\bf(it|describe)\s*\(", r"\bthis\.skip\(\)",
           r"\bskip\s*:\s*true\b", r"\btodo\s*:\s*true\b", r"\bonly\s*:\s*true\b", r"\bt\.(skip|todo)\("],
    "go": [r"\bt\.Skip(f|Now)?\(", r"\btesting\.Short\(\)"],
    "rust": [r"#\[ignore\b", r"#\[cfg_attr\([^\]]*\bignore\b"],
}
ASSERTS = {
    "py": r"\bassert\b|\.assert\w*\(|\bpytest\.raises\(|\.fail\w*\(",
    "js": r"\bexpect\s*\(|\bassert(\.\w+)?\s*\(|\.should\b|\bt\.(is|not|deepEqual|equal|ok|true|false|throws|assert)\w*\(",
    "go": r"\bt\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(|\b(assert|require)\.\w+\(",
    "rust": r"\b(debug_)?assert(_eq|_ne)?!\s*\(|\bpanic!\s*\(|should_panic",
}
TEST_START = {
    "py": r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(",
    "js": r"\b[xf]?(?:it|test|specify)(?:\.\w+)*\s*\(\s*(['\"`])((?:\\.|(?!\1).)*)\1",
    "go": r"^func\s+((?:Test|Fuzz)\w*)\s*\(",
    "rust": r"^\s*(?:pub\s+)?(?:async\s+)?fn\s+(\w+)\s*\(",
}
EXPECTISH = re.compile(
    r"\b(want|wanted|expected?|exp)\b\s*(:=|=|:)|\b(toBe|toEqual|toStrictEqual|Equal|equal)\w*\b"
    r"|^\s*if\b.*(!=|==)"  # Go's `if got != 5 {`
)


def language_of(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in (".py", ".pyi"):
        return "py"
    if suffix in (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts"):
        return "js"
    if suffix == ".go":
        return "go"
    if suffix == ".rs":
        return "rust"
    return "other"


def blocks_of(lines: list[str], language: str) -> dict[str, tuple[int, list[str]]]:
    """Each test found by its first line: name -> (1-based line, the lines up to the next test)."""
    pattern = TEST_START.get(language)
    if pattern is None:
        return {}
    start = re.compile(pattern)
    found: list[tuple[str, int]] = []
    rust_pending = False
    for n, line in enumerate(lines):
        if language == "rust":
            if re.search(r"#\[(\w+::)*test\b", line):
                rust_pending = True
                continue
            match = start.search(line)
            if match and rust_pending:
                found.append((match.group(1), n))
                rust_pending = False
            continue
        match = start.search(line)
        if match:
            found.append((match.group(match.lastindex or 1) if language == "js" else match.group(1), n))
    out: dict[str, tuple[int, list[str]]] = {}
    for i, (name, n) in enumerate(found):
        end = found[i + 1][1] if i + 1 < len(found) else len(lines)
        out.setdefault(name, (n + 1, lines[n:end]))
    return out


def _count(pattern: str, lines: Iterable[str]) -> int:
    rx = re.compile(pattern)
    return sum(1 for line in lines if rx.search(line))


def _skeleton(line: str) -> tuple[str, list[str]]:
    return LITERAL.sub("#", line.strip()), LITERAL.findall(line)


def by_lines(path: str, base: str, new: str, language: str) -> list[Concern]:
    """The concerns of one test file changed from `base` to `new`, read by its lines."""
    out: list[Concern] = []
    # Lines past MAX_LINE characters are cut: every pattern below stays linear on hostile input.
    old_lines = [line[:MAX_LINE] for line in base.splitlines()]
    new_lines = [line[:MAX_LINE] for line in new.splitlines()]
    old_tests, new_tests = blocks_of(old_lines, language), blocks_of(new_lines, language)
    out += vanished(path, {k: "\n".join(v[1][1:]) for k, v in old_tests.items()},
                    {k: "\n".join(v[1][1:]) for k, v in new_tests.items()}, {}, {k: v[0] for k, v in old_tests.items()})
    for pattern in SKIPS.get(language, [p for ps in SKIPS.values() for p in ps]):
        if _count(pattern, new_lines) > _count(pattern, old_lines):
            rx = re.compile(pattern)
            seen = Counter(line.strip() for line in old_lines if rx.search(line))
            for n, line in enumerate(new_lines, 1):
                if rx.search(line):
                    if seen[line.strip()] > 0:
                        seen[line.strip()] -= 1
                        continue
                    what = "an only marker (the runner then runs just those tests)" if re.search(
                        r"only|f\(it", pattern) else "a skip marker"
                    out.append(Concern("skipAdded", path, f"{path}: {what} was added: {line.strip()[:120]}", n))
                    break
    asserts = ASSERTS.get(language, "|".join(ASSERTS.values()))
    for name, (line_no, block) in new_tests.items():
        if name in old_tests:
            was, now = _count(asserts, old_tests[name][1]), _count(asserts, block)
            if now < was:
                out.append(Concern("assertionRemoved", path, f"{path}: {name} has {was - now} assertion(s) fewer "
                                   f"than on the base ({was} -> {now})", line_no))
    if not old_tests and not new_tests:
        was, now = _count(asserts, old_lines), _count(asserts, new_lines)
        if now < was:
            out.append(Concern("assertionRemoved", path, f"{path}: {was - now} assertion(s) fewer than on the base "
                               f"({was} -> {now})"))
    out += _changed_expectations(path, old_lines, new_lines, asserts, new_tests, old_tests)
    return out


def _test_at(tests: dict[str, tuple[int, list[str]]], line_no: int) -> str | None:
    best: str | None = None
    for name, (start, block) in tests.items():
        if start <= line_no < start + len(block):
            best = name
    return best


def _changed_expectations(path: str, old_lines: list[str], new_lines: list[str], asserts: str,
                          new_tests: dict[str, tuple[int, list[str]]],
                          old_tests: dict[str, tuple[int, list[str]]]) -> list[Concern]:
    if len(old_lines) > MAX_DIFF_LINES or len(new_lines) > MAX_DIFF_LINES:
        return []
    out: list[Concern] = []
    rx = re.compile(asserts)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace":
            continue
        for old, (n, new) in zip(old_lines[i1:i2], enumerate(new_lines[j1:j2], j1 + 1), strict=False):
            if not (rx.search(new) or EXPECTISH.search(new)):
                continue
            shape_old, lits_old = _skeleton(old)
            shape_new, lits_new = _skeleton(new)
            if shape_old != shape_new or lits_old == lits_new:
                continue
            name = _test_at(new_tests, n)
            if new_tests and (name is None or name not in old_tests):
                continue  # a line of a test the change added, or outside every test
            changed = [(a, b) for a, b in zip(lits_old, lits_new, strict=False) if a != b]
            who = f"{name}'s" if name else "an"
            pairs = ", ".join(f"from {a} to {b}" for a, b in changed[:3])
            out.append(Concern("expectationChanged", path, f"{path}: {who} expected value changed {pairs}", n))
    return out
