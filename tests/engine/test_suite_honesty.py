"""The test suite tells the truth under load: no clock decides a result outside `tests/bench`.

Two shapes pass on a quiet machine and fail (or pass) for the wrong reason on a loaded one:

- an assert on an elapsed time (`time.monotonic() - started < 2`): a loaded machine fails it
  with nothing wrong, and a quiet one proves nothing the behaviour's own evidence could not;
- a sleep followed straight by an assert ("wait a little, then check nothing happened"): on
  a loaded machine the thing checked may simply not have happened *yet*. Wait instead for an
  event or a later message that proves the other side acted.

A bound on a hang (`assert time.monotonic() < deadline` inside a wait loop) is neither: it
fails only when something never happens.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CLOCK = re.compile(r"\b(?:monotonic|perf_counter|time)\(\)\s*-")
"""A clock read minus a start: `time.monotonic() - t`, `loop.time() - began`."""


def _sources() -> list[Path]:
    return [p for p in sorted(TESTS.rglob("*.py")) if "bench" not in p.relative_to(TESTS).parts]


def _elapsed_names(tree: ast.AST) -> set[str]:
    """Names assigned an elapsed time (`took = time.monotonic() - asked`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and CLOCK.search(ast.unparse(node.value)):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_no_assert_on_an_elapsed_time() -> None:
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        elapsed = _elapsed_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assert):
                continue
            test = ast.unparse(node.test)
            used = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            if CLOCK.search(test) or used & elapsed:
                found.append(f"{path.relative_to(TESTS)}:{node.lineno}: assert {test}")
    assert found == [], "wall-clock asserts outside tests/bench:\n" + "\n".join(found)


def _sleep(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.Expr):
        return False
    call = statement.value.value if isinstance(statement.value, ast.Await) else statement.value
    if not isinstance(call, ast.Call) or not ast.unparse(call.func).endswith("sleep"):
        return False
    # `sleep(0)` only yields to the event loop; it waits for nothing.
    return not (call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value == 0)


def _sleeps_then_asserts(body: list[ast.stmt], path: Path, found: list[str]) -> None:
    for i, statement in enumerate(body):
        if isinstance(statement, (ast.While, ast.For, ast.AsyncFor)):
            continue  # a poll: the loop's own condition decides when to stop
        if _sleep(statement) and i + 1 < len(body) and isinstance(body[i + 1], ast.Assert):
            found.append(f"{path.relative_to(TESTS)}:{statement.lineno}: {ast.unparse(statement)}")
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                _sleeps_then_asserts(inner, path, found)
        for handler in getattr(statement, "handlers", []):
            _sleeps_then_asserts(handler.body, path, found)


def test_no_sleep_then_assert() -> None:
    found: list[str] = []
    for path in _sources():
        _sleeps_then_asserts(ast.parse(path.read_text(encoding="utf-8")).body, path, found)
    assert found == [], "a sleep, then an assert (wait for an event or a later message):\n" + "\n".join(found)


def test_the_checks_see_both_shapes() -> None:
    source = (
        "async def test_x():\n"
        "    started = time.monotonic()\n"
        "    await asyncio.sleep(0.5)\n"
        "    assert not marker.exists()\n"
        "    took = time.monotonic() - started\n"
        "    assert took < 2\n"
    )
    tree = ast.parse(source)
    found: list[str] = []
    _sleeps_then_asserts(tree.body, TESTS / "x.py", found)
    assert len(found) == 1
    assert _elapsed_names(tree) == {"took"}
