"""Python test files read with `ast`: which tests a file holds (pytest functions, `Test*`
classes, `unittest.TestCase` subclasses), the assertions in each, and its skip markers.

`weakening.py` compares what this finds on the base and in the change. Reading never runs
the file; a file `ast` cannot parse raises `ValueError` and the caller falls back to lines.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

# Assertion methods that pin a value; the ones that only check truth, existence or type do not.
STRICT = re.compile(
    r"assert(Equal|Equals|AlmostEqual|AlmostEquals|Is|IsNone|In|CountEqual|ListEqual|DictEqual|SetEqual"
    r"|TupleEqual|SequenceEqual|MultiLineEqual|Raises|RaisesRegex|Regex|Warns|Logs|Greater|GreaterEqual"
    r"|Less|LessEqual|_called_once_with|_called_with|_any_call|_has_calls)$"
)
LOOSE = re.compile(r"assert(True|False|IsNotNone|IsInstance|NotEqual|NotIn|IsNot|NotIsInstance|_called)$")
SKIP_DECORATOR = re.compile(
    r"^(pytest\.mark\.(skip|skipif|xfail)|(unittest\.)?(skip|skipIf|skipUnless|expectedFailure))$"
)
SKIP_CALL = re.compile(r"^(self\.skipTest|pytest\.(skip|xfail|importorskip)|(unittest\.)?SkipTest)$")
BROAD_ERRORS = {"Exception", "BaseException"}
TESTCASE_BASE = re.compile(r"(^|\.)\w*TestCase$")
EXPECTED_NAME = re.compile(r"^(expected?|exp|want(ed)?|correct|answer|should)(_\w*)?$", re.I)


@dataclass
class Check:
    """One assertion: its form (`==`, `assertEqual`...), the checked expression, the expected literal."""

    form: str
    subject: str
    expected: str | None
    line: int
    strict: bool


@dataclass
class PyTest:
    """One test function or method, by its qualified name (`Class.test_x` or `test_x`)."""

    name: str
    line: int
    body: str  # the body as ast dumps it, to tell a renamed test from a new one
    checks: list[Check] = field(default_factory=list)
    skips: list[tuple[str, int, str]] = field(default_factory=list)  # (marker, line, class or "")
    cases: list[str] = field(default_factory=list)  # parametrize cases, as source
    expected: dict[str, str] = field(default_factory=dict)  # `expected = 5` and kin: name -> literal
    collected: bool = True  # False for a function a runner would not collect (no test name)


@dataclass
class PyFile:
    tests: dict[str, PyTest]
    others: dict[str, PyTest]  # functions that are not tests (a test renamed out of collection lands here)
    module_skips: list[tuple[str, int]]


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _literal(node: ast.expr) -> str | None:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    return ast.unparse(node)


def _check_of_compare(node: ast.Compare, line: int) -> Check:
    if len(node.ops) != 1:
        return Check("compare", ast.unparse(node), None, line, True)
    op = type(node.ops[0]).__name__
    left, right = node.left, node.comparators[0]
    # `x is not None` or `x != y` pin no value, and `x == x` checks nothing
    strict = op not in ("IsNot", "NotEq", "NotIn") and ast.dump(left) != ast.dump(right)
    lit_l, lit_r = _literal(left), _literal(right)
    if lit_r is not None and lit_l is None:
        return Check(op, ast.unparse(left), lit_r, line, strict)
    if lit_l is not None and lit_r is None:
        return Check(op, ast.unparse(right), lit_l, line, strict)
    return Check(op, ast.unparse(node), None, line, strict)


def _checks_in(func: ast.AST) -> list[Check]:
    out: list[Check] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assert):
            test = node.test
            if isinstance(test, ast.Compare):
                out.append(_check_of_compare(test, node.lineno))
            else:
                out.append(Check("assert", ast.unparse(test), None, node.lineno, False))
        elif isinstance(node, ast.Call):
            dotted = _dotted(node.func)
            name = dotted.rsplit(".", 1)[-1]
            if dotted.endswith("pytest.raises") or name in ("assertRaises", "assertRaisesRegex"):
                error = _dotted(node.args[0]) if node.args else ""
                out.append(Check("raises", "", error, node.lineno, error not in BROAD_ERRORS))
            elif name.startswith(("assert", "fail")):
                args = [a for a in node.args if not isinstance(a, ast.Starred)]
                literals = [_literal(a) for a in args[:2]]
                subject, expected = "", None
                if len(args) >= 2 and (literals[0] is None) != (literals[1] is None):
                    at = 0 if literals[0] is None else 1
                    subject, expected = ast.unparse(args[at]), literals[1 - at]
                elif args:
                    subject = ast.unparse(args[0])
                same = len(args) >= 2 and ast.dump(args[0]) == ast.dump(args[1])
                strict = bool(STRICT.search(name)) and not LOOSE.search(name) and not same
                out.append(Check(name, subject, expected, node.lineno, strict))
    return out


def _skips(decorators: list[ast.expr]) -> list[tuple[str, int]]:
    return [(_dotted(d), d.lineno) for d in decorators if SKIP_DECORATOR.match(_dotted(d))]


def _skips_in_body(func: ast.AST) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and SKIP_CALL.match(_dotted(node.func)):
            out.append((_dotted(node.func), node.lineno))
        elif isinstance(node, ast.Raise) and node.exc is not None and SKIP_CALL.match(_dotted(node.exc)):
            out.append((_dotted(node.exc), node.lineno))
    return out


def _cases(decorators: list[ast.expr]) -> list[str]:
    out: list[str] = []
    for d in decorators:
        if isinstance(d, ast.Call) and _dotted(d).endswith("mark.parametrize") and len(d.args) >= 2:
            values = d.args[1]
            if isinstance(values, (ast.List, ast.Tuple)):
                out += [ast.unparse(e) for e in values.elts]
    return out


def _expected_in(func: ast.AST) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            literal = _literal(node.value) if EXPECTED_NAME.match(name) else None
            if literal is not None:
                out.setdefault(name, literal)
    return out


def _test_of(func: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str, class_skips: list[tuple[str, int, str]],
             collected: bool) -> PyTest:
    body = "\n".join(ast.dump(stmt) for stmt in func.body)
    return PyTest(
        name=prefix + func.name,
        line=func.lineno,
        body=body,
        checks=_checks_in(func),
        skips=[(m, n, "") for m, n in _skips(func.decorator_list) + _skips_in_body(func)] + class_skips,
        cases=_cases(func.decorator_list),
        expected=_expected_in(func),
        collected=collected,
    )


def _is_test_class(cls: ast.ClassDef) -> bool:
    return cls.name.startswith("Test") or any(TESTCASE_BASE.search(_dotted(b)) for b in cls.bases)


def read(text: str) -> PyFile:
    """The tests of one Python file. Raises ValueError when `ast` cannot read it."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        raise ValueError(f"not readable Python: {exc}") from exc
    tests: dict[str, PyTest] = {}
    others: dict[str, PyTest] = {}
    module_skips: list[tuple[str, int]] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            marks = stmt.value.elts if isinstance(stmt.value, (ast.List, ast.Tuple)) else [stmt.value]
            module_skips += _skips(list(marks))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and SKIP_CALL.match(
                _dotted(stmt.value.func)):
            module_skips.append((_dotted(stmt.value.func), stmt.lineno))

    def walk_class(cls: ast.ClassDef, prefix: str, inherited: list[tuple[str, int, str]]) -> None:
        is_test = _is_test_class(cls)
        skips = inherited + [(m, n, prefix + cls.name) for m, n in _skips(cls.decorator_list)]
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                collected = is_test and item.name.startswith("test")
                found = _test_of(item, prefix + cls.name + ".", skips, collected)
                (tests if collected else others)[found.name] = found
            elif isinstance(item, ast.ClassDef):
                walk_class(item, prefix + cls.name + ".", skips)

    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            collected = stmt.name.startswith("test")
            found = _test_of(stmt, "", [], collected)
            (tests if collected else others)[found.name] = found
        elif isinstance(stmt, ast.ClassDef):
            walk_class(stmt, "", [])
    return PyFile(tests, others, module_skips)
