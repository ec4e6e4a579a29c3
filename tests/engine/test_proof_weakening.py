"""Changes that weaken the tests, found from the change itself (autocode.proof.weakening):
each kind of weakening in Python (read with ast), JavaScript, Go and Rust, test configuration
edits, test-only changes, a real fix that raises nothing, and hostile input that never raises."""

from __future__ import annotations

from pathlib import Path

import pytest

from autocode.proof.weakening import (
    MAX_CHARS,
    Concern,
    is_test_path,
    read_change,
    weakening_concerns,
)
from autocode.tasks import verify

SRC = ("calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n")
PY_BASE = '''import unittest

import pytest

from calc import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_add_negative(self):
        self.assertEqual(add(2, -3), -1)
        self.assertEqual(add(0, 0), 0)


def test_add_plain():
    assert add(1, 1) == 2


def test_raises():
    with pytest.raises(TypeError):
        add(1, None)


@pytest.mark.parametrize("a, b, total", [(1, 2, 3), (2, 2, 4)])
def test_cases(a, b, total):
    assert add(a, b) == total
'''
TEST = "tests/test_calc.py"


def _kinds(concerns: list[Concern]) -> list[str]:
    return [c.kind for c in concerns]


def _with_source(test_new: str, path: str = TEST, base: str = PY_BASE) -> list[Concern]:
    """The concerns of a change that fixes calc.py and edits the test file as given."""
    return weakening_concerns([SRC, (path, base, test_new)])


def test_the_expected_value_rewritten_to_the_buggy_output_is_named() -> None:
    [concern] = _with_source(PY_BASE.replace("add(2, 3), 5)", "add(2, 3), -1)"))
    assert concern == Concern(
        "expectationChanged", TEST, "tests/test_calc.py: AddTest.test_add's expected value changed from 5 to -1", 10
    )
    [plain] = _with_source(PY_BASE.replace("add(1, 1) == 2", "add(1, 1) == 0"))
    assert plain.kind == "expectationChanged" and "test_add_plain's expected value changed from 2 to 0" in plain.detail


def test_an_expected_value_kept_in_a_variable_is_named_too() -> None:
    base = "def test_add():\n    expected = 5\n    assert add(2, 3) == expected\n"
    [concern] = _with_source(base.replace("= 5", "= -1"), base=base)
    assert concern.detail == "tests/test_calc.py: test_add's expected value expected changed from 5 to -1"
    assert _with_source(base.replace("add(2, 3)", "add(3, 2)"), base=base) == []  # not an expected value


def test_a_real_fix_with_a_new_test_raises_nothing() -> None:
    added = PY_BASE + "\n\ndef test_add_large():\n    assert add(10**6, 1) == 10**6 + 1\n"
    assert _with_source(added) == []
    # New tests may skip and expect what they like: only tests that existed on the base count.
    added = PY_BASE + "\n\n@pytest.mark.skip('later')\ndef test_new():\n    assert add(1, 2) == 3\n"
    assert _with_source(added) == []


def test_deleted_and_renamed_tests() -> None:
    gone = PY_BASE.replace("def test_add_plain():\n    assert add(1, 1) == 2\n", "")
    [deleted] = _with_source(gone)
    assert (deleted.kind, deleted.line) == ("testDeleted", 17) and "test_add_plain was deleted" in deleted.detail
    [renamed] = _with_source(PY_BASE.replace("def test_add_plain", "def test_addition_plain"))
    assert renamed.kind == "testRenamed" and "test_add_plain was renamed to test_addition_plain" in renamed.detail
    [hidden] = _with_source(PY_BASE.replace("def test_add_plain", "def check_add_plain"))
    assert hidden.kind == "testRenamed" and "does not collect" in hidden.detail
    [method] = _with_source(PY_BASE.replace("    def test_add(self)", "    def _add(self)"))
    assert method.kind == "testRenamed" and "AddTest.test_add was renamed to AddTest._add" in method.detail


@pytest.mark.parametrize(
    ("edit", "marker"),
    [
        ("@pytest.mark.skip(reason='flaky')\n", "pytest.mark.skip"),
        ("@pytest.mark.skipif(True, reason='x')\n", "pytest.mark.skipif"),
        ("@pytest.mark.xfail\n", "pytest.mark.xfail"),
        ("@unittest.skip('x')\n", "unittest.skip"),
        ("@unittest.skipIf(True, 'x')\n", "unittest.skipIf"),
        ("@unittest.expectedFailure\n", "unittest.expectedFailure"),
    ],
)
def test_each_new_skip_marker_on_an_existing_test(edit: str, marker: str) -> None:
    [concern] = _with_source(PY_BASE.replace("def test_add_plain", edit + "def test_add_plain"))
    assert concern.kind == "skipAdded" and f"{marker} was added to test_add_plain" in concern.detail


def test_skips_inside_tests_on_classes_and_for_the_module() -> None:
    body = PY_BASE.replace("        self.assertEqual(add(2, 3), 5)", "        self.skipTest('no')\n        self.assertEqual(add(2, 3), 5)")
    [inside] = _with_source(body)
    assert inside.kind == "skipAdded" and "self.skipTest was added to AddTest.test_add" in inside.detail
    called = PY_BASE.replace("    assert add(1, 1) == 2", "    pytest.skip('later')\n    assert add(1, 1) == 2")
    assert _kinds(_with_source(called)) == ["skipAdded"]
    on_class = PY_BASE.replace("class AddTest", "@unittest.skip('all')\nclass AddTest")
    [concern] = _with_source(on_class)  # one line, one concern for its two tests
    assert concern.kind == "skipAdded" and "unittest.skip was added to the class AddTest" in concern.detail
    module = PY_BASE.replace("from calc import add\n", "from calc import add\n\npytestmark = pytest.mark.skip\n")
    [whole] = _with_source(module)
    assert whole.kind == "skipAdded" and "for the whole module" in whole.detail


def test_removed_and_loosened_assertions() -> None:
    removed = PY_BASE.replace("        self.assertEqual(add(0, 0), 0)\n", "")
    [concern] = _with_source(removed)
    assert concern.kind == "assertionRemoved"
    assert "AddTest.test_add_negative has 1 assertion(s) fewer than on the base (2 -> 1)" in concern.detail
    for strict, loose in [
        ("self.assertEqual(add(2, 3), 5)", "self.assertTrue(add(2, 3))"),
        ("self.assertEqual(add(2, 3), 5)", "self.assertIsNotNone(add(2, 3))"),
        ("self.assertEqual(add(2, 3), 5)", "self.assertEqual(add(2, 3), add(2, 3))"),
        ("assert add(1, 1) == 2", "assert add(1, 1) is not None"),
        ("assert add(1, 1) == 2", "assert add(1, 1)"),
        ("pytest.raises(TypeError)", "pytest.raises(Exception)"),
    ]:
        concerns = _with_source(PY_BASE.replace(strict, loose))
        assert "assertionLoosened" in _kinds(concerns), (loose, concerns)
    [loosened] = _with_source(PY_BASE.replace("self.assertEqual(add(2, 3), 5)", "self.assertTrue(add(2, 3))"))
    assert "assertEqual became assertTrue" in loosened.detail


def test_changed_parametrized_cases() -> None:
    [concern] = _with_source(PY_BASE.replace("(2, 2, 4)", "(2, 2, 5)"))
    assert concern.kind == "expectationChanged" and "(2, 2, 4)" in concern.detail
    assert _with_source(PY_BASE.replace("(2, 2, 4)]", "(2, 2, 4), (3, 3, 6)]")) == []  # a case added


JS_BASE = """const { add } = require('../calc');

describe('add', () => {
  it('adds two numbers', () => {
    expect(add(2, 3)).toBe(5);
  });

  test('adds zero', () => {
    expect(add(0, 0)).toBe(0);
    expect(add(1, 0)).toBe(1);
  });
});
"""
JS = "test/calc.test.js"


@pytest.mark.parametrize(
    ("old", "new", "word"),
    [
        ("it('adds two", "it.skip('adds two", "skip marker"),
        ("describe('add'", "describe.skip('add'", "skip marker"),
        ("it('adds two", "xit('adds two", "skip marker"),
        ("it('adds two", "it.only('adds two", "only marker"),
        ("test('adds zero'", "test.only('adds zero'", "only marker"),
    ],
)
def test_javascript_markers(old: str, new: str, word: str) -> None:
    [concern] = _with_source(JS_BASE.replace(old, new), JS, JS_BASE)
    assert concern.kind == "skipAdded" and word in concern.detail and concern.line in (3, 4, 8)


def test_javascript_expectations_assertions_and_tests() -> None:
    [changed] = _with_source(JS_BASE.replace("toBe(5)", "toBe(-1)"), JS, JS_BASE)
    assert changed == Concern("expectationChanged", JS, f"{JS}: adds two numbers's expected value changed from 5 to -1", 5)
    [removed] = _with_source(JS_BASE.replace("    expect(add(1, 0)).toBe(1);\n", ""), JS, JS_BASE)
    assert removed.kind == "assertionRemoved" and "adds zero" in removed.detail
    todo = JS_BASE.replace("  it('adds two numbers', () => {\n    expect(add(2, 3)).toBe(5);\n  });\n",
                           "  test.todo('adds two numbers');\n")
    assert set(_kinds(_with_source(todo, JS, JS_BASE))) >= {"skipAdded"}
    renamed = JS_BASE.replace("it('adds two numbers'", "it('sums two numbers'")
    [concern] = _with_source(renamed, JS, JS_BASE)
    assert concern.kind == "testRenamed" and "adds two numbers was renamed to sums two numbers" in concern.detail


GO_BASE = """package calc

import "testing"

func TestAdd(t *testing.T) {
\tif got := Add(2, 3); got != 5 {
\t\tt.Errorf("Add(2, 3) = %d", got)
\t}
}

func TestZero(t *testing.T) {
\tif Add(0, 0) != 0 {
\t\tt.Fatal("zero")
\t}
}
"""


def test_go_and_rust() -> None:
    go = "calc_test.go"
    [skip] = _with_source(GO_BASE.replace("func TestAdd(t *testing.T) {\n", "func TestAdd(t *testing.T) {\n\tt.Skip()\n"), go, GO_BASE)
    assert (skip.kind, skip.line) == ("skipAdded", 6)
    [changed] = _with_source(GO_BASE.replace("got != 5", "got != -1"), go, GO_BASE)
    assert changed.kind == "expectationChanged" and "TestAdd's expected value changed from 5 to -1" in changed.detail
    gone = GO_BASE.split("func TestZero")[0]
    assert _kinds(_with_source(gone, go, GO_BASE)) == ["testDeleted"]
    rs_base = "#[test]\nfn adds() {\n    assert_eq!(add(2, 3), 5);\n}\n"
    rs = "tests/calc.rs"
    assert _kinds(_with_source(rs_base.replace("#[test]\n", "#[test]\n#[ignore]\n"), rs, rs_base)) == ["skipAdded"]
    [concern] = _with_source(rs_base.replace("5);", "-1);"), rs, rs_base)
    assert concern.kind == "expectationChanged" and "adds's expected value changed from 5 to -1" in concern.detail


@pytest.mark.parametrize(
    ("path", "base", "new", "says"),
    [
        ("conftest.py", None, "collect_ignore = ['tests']\n", "conftest.py: test configuration was added"),
        ("tests/conftest.py", "x = 1\n", "x = 2\n", "test configuration changed"),
        ("pytest.ini", "[pytest]\naddopts = -q\n", "[pytest]\naddopts = -q -k add\n", "test configuration changed"),
        ("tox.ini", "[pytest]\naddopts = -q\n", "[pytest]\naddopts = -x\n", "[pytest] changed"),
        ("tox.ini", "[tox]\nenvlist = py\n[testenv]\ncommands = pytest\n", "[tox]\nenvlist = py\n[testenv]\ncommands = true\n",
         "the [testenv] sections changed"),
        ("noxfile.py", "import nox\n", "import nox\n# no sessions\n", "test configuration changed"),
        ("setup.cfg", "[tool:pytest]\ntestpaths = tests\n", "[tool:pytest]\ntestpaths = docs\n", "[tool:pytest] changed"),
        ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-q'\n",
         "[tool.pytest.ini_options]\naddopts = '-q --deselect tests/test_calc.py'\n", "[tool.pytest] changed"),
        ("pyproject.toml", "[tool.autocode]\ntest_command = 'pytest'\n", "[tool.autocode]\ntest_command = 'true'\n",
         "[tool.autocode] test_command changed from 'pytest' to 'true'"),
        ("package.json", '{"scripts": {"test": "mocha"}}', '{"scripts": {"test": "true"}}',
         "the \"test\" script changed from 'mocha' to 'true'"),
        ("package.json", '{"jest": {"testMatch": ["**/*.test.js"]}}', '{"jest": {"testMatch": []}}', '"jest" settings'),
        (".mocharc.yml", "spec: test\n", "spec: nothing\n", "test configuration changed"),
        ("jest.config.js", "module.exports = {}\n", "module.exports = {testMatch: []}\n", "test configuration changed"),
        ("vitest.config.ts", "export default {}\n", "export default {test: {include: []}}\n", "changed"),
        (".autocode/config.toml", "test_command = 'pytest'\n", "test_command = 'true'\n",
         "test_command changed from 'pytest' to 'true'"),
        ("Makefile", "test:\n\tpytest\n", "test:\n\ttrue\n", "the test target changed from 'pytest' to 'true'"),
    ],
)
def test_each_test_configuration_edit(path: str, base: str | None, new: str, says: str) -> None:
    concerns = weakening_concerns([SRC, (path, base, new)])
    assert [c.kind for c in concerns] == ["testConfigChanged"], concerns
    assert says in concerns[0].detail


def test_edits_to_shared_files_outside_their_test_parts_raise_nothing() -> None:
    assert weakening_concerns([
        SRC,
        ("pyproject.toml", "[project]\nversion = '1'\n[tool.pytest.ini_options]\naddopts = '-q'\n",
         "[project]\nversion = '2'\n[tool.pytest.ini_options]\naddopts = '-q'\n"),
        ("package.json", '{"version": "1.0.0", "scripts": {"test": "mocha", "lint": "a"}}',
         '{"version": "1.1.0", "scripts": {"test": "mocha", "lint": "b"}}'),
        ("Makefile", "test:\n\tpytest\nlint:\n\truff\n", "test:\n\tpytest\nlint:\n\truff check\n"),
        ("tox.ini", "[tox]\nenvlist = py311\n[testenv]\ncommands = pytest\n",
         "[tox]\nenvlist = py312\n[testenv]\ncommands = pytest\n"),
    ]) == []


def test_test_only_changes_and_deleted_or_moved_test_files() -> None:
    only = weakening_concerns([(TEST, PY_BASE, PY_BASE + "\n\ndef test_more():\n    assert add(1, 2) == 3\n")])
    assert _kinds(only) == ["testOnlyChange"] and only[0].path == "" and TEST in only[0].detail
    deleted = weakening_concerns([SRC, (TEST, PY_BASE, None)])
    assert _kinds(deleted) == ["testDeleted"]
    assert "the test file was deleted with its 5 test(s) (AddTest.test_add, AddTest.test_add_negative" in deleted[0].detail
    moved = weakening_concerns([SRC, (TEST, PY_BASE, None), ("calc_checks.py", None, PY_BASE)])
    assert _kinds(moved) == ["testRenamed"] and "moved to calc_checks.py, a path the test runner" in moved[0].detail


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/test_calc.py", True), ("test_calc.py", True), ("pkg/calc_test.py", True), ("calc_test.go", True),
        ("src/calc.test.ts", True), ("web/calc.spec.js", True), ("src/__tests__/calc.js", True),
        ("spec/calc_spec.rb", True), ("test/index.js", True), ("conftest.py", True),
        ("calc.py", False), ("src/testing_utils.py", False), ("contest.py", False), ("src/attest.js", False),
    ],
)
def test_is_test_path(path: str, test: bool) -> None:
    assert is_test_path(path) is test


@pytest.mark.parametrize(
    "text",
    [
        "def test_a(:\n    assert f() == 5\n",  # not Python
        "def test_a():\n    assert f() == 5\n\0\0",  # a NUL byte
        "x = " + "(" * 5000 + ")" * 5000 + "\ndef test_a():\n    assert f() == 5\n",  # too deep for the parser
        "\udcff\udcfe binary\n",
    ],
)
def test_hostile_python_falls_back_to_lines_and_never_raises(text: str) -> None:
    concerns = weakening_concerns([SRC, (TEST, text, text.replace("== 5", "== 6"))])
    if "f() == 5" in text:
        assert [c.kind for c in concerns] == ["expectationChanged"], concerns
    else:
        assert concerns == []


def test_huge_files_and_broken_configuration_never_raise() -> None:
    huge = "def test_a():\n" + "    assert f() == 5\n" * (MAX_CHARS // 10)
    concerns = weakening_concerns([SRC, (TEST, huge, huge.replace("== 5", "== 6", 1))])
    assert all(c.kind in ("expectationChanged", "truncated") for c in concerns)
    broken = weakening_concerns([
        SRC,
        ("package.json", '{"scripts": {"test": "mocha"', '{"scripts": {"test": "true"'),
        ("pyproject.toml", "[tool.pytest.ini_options\naddopts='-q'", "[tool.pytest.ini_options\naddopts='-x'"),
    ])
    assert [c.kind for c in broken] == ["testConfigChanged", "testConfigChanged"]


def test_read_change_from_the_base_a_task_saved(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    (copy / "tests").mkdir(parents=True)
    (copy / TEST).write_text(PY_BASE)
    (copy / "calc.py").write_text(SRC[1])
    base = tmp_path / "evidence" / "base"
    verify.capture_base(copy, [TEST, "calc.py", "tests/test_new.py"], base)
    (copy / TEST).write_text(PY_BASE.replace("add(2, 3), 5)", "add(2, 3), -1)"))
    (copy / "calc.py").write_text(SRC[2])
    (copy / "tests" / "test_new.py").write_text("def test_new():\n    assert True\n")
    change = read_change(copy, base, [TEST, "calc.py", "tests/test_new.py"])
    assert change[1] == SRC and change[2][1] is None
    assert _kinds(weakening_concerns(change)) == ["expectationChanged"]
